"""Our local control plane (``preloop serve``): Preloop-shaped REST plus our own SSE event stream.

Everything is supported; the live feed is :mod:`client.backends.local.feed`, the attention inbox's
:mod:`client.backends.local.attention`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from client.backends.base import Capabilities, ServerKind
from client.backends.rest import PreloopRestApi
from client.ids import require_uuid
from client.models import AttentionSnapshot, Session

if TYPE_CHECKING:  # the event vocabulary (pydantic models) is built only by a process that streams
    from client.events import Event
    from client.status import StreamStatus
    from client.timeline import Place

__all__ = ["LocalBackend"]


class LocalBackend(PreloopRestApi):
    """The backend for our own server: its REST answers are complete and its stream is numbered."""

    server_kind: ServerKind = "local"
    capabilities: Capabilities = Capabilities()

    async def get_session(self, session_id: str) -> Session:
        """The session detail as is: our server fills every counter (no list-row lookup needed)."""
        return await self._session_detail(session_id)

    def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncGenerator[Event | StreamStatus, None]:
        """Live events after seq ``after`` (or the newest ``tail`` first), in order, exactly once, with
        connection states between them (the feed's own generator: no layer of its own per event)."""
        from client.backends.local import feed  # streaming only: scripted commands never load it

        return feed.follow(self, require_uuid(session_id), after=after, tail=tail)

    async def history(
        self, session_id: str, *, since: datetime | None = None, after: Place | None = None
    ) -> list[Event]:
        """The stored events after ``after`` (by seq) or since ``since``, as of now: only those are read
        (``?after=`` / ``?since=`` on the event stream, see :func:`client.backends.local.feed.history`)."""
        from client.backends.local import feed

        return await feed.history(self, require_uuid(session_id), since=since, after=after)

    def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        """Every session's pending approvals and failed notes, pushed by the server
        (:mod:`client.backends.local.attention`)."""
        from client.backends.local.attention import follow_attention

        return follow_attention(self, notes_window, poll_interval=poll_interval)
