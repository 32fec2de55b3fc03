"""The resilient SSE follower behind ``Client.follow()`` for our local control plane.

It turns one session's event stream into ``Event | StreamStatus`` values with these promises:

* every event is released exactly once and in ``seq`` order: duplicates (a replay after reconnecting)
  are dropped, and a **gap** (a later seq before an earlier one) is held back while the stream is
  reopened after the last contiguous seq, so the missing events are filled in before the held ones go out;
* a dropped connection, a 5xx or a stall (no byte, not even a keep-alive, for ``client.stall_timeout``)
  is a reconnect with ``Last-Event-ID``, after an exponential backoff with jitter (``client.backoff_initial``
  to ``client.backoff_max``, starting from the server's ``retry:`` when it sent one);
* 401/403/404 (any 4xx but 408/425/429) stop it with :class:`~client.status.Refused` (retrying cannot help);
* a frame that cannot be decoded is skipped and counted (:class:`~client.status.Skipped`); its seq still
  counts as seen so it does not look like a gap;
* it stops after ``session.ended`` with :class:`~client.status.Ended`, or when the server closes the stream
  with nothing new and REST says the session has ended (resuming at the end of an ended session).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from operator import attrgetter
from typing import TYPE_CHECKING, cast

import httpx
from pydantic import TypeAdapter, ValidationError

from client.errors import ClientError
from client.events import Event, EventDecodeError, KnownEvent, SessionEnded, parse_event
from client.ids import short_id
from client.sse import SSEDecoder, SSEFrame
from client.status import (
    Connecting,
    Ended,
    Live,
    Missed,
    Reconnecting,
    Refused,
    Skipped,
    StreamStatus,
)

if TYPE_CHECKING:
    from client.api import Client

__all__ = ["EventOrderer", "backoff_delay", "decode_batch", "decode_frame", "decode_frames", "follow_local"]

_known: TypeAdapter[KnownEvent] = TypeAdapter(KnownEvent)
_known_list: TypeAdapter[list[KnownEvent]] = TypeAdapter(list[KnownEvent])
_frame_data = attrgetter("data")  # C-level field access: these run once per event
_frame_event = attrgetter("event")
_event_type = attrgetter("type")
_event_seq = attrgetter("seq")
_RETRY_4XX = frozenset({408, 425, 429})  # client errors that are about timing, not about us
_MAX_GAP_REFILLS = 3


def decode_frame(frame: SSEFrame) -> Event:
    """Validate one frame's data as an event (fast path straight from JSON; tolerant slow path otherwise).

    The SSE ``event:`` field wins over the body's ``type``, like :func:`client.events.parse_event`.
    """
    try:
        event = _known.validate_json(frame.data)
    except ValidationError:
        return parse_event(frame.data, frame.event or None)
    if frame.event and frame.event != event.type:
        return parse_event(frame.data, frame.event)
    return event


def decode_batch(frames: list[SSEFrame]) -> list[Event] | None:
    """Validate a chunk's frames in one pydantic call (2-3x faster than one call each), or None when any
    frame is odd (unknown type, bad JSON, a type that disagrees with its SSE event name): then
    :func:`decode_frames` takes them one by one, so a bad frame costs speed, never the others."""
    if not frames:
        return []
    try:
        events = cast("list[Event]", _known_list.validate_json(f"[{','.join(map(_frame_data, frames))}]"))
    except ValidationError:
        return None
    if len(events) == len(frames) and list(map(_frame_event, frames)) == list(map(_event_type, events)):
        return events
    return None


def decode_frames(frames: list[SSEFrame]) -> list[Event | EventDecodeError]:
    """Every frame as an event, or the EventDecodeError saying why it is not one (same order)."""
    batch = decode_batch(frames)
    if batch is not None:
        return list(batch)
    out: list[Event | EventDecodeError] = []
    for frame in frames:
        try:
            out.append(decode_frame(frame))
        except EventDecodeError as exc:
            out.append(exc)
    return out


def _frame_seq(frame: SSEFrame) -> int | None:
    """The seq of a frame we could not decode: the ``seq`` in its JSON if any, else its SSE id (which may be
    a previous frame's, as ids persist: then it is simply seen already), else None."""
    try:
        obj = json.loads(frame.data)
    except ValueError:
        obj = None
    seq = obj.get("seq") if isinstance(obj, dict) else None
    if isinstance(seq, int) and not isinstance(seq, bool) and seq > 0:
        return seq
    return int(frame.id) if frame.id.isascii() and frame.id.isdigit() else None


def backoff_delay(attempt: int, *, initial: float, maximum: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter: ``initial·2^(attempt-1)`` capped at ``maximum``, then 50-100 % of it,
    never below ``initial`` (the server's ``retry:`` when it gave one), so many clients do not reconnect in
    lock step after a server restart."""
    base: float = min(maximum, initial * (2.0 ** max(attempt - 1, 0)))
    jitter: float = (rng or random).uniform(0.5, 1.0)
    return max(min(initial, maximum), base * jitter)


class EventOrderer:
    """Pure ordering state: releases events in seq order, once each, holding back what follows a gap."""

    def __init__(self, after: int = 0) -> None:
        self.last_seq = after
        """The last contiguous seq released (or skipped as undecodable)."""
        self._held: dict[int, Event | None] = {}

    @property
    def gap(self) -> bool:
        """True while later events are held back waiting for missing ones."""
        return bool(self._held)

    @property
    def missing(self) -> tuple[int, int] | None:
        """The first missing seq range (inclusive), if any."""
        if not self._held:
            return None
        return self.last_seq + 1, min(self._held) - 1

    def push(self, seq: int, event: Event | None) -> list[Event]:
        """Offer one event (``None`` for an undecodable frame with a known seq); return what is releasable."""
        if seq == self.last_seq + 1 and not self._held:  # the common case: next in line, nothing held
            self.last_seq = seq
            return [event] if event is not None else []
        if seq <= self.last_seq or seq in self._held:
            return []
        if seq != self.last_seq + 1:
            self._held[seq] = event
            return []
        out: list[Event] = []
        if event is not None:
            out.append(event)
        self.last_seq = seq
        while self._held:
            nxt = self._held.pop(self.last_seq + 1, _SENTINEL)
            if nxt is _SENTINEL:
                break
            if nxt is not None:
                out.append(nxt)  # type: ignore[arg-type]
            self.last_seq += 1
        return out

    def push_many(self, events: list[Event]) -> list[Event]:
        """Offer decoded events in arrival order; a contiguous run with nothing held goes straight through."""
        if not self._held and events:
            first = self.last_seq + 1
            if list(map(_event_seq, events)) == list(range(first, first + len(events))):
                self.last_seq = events[-1].seq
                return events
        out: list[Event] = []
        for event in events:
            out += self.push(event.seq, event)
        return out

    def give_up_gap(self) -> tuple[int, list[Event]]:
        """The missing events will not come: count them as missed and release everything held."""
        if not self._held:
            return 0, []
        first_held = min(self._held)
        missed = first_held - self.last_seq - 1
        self.last_seq = first_held - 1
        return missed, self.push(first_held, self._held.pop(first_held))


_SENTINEL = object()


def _through_end(events: list[Event]) -> tuple[list[Event], bool]:
    """The events up to and including a session end (nothing after it is shown), and whether one came."""
    for i, event in enumerate(events):
        if isinstance(event, SessionEnded):
            return events[: i + 1], True
    return events, False


def _release(
    order: EventOrderer, frames: list[SSEFrame], skipped: int
) -> tuple[list[Event | StreamStatus], int, int | None]:
    """One chunk's frames through the orderer: what to yield (events, and Skipped where a frame could not be
    decoded), the new skipped total, and the last seq if the session ended (frames after that are ignored).
    """
    batch = decode_batch(frames)
    if batch is not None:  # the common case: all good, in one pydantic call
        released, ended = _through_end(order.push_many(batch))
        return cast("list[Event | StreamStatus]", released), skipped, order.last_seq if ended else None
    out: list[Event | StreamStatus] = []
    for frame, decoded in zip(frames, decode_frames(frames), strict=True):
        if isinstance(decoded, EventDecodeError):
            skipped += 1
            out.append(Skipped(str(decoded), skipped))
            seq = _frame_seq(frame)
            if seq is None:
                continue
            released, ended = _through_end(order.push(seq, None))
        else:
            released, ended = _through_end(order.push(decoded.seq, decoded))
        out += released
        if ended:
            return out, skipped, order.last_seq
    return out, skipped, None


async def _session_over(client: Client, session_id: str) -> bool:
    """Ask REST whether the session has ended (a stream that closes cleanly with nothing new may mean so)."""
    try:
        return (await client.get_session(session_id)).ended
    except ClientError:
        return False


class _Reconnect(Exception):
    def __init__(self, reason: str, *, immediate: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.immediate = immediate


async def follow_local(
    client: Client, session_id: str, *, after: int = 0
) -> AsyncIterator[Event | StreamStatus]:
    """Follow one session's SSE stream on our local server (see the module docstring for the promises)."""
    order = EventOrderer(after)
    skipped = 0
    attempt = 0
    server_retry: float | None = None
    gap_refills = 0
    gap_mark: int | None = None

    while True:
        yield Connecting(attempt + 1)
        try:
            async with client.open_event_stream(session_id, order.last_seq) as response:
                status = response.status_code
                if 400 <= status < 500 and status not in _RETRY_4XX:
                    await response.aread()
                    err = client.api_error(response, f"session {short_id(session_id)}")
                    yield Refused(err.hint, status)
                    return
                if status >= 400:
                    await response.aread()
                    raise _Reconnect(f"the server answered {status}")
                ctype = response.headers.get("content-type", "")
                if "text/event-stream" not in ctype:
                    raise _Reconnect(f"the server sent {ctype or 'no content type'}, not an event stream")
                yield Live(order.last_seq)
                decoder = SSEDecoder()
                chunks = response.aiter_bytes().__aiter__()
                released_here = 0
                while True:
                    try:
                        async with asyncio.timeout(client.stall_timeout):
                            chunk = await anext(chunks)
                    except StopAsyncIteration:
                        if not released_here and await _session_over(client, session_id):
                            # e.g. resuming at or past the end of an ended session: nothing more will come
                            yield Ended(order.last_seq)
                            return
                        raise _Reconnect("the server closed the stream") from None
                    except TimeoutError:
                        raise _Reconnect(
                            f"stalled: nothing received for {client.stall_timeout:g} s"
                        ) from None
                    attempt = 0  # bytes flow again: the next drop starts the backoff afresh
                    frames = decoder.feed(chunk)
                    if decoder.retry_ms is not None:
                        server_retry = decoder.retry_ms / 1000
                    released_here += len(frames)
                    items, skipped, end_seq = _release(order, frames, skipped)
                    for item in items:
                        yield item
                    if end_seq is not None:
                        yield Ended(end_seq)
                        return
                    if order.gap:
                        lo, hi = order.missing or (0, 0)
                        if gap_mark == order.last_seq:
                            gap_refills += 1
                        else:
                            gap_mark, gap_refills = order.last_seq, 1
                        if gap_refills > _MAX_GAP_REFILLS:
                            missed, released_all = order.give_up_gap()
                            yield Missed(missed)
                            gap_mark, gap_refills = None, 0
                            released, ended = _through_end(released_all)
                            for event in released:
                                yield event
                            if ended:
                                yield Ended(order.last_seq)
                                return
                        else:
                            raise _Reconnect(f"gap: events {lo}-{hi} missing, fetching them", immediate=True)
        except _Reconnect as exc:
            reason, immediate = exc.reason, exc.immediate
        except (httpx.ConnectError, httpx.ConnectTimeout):
            reason, immediate = f"cannot reach {client.display_url}", False
        except httpx.TimeoutException:
            reason, immediate = f"stalled: nothing received for {client.stall_timeout:g} s", False
        except httpx.TransportError as exc:
            reason, immediate = f"connection lost ({type(exc).__name__})", False
        attempt += 1
        if immediate:
            delay = 0.0
        else:
            # ``retry: 0`` cannot be grown from (0·2^n stays 0: a busy loop against a dead server), so a
            # zero falls back to our own start like no ``retry:`` at all.
            initial = server_retry or client.backoff_initial
            delay = backoff_delay(attempt, initial=initial, maximum=client.backoff_max)
        yield Reconnecting(attempt, delay, reason)
        if delay:
            await asyncio.sleep(delay)
