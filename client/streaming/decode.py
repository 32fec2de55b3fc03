"""SSE frames to events, one frame at a time (pure, no I/O).

A frame is whatever the SSE parser dispatched (httpx-sse's ``ServerSentEvent``: ``event``, ``data``,
``id``). A feed whose server sends our event vocabulary (the local server's stream, the attention feed)
decodes with it; a backend with another vocabulary (Dendrux) maps its frames itself and hands events to
:mod:`client.streaming.order`.
"""

from __future__ import annotations

import json
from typing import Protocol

from pydantic import TypeAdapter, ValidationError

from client.events import Event, KnownEvent, parse_event

__all__ = ["Frame", "decode_frame", "frame_seq"]

_known: TypeAdapter[KnownEvent] = TypeAdapter(KnownEvent)
_validate_json = _known.validator.validate_json  # (without the adapter's own wrapper per frame)


class Frame(Protocol):
    """One dispatched SSE event (``event`` is ``"message"`` or ``""`` when the server named none)."""

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
    name = frame.event
    data = frame.data
    try:
        event: Event = _validate_json(data)
    except ValidationError:
        return parse_event(data, None if name == "message" else name or None)
    if name != event.type and name != "message" and name:
        return parse_event(data, name)
    return event


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
