"""An agent's side of the harness API, over real HTTP (httpx). Demo agents and tests drive sessions with it.

Typical use (tests of every part of the project do this against the ``live_server`` fixture)::

    async with HarnessClient(live_server.url, live_server.token) as harness:
        agent = await harness.start_session(agent_name="builder", cwd="/work/repo", title="Fix the build")
        run_id = await agent.run_started("Fix the failing test")
        await agent.delta("Looking at the test first.", iteration=1)
        await agent.step(1, "commentary", "Looking at the test first.", tool_calls=1)
        call = await agent.tool_started("Read", {"file_path": "tests/test_x.py"}, iteration=1)
        await agent.tool_completed(call, "Read", duration_ms=12, result_summary="120 lines")
        notes = await agent.claim_notes()                  # operator notes, delivered exactly once
        verdict = await agent.permission_check("Bash", {"command": "rm -rf build/"}, ask=True)  # blocks
        await agent.final_answer(2, "Done: the test passes.")     # deltas + model.step + run.completed
        await agent.end()                                  # notes left pending become undeliverable

Errors: any non-2xx answer raises :class:`HarnessError` (``status``, ``detail``); transport failures are
httpx's own exceptions, untouched (``emit`` first resends its batch, which the server stores once)::

    Exception
    ├── HarnessError            the server refused (status, detail)
    └── httpx.HTTPError         could not talk to the server at all
"""

from __future__ import annotations

import asyncio
import uuid
from types import TracebackType
from typing import Any, Literal

import httpx

from server.harness import (
    AgentEventsAccepted,
    PendingNotesResponse,
    PermissionCheckResponse,
    RuntimeTokenResponse,
    SessionEndResponse,
)

API = "/api/v1"
EMIT_ATTEMPTS = 3
"""How many times :meth:`HarnessSession.emit` sends one batch when the connection fails."""


class HarnessError(Exception):
    """The control plane answered with an error status."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


def _check(response: httpx.Response) -> Any:
    if response.is_success:
        return response.json()
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = response.text
    raise HarnessError(response.status_code, detail)


class HarnessClient:
    """Mints runtime sessions with an operator token; one httpx client shared by all its sessions."""

    def __init__(
        self,
        url: str,
        operator_token: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.operator_token = operator_token
        self._http = httpx.AsyncClient(base_url=self.url, transport=transport, timeout=timeout)

    async def __aenter__(self) -> HarnessClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; sessions are left as they are (end them explicitly)."""
        await self._http.aclose()

    async def start_session(
        self,
        *,
        agent_name: str,
        agent_kind: str = "claude_code",
        cwd: str | None = None,
        title: str | None = None,
        parent_session_id: str | None = None,
        flow_execution_id: str | None = None,
    ) -> HarnessSession:
        """A new runtime session (``session.started`` is its event 1) and a handle that reports into it."""
        body = {
            "session_source_type": agent_kind,
            "session_source_id": f"{agent_name}-{uuid.uuid4().hex[:8]}",
            "session_reference": agent_name,
            "runtime_principal_name": agent_name,
            "agent_kind": agent_kind,
            "cwd": cwd,
            "title": title,
            "parent_session_id": parent_session_id,
            "flow_execution_id": flow_execution_id,
        }
        response = await self._http.post(
            f"{API}/auth/runtime-sessions/token",
            json=body,
            headers={"Authorization": f"Bearer {self.operator_token}"},
        )
        minted = RuntimeTokenResponse.model_validate(_check(response))
        return HarnessSession(self._http, minted)

    def session(self, minted: RuntimeTokenResponse) -> HarnessSession:
        """A handle on a session that exists already, with a runtime token minted for it (a restarted
        demo carries on in the sessions it left open)."""
        return HarnessSession(self._http, minted)


class HarnessSession:
    """One agent session seen from the agent: report events, pick up notes, ask for approvals, end."""

    def __init__(self, http: httpx.AsyncClient, minted: RuntimeTokenResponse) -> None:
        self._http = http
        self.minted = minted
        self.session_id = minted.runtime_session_id
        self.token = minted.token
        self.run_id: str | None = None
        self._headers = {"Authorization": f"Bearer {minted.token}"}

    async def _post(self, path: str, body: Any, *, wait: float | None = None) -> Any:
        kwargs: dict[str, Any] = {"json": body, "headers": self._headers}
        if wait is not None:
            kwargs["timeout"] = wait
        return _check(await self._http.post(f"{API}{path}", **kwargs))

    async def emit(self, *events: dict[str, Any]) -> AgentEventsAccepted:
        """Report raw events (``{"type": ..., fields}``) in one request; the server assigns their seqs.

        The batch carries a fresh ``batch_id``, so when the connection breaks before the answer arrives it
        is sent again (up to :data:`EMIT_ATTEMPTS` times) without being stored twice.
        """
        body = {"events": list(events), "batch_id": uuid.uuid4().hex}
        for attempt in range(1, EMIT_ATTEMPTS + 1):
            try:
                return AgentEventsAccepted.model_validate(await self._post("/agents/events", body))
            except httpx.TransportError:
                if attempt == EMIT_ATTEMPTS:
                    raise
                await asyncio.sleep(0.1 * attempt)  # back off a little before resending the same batch
        raise AssertionError("unreachable")

    async def run_started(self, task: str, run_id: str | None = None) -> str:
        """Start a run (a task); later events default to this run id."""
        self.run_id = run_id or f"run-{uuid.uuid4().hex[:8]}"
        await self.emit({"type": "run.started", "run_id": self.run_id, "task": task})
        return self.run_id

    async def delta(self, text: str, iteration: int) -> AgentEventsAccepted:
        """A chunk of model text for step ``iteration``."""
        return await self.emit(
            {"type": "model.delta", "run_id": self.run_id, "iteration": iteration, "text": text}
        )

    async def step(
        self,
        iteration: int,
        phase: Literal["commentary", "final_answer"],
        text: str = "",
        *,
        tool_calls: int = 0,
        usage: dict[str, Any] | None = None,
    ) -> AgentEventsAccepted:
        """Close model step ``iteration``: ``commentary`` if tools follow, ``final_answer`` otherwise.
        ``usage`` is what the step's model call used (``model``, ``input_tokens``, ``output_tokens``,
        ``cost_usd``): the session's tokens and cost are the sum of these."""
        return await self.emit(_step_event(self.run_id, iteration, phase, text, tool_calls, usage))

    async def narrate(
        self, iteration: int, chunks: list[str], *, tool_calls: int = 1, usage: dict[str, Any] | None = None
    ) -> None:
        """Stream ``chunks`` as deltas, then close the step as commentary (text that precedes tool calls)."""
        for chunk in chunks:
            await self.delta(chunk, iteration)
        await self.step(iteration, "commentary", "".join(chunks), tool_calls=tool_calls, usage=usage)

    async def tool_started(
        self,
        name: str,
        args: dict[str, Any],
        *,
        iteration: int | None = None,
        args_summary: str | None = None,
    ) -> str:
        """A tool call began; returns its ``call_id`` for :meth:`tool_completed`."""
        call_id = f"call-{uuid.uuid4().hex[:10]}"
        summary = args_summary if args_summary is not None else _summarise(args)
        await self.emit(
            {
                "type": "tool.started",
                "run_id": self.run_id,
                "call_id": call_id,
                "iteration": iteration,
                "name": name,
                "args_summary": summary,
                "args": args,
            }
        )
        return call_id

    async def tool_completed(
        self,
        call_id: str,
        name: str,
        *,
        status: Literal["ok", "error", "denied"] = "ok",
        duration_ms: int | None = None,
        result_summary: str = "",
    ) -> AgentEventsAccepted:
        """Close a tool call with its outcome and duration."""
        return await self.emit(
            {
                "type": "tool.completed",
                "run_id": self.run_id,
                "call_id": call_id,
                "name": name,
                "status": status,
                "duration_ms": duration_ms,
                "result_summary": result_summary,
            }
        )

    async def final_answer(
        self,
        iteration: int,
        answer: str,
        *,
        chunks: list[str] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        """Stream the answer, close the step as ``final_answer`` and complete the run with it."""
        for chunk in chunks or [answer]:
            await self.delta(chunk, iteration)
        await self.emit(
            _step_event(self.run_id, iteration, "final_answer", answer, 0, usage),
            {"type": "run.completed", "run_id": self.run_id, "iteration": iteration, "answer": answer},
        )

    async def run_failed(self, error: str) -> AgentEventsAccepted:
        """The run stopped with an error."""
        return await self.emit({"type": "run.failed", "run_id": self.run_id, "error": error})

    async def run_cancelled(self, reason: str) -> AgentEventsAccepted:
        """The run was abandoned (e.g. an operator asked the agent to stop)."""
        return await self.emit({"type": "run.cancelled", "run_id": self.run_id, "reason": reason})

    async def claim_notes(
        self,
        *,
        channel: str = "turn",
        event: str = "turn_start",
        defer: bool = False,
        turn_index: int | None = None,
    ) -> PendingNotesResponse:
        """Pick up pending operator notes (oldest first, at most 5); ``defer`` claims now, delivers on ack."""
        body = {"channel": channel, "event": event, "defer_delivery": defer, "turn_index": turn_index}
        return PendingNotesResponse.model_validate(await self._post("/agents/notes/pending", body))

    async def ack_notes(self, note_ids: list[str]) -> None:
        """Deferred notes are now in front of the model: mark them delivered."""
        await self._post("/agents/notes/ack", {"note_ids": note_ids})

    async def permission_check(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        ask: bool = True,
        reasoning: str | None = None,
        rule: str | None = None,
        cwd: str | None = None,
        timeout_seconds: float | None = None,
        evaluation_phase: str | None = None,
    ) -> PermissionCheckResponse:
        """Ask a human (``ask=True``): blocks until approved, declined, expired or the session ends.
        ``reasoning`` (why the agent wants the call) and ``rule`` (the hook's rule that asks) are shown
        to the operator on the approval."""
        body: dict[str, Any] = {
            "tool_name": tool_name,
            "tool_input": tool_input,
            "source": "claude_code",
            "cwd": cwd,
            "client_decision": "ask" if ask else None,
            "agent_reasoning": reasoning,
            "rule_name": rule,
            "timeout_seconds": timeout_seconds,
            "evaluation_phase": evaluation_phase,
        }
        wait = (timeout_seconds or 300.0) + 30.0
        return PermissionCheckResponse.model_validate(
            await self._post("/agents/permission-check", body, wait=wait)
        )

    async def end(self, reason: str = "exit") -> SessionEndResponse:
        """End the session: pending notes become undeliverable and ``session.ended`` closes the stream."""
        return SessionEndResponse.model_validate(await self._post("/agents/session-end", {"reason": reason}))


def _step_event(
    run_id: str | None,
    iteration: int,
    phase: str,
    text: str,
    tool_calls: int,
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "model.step",
        "run_id": run_id,
        "iteration": iteration,
        "phase": phase,
        "text": text,
        "tool_calls": tool_calls,
    }
    if usage is not None:
        event["usage"] = usage
    return event


def _summarise(args: dict[str, Any]) -> str:
    parts = []
    for key, value in args.items():
        text = value if isinstance(value, str) else repr(value)
        if len(text) > 80:
            text = text[:79] + "…"
        parts.append(f"{key}={text}")
    return ", ".join(parts)
