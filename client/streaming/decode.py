"""Frames to events: validate a whole chunk's frames in one pydantic call, and fall back frame by frame.

Pure (no I/O). Every backend whose server sends our event vocabulary as SSE frames uses it; a backend with
another vocabulary maps its frames itself and hands events to :mod:`client.streaming.order`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import attrgetter
from typing import Protocol, cast

from pydantic import TypeAdapter, ValidationError

from client.events import Event, EventDecodeError, KnownEvent, parse_event

__all__ = ["Frame", "decode_batch", "decode_frame", "decode_frames", "frame_seq"]

_known: TypeAdapter[KnownEvent] = TypeAdapter(KnownEvent)
_known_list: TypeAdapter[list[KnownEvent]] = TypeAdapter(list[KnownEvent])
_frame_data = attrgetter("data")  # C-level field access: these run once per event
_frame_event = attrgetter("event")
_event_type = attrgetter("type")


class Frame(Protocol):
    """One dispatched SSE event, as any decoder gives it (``event`` is ``""`` when the server named none)."""

    @property
    def event(self) -> str: ...

    @property
    def data(self) -> str: ...

    @property
    def id(self) -> str: ...


def decode_frame(frame: Frame) -> Event:
    """Validate one frame's data as an event (fast path straight from JSON; tolerant slow path otherwise).

    The SSE ``event:`` field wins over the body's ``type``, like :func:`client.events.parse_event`; the
    SSE default name ``message`` (or none) leaves the body's ``type`` alone.
    """
    name = "" if frame.event == "message" else frame.event
    try:
        event = _known.validate_json(frame.data)
    except ValidationError:
        return parse_event(frame.data, name or None)
    if name and name != event.type:
        return parse_event(frame.data, name)
    return event


def decode_batch(frames: Sequence[Frame]) -> list[Event] | None:
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


def decode_frames(frames: Sequence[Frame]) -> list[Event | EventDecodeError]:
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


def frame_seq(frame: Frame) -> int | None:
    """The seq of a frame we could not decode: the ``seq`` in its JSON if any, else its SSE id (which may be
    a previous frame's, as ids persist: then it is simply seen already), else None."""
    try:
        obj = json.loads(frame.data)
    except ValueError:
        obj = None
    seq = obj.get("seq") if isinstance(obj, dict) else None
    if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0:
        return seq
    return int(frame.id) if frame.id.isascii() and frame.id.isdigit() else None
