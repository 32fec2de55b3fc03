"""The session event stream vocabulary (ours: Preloop itself only has a websocket).

On the wire (``GET /api/v1/runtime-sessions/{id}/events``, ``text/event-stream``) each event is::

    id: 42
    event: tool.started
    data: {"seq": 42, "type": "tool.started", "session_id": "...", "at": "2026-...Z", ...}

``seq`` is per session, contiguous from 1 (from 0 on a Dendrux app), never skipped or reused. ``data`` is
one JSON object whose fields are those of the matching model below. Parsing is tolerant: an event type
this client does not know becomes an :class:`UnknownEvent` (kept, shown as such, never an exception); a
body that is not valid JSON or not valid for its type raises :class:`EventDecodeError` so the stream can
count and skip it.

Model text arrives as ``model.delta`` chunks tagged with their ``iteration`` (one model step). When the
step finishes, ``model.step`` says how it ended: ``phase="commentary"`` when the step went on to call
tools (the text was narration), ``phase="final_answer"`` when it did not. ``run.completed`` carries the
run's real answer, which is what the client shows as the final answer.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from client.models import Approval, CallUsage, Note, Session, UtcDatetime, WireModel

EventType = Literal[
    "session.started",
    "session.updated",
    "session.ended",
    "run.started",
    "model.delta",
    "model.step",
    "tool.started",
    "tool.completed",
    "approval.requested",
    "approval.decided",
    "note.created",
    "note.claimed",
    "note.delivered",
    "note.acknowledged",
    "note.cancelled",
    "note.expired",
    "note.failed",
    "note.undeliverable",
    "run.completed",
    "run.failed",
    "run.cancelled",
]

NOTE_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "note.created",
        "note.claimed",
        "note.delivered",
        "note.acknowledged",
        "note.cancelled",
        "note.expired",
        "note.failed",
        "note.undeliverable",
    }
)


class EventDecodeError(ValueError):
    """A frame whose data is not JSON, or not valid for its declared type. Skip and count it."""


class BaseEvent(WireModel):
    """Fields every event carries.

    ``seq`` is the stream's number. On our server it is also the event's identity there (stored, resumable
    with ``after``); a backend that maps another server's messages numbers its events itself, per follow,
    so it also says which of the server's own facts an event came from: ``server_seq`` where the server
    numbers its events (a Dendrux app's ``sequence_index``), ``server_id`` where it names them instead
    (Preloop: the fact's stable key, built from its activity item's id, ``tool:<activity id>``, or from a
    note's or approval's id and state). Both stay out of the wire when unset, so our server's events are
    unchanged and an older client reads a newer one's events."""

    seq: int = Field(ge=0)  # ours count from 1; a Dendrux app counts from 0
    type: str
    session_id: str
    at: UtcDatetime
    server_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    server_seq: int | None = Field(default=None, ge=0, exclude_if=lambda v: v is None)

    @property
    def origin(self) -> str | int | None:
        """The server's own identity of this event: its number where it has one, else its name; None on
        our server, where ``seq`` is that identity (``client.timeline.Place`` reads it)."""
        return self.server_seq if self.server_seq is not None else self.server_id


class SessionStarted(BaseEvent):
    type: Literal["session.started"] = "session.started"
    session: Session


class SessionUpdated(BaseEvent):
    """The session row changed (title, counters, activity); carries the row as it now is."""

    type: Literal["session.updated"] = "session.updated"
    session: Session


class SessionEnded(BaseEvent):
    """The last event of a session's stream: nothing follows it."""

    type: Literal["session.ended"] = "session.ended"
    session: Session
    reason: str | None = None


class RunStarted(BaseEvent):
    """The agent took a new task; iterations restart within a run but stay unique per session."""

    type: Literal["run.started"] = "run.started"
    run_id: str
    task: str = ""


class ModelDelta(BaseEvent):
    """A chunk of model text for one step; provisional until its ``model.step`` arrives."""

    type: Literal["model.delta"] = "model.delta"
    run_id: str | None = None
    iteration: int
    text: str


class ModelStep(BaseEvent):
    """A model step finished: ``commentary`` if it went on to call tools, else ``final_answer``."""

    type: Literal["model.step"] = "model.step"
    run_id: str | None = None
    iteration: int
    phase: Literal["commentary", "final_answer"]
    text: str = ""
    tool_calls: int = 0
    usage: CallUsage | None = Field(default=None, exclude_if=lambda v: v is None)
    """What the step's model call used, when the agent or server says (tokens, cost)."""


class ToolStarted(BaseEvent):
    type: Literal["tool.started"] = "tool.started"
    run_id: str | None = None
    call_id: str
    iteration: int | None = None
    name: str
    args_summary: str = ""
    args: dict[str, Any] = Field(default_factory=dict)


class ToolCompleted(BaseEvent):
    type: Literal["tool.completed"] = "tool.completed"
    run_id: str | None = None
    call_id: str
    name: str
    status: Literal["ok", "error", "denied"] = "ok"
    duration_ms: int | None = None
    result_summary: str = ""


class ApprovalRequested(BaseEvent):
    type: Literal["approval.requested"] = "approval.requested"
    approval: Approval


class ApprovalDecided(BaseEvent):
    """An approval left pending (approved, declined, expired): carries the full approval."""

    type: Literal["approval.decided"] = "approval.decided"
    approval: Approval


class NoteEvent(BaseEvent):
    """Any note state change; ``note`` is the full note as it now is."""

    type: Literal[
        "note.created",
        "note.claimed",
        "note.delivered",
        "note.acknowledged",
        "note.cancelled",
        "note.expired",
        "note.failed",
        "note.undeliverable",
    ]
    note: Note


class RunCompleted(BaseEvent):
    """The run's real answer: this, not the concatenated deltas, is the final answer shown."""

    type: Literal["run.completed"] = "run.completed"
    run_id: str | None = None
    iteration: int | None = None
    answer: str = ""


class RunFailed(BaseEvent):
    type: Literal["run.failed"] = "run.failed"
    run_id: str | None = None
    error: str = ""


class RunCancelled(BaseEvent):
    type: Literal["run.cancelled"] = "run.cancelled"
    run_id: str | None = None
    reason: str = ""


_SAID_FIELDS = ("summary", "message", "text", "title", "detail")


class UnknownEvent(BaseEvent):
    """An event type this client does not know. Kept with its raw data so it can still be shown."""

    raw: dict[str, Any] = Field(default_factory=dict)

    @property
    def said(self) -> str | None:
        """The event's own words when it has some (a Preloop session warning's summary), for display."""
        return next((v for k in _SAID_FIELDS if isinstance(v := self.raw.get(k), str) and v), None)


KnownEvent = Annotated[
    SessionStarted
    | SessionUpdated
    | SessionEnded
    | RunStarted
    | ModelDelta
    | ModelStep
    | ToolStarted
    | ToolCompleted
    | ApprovalRequested
    | ApprovalDecided
    | NoteEvent
    | RunCompleted
    | RunFailed
    | RunCancelled,
    Field(discriminator="type"),
]

Event = (
    SessionStarted
    | SessionUpdated
    | SessionEnded
    | RunStarted
    | ModelDelta
    | ModelStep
    | ToolStarted
    | ToolCompleted
    | ApprovalRequested
    | ApprovalDecided
    | NoteEvent
    | RunCompleted
    | RunFailed
    | RunCancelled
    | UnknownEvent
)

_KNOWN_TYPES: frozenset[str] = frozenset(EventType.__args__)  # type: ignore[attr-defined]
_known_adapter: TypeAdapter[KnownEvent] = TypeAdapter(KnownEvent)


def parse_event(data: str | bytes, event_type: str | None = None) -> Event:
    """Decode one ``data:`` payload into an event.

    ``event_type`` is the SSE ``event:`` field; when given it wins over the body's ``type`` so a server
    that omits ``type`` in the body still parses. Unknown types become :class:`UnknownEvent`.
    """
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EventDecodeError(f"event data is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise EventDecodeError("event data is not a JSON object")
    return event_from_dict(obj, event_type)


def event_from_dict(obj: dict[str, Any], event_type: str | None = None) -> Event:
    """Validate an already-decoded event object (see :func:`parse_event`)."""
    kind = event_type or obj.get("type")
    if not isinstance(kind, str) or not kind:
        raise EventDecodeError("event has no type")
    if kind != obj.get("type"):
        obj = {**obj, "type": kind}
    try:
        if kind in _KNOWN_TYPES:
            return _known_adapter.validate_python(obj)
        return UnknownEvent.model_validate({**obj, "raw": obj})
    except ValidationError as exc:
        raise EventDecodeError(f"invalid {kind} event: {exc.error_count()} field error(s)") from exc


def event_to_json(event: Event) -> str:
    """Serialise an event for the wire (the server's side of :func:`parse_event`)."""
    return event.model_dump_json(exclude={"raw"} if isinstance(event, UnknownEvent) else None)
