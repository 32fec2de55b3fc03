"""Read what a digest needs from a server, as cheaply as it allows, and compute it (``client.digest``).

``preloop sessions digest`` and ``benchmarks/bench_digest.py`` call :func:`read_digest` (one session) and
:func:`read_handoff` (every session with activity in a window). For one session that is:

* the session row;
* the events since the time or the place asked (``Backend.history``): on our server only those are read
  (``?since=`` or ``?after=`` on the event stream, one index seek), on a Dendrux app those after the index
  found by a few one-event requests, on Preloop its whole activity list (one request; it has no filter);
  whatever a server sent beyond the window is dropped here, so every kind says the same;
* the session's notes and its approvals in every status (decisions whose request was before the window
  are only in the latter).

They are applied to a :class:`client.session.SessionCore` exactly as a live follow would apply them, so
the digest printed here is the one the attach screen shows above its "new since you last looked" rule.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from math import ceil

from client.backends.base import Backend, SessionFilter
from client.digest import Digest, Handoff, Since, session_digest
from client.errors import ClientError
from client.events import Event
from client.listing import all_approvals, session_notes, with_trails
from client.models import Approval, Note, Session
from client.session import SessionCore
from client.steering import Decisions
from client.timeline import Place, Timeline

__all__ = ["HANDOFF_SESSIONS", "read_digest", "read_handoff", "since_filter"]

HANDOFF_SESSIONS = 200
"""At most this many sessions with activity in the window are read for a handoff (newest first)."""
PARALLEL = 4
"""Sessions read at once for a handoff."""


def since_filter(events: list[Event], since: Since) -> list[Event]:
    """The events that came since (a server that could not narrow the read sent more)."""
    return [e for e in events if since.covers(Place.of(e.seq, e.at, e.origin))]


def _in_window(approval: Approval, since: Since) -> bool:
    """A decision the digest lists: settled since (only those need who decided, read per approval)."""
    return (
        not approval.pending and approval.resolved_at is not None and since.covers(None, approval.resolved_at)
    )


async def read_digest(
    backend: Backend,
    session_id: str,
    since: Since,
    now: datetime,
    *,
    row: Session | None = None,
    decisions: Decisions | None = None,
) -> Digest:
    """One session's digest since ``since`` (a time, or a mark's place), read from the server now; the
    decisions in it say who made them (``decisions``: whose are "you"; learnt from the server when not
    given)."""
    if decisions is None:
        decisions = Decisions()
        await decisions.learn_me(backend)
    if row is None:
        row = await backend.get_session(session_id)
    by_place = since.place is not None and since.place.number is not None
    events = await backend.history(
        session_id, since=None if by_place else since.at, after=since.place if by_place else None
    )
    core = SessionCore(
        session_id, decisions=decisions, timeline=Timeline(max_entries=1_000_000, max_chars=500_000_000)
    )
    core.deciders_recorded = backend.capabilities.names_decider
    core.row_loaded(row)
    core.apply_events(since_filter(events, since))
    can = backend.capabilities
    notes: list[Note] = []
    everything: list[Approval] = []
    if can.notes:
        notes = await session_notes(backend, session_id)
    if can.approvals:
        everything = await all_approvals(backend, session_id)
        everything = await with_trails(backend, [a for a in everything if _in_window(a, since)]) + [
            a for a in everything if not _in_window(a, since)
        ]
    core.lists_loaded(notes, [a for a in everything if a.pending])
    return session_digest(core, since, now, approvals=everything, comment_kept=can.approve_comment)


async def read_handoff(backend: Backend, since: datetime, now: datetime) -> Handoff:
    """Every session with activity since ``since`` (at most :data:`HANDOFF_SESSIONS`), each with its
    digest; a session that cannot be read is listed with why, not fatal."""
    minutes = max(ceil((now - since).total_seconds() / 60), 1)
    rows = [
        row
        async for row in backend.iter_sessions(
            SessionFilter(active_within_minutes=minutes), max_items=HANDOFF_SESSIONS
        )
    ]
    gate = asyncio.Semaphore(PARALLEL)
    skipped: dict[str, str] = {}
    decisions = Decisions()
    await decisions.learn_me(backend)

    async def one(row: Session) -> Digest | None:
        async with gate:
            try:
                return await read_digest(
                    backend, row.id, Since.within(since, row), now, row=row, decisions=decisions
                )
            except ClientError as exc:
                skipped[row.id] = str(exc)
                return None

    found = [d for d in await asyncio.gather(*map(one, rows)) if d is not None and d.active]
    return Handoff(
        since=since,
        until=now,
        digests=tuple(found),
        comment_kept=backend.capabilities.approve_comment,
        skipped=skipped,
        deciders_recorded=backend.capabilities.names_decider,
    )
