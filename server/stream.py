"""The body of ``GET /runtime-sessions/{id}/events``: replay from storage, then live push, as SSE text.

Order matters: subscribe to the bus first, then replay storage after the resume point, then drain the
live queue skipping seqs already sent, so a client never sees a gap or a duplicate. No polling on the hot
path: a committed event reaches the queue in-process (:mod:`server.bus`).

Memory per stream is bounded in bytes whatever the reader does: the live queue by the bus
(:data:`server.bus.MAX_QUEUED_BYTES`), the replay by reading storage in batches of about
:data:`REPLAY_BYTES` (the number of rows per batch adapts to the events' size) and writing each batch as
it is read. A reader that fell too far behind the live events (its subscription lagged) gets its stream
ended; it resumes with ``Last-Event-ID`` and the replay brings it every event it missed, once, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from server.bus import EventBus, Subscription
from server.store import Store, StoredEvent

SSE_RETRY_MS = 3000
REPLAY_BATCH = 500
"""The most rows one replay read takes (small events: one write carries up to this many)."""
REPLAY_BYTES = 1024 * 1024
"""About how many bytes of events one replay read and write holds (large events: fewer rows per read)."""
#: ``?tail=N`` (replay only the newest N stored events) accepts at most this many.
MAX_TAIL = 1_000_000
#: Response header: the seq just before the first replayed event (what ``tail`` resolved to).
REPLAY_AFTER_HEADER = "Preloop-Replay-After"
#: Response header: the newest stored seq when the stream opened (a reader of what is stored stops there).
STORED_THROUGH_HEADER = "Preloop-Stored-Through"


async def _ended(store: Store, session_id: str) -> bool:
    """Whether a stream can stop waiting for live events (ended, or gone)."""
    row = await store.fetchone("SELECT ended_at FROM sessions WHERE id = ?", (session_id,))
    return row is None or row["ended_at"] is not None


def _frame(event: StoredEvent) -> str:
    """One SSE frame: ``id`` the seq, ``event`` the type, ``data`` the stored wire JSON."""
    return f"id: {event.seq}\nevent: {event.type}\ndata: {event.data}\n\n"


async def sse_body(
    store: Store, bus: EventBus, session_id: str, after: int, keepalive: float
) -> AsyncIterator[str]:
    """The SSE body. Subscribe first, then replay storage, then drain live events skipping seen seqs;
    a subscriber that lagged is resubscribed and catches up from storage, so there is never a gap."""
    last = after
    sub: Subscription = bus.subscribe(session_id)
    rows = REPLAY_BATCH
    try:
        yield f"retry: {SSE_RETRY_MS}\n\n"
        while True:
            # replay (initially, and after a gap in the live queue)
            while True:
                batch = await store.events_after(session_id, last, rows)
                # One write per batch, not per event: a client catching up on 100,000 events then reads
                # 200 chunks instead of 100,000 (each a trip through h11, httpx and the SSE decoder).
                frames: list[str] = []
                size = 0
                ended = False
                for event in batch:
                    frames.append(_frame(event))
                    size += len(event.data)
                    last = event.seq
                    if event.type == "session.ended":
                        ended = True
                        break
                if frames:
                    yield "".join(frames)
                del frames
                if ended:
                    return
                if len(batch) < rows:
                    break
                # the next read holds about REPLAY_BYTES, whatever the events' size
                rows = max(1, min(REPLAY_BATCH, len(batch) * REPLAY_BYTES // max(size, 1)))
            if sub.closed or await _ended(store, session_id):
                # ended: storage already has everything, including session.ended; send what is left
                while rest := await store.events_after(session_id, last, rows):
                    yield "".join(_frame(event) for event in rest)
                    last = rest[-1].seq
                return
            # live
            while True:
                live = await sub.get(keepalive)
                if live is None:
                    yield ": keepalive\n\n"
                    continue
                if Subscription.is_close(live):
                    return
                if Subscription.is_lagged(live):
                    return  # too far behind: the client resumes with Last-Event-ID (see module docstring)
                if live.seq <= last:
                    continue
                if live.seq != last + 1:  # should not happen; storage is the truth, so catch up from it
                    break
                yield _frame(live)
                last = live.seq
                if live.type == "session.ended":
                    return
            sub.unsubscribe()
            sub = bus.subscribe(session_id)
    finally:
        sub.unsubscribe()
