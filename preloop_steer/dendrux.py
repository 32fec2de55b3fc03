"""``make_steer_router``: the write side a Dendrux app mounts next to Dendrux's read-only router.

Dendrux 0.4.1's ``make_read_router`` serves runs and their events but cannot take a note or an approval
decision; those are Python calls on the ``Agent`` (``submit_note``, ``submit_approval``). This router puts
them on HTTP with the same ``authorize`` dependency, so ``preloop --server-kind dendrux`` can steer::

    from dendrux.http import make_read_router
    from preloop_steer.dendrux import make_steer_router

    app.include_router(make_read_router(store=store, authorize=auth))
    app.include_router(make_steer_router(store=store, agents=[agent], authorize=auth))

Routes (all behind ``authorize``):

``POST /runs/{id}/notes``      ``{"text", "metadata"?}`` → 201 the note (``state: "pending"``);
                               404 unknown run, 409 finished run, 422 empty or over 32 KiB.
``GET  /runs/{id}/notes``      ``{"notes": [...], "run_status"}``: each note with ``state`` ``delivered``
                               (the agent read it), ``pending`` (not yet) or ``undeliverable`` (the run
                               ended before reading it).
``GET  /runs/{id}/approvals``  every approval-gated call of the run, oldest first: ``{"items": [{call_id,
                               tool_name, params, requested_at, status, reason, resolved_at}], ...}``;
                               ``pending`` in the pause the run waits in (or decided here and kept until
                               the pause's other calls are), ``approved`` / ``declined`` once Dendrux
                               recorded the decision (``approval.decided``), ``cancelled`` when the run
                               went on or ended without one.
``POST /runs/{id}/approvals``  ``{"decisions": {call_id: {"approved": bool, "reason"?}}}`` → 202.
                               Dendrux takes one decision per gated call of a pause at once, so a decision
                               for some of the calls is kept here until the others are decided; then
                               ``submit_approval`` runs **in the background** (it awaits the whole resumed
                               run). The answer comes once Dendrux has claimed the pause (or refused it):
                               409 when the run is not waiting for approval, 422 for an unknown call id.

No import of the TUI or of Textual: an app needs ``dendrux[http]`` and this module only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from dendrux import Agent
from dendrux.errors import (
    PauseStatusMismatchError,
    RunAlreadyClaimedError,
    RunAlreadyTerminalError,
    RunNotFoundError,
    RunNotPausedError,
)
from dendrux.store import RunStore
from dendrux.types import ApprovalDecision
from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

__all__ = ["TERMINAL_RUN_STATUSES", "make_steer_router"]

log = logging.getLogger(__name__)

TERMINAL_RUN_STATUSES = frozenset({"success", "error", "cancelled", "max_iterations"})
_MAX_NOTE_BYTES = 32 * 1024
_CLAIM_WAIT_S = 10.0
_DECIDED = {"approved": "approved", "denied": "declined"}


class NoteIn(BaseModel):
    """Body of ``POST /runs/{id}/notes``."""

    text: str = Field(min_length=1)
    metadata: Any = None


class DecisionIn(BaseModel):
    """One call's decision: approve it, or deny it with an optional reason the model will read."""

    approved: bool
    reason: str | None = Field(default=None, max_length=4000)

    @property
    def verdict(self) -> str:
        """The decision as an approval's status reads it."""
        return "approved" if self.approved else "declined"


class ApprovalsIn(BaseModel):
    """Body of ``POST /runs/{id}/approvals``: decisions keyed by Dendrux call id."""

    decisions: dict[str, DecisionIn] = Field(min_length=1)


def _iso(value: datetime | None) -> str | None:
    """Dendrux stores naive UTC; say so on the wire."""
    if value is None:
        return None
    text = value.isoformat()
    return text if value.tzinfo is not None else text + "Z"


def _note_state(delivered_at: datetime | None, run_status: str) -> str:
    if delivered_at is not None:
        return "delivered"
    return "undeliverable" if run_status in TERMINAL_RUN_STATUSES else "pending"


class _Steer:
    """State behind the routes: the agents by name, partial decisions, and the background resumes."""

    def __init__(self, store: RunStore, agents: Iterable[Agent]) -> None:
        self.store = store
        self.agents: dict[str, Agent] = {agent.name: agent for agent in agents}
        self.partial: dict[str, dict[str, DecisionIn]] = {}
        self.submitted: dict[str, dict[str, tuple[DecisionIn, datetime]]] = {}
        """Decisions handed to Dendrux whose ``approval.decided`` is not recorded yet (it comes after the
        resumed run's first steps): the run's approvals show them decided meanwhile."""
        self.tasks: set[asyncio.Task[Any]] = set()

    async def run_status(self, run_id: str) -> tuple[str, str]:
        """The run's status and agent name, or 404."""
        run = await self.store.get_run(run_id)
        if run is None:
            raise HTTPException(status_code=404, detail=f"Run '{run_id}' not found.")
        return run.status, run.agent_name

    def agent_for(self, agent_name: str) -> Agent:
        agent = self.agents.get(agent_name)
        if agent is None:
            raise HTTPException(
                status_code=409, detail=f"This app does not host agent '{agent_name}': it cannot steer it."
            )
        return agent

    async def gated_calls(self, run_id: str) -> list[dict[str, Any]]:
        """The approval-gated calls of the run's current pause, from its events (no private state)."""
        events = await self.store.get_events(run_id, event_types=["approval.requested", "run.paused"])
        pauses = await self.store.get_pauses(run_id)
        if not pauses or pauses[-1].resume_sequence_index is not None:
            return []
        pause = pauses[-1]
        params = {str(c.get("id")): c for c in pause.pending_tool_calls if isinstance(c, dict)}
        out: list[dict[str, Any]] = []
        for ev in events:
            if ev.event_type != "approval.requested" or ev.sequence_index > pause.pause_sequence_index:
                continue
            call_id = ev.correlation_id or str((ev.data or {}).get("call_id") or "")
            if call_id not in params:
                continue  # requested in an earlier pause
            call = params[call_id]
            out.append(
                {
                    "call_id": call_id,
                    "tool_name": call.get("name") or (ev.data or {}).get("tool_name"),
                    "params": call.get("params") or {},
                    "requested_at": _iso(ev.created_at),
                    "pause_sequence_index": pause.pause_sequence_index,
                }
            )
        return out

    async def history(self, run_id: str, run_status: str) -> list[dict[str, Any]]:
        """Every approval-gated call of the run with its fate, oldest first (see the module docstring)."""
        events = await self.store.get_events(run_id, event_types=["approval.requested", "approval.decided"])
        pauses = await self.store.get_pauses(run_id)
        calls: dict[str, dict[str, Any]] = {}
        for pause in pauses:
            for call in pause.pending_tool_calls:
                if isinstance(call, dict) and call.get("id"):
                    calls[str(call["id"])] = call
        waiting = pauses[-1] if pauses and pauses[-1].resume_sequence_index is None else None
        open_calls = set()
        if waiting is not None and run_status == "waiting_approval":
            open_calls = {str(c.get("id")) for c in waiting.pending_tool_calls if isinstance(c, dict)}
        decided: dict[str, tuple[str, str | None, str | None]] = {}
        for ev in events:
            if ev.event_type != "approval.decided":
                continue
            for d in (ev.data or {}).get("decisions") or []:
                if isinstance(d, dict) and d.get("call_id"):
                    status = _DECIDED.get(str(d.get("decision")), "declined")
                    decided[str(d["call_id"])] = (status, d.get("reason"), _iso(ev.created_at))
        submitted = self.submitted.get(run_id, {})
        for call_id in list(submitted):
            if call_id in decided:
                del submitted[call_id]
        if not submitted:
            self.submitted.pop(run_id, None)
        partial = self.partial.get(run_id, {})
        out: list[dict[str, Any]] = []
        for ev in events:
            if ev.event_type != "approval.requested":
                continue
            call_id = ev.correlation_id or str((ev.data or {}).get("call_id") or "")
            if not call_id or any(item["call_id"] == call_id for item in out):
                continue
            call = calls.get(call_id, {})
            item: dict[str, Any] = {
                "call_id": call_id,
                "tool_name": call.get("name") or (ev.data or {}).get("tool_name"),
                "params": call.get("params") or {},
                "requested_at": _iso(ev.created_at),
                "status": "cancelled",
                "reason": None,
                "resolved_at": None,
            }
            if call_id in decided:
                item["status"], item["reason"], item["resolved_at"] = decided[call_id]
            elif call_id in submitted:
                choice, when = submitted[call_id]
                item.update(status=choice.verdict, reason=choice.reason, resolved_at=_iso(when))
            elif call_id in open_calls:
                held = partial.get(call_id)
                item["status"] = "pending" if held is None else held.verdict
                item["reason"] = held.reason if held is not None else None
            out.append(item)
        return out


def make_steer_router(
    *,
    store: RunStore,
    agents: Agent | Iterable[Agent] | Mapping[str, Agent],
    authorize: Callable[..., Any],
) -> APIRouter:
    """Build the notes and approvals routes for the runs of ``agents`` (the agent is found by run).

    ``store`` is the same :class:`dendrux.store.RunStore` the read router serves; ``authorize`` the same
    FastAPI dependency (raise ``HTTPException`` to deny).
    """
    if isinstance(agents, Agent):
        agent_list: list[Agent] = [agents]
    elif isinstance(agents, Mapping):
        agent_list = list(agents.values())
    else:
        agent_list = list(agents)
    steer = _Steer(store, agent_list)
    router = APIRouter(dependencies=[Depends(authorize)])

    @router.post("/runs/{run_id}/notes", status_code=201)
    async def post_note(run_id: str, body: NoteIn) -> dict[str, Any]:
        if len(body.text.encode("utf-8")) > _MAX_NOTE_BYTES:
            raise HTTPException(status_code=422, detail="Note text exceeds 32 KiB as UTF-8.")
        status, agent_name = await steer.run_status(run_id)
        agent = steer.agent_for(agent_name)
        try:
            note_id = await agent.submit_note(run_id, body.text, metadata=body.metadata)
        except RunAlreadyTerminalError as exc:
            raise HTTPException(status_code=409, detail=f"RunAlreadyTerminalError: {exc}") from exc
        except RunNotFoundError as exc:
            raise HTTPException(status_code=404, detail=f"Run '{run_id}' not found.") from exc
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        for note in await store.get_notes(run_id):
            if note.note_id == note_id:
                return _note_json(note, status)
        return {"note_id": note_id, "run_id": run_id, "text": body.text, "state": "pending"}

    @router.get("/runs/{run_id}/notes")
    async def get_notes(run_id: str) -> dict[str, Any]:
        status, _ = await steer.run_status(run_id)
        notes = await store.get_notes(run_id)
        return {"notes": [_note_json(n, status) for n in notes], "run_status": status}

    @router.get("/runs/{run_id}/approvals")
    async def get_approvals(run_id: str) -> dict[str, Any]:
        status, _ = await steer.run_status(run_id)
        return {"items": await steer.history(run_id, status), "run_status": status}

    @router.post("/runs/{run_id}/approvals", status_code=202)
    async def post_approvals(run_id: str, body: ApprovalsIn) -> dict[str, Any]:
        status, agent_name = await steer.run_status(run_id)
        if status in TERMINAL_RUN_STATUSES:
            raise HTTPException(status_code=409, detail=f"Run '{run_id}' is already terminal ({status}).")
        if status != "waiting_approval":
            raise HTTPException(
                status_code=409, detail=f"Run '{run_id}' is not waiting for approval (it is {status})."
            )
        agent = steer.agent_for(agent_name)
        gated = {c["call_id"] for c in await steer.gated_calls(run_id)}
        unknown = sorted(set(body.decisions) - gated)
        if unknown:
            raise HTTPException(
                status_code=422, detail=f"Not an approval-gated call of this pause: {', '.join(unknown)}."
            )
        partial = steer.partial.setdefault(run_id, {})
        partial.update(body.decisions)
        waiting = sorted(gated - set(partial))
        if waiting:
            return {"run_id": run_id, "accepted": True, "submitted": False, "waiting_for": waiting}
        decisions = {
            call_id: ApprovalDecision.approve() if d.approved else ApprovalDecision.deny(d.reason)
            for call_id, d in partial.items()
            if call_id in gated
        }
        steer.partial.pop(run_id, None)
        now = datetime.now(UTC)
        steer.submitted[run_id] = {call_id: (d, now) for call_id, d in partial.items() if call_id in gated}
        task = asyncio.create_task(agent.submit_approval(run_id, decisions=decisions))
        steer.tasks.add(task)
        task.add_done_callback(_finished(steer.tasks, run_id))
        try:
            await _claimed_or_refused(store, run_id, task)
        except HTTPException:
            steer.submitted.pop(run_id, None)  # Dendrux refused it: nothing was decided
            raise
        return {"run_id": run_id, "accepted": True, "submitted": True, "waiting_for": []}

    return router


def _note_json(note: Any, run_status: str) -> dict[str, Any]:
    return {
        "note_id": note.note_id,
        "run_id": note.run_id,
        "text": note.text,
        "metadata": note.metadata,
        "created_at": _iso(note.created_at),
        "delivered_at": _iso(note.delivered_at),
        "delivered_iteration": note.delivered_iteration,
        "state": _note_state(note.delivered_at, run_status),
    }


def _finished(tasks: set[asyncio.Task[Any]], run_id: str) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.warning("resuming run %s after approval failed: %r", run_id, exc)

    return done


async def _claimed_or_refused(store: RunStore, run_id: str, task: asyncio.Task[Any]) -> None:
    """Answer once Dendrux has claimed the pause (status leaves waiting_approval) or refused it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _CLAIM_WAIT_S
    while loop.time() < deadline:
        done, _ = await asyncio.wait({task}, timeout=0.02)
        if done:
            exc = task.exception()
            if exc is None:
                return
            if isinstance(exc, RunNotFoundError):
                raise HTTPException(status_code=404, detail=f"Run '{run_id}' not found.")
            if isinstance(
                exc,
                RunNotPausedError
                | PauseStatusMismatchError
                | RunAlreadyClaimedError
                | RunAlreadyTerminalError,
            ):
                raise HTTPException(status_code=409, detail=f"{type(exc).__name__}: {exc}")
            if isinstance(exc, ValueError):
                raise HTTPException(status_code=422, detail=str(exc))
            raise HTTPException(status_code=500, detail=f"resuming the run failed: {type(exc).__name__}")
        run = await store.get_run(run_id)
        if run is not None and run.status != "waiting_approval":
            return
