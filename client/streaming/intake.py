"""One session's numbered events, as they arrive, to what a follower yields: the shared middle of a
seq-numbered live feed in our event vocabulary (the local server's SSE stream).

:class:`SeqIntake` takes one SSE frame at a time (or already mapped events), decodes it, orders it
(:class:`~client.streaming.order.EventOrderer`), counts what could not be decoded (``Skipped``), stops at
``session.ended`` and decides what a gap means:

* a gap is only acted on when **the last frame** brought a seq past the next expected one (the connection
  skipped something). Something without an event in it (a ``retry:`` line, a keep-alive) says nothing
  about the gap, so a freshly reopened stream is given the time to send the missing events;
* acting means :class:`~client.streaming.reconnect.Retry` at once, resuming after the last contiguous seq
  (or the backend's own backfill: see ``SeqIntake.check_gap``'s caller), at most ``max_refills`` times
  for the same cursor; then the gap is given up: ``Missed(n)`` and the held events go out.
"""

from __future__ import annotations

from typing import cast

from client.events import Event, EventDecodeError, SessionEnded
from client.status import Missed, Skipped, StreamStatus
from client.streaming.decode import Frame, decode_frame, frame_seq
from client.streaming.order import EventOrderer, through_end
from client.streaming.reconnect import Retry

__all__ = ["SeqIntake"]

MAX_GAP_REFILLS = 3

Items = list[Event | StreamStatus]


class SeqIntake:
    """Ordering, skip counting, end detection and the gap policy for one follow (pure apart from raising
    :class:`Retry`). ``ended`` is set once ``session.ended`` went out: nothing after it is released."""

    def __init__(self, after: int = 0, *, first_seq: int = 1, max_refills: int = MAX_GAP_REFILLS) -> None:
        self.order = EventOrderer(after if after > 0 else None, first_seq=first_seq)
        self.skipped = 0
        self.ended = False
        self.max_refills = max_refills
        self._refills = 0
        self._gap_mark: int | None = None
        self._jumps_seen = 0

    def start_after(self, seq: int) -> None:
        """The server replays from after ``seq`` (a tail of the history was asked for): events up to
        ``seq`` were not sent on purpose and are no gap. Only before anything was released or held."""
        order = self.order
        if seq > order.last_seq and not order.gap and order.last_seq < order.first_seq:
            order.last_seq = seq

    @property
    def cursor(self) -> int:
        """The last contiguous seq: where a reopened stream resumes (``Last-Event-ID``)."""
        return self.order.last_seq

    def frame(self, frame: Frame) -> Items:
        """One SSE frame in our event vocabulary: the events it releases (none while a gap holds them),
        or ``Skipped`` when it cannot be decoded (its seq, when it can be told, still counts as seen)."""
        if self.ended:
            return []
        try:
            event = decode_frame(frame)
        except EventDecodeError as exc:
            skipped: Items = [self.skip(str(exc))]
            seq = frame_seq(frame)
            if seq is None:
                return skipped
            released, self.ended = through_end(self.order.push(seq, None))
            return skipped + cast("Items", released)
        released = self.order.push(event.seq, event)
        if len(released) == 1 and type(event) is not SessionEnded:
            return released  # type: ignore[return-value]  # the common case: this event alone, no end
        released, self.ended = through_end(released)
        return cast("Items", released)

    def events(self, events: list[Event]) -> Items:
        """Mapped events in arrival order: what is releasable, up to a session end."""
        if self.ended:
            return []
        released, self.ended = through_end(self.order.push_many(events))
        return cast("Items", released)

    def skip(self, reason: str) -> Skipped:
        """Count a frame that could not be read; the stream goes on."""
        self.skipped += 1
        return Skipped(reason, self.skipped)

    def check_gap(self) -> Items:
        """After a frame: raise :class:`Retry` (immediate) to refill a gap that frame revealed, or, after
        ``max_refills`` refills that brought nothing, give it up and return ``Missed`` and the held events."""
        jumps = self.order.jumps
        if jumps == self._jumps_seen:  # the common case, once per frame: this frame opened no gap
            return []
        self._jumps_seen = jumps
        if self.ended or not self.order.gap:
            return []
        lo, hi = self.order.missing or (0, 0)
        if self._gap_mark == self.order.last_seq:
            self._refills += 1
        else:
            self._gap_mark, self._refills = self.order.last_seq, 1
        if self._refills <= self.max_refills:
            raise Retry(f"gap: events {lo}-{hi} missing, fetching them", immediate=True)
        missed, released, set_aside = self.order.give_up_gap()
        self._gap_mark, self._refills = None, 0
        out: Items = []
        if set_aside:
            out.append(self.skip(f"{set_aside} event(s) numbered far beyond the stream were set aside"))
        if missed:
            out.append(Missed(missed))
        shown, self.ended = through_end(released)
        out += shown
        return out
