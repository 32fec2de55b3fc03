"""Reading a whole list a page at a time, written once: every listing of sessions, notes and approvals.

:func:`pages` is the one paging loop: the scripted ``notes list`` / ``approvals list``, the short-id
resolver (``client.ids``), the digest and the export, the attention inbox's polls, a Preloop follower's
polls and every backend's session paging go through it, so they all stop at the same places: a short page,
the server's total reached, or :data:`LIST_MAX` rows (a server that ignored the offset would otherwise be
read for ever). :func:`all_approvals` and :func:`session_notes` are the two lists most callers read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from client.backends.base import ApprovalDesk, NoteDesk
    from client.models import Approval, Note

__all__ = ["LIST_MAX", "PAGE", "Fetch", "all_approvals", "pages", "read_pages", "session_notes"]

PAGE = 100
"""Rows asked for per request."""

LIST_MAX = 1000
"""A listing stops after this many rows."""

_T = TypeVar("_T")

Fetch = Callable[[int, int], Awaitable[tuple[Sequence[_T], int | None]]]
"""One page: ``fetch(offset, limit)`` → its rows and how many rows the server says the list has (at least;
None when it does not say)."""


async def pages(fetch: Fetch[_T], *, most: int = LIST_MAX, size: int = PAGE) -> AsyncIterator[_T]:
    """Every row of a listing in the server's order, read ``size`` at a time while they are wanted: until
    the server's total is reached (without one: a page shorter than asked), an empty page, or ``most``
    rows."""
    offset = 0
    while offset < most:
        asked = min(size, most - offset)
        rows, total = await fetch(offset, asked)
        for row in rows[:asked]:
            yield row
        offset += len(rows)
        if not rows or (offset >= total if total is not None else len(rows) < asked):
            return


async def read_pages(fetch: Fetch[_T], *, most: int = LIST_MAX, size: int = PAGE) -> list[_T]:
    """:func:`pages` as a list."""
    return [row async for row in pages(fetch, most=most, size=size)]


async def all_approvals(
    backend: ApprovalDesk, session: str | None = None, status: str | None = None, *, size: int = PAGE
) -> list[Approval]:
    """Approvals (of one session, in one status; None: all), up to :data:`LIST_MAX`."""

    async def fetch(offset: int, limit: int) -> tuple[list[Approval], int | None]:
        page = await backend.list_approvals(session_id=session, status=status, limit=limit, skip=offset)
        return page.items, page.total

    return await read_pages(fetch, size=size)


async def session_notes(
    backend: NoteDesk, session: str, state: str | None = None, *, size: int = PAGE
) -> list[Note]:
    """Up to :data:`LIST_MAX` notes of one session, newest first."""

    async def fetch(offset: int, limit: int) -> tuple[list[Note], int | None]:
        page = await backend.list_notes(session_id=session, state=state, limit=limit, offset=offset)
        return page.notes, page.total

    return await read_pages(fetch, size=size)
