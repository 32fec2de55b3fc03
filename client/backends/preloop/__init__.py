"""A Preloop 0.17.1 server: Preloop's REST, its websocket for the live feed, polling for the rest.

The REST calls are the shared Preloop-shaped ones (:mod:`client.backends.rest`); the live feed is
:mod:`client.backends.preloop.feed` (websocket + activity replay + polls) mapping Preloop's messages with
:mod:`client.backends.preloop.mapping`. Preloop pushes no note or approval changes, so a change made
through this backend *nudges* its own live followers of that session to poll at once. A note for a session
that has ended is refused here before it is sent (Preloop would accept it and leave it pending for ever).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from client.backends.base import Capabilities, ServerKind
from client.backends.preloop import feed
from client.backends.preloop.feed import PreloopTiming
from client.backends.rest import PreloopRestApi
from client.connection import Connection
from client.errors import SessionEnded
from client.events import Event
from client.ids import require_uuid, short_id
from client.models import AttentionSnapshot
from client.status import StreamStatus

if TYPE_CHECKING:
    from client.timeline import Place

__all__ = ["PreloopBackend", "PreloopTiming"]


class PreloopBackend(PreloopRestApi):
    """The backend for a Preloop server. ``timing`` sets the live feed's intervals (tests shorten them)."""

    server_kind: ServerKind = "preloop"
    capabilities: Capabilities = Capabilities()

    def __init__(self, conn: Connection, *, timing: PreloopTiming | None = None) -> None:
        super().__init__(conn)
        self.timing = timing
        self._nudges: dict[str, set[asyncio.Event]] = {}

    def nudge(self, session_id: str) -> None:
        """Make this backend's live followers of a session poll notes and approvals now: Preloop pushes
        neither, so without it a change shows only at the follower's next timer."""
        for event in self._nudges.get(session_id, set()):
            event.set()

    def watch(self, session_id: str, event: asyncio.Event) -> None:
        """Register a follower's wake-up for :meth:`nudge` (the follower calls :meth:`unwatch` when done)."""
        self._nudges.setdefault(session_id, set()).add(event)

    def unwatch(self, session_id: str, event: asyncio.Event) -> None:
        """Forget a follower's wake-up."""
        waiting = self._nudges.get(session_id)
        if waiting is not None:
            waiting.discard(event)
            if not waiting:
                del self._nudges[session_id]

    def _changed(self, session_id: str | None) -> None:
        if session_id:
            self.nudge(session_id)

    async def _before_note(self, session_id: str) -> None:
        """Read the session row first: Preloop accepts a note for an ended session and leaves it pending
        for ever (capture 117), so its sender would believe it was sent."""
        if (await self._session_detail(session_id)).ended:
            raise SessionEnded(f"session {short_id(session_id)}")

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncGenerator[Event | StreamStatus, None]:
        """Live events of one session after local seq ``after`` (seq is numbered here, contiguous). The
        whole activity replay is read (``tail`` is not offered by Preloop); the view keeps the newest."""
        async with aclosing(
            feed.follow(self, require_uuid(session_id), after=after, timing=self.timing)
        ) as items:
            async for item in items:
                yield item

    async def history(
        self, session_id: str, *, since: datetime | None = None, after: Place | None = None
    ) -> list[Event]:
        """Everything the server can tell about the session now (its activity list is one newest-first
        request without a time filter: ``since`` and ``after`` are the caller's to apply)."""
        return await feed.history(self, require_uuid(session_id), timing=self.timing)

    def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        """Every session's pending approvals and failed notes, polled (:mod:`client.backends.attention`)."""
        from client.backends.attention import poll_attention

        return poll_attention(self, notes_window, interval=poll_interval)
