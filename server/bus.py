"""In-process pub/sub: committed events go straight to the live SSE streams (no polling).

A subscriber owns a bounded queue. If it falls too far behind, the bus does not block the writer and does
not drop events silently: it marks the subscription ``lagged`` and stops feeding it; the stream then
re-reads storage from its last seq (storage has every event) and resubscribes.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence

from server.store import StoredEvent

_CLOSE = StoredEvent("", 0, "", "")


class Subscription:
    """One live listener on one session's events."""

    def __init__(
        self, bus: EventBus, session_id: str | None, maxsize: int, types: frozenset[str] | None = None
    ) -> None:
        self.bus = bus
        self.session_id = session_id
        """The session listened to, or None for every session (see :meth:`EventBus.subscribe_all`)."""
        self.types = types
        """Only these event types are queued (None: all of them)."""
        self.queue: asyncio.Queue[StoredEvent] = asyncio.Queue(maxsize=maxsize)
        self.lagged = False
        self.closed = False

    def offer(self, event: StoredEvent) -> None:
        """Queue without blocking the writer; on overflow mark the subscriber lagged instead."""
        if self.lagged or self.closed or (self.types is not None and event.type not in self.types):
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.lagged = True

    def close(self) -> None:
        """Wake the reader with a sentinel so it ends (server shutting down)."""
        self.closed = True
        try:
            self.queue.put_nowait(_CLOSE)
        except asyncio.QueueFull:
            self.lagged = True

    async def get(self, idle_seconds: float) -> StoredEvent | None:
        """The next event, or None after ``idle_seconds`` of silence (time for a keepalive)."""
        try:
            return await asyncio.wait_for(self.queue.get(), idle_seconds)
        except TimeoutError:
            return None

    @staticmethod
    def is_close(event: StoredEvent) -> bool:
        """True for the shutdown sentinel."""
        return event is _CLOSE

    def unsubscribe(self) -> None:
        """Stop receiving (idempotent)."""
        self.bus.unsubscribe(self)


class EventBus:
    """Fan committed events out to the subscribers of their session, and to the all-sessions listeners."""

    def __init__(self, queue_size: int = 10_000) -> None:
        self._subs: defaultdict[str, set[Subscription]] = defaultdict(set)
        self._everywhere: set[Subscription] = set()
        self._queue_size = queue_size
        self.closed = False

    def subscribe(self, session_id: str) -> Subscription:
        """Listen to one session; take this before replaying storage so nothing falls in between."""
        sub = Subscription(self, session_id, self._queue_size)
        if self.closed:
            sub.close()
        else:
            self._subs[session_id].add(sub)
        return sub

    def subscribe_all(self, types: frozenset[str]) -> Subscription:
        """Listen to these event types on every session (the attention stream filters by account itself);
        take it before reading the snapshot so nothing falls in between."""
        sub = Subscription(self, None, self._queue_size, types)
        if self.closed:
            sub.close()
        else:
            self._everywhere.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop receiving (idempotent)."""
        if sub.session_id is None:
            self._everywhere.discard(sub)
            return
        subs = self._subs.get(sub.session_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.session_id]

    def publish(self, events: Sequence[StoredEvent]) -> None:
        """Called by the store right after a commit, in seq order, on the server's loop."""
        for event in events:
            for sub in tuple(self._subs.get(event.session_id, ())):
                sub.offer(event)
            for sub in tuple(self._everywhere):
                sub.offer(event)

    def subscriber_count(self, session_id: str) -> int:
        """How many live streams follow a session (tests check cleanup with it)."""
        return len(self._subs.get(session_id, ()))

    def everywhere_count(self) -> int:
        """How many all-sessions listeners are open (tests check cleanup with it)."""
        return len(self._everywhere)

    def close_all(self) -> None:
        """End every live stream (shutdown), so the server can stop without waiting on open streams."""
        self.closed = True
        for subs in [*self._subs.values(), self._everywhere]:
            for sub in tuple(subs):
                sub.close()
        self._subs.clear()
        self._everywhere.clear()
