"""In-process pub/sub: committed events go straight to the live SSE streams (no polling).

A subscriber owns a queue bounded in bytes (:data:`MAX_QUEUED_BYTES`, the events' wire JSON plus
:data:`EVENT_OVERHEAD` each), not in events: a reader that stops reading (a frozen laptop, a stuck
proxy) must not make the server hold every event published meanwhile; 2 such readers of 12,000 events of
16 KiB held +170 MiB when the bound was 10,000 events, and kept it after they hung up. If a subscriber
falls that far behind, the bus does not block the writer and does not drop events silently: it marks
the subscription ``lagged``, lets go of everything queued at once, unsubscribes it and wakes its reader;
the stream then ends, and the client resumes with ``Last-Event-ID`` from storage, which has every event.
The bound must hold the largest single commit (a 4 MiB event batch) with room to spare, so a reader that
keeps up is never cut off.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence

from server.store import StoredEvent

_CLOSE = StoredEvent("", 0, "", "")
_LAGGED = StoredEvent("", 0, "", "")

MAX_QUEUED_BYTES = 8 * 1024 * 1024
"""How far (in bytes) a live reader may fall behind before its stream is ended (twice the largest batch)."""

EVENT_OVERHEAD = 256
"""What one queued event costs beyond its JSON (the object, its strings' headers, the queue's slot), so
many tiny events are bounded too."""


def queued_size(event: StoredEvent) -> int:
    """What an event counts against a subscriber's bound."""
    return len(event.data) + EVENT_OVERHEAD


class Subscription:
    """One live listener on one session's events."""

    def __init__(
        self, bus: EventBus, session_id: str | None, max_bytes: int, types: frozenset[str] | None = None
    ) -> None:
        self.bus = bus
        self.session_id = session_id
        """The session listened to, or None for every session (see :meth:`EventBus.subscribe_all`)."""
        self.types = types
        """Only these event types are queued (None: all of them)."""
        self.max_bytes = max_bytes
        self.queue: asyncio.Queue[StoredEvent] = asyncio.Queue()
        self.queued_bytes = 0
        """What the queue holds, counted by :func:`queued_size`; never above ``max_bytes``."""
        self.lagged = False
        self.closed = False

    def offer(self, event: StoredEvent) -> None:
        """Queue without blocking the writer; past the byte bound, give up on this subscriber instead."""
        if self.lagged or self.closed or (self.types is not None and event.type not in self.types):
            return
        size = queued_size(event)
        if self.queued_bytes + size > self.max_bytes:
            self._lag()
            return
        self.queue.put_nowait(event)
        self.queued_bytes += size

    def _lag(self) -> None:
        """Fallen too far behind: drop what is queued now (the memory goes at once, storage has it all),
        stop listening, and wake the reader so its stream ends."""
        self.lagged = True
        self.bus.unsubscribe(self)
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queued_bytes = 0
        self.queue.put_nowait(_LAGGED)

    def close(self) -> None:
        """Wake the reader with a sentinel so it ends (server shutting down)."""
        self.closed = True
        self.queue.put_nowait(_CLOSE)

    async def get(self, idle_seconds: float) -> StoredEvent | None:
        """The next event, or None after ``idle_seconds`` of silence (time for a keepalive). After a lag
        it is the lag sentinel (see :meth:`is_lagged`)."""
        try:
            event = await asyncio.wait_for(self.queue.get(), idle_seconds)
        except TimeoutError:
            return None
        if event is not _CLOSE and event is not _LAGGED:
            self.queued_bytes -= queued_size(event)
        return event

    @staticmethod
    def is_close(event: StoredEvent) -> bool:
        """True for the shutdown sentinel."""
        return event is _CLOSE

    @staticmethod
    def is_lagged(event: StoredEvent) -> bool:
        """True for the sentinel a subscriber gets when it fell too far behind (see :meth:`offer`)."""
        return event is _LAGGED

    def unsubscribe(self) -> None:
        """Stop receiving (idempotent)."""
        self.bus.unsubscribe(self)


class EventBus:
    """Fan committed events out to the subscribers of their session, and to the all-sessions listeners."""

    def __init__(self, max_queued_bytes: int = MAX_QUEUED_BYTES) -> None:
        self._subs: defaultdict[str, set[Subscription]] = defaultdict(set)
        self._everywhere: set[Subscription] = set()
        self._max_bytes = max_queued_bytes
        self.closed = False

    def subscribe(self, session_id: str) -> Subscription:
        """Listen to one session; take this before replaying storage so nothing falls in between."""
        sub = Subscription(self, session_id, self._max_bytes)
        if self.closed:
            sub.close()
        else:
            self._subs[session_id].add(sub)
        return sub

    def subscribe_all(self, types: frozenset[str]) -> Subscription:
        """Listen to these event types on every session (the attention stream filters by account itself);
        take it before reading the snapshot so nothing falls in between."""
        sub = Subscription(self, None, self._max_bytes, types)
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

    def subscriber_count(self, session_id: str | None) -> int:
        """How many live streams follow a session, or with ``None`` every session (the attention
        streams); tests check set-up and cleanup with it."""
        if session_id is None:
            return len(self._everywhere)
        return len(self._subs.get(session_id, ()))

    def close_all(self) -> None:
        """End every live stream (shutdown), so the server can stop without waiting on open streams."""
        self.closed = True
        for subs in [*self._subs.values(), self._everywhere]:
            for sub in tuple(subs):
                sub.close()
        self._subs.clear()
        self._everywhere.clear()
