"""Pure mapping of a Preloop 0.17.1 server's messages into our event vocabulary (no I/O).

Preloop has no event stream with sequence numbers. What it has, per runtime session:

* websocket envelopes ``{account_id, topic, type, timestamp, payload, runtime_session_id}`` pushed
  live on ``/api/v1/ws/runtime-sessions/{id}``;
* the activity list ``GET .../{id}/activity`` (newest first) that holds most of the same facts;
* REST lists (notes, approvals, the session row) that the follower polls for what is never pushed.

Every source becomes a :class:`Draft`: zero or more event bodies (without ``seq``) plus a stable
``key`` naming the fact (``tool:<activity_id>``, ``note:<note_id>:delivered``, ``session:ended`` ...).
:class:`PreloopMapper` (one per follow, a :class:`client.backends.wire.Sequencer`) maps drafts to
events: it drops any whose key it has already seen (the same tool call replayed from the activity list
and pushed live), numbers the survivors with a contiguous local ``seq``, stamps each with its key as
``server_id`` (the fact's identity on the server: the same in every follow, unlike the local ``seq``)
and validates them into :mod:`client.events` models. (A Dendrux app's ``DendruxMapper`` is the same
job for its raw events.)

Mapping (see docs/preloop.md for the full table):

=====================================================  ==============================================
Preloop                                                ours
=====================================================  ==============================================
``runtime_session_updated`` / activity ``tool_call``    ``tool.started`` + ``tool.completed``
``... agent_control_message`` + ``kind=operator_note``  ``note.delivered``
``model_gateway_request_started``                       nothing visible (allocates the step number)
``model_gateway_call`` / activity model call            ``model.delta`` + ``model.step`` (+ its usage)
``runtime_session_ended`` / activity ``session_ended``  ``session.ended``
activity ``session_started``                            ``session.started``
other activity / envelope types                         ``UnknownEvent`` (``preloop.<type>``)
``audit_event``, ``managed_agent_updated``, pong        dropped (not about the session's timeline)
=====================================================  ==============================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from client.backends.wire import (
    RESERVED_FIELDS,
    Sequencer,
    as_count,
    as_dict,
    as_int,
    as_str,
    as_usd,
    event_body,
    now,
    parse_time,
)
from client.events import NOTE_EVENT_TYPES, Event
from client.models import ActivityItem, Approval, Note, NoteAuthor, Session, iso

__all__ = [
    "Draft",
    "PreloopMapper",
    "approval_decided_draft",
    "approval_requested_draft",
    "args_summary",
    "delivered_draft",
    "delivered_note_id",
    "from_activity",
    "from_envelope",
    "note_draft",
    "parse_time",
    "replay_drafts",
    "session_ended_draft",
    "session_updated_draft",
    "tool_status",
]

# Envelope types that never belong on a session's timeline.
_IGNORED_TYPES = frozenset({"audit_event", "managed_agent_updated", "pong", "heartbeat", "attached"})
_OK_STATUSES = frozenset({"allowed", "approved", "allow", "ok", "success", "succeeded", "completed"})
_DENIED_STATUSES = frozenset({"declined", "denied", "deny", "blocked", "rejected", "timed_out"})
_MODEL_ACTIVITY_TYPES = frozenset({"model_gateway_call", "model_call", "gateway_call", "api_usage"})
_SESSION_END_TYPES = frozenset({"runtime_session_ended", "runtime_session_hook_ended"})
_TOOL_FINISH_REASONS = frozenset({"tool_calls", "tool_use", "function_call"})


@dataclass(frozen=True, slots=True)
class Draft:
    """Events for one Preloop fact, not yet numbered. ``key`` is how duplicates are recognised."""

    key: str
    at: datetime
    bodies: tuple[dict[str, Any], ...]
    # For model calls: the id that names the step, so a later "call finished" reuses its number.
    model_call_id: str | None = None


def _single(kind: str, session_id: str, at: datetime, key: str, **payload: Any) -> Draft:
    """One Preloop fact that is one of our events."""
    return Draft(key=key, at=at, bodies=(event_body(kind, session_id, at, **payload),))


# --------------------------------------------------------------------------------------------------
# Tool calls
# --------------------------------------------------------------------------------------------------


def tool_status(status: str | None, decision: str | None = None) -> str:
    """Preloop's permission outcome → our tool status: denied calls never ran, errors are errors."""
    for value in (status, decision):
        if value is None:
            continue
        lowered = value.lower()
        if lowered in _DENIED_STATUSES:
            return "denied"
        if lowered in ("error", "failed", "failure"):
            return "error"
        if lowered in _OK_STATUSES:
            return "ok"
    return "ok"


def args_summary(summary: Any) -> str:
    """Preloop records argument *sizes*, not values (``{"command": 8}``): say so, briefly."""
    if not isinstance(summary, dict) or not summary:
        return ""
    parts = []
    for name, size in summary.items():
        parts.append(f"{name} ({size} chars)" if isinstance(size, int) else str(name))
    return ", ".join(parts)


def _tool_draft(
    session_id: str,
    *,
    activity_id: str | None,
    tool_name: str | None,
    status: str | None,
    summary: str | None,
    metadata: dict[str, Any],
    at: datetime,
) -> Draft:
    name = tool_name or "tool"
    call_id = activity_id or f"{name}@{iso(at)}"
    call = {"call_id": call_id, "name": name}
    started = event_body(
        "tool.started", session_id, at, **call, args_summary=args_summary(metadata.get("arguments_summary"))
    )
    completed = event_body(
        "tool.completed",
        session_id,
        at,
        **call,
        status=tool_status(status, as_str(metadata.get("decision"))),
        duration_ms=as_int(metadata.get("duration_ms")),
        result_summary=summary or "",
    )
    return Draft(key=f"tool:{call_id}", at=at, bodies=(started, completed))


# --------------------------------------------------------------------------------------------------
# Notes
# --------------------------------------------------------------------------------------------------


def note_event_type(state: str, *, first_seen: bool) -> str:
    """A note seen for the first time while pending is "created"; otherwise its state names the event."""
    if first_seen and state == "pending":
        return "note.created"
    return f"note.{state}"


def note_draft(session_id: str, note: Note, *, first_seen: bool) -> Draft | None:
    """A polled note whose state we have not reported yet (None for a state we cannot name)."""
    kind = note_event_type(note.state, first_seen=first_seen)
    if kind not in NOTE_EVENT_TYPES:
        return None
    at = (
        note.delivered_at
        or note.cancelled_at
        or note.expired_at
        or note.undeliverable_at
        or note.claimed_at
        or note.created_at
        or now()
    )
    if kind == "note.created":
        at = note.created_at or at
    # "created" and "pending" are the same fact: key both as the state the note was in.
    return _single(
        kind, session_id, at, f"note:{note.note_id}:{note.state}", note=note.model_dump(mode="json")
    )


def _delivered_note_draft(
    session_id: str, *, summary: str | None, metadata: dict[str, Any], at: datetime
) -> Draft | None:
    note_id = as_str(metadata.get("note_id"))
    if note_id is None:
        return None
    note = Note(
        note_id=note_id,
        state="delivered",
        text=summary or "",
        runtime_session_id=session_id,
        author=NoteAuthor(
            display=as_str(metadata.get("author_display")),
            auth_method=as_str(metadata.get("author_auth_method")),
        ),
        delivered_at=at,
        delivery_channel=as_str(metadata.get("delivery_channel")),
        delivery_event=as_str(metadata.get("delivery_event")),
        delivered_turn_index=as_int(metadata.get("turn_index")),
    )
    return delivered_draft(session_id, note, at)


def delivered_draft(session_id: str, note: Note, at: datetime | None = None) -> Draft:
    """A note's delivery, carrying ``note`` as given: the pushed frame's few fields, or (what the follower
    fetches when the push comes) the note's whole row, with its sent time and delivery event."""
    when = at or note.delivered_at or now()
    key = f"note:{note.note_id}:delivered"
    return _single("note.delivered", session_id, when, key, note=note.model_dump(mode="json"))


def delivered_note_id(draft: Draft) -> str | None:
    """The note a draft delivers (from a push or the activity list, where only a few fields are known)."""
    parts = draft.key.split(":")
    return parts[1] if len(parts) == 3 and parts[0] == "note" and parts[2] == "delivered" else None


# --------------------------------------------------------------------------------------------------
# Approvals (polled: the session socket never carries them)
# --------------------------------------------------------------------------------------------------


def approval_requested_draft(session_id: str, approval: Approval) -> Draft:
    """A pending approval the poll found for the first time."""
    at = approval.requested_at or now()
    return _single(
        "approval.requested",
        session_id,
        at,
        f"approval:{approval.id}:requested",
        approval=approval.model_dump(mode="json"),
    )


def approval_decided_draft(session_id: str, approval: Approval) -> Draft:
    """An approval that left the pending list, as the server now has it."""
    at = approval.resolved_at or now()
    return _single(
        "approval.decided",
        session_id,
        at,
        f"approval:{approval.id}:decided",
        approval=approval.model_dump(mode="json"),
    )


# --------------------------------------------------------------------------------------------------
# Model calls (shape not in the 0.17.1 captures: read tolerantly)
# --------------------------------------------------------------------------------------------------


def _entry_text(entry: Mapping[str, Any]) -> str:
    for name in ("text", "content", "preview", "message"):
        value = entry.get(name)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            parts = [
                part.get("text", "") if isinstance(part, dict) else str(part)
                for part in value
                if not isinstance(part, dict) or isinstance(part.get("text"), str)
            ]
            return "".join(parts)
    return ""


def model_response(payload: Mapping[str, Any]) -> tuple[str, int]:
    """The model's own words and how many tools it called, from a call's ``conversation_preview``."""
    preview = payload.get("conversation_preview")
    if preview is None:
        preview = as_dict(payload.get("metadata")).get("conversation_preview")
    texts: list[str] = []
    tool_calls = 0
    if isinstance(preview, list):
        for entry in preview:
            if not isinstance(entry, dict) or entry.get("source") != "response":
                continue
            text = _entry_text(entry)
            if text:
                texts.append(text)
            calls = entry.get("tool_calls")
            if isinstance(calls, list):
                tool_calls += len(calls)
            elif isinstance(calls, int):
                tool_calls += calls
            if entry.get("type") in ("tool_call", "tool_use", "function_call"):
                tool_calls += 1
    for source in (payload, as_dict(payload.get("metadata"))):
        count = as_int(source.get("tool_call_count"))
        if count is not None:
            tool_calls = max(tool_calls, count)
        calls = source.get("tool_calls")
        if isinstance(calls, list):
            tool_calls = max(tool_calls, len(calls))
        if (
            source.get("finish_reason") in _TOOL_FINISH_REASONS
            or source.get("stop_reason") in _TOOL_FINISH_REASONS
        ):
            tool_calls = max(tool_calls, 1)
    return "\n".join(texts), tool_calls


def _model_call_id(payload: Mapping[str, Any], fallback: str) -> str:
    for name in ("api_usage_id", "request_id", "call_id", "activity_id", "id"):
        value = as_str(payload.get(name))
        if value:
            return value
    return fallback


def model_usage(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a gateway call used, read tolerantly (the activity item's ``total_tokens`` and
    ``estimated_cost``, or a call's own token fields); None when it names no figure. A cost of 0 is kept
    as None: Preloop says 0.0 for a model it has no price for."""
    meta = as_dict(payload.get("metadata"))

    def first(*names: str) -> Any:
        for source in (payload, meta):
            for name in names:
                if source.get(name) is not None:
                    return source.get(name)
        return None

    inputs = as_count(first("input_tokens", "prompt_tokens"))
    outputs = as_count(first("output_tokens", "completion_tokens"))
    total = as_count(first("total_tokens"))
    cost = as_usd(first("estimated_cost", "cost_usd", "cost"))
    if not any((inputs, outputs, total, cost)):
        return None
    usage: dict[str, Any] = {
        "input_tokens": inputs,
        "output_tokens": outputs,
        "total_tokens": total,
        "cost_usd": cost or None,
    }
    model = as_str(first("model_alias", "model"))
    if model:
        usage["model"] = model
    return usage


def _model_draft(session_id: str, payload: Mapping[str, Any], at: datetime, call_id: str) -> Draft:
    text, tool_calls = model_response(payload)
    phase = "commentary" if tool_calls else "final_answer"
    bodies: list[dict[str, Any]] = []
    if text:
        bodies.append(event_body("model.delta", session_id, at, iteration=0, text=text))
    step: dict[str, Any] = {"iteration": 0, "phase": phase, "text": text, "tool_calls": tool_calls}
    usage = model_usage(payload)
    if usage is not None:
        step["usage"] = usage
    bodies.append(event_body("model.step", session_id, at, **step))
    return Draft(key=f"model:{call_id}", at=at, bodies=tuple(bodies), model_call_id=call_id)


# --------------------------------------------------------------------------------------------------
# Session rows
# --------------------------------------------------------------------------------------------------


def _session_row(session_id: str, session: Session | None) -> Session:
    return session if session is not None else Session(id=session_id)


def session_ended_draft(
    session_id: str, session: Session | None, at: datetime | None = None, reason: str | None = None
) -> Draft:
    """The session's end, from whichever source saw it first (push, activity, the 30 s check)."""
    row = _session_row(session_id, session)
    ended = row.ended_at or at or now()
    if row.ended_at is None:
        row = row.model_copy(update={"ended_at": ended, "is_active_now": False, "activity_status": "ended"})
    return _single(
        "session.ended",
        session_id,
        ended,
        "session:ended",
        session=row.model_dump(mode="json"),
        reason=reason,
    )


def session_updated_draft(session_id: str, row: Session, at: datetime | None = None) -> Draft:
    """A polled session row whose tokens or cost moved (nothing pushes it): ``session.updated``, so an
    attached header shows the cost as it grows. Keyed by the figures, so the same row says it once."""
    usage = row.token_usage
    figures = f"{usage.total_tokens if usage else 0}:{row.estimated_cost or 0}"
    when = at or row.last_activity_at or now()
    return _single(
        "session.updated", session_id, when, f"session:usage:{figures}", session=row.model_dump(mode="json")
    )


def session_started_draft(session_id: str, session: Session | None, at: datetime | None = None) -> Draft:
    """The session's start as a timeline event (the activity list's oldest item)."""
    row = _session_row(session_id, session)
    started = row.started_at or at or now()
    return _single(
        "session.started", session_id, started, "session:started", session=row.model_dump(mode="json")
    )


def _unknown_draft(session_id: str, kind: str, key: str, at: datetime, raw: dict[str, Any]) -> Draft:
    # UnknownEvent keeps its whole body as ``raw``: merge Preloop's fields in (ours win on a clash).
    body = {k: v for k, v in raw.items() if k not in RESERVED_FIELDS}
    body.update(event_body(f"preloop.{kind}", session_id, at))
    return Draft(key=key, at=at, bodies=(body,))


# --------------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------------


def from_activity(session_id: str, item: ActivityItem, session: Session | None = None) -> Draft | None:
    """One activity item → a draft, keyed like its live twin so replay and push dedupe."""
    at = item.timestamp or now()
    meta = item.metadata
    kind = item.activity_type
    if kind == "tool_call":
        return _tool_draft(
            session_id,
            activity_id=item.activity_id,
            tool_name=item.tool_name or item.title,
            status=item.status,
            summary=item.summary,
            metadata=meta,
            at=at,
        )
    if kind == "agent_control_message":
        if meta.get("kind") == "operator_note":
            return _delivered_note_draft(session_id, summary=item.summary, metadata=meta, at=at)
        return _unknown_draft(
            session_id, kind, f"activity:{item.activity_id or iso(at)}", at, item.model_dump(mode="json")
        )
    if kind in _MODEL_ACTIVITY_TYPES or kind.startswith("model_gateway"):
        payload = {
            **meta,
            "api_usage_id": item.api_usage_id or meta.get("api_usage_id"),
            "total_tokens": item.total_tokens if item.total_tokens is not None else meta.get("total_tokens"),
            "estimated_cost": item.estimated_cost
            if item.estimated_cost is not None
            else meta.get("estimated_cost"),
        }
        call_id = _model_call_id(payload, item.activity_id or iso(at))
        return _model_draft(session_id, payload, at, call_id)
    if kind == "session_ended":
        return session_ended_draft(session_id, session, at)
    if kind == "session_started":
        return session_started_draft(session_id, session, at)
    key = f"activity:{item.activity_id}" if item.activity_id else f"activity:{kind}:{iso(at)}"
    return _unknown_draft(session_id, kind, key, at, item.model_dump(mode="json"))


def from_envelope(
    session_id: str, envelope: Mapping[str, Any], session: Session | None = None
) -> Draft | None:
    """One live websocket frame → a draft, or None when it is not part of this session's timeline."""
    kind = envelope.get("type")
    if not isinstance(kind, str) or kind in _IGNORED_TYPES:
        return None
    target = envelope.get("runtime_session_id")
    payload = as_dict(envelope.get("payload"))
    if target is not None and target != session_id and payload.get("runtime_session_id") != session_id:
        return None
    at = parse_time(envelope.get("timestamp")) or now()
    if kind == "runtime_session_updated":
        activity = as_str(payload.get("activity_type"))
        meta = as_dict(payload.get("metadata"))
        # The live frame's row time equals the activity item's timestamp (same instant, same column).
        item_at = parse_time(payload.get("last_activity_at")) or at
        if activity == "tool_call" or (activity is None and as_str(payload.get("tool_name"))):
            return _tool_draft(
                session_id,
                activity_id=as_str(payload.get("activity_id")),
                tool_name=as_str(payload.get("tool_name")),
                status=as_str(payload.get("status")),
                summary=as_str(payload.get("summary")),
                metadata=meta,
                at=item_at,
            )
        if activity == "agent_control_message" and meta.get("kind") == "operator_note":
            return _delivered_note_draft(
                session_id, summary=as_str(payload.get("summary")), metadata=meta, at=at
            )
        if activity is not None and (
            activity in _MODEL_ACTIVITY_TYPES or activity.startswith("model_gateway")
        ):
            call_id = _model_call_id(payload, iso(at))
            return _model_draft(session_id, payload, at, call_id)
        if activity is None:
            return None  # a bare row touch (last_activity_at moved): nothing to show
        key = f"activity:{payload.get('activity_id') or activity + ':' + iso(item_at)}"
        return _unknown_draft(session_id, activity, key, item_at, dict(envelope))
    if kind == "agent_control_message":
        meta = as_dict(payload.get("metadata"))
        if meta.get("kind") == "operator_note" or payload.get("kind") == "operator_note":
            return _delivered_note_draft(
                session_id,
                summary=as_str(payload.get("summary")) or as_str(payload.get("text")),
                metadata={**payload, **meta},
                at=at,
            )
        return None
    if kind == "model_gateway_request_started":
        call_id = _model_call_id(payload, iso(at))
        return Draft(key=f"model-start:{call_id}", at=at, bodies=(), model_call_id=call_id)
    if kind == "model_gateway_call":
        call_id = _model_call_id(payload, iso(at))
        return _model_draft(session_id, payload, at, call_id)
    if kind in _SESSION_END_TYPES:
        row: Session | None = session
        if kind == "runtime_session_ended" and as_str(payload.get("id")) == session_id:
            row = Session.model_validate(payload)
        reason = (
            "ended by the harness" if kind == "runtime_session_hook_ended" else as_str(payload.get("reason"))
        )
        return session_ended_draft(session_id, row, parse_time(payload.get("timestamp")) or at, reason)
    if kind == "session_ended":
        return session_ended_draft(session_id, session, at)
    return _unknown_draft(session_id, kind, f"envelope:{kind}:{iso(at)}", at, dict(envelope))


def replay_drafts(
    session_id: str, items_newest_first: Iterable[ActivityItem], session: Session | None = None
) -> list[Draft]:
    """The activity list, oldest first, as drafts (it arrives newest first and has no total)."""
    drafts = [from_activity(session_id, item, session) for item in reversed(list(items_newest_first))]
    return [draft for draft in drafts if draft is not None]


class PreloopMapper(Sequencer):
    """One follow's drafts to numbered events, each fact once (replay and push both report most facts)."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self._seen: set[str] = set()
        self._iterations: dict[str, int] = {}

    def seen(self, key: str) -> bool:
        """Whether this fact was already mapped (used to count what a replay brought back)."""
        return key in self._seen

    def iteration_for(self, call_id: str) -> int:
        """Model steps are numbered in the order their calls were first seen (started or finished)."""
        if call_id not in self._iterations:
            self._iterations[call_id] = len(self._iterations) + 1
        return self._iterations[call_id]

    def map(self, draft: Draft) -> list[Event]:
        """Events for a draft not seen before, numbered; an invalid body is counted and dropped."""
        if draft.key in self._seen:
            return []
        self._seen.add(draft.key)
        bodies = draft.bodies
        if draft.model_call_id:
            iteration = self.iteration_for(draft.model_call_id)
            bodies = tuple({**b, "iteration": iteration} if "iteration" in b else b for b in bodies)
        return self.number(bodies, server_id=draft.key)
