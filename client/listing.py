"""Reading a whole list a page at a time, written once: every listing of sessions, notes and approvals.

:func:`pages` is the one paging loop: the scripted ``sessions list`` / ``notes list`` /
``approvals list``, the short-id resolver (``client.ids``), the digest and the export, the attention
inbox's polls, a Preloop follower's polls and every backend's session paging go through it, so they all
stop at the same places: the server's total reached (without one, a short page), an empty page, or the
caller's limit (:data:`LIST_MAX` by default: a server that ignored the offset would otherwise be read for
ever). :func:`session_pages`, :func:`all_approvals` and :func:`session_notes` are the lists callers read;
:func:`with_trails` adds to settled approvals who decided them (Preloop names them in each one's history).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from client.backends.base import ApprovalDesk, NoteDesk, SessionFilter
    from client.models import Approval, Note, Session, SessionList

__all__ = [
    "LIST_MAX",
    "PAGE",
    "TRAILS_AT_ONCE",
    "Fetch",
    "SessionLister",
    "all_approvals",
    "pages",
    "read_pages",
    "session_notes",
    "session_pages",
    "with_trails",
]

PAGE = 100
"""Rows asked for per request."""

LIST_MAX = 1000
"""A listing stops after this many rows."""

_T = TypeVar("_T")

Fetch = Callable[[int, int], Awaitable[tuple[Sequence[_T], int | None]]]
"""One page: ``fetch(offset, limit)`` → its rows and how many rows the server says the list has (at least;
None when it does not say)."""


async def pages(
    fetch: Fetch[_T], *, most: int = LIST_MAX, size: int = PAGE, key: Callable[[_T], str] | None = None
) -> AsyncIterator[_T]:
    """Every row of a listing in the server's order, read ``size`` at a time while they are wanted: until
    the server's total is reached (without one: a page shorter than asked), an empty page, or ``most``
    rows. With ``key``, a row is yielded once: one that a page repeats (the list moved on the server while
    it was read, rows shifting between pages) is skipped, and a page with nothing new ends the reading."""
    offset = 0
    count = 0
    seen: set[str] = set()
    while count < most:
        asked = min(size, most - count)
        rows, total = await fetch(offset, asked)
        fresh = 0
        for row in rows:
            if key is not None:
                if (k := key(row)) in seen:
                    continue
                seen.add(k)
            if count >= most:
                return
            yield row
            count += 1
            fresh += 1
        offset += len(rows)
        if not fresh or (offset >= total if total is not None else len(rows) < asked):
            return


async def read_pages(fetch: Fetch[_T], *, most: int = LIST_MAX, size: int = PAGE) -> list[_T]:
    """:func:`pages` as a list."""
    return [row async for row in pages(fetch, most=most, size=size)]


class SessionLister(Protocol):
    """What reading sessions needs: one page of them."""

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList: ...


def session_pages(
    backend: SessionLister,
    filters: SessionFilter | None = None,
    *,
    most: int = LIST_MAX,
    size: int = PAGE,
    read: list[SessionList] | None = None,
) -> AsyncIterator[Session]:
    """Sessions matching ``filters``, each once, following ``has_more`` (the total may be null); ``read``,
    when given, collects the pages as they are read (whether more follow, the server's total)."""

    async def fetch(offset: int, limit: int) -> tuple[list[Session], int | None]:
        page = await backend.list_sessions(filters, limit=limit, offset=offset)
        if read is not None:
            read.append(page)
        if page.total is not None:
            return page.items, page.total
        more = 1 if page.has_more else 0  # without a total: at least one more row when it says so
        return page.items, offset + len(page.items) + more

    return pages(fetch, most=most, size=size, key=_id_of)


def _id_of(session: Session) -> str:
    return session.id


async def all_approvals(
    backend: ApprovalDesk, session: str | None = None, status: str | None = None, *, size: int = PAGE
) -> list[Approval]:
    """Approvals (of one session, in one status; None: all), up to :data:`LIST_MAX`."""

    async def fetch(offset: int, limit: int) -> tuple[list[Approval], int | None]:
        page = await backend.list_approvals(session_id=session, status=status, limit=limit, skip=offset)
        return page.items, page.total

    return await read_pages(fetch, size=size)


TRAILS_AT_ONCE = 4
"""Approval histories read at once (:func:`with_trails`)."""


async def with_trails(backend: ApprovalDesk, approvals: list[Approval]) -> list[Approval]:
    """The approvals, each settled one with who decided it (``Backend.approval_trail``: free on a server
    that sends the decider with the row; one history request each, a few at a time, on Preloop)."""
    gate = asyncio.Semaphore(TRAILS_AT_ONCE)

    async def one(approval: Approval) -> Approval:
        if approval.pending:
            return approval
        async with gate:
            return await backend.approval_trail(approval)

    return list(await asyncio.gather(*(one(a) for a in approvals)))


async def session_notes(
    backend: NoteDesk, session: str, state: str | None = None, *, size: int = PAGE
) -> list[Note]:
    """Up to :data:`LIST_MAX` notes of one session, newest first."""

    async def fetch(offset: int, limit: int) -> tuple[list[Note], int | None]:
        page = await backend.list_notes(session_id=session, state=state, limit=limit, offset=offset)
        return page.notes, page.total

    return await read_pages(fetch, size=size)
