"""Ordering: release a session's events in seq order, once each, holding back what follows a gap. Pure.

Servers number a session's events contiguously, from 1 (ours, Preloop as numbered by its follower) or
from 0 (Dendrux): ``EventOrderer(first_seq=...)`` says which. A seq ahead of the next expected one opens a
**gap**: later events wait while the follower asks for the missing ones. A seq absurdly far ahead (more
than ``far_ahead`` past the cursor) is held like any gap but never becomes the cursor: if the gap is given
up it is set aside, so one bad frame cannot make every later event look like a duplicate.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Generic, Protocol

from typing_extensions import TypeVar

from client.events import Event, SessionEnded

__all__ = ["FAR_AHEAD", "EventOrderer", "through_end"]

FAR_AHEAD = 10_000
"""How far past the cursor a seq may be and still be taken as real when a gap is given up."""

_event_seq = attrgetter("seq")
_SENTINEL = object()


class Numbered(Protocol):
    """Anything with a ``seq``: our events, or a server's raw events before mapping (Dendrux's)."""

    @property
    def seq(self) -> int: ...


E = TypeVar("E", bound=Numbered, default=Event)


class EventOrderer(Generic[E]):
    """Pure ordering state: releases events in seq order, once each, holding back what follows a gap.

    Generic over what it orders: our events by default, or a backend's raw events (``EventOrderer[RawEvent]``)
    when the server's numbering must be checked before mapping."""

    def __init__(self, after: int | None = None, *, first_seq: int = 1, far_ahead: int = FAR_AHEAD) -> None:
        self.last_seq = first_seq - 1 if after is None else max(after, first_seq - 1)
        """The last contiguous seq released (or skipped as undecodable); ``first_seq - 1`` before any."""
        self.first_seq = first_seq
        self.far_ahead = far_ahead
        self.jumps = 0
        """How many offered seqs were ahead of the next expected one: a follower compares it before and
        after a chunk to tell "this connection skipped events" from "nothing new arrived"."""
        self._held: dict[int, E | None] = {}

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

    def push(self, seq: int, event: E | None) -> list[E]:
        """Offer one event (``None`` for an undecodable frame with a known seq); return what is releasable."""
        if seq == self.last_seq + 1 and not self._held:  # the common case: next in line, nothing held
            self.last_seq = seq
            return [event] if event is not None else []
        if seq <= self.last_seq:
            return []
        if seq != self.last_seq + 1:
            self.jumps += 1
            self._held.setdefault(seq, event)
            return []
        out: list[E] = []
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

    def push_many(self, events: list[E]) -> list[E]:
        """Offer decoded events in arrival order; a contiguous run with nothing held goes straight through."""
        if not self._held and events:
            first = self.last_seq + 1
            if list(map(_event_seq, events)) == list(range(first, first + len(events))):
                self.last_seq = events[-1].seq
                return events
        out: list[E] = []
        for event in events:
            out += self.push(event.seq, event)
        return out

    def give_up_gap(self) -> tuple[int, list[E], int]:
        """The missing events will not come: count them as missed and release what was held.

        Returns ``(missed, released, set_aside)``. Held seqs more than ``far_ahead`` past the cursor are
        set aside (dropped, counted in ``set_aside``) instead: they would move the cursor so far that every
        real event after it, ``session.ended`` included, would look like a duplicate.
        """
        if not self._held:
            return 0, [], 0
        limit = self.last_seq + 1 + self.far_ahead
        far = [seq for seq in self._held if seq > limit]
        for seq in far:
            del self._held[seq]
        if not self._held:
            return 0, [], len(far)
        first_held = min(self._held)
        missed = first_held - self.last_seq - 1
        self.last_seq = first_held - 1
        return missed, self.push(first_held, self._held.pop(first_held)), len(far)


def through_end(events: list[Event]) -> tuple[list[Event], bool]:
    """The events up to and including a session end (nothing after it is shown), and whether one came."""
    # ``type(...) is``: no event class derives from SessionEnded, and an isinstance check that fails on a
    # pydantic model goes through ABCMeta (~80 ns, once per event of every live stream).
    for i, event in enumerate(events):
        if type(event) is SessionEnded:
            return events[: i + 1], True
    return events, False
