"""The attention inbox's feed on any backend's REST side: bounded polling, run by the one reconnect loop.

``Backend.watch_attention()`` yields ``AttentionSnapshot | Event | StreamStatus`` for
:class:`client.inbox.Inbox`. A Preloop server and a Dendrux app push no account-wide feed, so their
backends poll here; our local server pushes one (:mod:`client.backends.local.attention`) and falls back to
this when it has none.

:func:`poll_attention` asks for the pending approvals every ``interval`` seconds and for the failed notes of
recently active sessions every ``notes_every`` polls, each round yielded as a snapshot (rounds start
``interval`` apart; when the notes are due the approvals go out first). Its connecting, backoff and
refusals are the one reconnect loop's (:func:`client.streaming.reconnect.reconnecting`): a failed round is
a reconnect after a jittered backoff, a refused token (401) waits for a new one (``LoginNeeded``), a 403
stops it (``Refused``).

Either way, an approval that left the pending list unseen (between two polls, or while a stream
reconnected) goes out as ``approval.decided`` with its final record before the snapshot
(:func:`settled`): decided by whom, with which comment, or expired, never a stale pending copy.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from client.backends.base import ApprovalDesk, NoteDesk, SessionDesk, SessionFilter
from client.errors import AuthError, ClientError, PermissionDenied
from client.events import ApprovalDecided, Event
from client.listing import all_approvals
from client.models import ENDED_BADLY, Approval, AttentionSnapshot, Note, note_ended_at
from client.status import Live, StreamStatus
from client.steering import final_record
from client.streaming.reconnect import Link, Refusal, reconnecting

__all__ = [
    "AttentionItem",
    "RestSide",
    "failed_notes",
    "pending_approvals",
    "poll_attention",
    "settled",
    "window_minutes",
]

AttentionItem = AttentionSnapshot | Event | StreamStatus
"""What an attention feed yields."""


class RestSide(SessionDesk, NoteDesk, ApprovalDesk, Protocol):
    """The REST side of a backend: all polling needs."""


_MAX_SESSIONS = 200
_PARALLEL = 4


def window_minutes(window: timedelta) -> int:
    """The notes window as the server's ``notes_since_minutes`` (1 minute to 7 days)."""
    return min(max(math.ceil(window.total_seconds() / 60), 1), 10080)


async def settled(backend: ApprovalDesk, gone: list[Approval]) -> list[ApprovalDecided]:
    """The approvals that left the pending list between two looks (decided elsewhere, expired,
    cancelled), each with its final record (:func:`client.steering.final_record`) as an
    ``approval.decided`` event: a watcher then says approved or declined, by whom and with which comment,
    not "gone" with the stale pending copy. One that cannot be read or still reads pending (the two looks
    raced) is left to the snapshot."""
    out: list[ApprovalDecided] = []
    for approval in gone:
        try:
            row = await final_record(backend, approval.id)
        except ClientError:
            continue
        if row is None:
            continue
        session = row.runtime_session_id or approval.runtime_session_id or ""
        at = row.resolved_at or datetime.now(UTC)
        out.append(ApprovalDecided(seq=0, session_id=session, at=at, approval=row))
    return out


async def pending_approvals(backend: RestSide) -> list[Approval]:
    """Every pending approval of every session (up to ``client.listing.LIST_MAX``), the longest waiting
    first."""
    items = await all_approvals(backend, status="pending")
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return sorted((a for a in items if a.pending), key=lambda a: a.requested_at or epoch)


async def failed_notes(backend: RestSide, since: datetime) -> list[Note]:
    """Notes that ended expired, failed or undeliverable since ``since``, in sessions active since then.

    A server that lists notes per target only (Preloop) is asked session by session, a few at a time, for
    the sessions that have notes at all.
    """
    minutes = window_minutes(datetime.now(UTC) - since)
    sessions = [
        s.id
        async for s in backend.iter_sessions(
            SessionFilter(status="all", active_within_minutes=minutes), max_items=_MAX_SESSIONS
        )
        if s.note_count is None or s.note_count > 0
    ]
    gate = asyncio.Semaphore(_PARALLEL)

    async def of_session(session_id: str) -> list[Note]:
        found: list[Note] = []
        async with gate:
            for state in sorted(ENDED_BADLY):
                page = await backend.list_notes(session_id=session_id, state=state, limit=100)
                found += [n for n in page.notes if note_ended_at(n) >= since]
        return found

    results = await asyncio.gather(*(of_session(sid) for sid in sessions))
    unique = {n.note_id: n for notes in results for n in notes}
    return sorted(unique.values(), key=note_ended_at, reverse=True)


def _classify(exc: Exception) -> str | Refusal | None:
    """A failed round: a refused token waits for a new one, a refusal stops, anything else is retried
    (and what is not a ``ClientError`` is a bug)."""
    if isinstance(exc, AuthError | PermissionDenied):
        return Refusal(exc.hint, exc.status)
    if isinstance(exc, ClientError):
        return exc.hint
    return None


def poll_attention(
    backend: RestSide,
    notes_window: timedelta,
    *,
    interval: float = 3.0,
    notes_every: int = 5,
    backoff_max: float = 30.0,
    clock: Callable[[], datetime] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncGenerator[AttentionItem, None]:
    """Snapshots every ``interval`` seconds from plain REST calls (approvals each time, notes less often).

    Rounds *start* ``interval`` apart (the wait after a round is the interval minus the round's own time,
    never less than nothing), and in a round that also asks for the notes (session by session on a
    Preloop server: slow) the approvals are yielded first, so an approval shows within about one interval
    however slow the notes are. A failed round is retried by the one reconnect loop, its backoff starting
    at ``interval`` and growing to ``backoff_max``. ``monotonic`` and ``sleep`` (between rounds) are seams
    for tests.
    """
    now = clock or (lambda: datetime.now(UTC))
    notes: list[Note] = []
    rounds = 0
    known: dict[str, Approval] | None = None  # pending in the last round that went out

    def snapshot(approvals: list[Approval]) -> AttentionSnapshot:
        at = now()
        return AttentionSnapshot(at=at, notes_since=at - notes_window, approvals=approvals, notes=notes)

    async def rounds_while_it_answers(link: Link) -> AsyncGenerator[AttentionItem, None]:
        nonlocal notes, rounds, known
        live = False
        while True:
            started = monotonic()
            notes_due = rounds % max(notes_every, 1) == 0
            approvals = await pending_approvals(backend)
            if known is not None:
                # Polled, an approval decided elsewhere only disappears: fetch what became of it.
                fresh = {a.id for a in approvals}
                for event in await settled(backend, [a for i, a in known.items() if i not in fresh]):
                    yield event
            known = {a.id: a for a in approvals}
            if notes_due and rounds:
                # Not the first round (whose snapshot must hold everything: what it lacked would later
                # look like news): the approvals go out now, the notes follow in a second snapshot.
                if not live:
                    live = True
                    yield Live(0)
                yield snapshot(approvals)
            if notes_due:
                notes = await failed_notes(backend, now() - notes_window)
            if not live:
                live = True
                yield Live(0)
            link.alive()
            rounds += 1
            yield snapshot(approvals)
            await sleep(max(interval - (monotonic() - started), 0.0))

    return reconnecting(
        rounds_while_it_answers,
        backoff_initial=max(interval, 0.01),
        backoff_max=max(backoff_max, interval),
        classify=_classify,
    )
