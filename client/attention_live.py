"""Feeds for the attention inbox: the local server's push stream, and bounded polling for the rest.

``Backend.watch_attention()`` yields ``AttentionSnapshot | Event | StreamStatus`` for
:class:`client.inbox.Inbox`:

* :func:`follow_attention_local` reads our server's ``GET /api/v1/attention/events`` (docs/protocol.md),
  opened and parsed by httpx-sse like every SSE stream (``Connection.event_source``): a snapshot first,
  then approval and failed-note events of every session as they are committed. A dropped connection, a
  5xx or a stall is a reconnect after a jittered backoff, and every (re)connection starts with a fresh
  snapshot, so nothing that happened while away is lost. A refusing answer (403, ...) stops it
  (``Refused``), a 401 waits for a token the server accepts (``LoginNeeded``); a server without the
  endpoint (404) is polled instead.
* :func:`poll_attention` works on any backend's REST side (a Preloop server pushes no
  account-wide feed): pending approvals every ``interval`` seconds, the failed notes of recently active
  sessions every ``notes_every`` polls, each round yielded as a snapshot (rounds start ``interval`` apart;
  when the notes are due the approvals go out first). Failures back off up to ``backoff_max``; a refused
  token (401) waits for a new one (``LoginNeeded``), a 403 stops it.
* either way, an approval that left the pending list unseen (a poll, or while a stream reconnected) is
  fetched (:func:`settled`) and goes out as ``approval.decided`` with its final record before the
  snapshot: decided by whom, with which comment, or expired, never a stale pending copy.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from client.backends.base import ApprovalDesk, NoteDesk, SessionDesk, SessionFilter
from client.backends.rest import API_PREFIX
from client.errors import AuthError, ClientError, PermissionDenied
from client.events import ApprovalDecided, ApprovalRequested, Event, EventDecodeError
from client.inbox import ENDED_BADLY, note_ended_at
from client.models import Approval, AttentionSnapshot, Note
from client.status import Connecting, Live, LoginNeeded, Reconnecting, Refused, Skipped, StreamStatus
from client.streaming.decode import decode_frame
from client.streaming.policy import LOGIN_RETRY_MAX, backoff_delay, login_reason
from client.streaming.reconnect import Link, Refusal, Retry, reconnecting

if TYPE_CHECKING:
    from client.backends.rest import PreloopRestApi

__all__ = ["AttentionItem", "failed_notes", "follow_attention_local", "pending_approvals", "poll_attention"]

AttentionItem = AttentionSnapshot | Event | StreamStatus
"""What an attention feed yields."""


class Desks(SessionDesk, NoteDesk, ApprovalDesk, Protocol):
    """The REST side of a backend: all polling needs."""


SNAPSHOT_EVENT = "attention.snapshot"
_MAX_APPROVALS = 1000
_MAX_SESSIONS = 200
_PARALLEL = 4


def window_minutes(window: timedelta) -> int:
    """The notes window as the server's ``notes_since_minutes`` (1 minute to 7 days)."""
    return min(max(math.ceil(window.total_seconds() / 60), 1), 10080)


def follow_attention_local(
    api: PreloopRestApi, notes_window: timedelta, *, poll_interval: float = 3.0
) -> AsyncGenerator[AttentionItem, None]:
    """The local server's attention stream, reconnecting for ever (see the module docstring)."""
    conn = api.conn
    skipped = 0
    no_feed = False

    async def connect(link: Link) -> AsyncGenerator[AttentionItem, None]:
        nonlocal skipped, no_feed
        params = {"notes_since_minutes": window_minutes(notes_window)}
        path = f"{API_PREFIX}/attention/events"
        try:
            async with conn.event_source(path, what="the attention feed", params=params) as source:
                yield Live(0)
                async with aclosing(source.aiter_sse()) as frames:
                    async for frame in frames:
                        link.alive()
                        if frame.retry:
                            link.retry_hint = frame.retry / 1000
                        if not frame.data:
                            continue  # a keep-alive, a lone retry: line
                        try:
                            if frame.event == SNAPSHOT_EVENT:
                                yield AttentionSnapshot.model_validate_json(frame.data)
                            else:
                                yield decode_frame(frame)
                        except (EventDecodeError, ValidationError):
                            skipped += 1
                            reason = f"unreadable {frame.event or 'frame'}: not what this client can read"
                            yield Skipped(reason, skipped)
        except Refusal as refusal:
            if refusal.status == 404:  # a server from before the attention feed: poll it like any other
                no_feed = True
            raise
        raise Retry("the server closed the attention stream")

    async def run() -> AsyncGenerator[AttentionItem, None]:
        feed: AsyncGenerator[AttentionItem, None] = reconnecting(
            connect,
            backoff_initial=conn.backoff_initial,
            backoff_max=conn.backoff_max,
            classify=conn.stream_failure,
        )
        known: dict[str, Approval] | None = None  # pending as last seen, across reconnections
        async with aclosing(feed) as items:
            async for item in items:
                if isinstance(item, Refused) and no_feed:
                    break
                if isinstance(item, AttentionSnapshot):
                    # A reconnection starts with a fresh snapshot: what was decided while away is fetched.
                    fresh = {a.id: a for a in item.approvals if a.pending}
                    if known is not None:
                        for decided in await settled(api, [a for i, a in known.items() if i not in fresh]):
                            yield decided
                    known = fresh
                elif known is not None and isinstance(item, ApprovalRequested | ApprovalDecided):
                    if item.approval.pending:
                        known[item.approval.id] = item.approval
                    else:
                        known.pop(item.approval.id, None)
                yield item
        if no_feed:
            async with aclosing(poll_attention(api, notes_window, interval=poll_interval)) as polled:
                async for item in polled:
                    yield item

    return run()


async def settled(backend: ApprovalDesk, gone: list[Approval]) -> list[ApprovalDecided]:
    """The final record of approvals that left the pending list between two looks (decided elsewhere,
    expired, cancelled), as ``approval.decided`` events: a watcher then says approved or declined, by whom
    and with which comment, not "gone" with the stale pending copy. One that cannot be fetched (deleted,
    no longer visible) or is still pending (the two looks raced) is left to the snapshot."""
    out: list[ApprovalDecided] = []
    for approval in gone:
        try:
            row = await backend.get_approval(approval.id)
        except ClientError:
            continue
        if row.pending:
            continue
        session = row.runtime_session_id or approval.runtime_session_id or ""
        at = row.resolved_at or datetime.now(UTC)
        out.append(ApprovalDecided(seq=0, session_id=session, at=at, approval=row))
    return out


async def pending_approvals(backend: Desks) -> list[Approval]:
    """Every pending approval of every session (paged, at most 1000), the longest waiting first."""
    items: list[Approval] = []
    skip = 0
    while True:
        page = await backend.list_approvals(status="pending", limit=100, skip=skip)
        items.extend(page.items)
        skip += len(page.items)
        if len(page.items) < 100 or (page.total is not None and skip >= page.total) or skip >= _MAX_APPROVALS:
            break
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return sorted((a for a in items if a.pending), key=lambda a: a.requested_at or epoch)


async def failed_notes(backend: Desks, since: datetime) -> list[Note]:
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


async def poll_attention(
    backend: Desks,
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
    however slow the notes are. ``monotonic`` and ``sleep`` are seams for tests.
    """
    now = clock or (lambda: datetime.now(UTC))
    notes: list[Note] = []
    rounds = 0
    failures = 0
    live = False
    known: dict[str, Approval] | None = None  # pending in the last round that went out

    def snapshot(approvals: list[Approval]) -> AttentionSnapshot:
        at = now()
        return AttentionSnapshot(at=at, notes_since=at - notes_window, approvals=approvals, notes=notes)

    yield Connecting(1)
    while True:
        started = monotonic()
        notes_due = rounds % max(notes_every, 1) == 0
        try:
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
        except PermissionDenied as exc:
            yield Refused(exc.hint, exc.status)
            return
        except ClientError as exc:
            failures += 1
            live = False
            if isinstance(exc, AuthError):  # each round's requests read the token again on their 401
                maximum = min(max(backoff_max, interval), LOGIN_RETRY_MAX)
                delay = backoff_delay(failures, initial=min(max(interval, 0.01), maximum), maximum=maximum)
                yield LoginNeeded(failures, delay, login_reason(exc.status))
            else:
                delay = backoff_delay(
                    failures, initial=max(interval, 0.01), maximum=max(backoff_max, interval)
                )
                yield Reconnecting(failures, delay, exc.hint)
            await sleep(delay)
            continue
        if not live:
            live = True
            yield Live(0)
        failures = 0
        rounds += 1
        yield snapshot(approvals)
        await sleep(max(interval - (monotonic() - started), 0.0))
