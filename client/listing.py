"""Reading a whole list a page at a time: a session's notes, the approvals (of a session, in a status).

The scripted ``notes list``, the app and the short-id resolver (``client.steering``) page alike and stop
at the same limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from client.backends.base import Backend
    from client.models import Approval, Note

__all__ = ["LIST_MAX", "PAGE", "all_approvals", "last_notes_page", "session_notes"]

PAGE = 100
LIST_MAX = 1000
"""Listing stops after this many rows (notes of a session, approvals): short ids are looked up in them."""


async def all_approvals(
    backend: Backend, session: str | None = None, status: str | None = None
) -> list[Approval]:
    """Approvals (of one session, in one status; None: all), up to :data:`LIST_MAX`, in pages."""
    items: list[Approval] = []
    while True:
        page = await backend.list_approvals(session_id=session, status=status, limit=PAGE, skip=len(items))
        items.extend(page.items)
        done = len(page.items) < PAGE or (page.total is not None and len(items) >= page.total)
        if done or len(items) >= LIST_MAX:
            return items


def last_notes_page(count: int, offset: int, total: int | None) -> bool:
    """Whether a page of ``count`` notes ending at ``offset`` is the last one to ask for: a short page, the
    server's total reached, or :data:`LIST_MAX` notes."""
    return count < PAGE or (total is not None and offset >= total) or offset >= LIST_MAX


async def session_notes(backend: Backend, session: str, state: str | None = None) -> list[Note]:
    """Up to :data:`LIST_MAX` notes of one session, newest first, in pages."""
    notes: list[Note] = []
    while True:
        page = await backend.list_notes(session_id=session, state=state, limit=PAGE, offset=len(notes))
        notes.extend(page.notes)
        if last_notes_page(len(page.notes), len(notes), page.total):
            return notes
