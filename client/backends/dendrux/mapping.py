"""Pure mapping of a Dendrux 0.4.1 app's run events and REST rows into our vocabulary (no I/O).

A Dendrux run is what we call a session (``session_id`` = ``run_id``). Its event log is numbered by
``sequence_index`` from **0**, contiguous; the follower orders raw events by that index, then
:class:`DendruxMapper` (one per follow, a :class:`client.backends.wire.Sequencer`, as Preloop's
``PreloopMapper`` is) turns each into zero or more of our events, numbered with a contiguous local
``seq`` from 1 (one Dendrux event may become several of ours, and some need REST rows first); each
carries the ``sequence_index`` it came from as ``server_seq``, the event's identity on the app.

=====================================  ==========================================================
Dendrux                                ours
=====================================  ==========================================================
``run.started``                        ``session.started`` + ``run.started`` (task = run input)
``llm.completed`` (``phase``)           ``model.delta`` + ``model.step`` (text = the ``/traces``
                                       assistant row with the same ``meta.iteration``; usage = its
                                       tokens and ``cost_usd``), then
                                       ``tool.started`` for each of that row's ``tool_calls``;
                                       without the row yet: ``model.step`` with no text, and the
                                       same ``model.step`` again with its text once it lands
``tool.completed``                     ``tool.completed`` (ok / error; ``denied`` when a human
                                       declined it: held until ``approval.decided`` says so)
``approval.requested``                 ``approval.requested`` (approval id = call id)
``run.paused`` / ``run.resumed``       ``session.updated`` (status ``waiting_approval`` / running)
``approval.decided{decisions[]}``      one ``approval.decided`` per gated call (approved/declined
                                       with the reason as the comment)
``inbox.delivered{note_id}``           ``note.delivered`` once per note (delivery is at least once)
``run.completed``                      ``run.completed`` (the run's answer) + ``session.ended``
``run.error`` / ``run.interrupted`` /  ``run.failed`` + ``session.ended``
``run.abandoned``
``run.cancelled``                      ``run.cancelled`` + ``session.ended``
anything else                          ``UnknownEvent`` typed ``dendrux.<event_type>`` (shown)
=====================================  ==========================================================

Timestamps: the SSE payload's ``timestamp`` looks like ``2026-11-30T11:35:49.632363+00:00Z`` (an offset
*and* a ``Z``); REST rows carry ``created_at`` instead. Both parse here.
"""

from __future__ import annotations

import json
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
from client.events import Event, EventDecodeError
from client.models import Approval, Note, Session, SessionList, TokenUsage, iso

__all__ = [
    "TERMINAL_EVENTS",
    "TERMINAL_STATUSES",
    "DendruxMapper",
    "RawEvent",
    "approval_from_row",
    "note_from_row",
    "parse_time",
    "raw_event",
    "session_from_run",
    "session_list",
]

TERMINAL_EVENTS = frozenset(
    {"run.completed", "run.error", "run.cancelled", "run.interrupted", "run.abandoned"}
)
TERMINAL_STATUSES = frozenset({"success", "error", "cancelled", "max_iterations"})
_FAILED_EVENTS = frozenset({"run.error", "run.interrupted", "run.abandoned"})


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One Dendrux run event, from the SSE stream or from ``GET /runs/{id}/events`` (same fields)."""

    index: int
    type: str
    iteration: int
    correlation_id: str | None
    at: datetime
    data: dict[str, Any]

    @property
    def seq(self) -> int:
        """The server's number (``sequence_index``), what the follower orders by."""
        return self.index


def raw_event(obj: Any) -> RawEvent:
    """Validate one SSE ``data:`` object or REST item; ``EventDecodeError`` when it is not one."""
    if isinstance(obj, str | bytes):
        try:
            obj = json.loads(obj)
        except ValueError as exc:
            raise EventDecodeError(f"event data is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise EventDecodeError("event data is not a JSON object")
    index = as_int(obj.get("sequence_index"))
    kind = as_str(obj.get("event_type"))
    if index is None or index < 0 or kind is None:
        raise EventDecodeError("Dendrux event without sequence_index or event_type")
    at = parse_time(obj.get("timestamp")) or parse_time(obj.get("created_at")) or now()
    return RawEvent(
        index=index,
        type=kind,
        iteration=as_int(obj.get("iteration_index")) or 0,
        correlation_id=as_str(obj.get("correlation_id")),
        at=at,
        data=as_dict(obj.get("data")),
    )


# --------------------------------------------------------------------------------------------------
# REST rows
# --------------------------------------------------------------------------------------------------


def _title(run: Mapping[str, Any]) -> str | None:
    data = run.get("input_data")
    text = data.get("input") if isinstance(data, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    return text.strip().splitlines()[0][:200]


def session_from_run(run: Mapping[str, Any], *, pending_approvals: int | None = None) -> Session:
    """A Dendrux run row (list summary or detail) as our session row."""
    status = as_str(run.get("status")) or "unknown"
    ended = status in TERMINAL_STATUSES
    updated = parse_time(run.get("updated_at"))
    waiting = status == "waiting_approval"
    return Session(
        id=str(run.get("run_id") or ""),
        session_source_type="dendrux_run",
        agent_name=as_str(run.get("agent_name")),
        title=_title(run),
        started_at=parse_time(run.get("created_at")),
        last_activity_at=updated,
        ended_at=updated if ended else None,
        latest_model_alias=as_str(run.get("model")),
        parent_session_id=as_str(run.get("parent_run_id")),
        is_active_now=not ended,
        activity_status=status,
        token_usage=TokenUsage(
            input_tokens=as_int(run.get("total_input_tokens")) or 0,
            output_tokens=as_int(run.get("total_output_tokens")) or 0,
            total_tokens=(as_int(run.get("total_input_tokens")) or 0)
            + (as_int(run.get("total_output_tokens")) or 0),
        ),
        estimated_cost=run.get("total_cost_usd")
        if isinstance(run.get("total_cost_usd"), int | float)
        else None,
        pending_approval_count=pending_approvals if pending_approvals is not None else (1 if waiting else 0),
        agent_kind="dendrux",
    )


def session_list(page: Mapping[str, Any]) -> SessionList:
    """``GET /runs`` (``{items, total, limit, offset}``) as our session page."""
    items = [session_from_run(r) for r in page.get("items") or [] if isinstance(r, dict)]
    total = as_int(page.get("total"))
    limit = as_int(page.get("limit")) or 50
    offset = as_int(page.get("offset")) or 0
    return SessionList(
        items=items,
        total=total,
        limit=limit,
        offset=offset,
        has_more=total is not None and offset + len(items) < total,
    )


def note_from_row(row: Mapping[str, Any], run_id: str, *, run_ended: bool = False) -> Note:
    """A note from the steer router's ``GET /runs/{id}/notes`` (or Dendrux's own note row).

    Dendrux knows two facts about a note: created, and delivered (at an iteration). So its states here
    are ``delivered``, ``pending`` and, for a note still unread when the run ended, ``undeliverable``.
    """
    delivered = parse_time(row.get("delivered_at"))
    state = as_str(row.get("state"))
    if state not in ("delivered", "pending", "undeliverable"):
        state = "delivered" if delivered else ("undeliverable" if run_ended else "pending")
    metadata = row.get("metadata")
    author = metadata.get("by") if isinstance(metadata, dict) else None
    return Note.model_validate(
        {
            "note_id": str(row.get("note_id") or ""),
            "state": state,
            "text": str(row.get("text") or ""),
            "runtime_session_id": run_id,
            "author": {"display": author} if isinstance(author, str) else None,
            "created_at": parse_time(row.get("created_at")),
            "delivered_at": delivered,
            "delivery_channel": "run_inbox" if delivered else None,
            "delivered_turn_index": as_int(row.get("delivered_iteration")),
            "undeliverable_reason": "the run ended before the agent read it"
            if state == "undeliverable"
            else None,
        }
    )


def approval_from_row(row: Mapping[str, Any], run_id: str) -> Approval | None:
    """An approval-gated call from the steer router's ``GET /runs/{id}/approvals`` (approval id = Dendrux
    call id); None for a row without a call id."""
    call_id = as_str(row.get("call_id"))
    if call_id is None:
        return None
    return Approval.model_validate(
        {
            "id": call_id,
            "tool_name": row.get("tool_name"),
            "tool_args": as_dict(row.get("params")),
            "status": as_str(row.get("status")) or "pending",
            "requested_at": parse_time(row.get("requested_at")),
            "resolved_at": parse_time(row.get("resolved_at")),
            "approver_comment": row.get("reason"),
            "runtime_session_id": run_id,
            "execution_id": run_id,
            "session": {"id": run_id},
        }
    )


# --------------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------------


def llm_usage(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """An ``llm.completed``'s usage as a ``model.step``'s (tokens in and out, ``cost_usd`` when Dendrux
    priced it); None when it reported none (``usage_reported`` false, or no figure at all)."""
    if data.get("usage_reported") is False:
        return None
    inputs, outputs = as_count(data.get("input_tokens")), as_count(data.get("output_tokens"))
    cost = as_usd(data.get("cost_usd"))
    if inputs is None and outputs is None and cost is None:
        return None
    usage: dict[str, Any] = {"input_tokens": inputs, "output_tokens": outputs, "cost_usd": cost}
    model = as_str(data.get("model"))
    if model:
        usage["model"] = model
    return usage


@dataclass(frozen=True, slots=True)
class TraceText:
    """The assistant row of one iteration: its text and the tool calls it made."""

    text: str
    phase: str | None
    tool_calls: tuple[dict[str, Any], ...] = ()


def traces_by_iteration(items: Iterable[Any]) -> dict[int, TraceText]:
    """``GET /runs/{id}/traces`` items → the assistant row of each iteration."""
    out: dict[int, TraceText] = {}
    for row in items:
        if not isinstance(row, dict) or row.get("role") != "assistant":
            continue
        meta = as_dict(row.get("meta"))
        iteration = as_int(meta.get("iteration"))
        if iteration is None:
            continue
        calls = tuple(c for c in meta.get("tool_calls") or [] if isinstance(c, dict))
        out[iteration] = TraceText(
            text=str(row.get("content") or ""),
            phase=as_str(row.get("phase")) or as_str(meta.get("phase")),
            tool_calls=calls,
        )
    return out


def _args_summary(params: Mapping[str, Any]) -> str:
    parts = [f"{k}={json.dumps(v, default=str)}" for k, v in params.items()]
    text = ", ".join(parts)
    return text if len(text) <= 120 else text[:119] + "…"


class DendruxMapper(Sequencer):
    """One follow's raw events (in ``sequence_index`` order) to numbered events (a
    :class:`client.backends.wire.Sequencer`, like Preloop's ``PreloopMapper``).

    The follower feeds it what REST knows (``traces``, ``notes``, the run row) before the events that need
    it: :meth:`needs_trace` says when an ``llm.completed`` has no text yet (the trace row may land a few
    ms after the event: fetch ``/traces`` again). A step mapped before its row landed goes out without
    text and is **owed** (:attr:`owed`); once the row is learnt, :meth:`fill` sends the same step again
    with its text (the timeline updates the step in place) and starts the calls it made that have not
    finished yet.
    """

    def __init__(self, run_id: str, run: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.run: dict[str, Any] = run if run is not None else {}
        self.traces: dict[int, TraceText] = {}
        self.notes: dict[str, Note] = {}
        self.ended = False
        self._delivered: set[str] = set()
        self._calls: dict[str, dict[str, Any]] = {}
        self._pending_approvals: dict[str, dict[str, Any]] = {}
        self._held_completions: dict[str, RawEvent] = {}
        self._final_text = ""
        self._final_iteration: int | None = None
        self.owed: dict[int, RawEvent] = {}
        """``llm.completed`` events shown without their text (no trace row yet), by iteration."""
        self._finished_calls: set[str] = set()

    # ------------------------------------------------------------------ inputs from REST

    def learn_traces(self, items: Iterable[Any]) -> None:
        """Remember the assistant text of each iteration (``/traces`` items)."""
        self.traces.update(traces_by_iteration(items))

    def learn_notes(self, rows: Iterable[Any]) -> None:
        """Remember note texts (steer router's ``GET /runs/{id}/notes``)."""
        for row in rows:
            if isinstance(row, dict) and row.get("note_id"):
                note = note_from_row(row, self.run_id)
                self.notes[note.note_id] = note

    def needs_trace(self, raw: RawEvent) -> bool:
        """True when ``raw`` is an ``llm.completed`` whose text has not been fetched yet."""
        return raw.type == "llm.completed" and raw.iteration not in self.traces

    def needs_note(self, raw: RawEvent) -> bool:
        """True when ``raw`` delivers a note whose text is not known yet (sent after the notes were read)."""
        if raw.type != "inbox.delivered":
            return False
        note_id = as_str(raw.data.get("note_id")) or raw.correlation_id
        return note_id is not None and note_id not in self.notes and note_id not in self._delivered

    @property
    def pending_approvals(self) -> list[dict[str, Any]]:
        """Gated calls waiting for a decision, as seen in the events so far."""
        return list(self._pending_approvals.values())

    # ------------------------------------------------------------------ mapping

    def map(self, raw: RawEvent) -> list[Event]:
        """Our events for one Dendrux event (numbered, each carrying the Dendrux ``sequence_index`` as
        ``server_seq``; invalid bodies are counted in ``skipped``)."""
        return self.number(self._bodies(raw), server_seq=raw.index)

    def fill(self) -> list[Event]:
        """Owed steps whose trace row has been learnt since, sent again with their text (a ``model.step``
        for the same iteration: shown in place of the empty one), plus ``tool.started`` for their calls
        that have not finished yet; works after the run ended too."""
        events: list[Event] = []
        for iteration, raw in list(self.owed.items()):
            if iteration in self.traces:
                del self.owed[iteration]
                events += self.number(self._llm(raw, again=True), server_seq=raw.index)
        return events

    def close_out(self, notes: Iterable[Any] = (), *, index: int | None = None) -> list[Event]:
        """At the terminal event (Dendrux ``index``, which these events carry as their ``server_seq``):
        notes never read become ``note.undeliverable``."""
        bodies: list[dict[str, Any]] = []
        for row in notes:
            if isinstance(row, dict) and row.get("note_id"):
                note = note_from_row(row, self.run_id, run_ended=True)
                self.notes[note.note_id] = note
                if note.state == "undeliverable" and note.note_id not in self._delivered:
                    self._delivered.add(note.note_id)
                    bodies.append(self._body("note.undeliverable", now(), note=note.model_dump(mode="json")))
        return self.number(bodies, server_seq=index)

    def _body(self, kind: str, at: datetime, **payload: Any) -> dict[str, Any]:
        return event_body(kind, self.run_id, at, **payload)

    def _session(self, at: datetime, status: str | None = None) -> dict[str, Any]:
        run = dict(self.run) or {"run_id": self.run_id}
        run.setdefault("run_id", self.run_id)
        if status is not None:
            run["status"] = status
            run["updated_at"] = iso(at)
        session = session_from_run(run, pending_approvals=len(self._pending_approvals))
        return session.model_dump(mode="json")

    def _bodies(self, raw: RawEvent) -> list[dict[str, Any]]:
        kind, data, at = raw.type, raw.data, raw.at
        if self.ended:
            return []
        if kind == "run.started":
            task = _title(self.run) or ""
            return [
                self._body("session.started", at, session=self._session(at, "running")),
                self._body("run.started", at, run_id=self.run_id, task=task),
            ]
        if kind == "llm.completed":
            return self._llm(raw)
        if kind == "tool.completed":
            call_id = raw.correlation_id or as_str(data.get("call_id")) or f"call-{raw.index}"
            if call_id in self._pending_approvals:
                self._held_completions[call_id] = raw  # its status depends on approval.decided
                return []
            return [self._tool_completed(raw, call_id, None)]
        if kind == "approval.requested":
            return [self._approval_requested(raw)]
        if kind == "run.paused":
            return [
                self._body(
                    "session.updated", at, session=self._session(at, as_str(data.get("status")) or "paused")
                )
            ]
        if kind == "run.resumed":
            return [self._body("session.updated", at, session=self._session(at, "running"))]
        if kind == "approval.decided":
            return self._approval_decided(raw)
        if kind == "inbox.delivered":
            return self._note_delivered(raw)
        if kind in TERMINAL_EVENTS:
            return self._terminal(raw)
        own = {k: v for k, v in data.items() if k not in RESERVED_FIELDS}
        return [self._body(f"dendrux.{kind}", at, **own)]

    def _llm(self, raw: RawEvent, *, again: bool = False) -> list[dict[str, Any]]:
        trace = self.traces.get(raw.iteration)
        if trace is None:
            self.owed[raw.iteration] = raw
        phase = as_str(raw.data.get("phase")) or (trace.phase if trace else None)
        if phase not in ("commentary", "final_answer"):
            phase = "commentary" if raw.data.get("has_tool_calls") else "final_answer"
        text = trace.text if trace else ""
        calls = trace.tool_calls if trace else ()
        out: list[dict[str, Any]] = []
        if text and not again:  # a settled step takes no chunk: the step itself carries the text
            out.append(
                self._body("model.delta", raw.at, run_id=self.run_id, iteration=raw.iteration, text=text)
            )
        step: dict[str, Any] = {
            "run_id": self.run_id,
            "iteration": raw.iteration,
            "phase": phase,
            "text": text,
            "tool_calls": len(calls),
        }
        usage = llm_usage(raw.data)
        if usage is not None:
            step["usage"] = usage
        out.append(self._body("model.step", raw.at, **step))
        if phase == "final_answer" and not self.ended:
            self._final_text, self._final_iteration = text, raw.iteration
        for call in calls:
            call_id = as_str(call.get("id"))
            if call_id is None or call_id in self._calls:
                continue
            params = as_dict(call.get("params"))
            self._calls[call_id] = {"name": as_str(call.get("name")) or "?", "params": params}
            if call_id in self._finished_calls:
                continue  # its text came late and the call has finished: a start now would show it running
            out.append(
                self._body(
                    "tool.started",
                    raw.at,
                    run_id=self.run_id,
                    call_id=call_id,
                    iteration=raw.iteration,
                    name=self._calls[call_id]["name"],
                    args_summary=_args_summary(params),
                    args=params,
                )
            )
        return out

    def _tool_completed(self, raw: RawEvent, call_id: str, decision: str | None) -> dict[str, Any]:
        data = raw.data
        self._finished_calls.add(call_id)
        name = as_str(data.get("tool_name")) or self._calls.get(call_id, {}).get("name") or "?"
        status = "denied" if decision == "denied" else "ok" if data.get("success") else "error"
        return self._body(
            "tool.completed",
            raw.at,
            run_id=self.run_id,
            call_id=call_id,
            name=name,
            status=status,
            duration_ms=as_int(data.get("duration_ms")),
            result_summary=as_str(data.get("error")) or "",
        )

    def _approval(self, call_id: str, at: datetime, status: str, **extra: Any) -> dict[str, Any]:
        call = self._calls.get(call_id, {})
        pending = self._pending_approvals.get(call_id, {})
        return {
            "id": call_id,
            "tool_name": pending.get("tool_name") or call.get("name"),
            "tool_args": pending.get("params") or call.get("params") or {},
            "status": status,
            "requested_at": pending.get("requested_at"),
            "runtime_session_id": self.run_id,
            "execution_id": self.run_id,
            "agent": {"name": as_str(self.run.get("agent_name")), "kind": "dendrux"},
            "session": {"id": self.run_id},
            **extra,
        }

    def _approval_requested(self, raw: RawEvent) -> dict[str, Any]:
        call_id = as_str(raw.data.get("call_id")) or raw.correlation_id or f"call-{raw.index}"
        call = self._calls.get(call_id, {})
        self._pending_approvals[call_id] = {
            "call_id": call_id,
            "tool_name": as_str(raw.data.get("tool_name")) or call.get("name"),
            "params": call.get("params") or {},
            "requested_at": iso(raw.at),
            "reason": as_str(raw.data.get("reason")),
        }
        approval = self._approval(call_id, raw.at, "pending", summary=as_str(raw.data.get("reason")))
        return self._body("approval.requested", raw.at, approval=approval)

    def _approval_decided(self, raw: RawEvent) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        decisions = [d for d in raw.data.get("decisions") or [] if isinstance(d, dict)]
        if not decisions and raw.data.get("decision") in ("approved", "rejected"):
            whole = "approved" if raw.data.get("decision") == "approved" else "denied"
            decisions = [{"call_id": cid, "decision": whole} for cid in list(self._pending_approvals)]
        for decision in decisions:
            call_id = as_str(decision.get("call_id"))
            if call_id is None or call_id not in self._pending_approvals:
                continue
            verdict = as_str(decision.get("decision")) or "approved"
            status = {"approved": "approved", "denied": "declined"}.get(verdict, verdict)
            approval = self._approval(
                call_id,
                raw.at,
                status,
                resolved_at=iso(raw.at),
                approver_comment=decision.get("reason"),
            )
            # Dendrux records no decider: whether a person decided is not claimed (client.present says so).
            out.append(self._body("approval.decided", raw.at, approval=approval))
            del self._pending_approvals[call_id]
            held = self._held_completions.pop(call_id, None)
            if held is not None:
                out.append(self._tool_completed(held, call_id, verdict))
        return out

    def _note_delivered(self, raw: RawEvent) -> list[dict[str, Any]]:
        note_id = as_str(raw.data.get("note_id")) or raw.correlation_id
        if note_id is None or note_id in self._delivered:
            return []  # at-least-once delivery: a repeat says nothing new
        self._delivered.add(note_id)
        known = self.notes.get(note_id)
        note = {
            "note_id": note_id,
            "state": "delivered",
            "text": known.text if known else "",
            "runtime_session_id": self.run_id,
            "author": known.author.model_dump(mode="json") if known and known.author else None,
            "created_at": iso(known.created_at) if known and known.created_at else None,
            "delivered_at": iso(raw.at),
            "delivery_channel": "run_inbox",
            "delivered_turn_index": raw.iteration,
        }
        return [self._body("note.delivered", raw.at, note=note)]

    def _terminal(self, raw: RawEvent) -> list[dict[str, Any]]:
        kind, data, at = raw.type, raw.data, raw.at
        out: list[dict[str, Any]] = []
        for call_id, held in list(self._held_completions.items()):
            out.append(self._tool_completed(held, call_id, None))
        self._held_completions.clear()
        self.ended = True
        status = {"run.completed": "success", "run.cancelled": "cancelled"}.get(kind, "error")
        if kind == "run.completed":
            status = as_str(data.get("status")) or "success"
            answer = as_str(self.run.get("answer")) or self._final_text
            out.append(
                self._body(
                    "run.completed", at, run_id=self.run_id, iteration=self._final_iteration, answer=answer
                )
            )
        elif kind == "run.cancelled":
            out.append(
                self._body("run.cancelled", at, run_id=self.run_id, reason=as_str(data.get("reason")) or "")
            )
        else:
            error = as_str(data.get("error")) or as_str(self.run.get("error")) or kind.removeprefix("run.")
            out.append(self._body("run.failed", at, run_id=self.run_id, error=error))
        reason = {"run.completed": "completed", "run.cancelled": "cancelled"}.get(
            kind, kind.removeprefix("run.")
        )
        out.append(self._body("session.ended", at, session=self._session(at, status), reason=reason))
        return out
