"""The Dendrux app the tests attach to, built the way a Dendrux user builds one.

The three lines an app adds to steer its runs from ``preloop`` are the two ``include_router`` calls and the
import of :func:`preloop_steer.dendrux.make_steer_router`; everything else here is an ordinary app::

    app.include_router(make_read_router(store=store, authorize=authorize))
    if steer:
        app.include_router(make_steer_router(store=store, agents=[agent], authorize=authorize))

The model is :class:`ScriptedLLM`, offline and deterministic: the run's input names a script
(``"refund: ..."``, ``"hold gate=g1: ..."``, ``"parallel gate=g2 n=8: ..."``, ``"answer: ..."``) and the
step is the number of assistant messages so far, so concurrent runs and runs resumed by another process
(after a restart) get the same answers.

Test-only routes (never part of a real app): ``POST /_test/runs {"input"}`` starts a run in the
background and answers with its id as soon as Dendrux has created it; ``POST /_test/gates/{name}`` lets
every tool waiting on that gate finish (tests wait on conditions, never on time).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from dendrux import Agent, tool
from dendrux.http import make_read_router
from dendrux.llm.base import LLMProvider
from dendrux.loops.base import BaseNotifier
from dendrux.store import RunStore
from dendrux.types import LLMResponse, Message, Role, ToolCall, ToolDef, UsageStats
from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel

from preloop_steer.dendrux import make_steer_router

AGENT_NAME = "refund_desk"
_SCRIPT = re.compile(r"^(?P<name>[a-z_]+)(?P<opts>(?:\s+[a-z]+=\S+)*)\s*:")


def _script(messages: list[Message]) -> tuple[str, dict[str, str]]:
    first = next((m.content for m in messages if m.role == Role.USER), "") or ""
    match = _SCRIPT.match(first.strip())
    if match is None:
        return "answer", {}
    opts = dict(part.split("=", 1) for part in match.group("opts").split())
    return match.group("name"), opts


def _notes_seen(messages: list[Message]) -> list[str]:
    return [
        (m.content or "").split("\n", 1)[-1]
        for m in messages
        if m.role == Role.USER and (m.content or "").startswith("NOTE FROM USER:")
    ]


def _last_tool_result(messages: list[Message], name: str) -> str | None:
    for m in reversed(messages):
        if m.role == Role.TOOL and m.name == name:
            return m.content or ""
    return None


class ScriptedLLM(LLMProvider):
    """An offline model that follows the script named by the run's input (see the module docstring)."""

    @property
    def model(self) -> str:
        return "scripted-mock"

    async def complete(
        self,
        messages: list[Message],
        tools: list[ToolDef] | None = None,
        *,
        output_schema: dict[str, Any] | None = None,
        run_id: str | None = None,
        cache_key_prefix: str | None = None,
        **kwargs: Any,
    ) -> LLMResponse:
        name, opts = _script(messages)
        step = sum(1 for m in messages if m.role == Role.ASSISTANT)
        notes = _notes_seen(messages)
        text, calls = self._answer(name, opts, step, notes, messages)
        return LLMResponse(
            text=text,
            tool_calls=calls or None,
            usage=UsageStats(input_tokens=100 + 30 * step, output_tokens=20),
            stop_reason="tool_use" if calls else "end_turn",
        )

    @staticmethod
    def _answer(
        name: str, opts: dict[str, str], step: int, notes: list[str], messages: list[Message]
    ) -> tuple[str, list[ToolCall]]:
        seen = f" Notes seen: {len(notes)}" + (f" ({'; '.join(notes)})." if notes else ".")
        if name == "refund":
            if step == 0:
                return "Let me look up order A-17 first.", [ToolCall("lookup_order", {"order_id": "A-17"})]
            if step == 1:
                calls = [ToolCall("refund_order", {"order_id": "A-17", "amount_usd": 42.5})]
                if opts.get("voucher") == "yes":
                    calls.append(ToolCall("send_voucher", {"order_id": "A-17", "amount_usd": 5}))
                return "The order was delivered; I'll issue the $42.50 refund now.", calls
            result = _last_tool_result(messages, "refund_order") or ""
            if "denied" in result or "declined" in result.lower():
                return "The refund was not approved, so nothing was charged back." + seen, []
            return "Refunded $42.50 for order A-17." + seen, []
        if name == "hold":
            if step == 0:
                return "Waiting for the warehouse to confirm.", [
                    ToolCall("hold", {"gate": opts.get("gate", "g")})
                ]
            return "The warehouse confirmed." + seen, []
        if name == "parallel":
            count = int(opts.get("n", "8"))
            if step == 0:
                gate = opts.get("gate", "g")
                calls = [ToolCall("check_warehouse", {"index": i, "gate": gate}) for i in range(count)]
                return f"Checking {count} warehouses at once.", calls
            return f"All {count} warehouses checked." + seen, []
        return "Nothing to do: here is the answer." + seen, []


class StartRun(BaseModel):
    input: str


class _Captured(BaseNotifier):
    """Learns the id Dendrux gives a new run (``Agent.run`` only returns at the end)."""

    def __init__(self, future: asyncio.Future[str]) -> None:
        self.future = future

    async def on_run_started(
        self, run_id: str, *, agent_name: str | None = None, agent_model: str | None = None
    ) -> None:
        if not self.future.done():
            self.future.set_result(run_id)


def create_app(db_path: Path, *, token: str | None = None, steer: bool = True) -> FastAPI:
    """The app: one agent (``refund_desk``), Dendrux's read router, our steer router (unless ``steer`` is
    False: an app that only reads), test routes."""
    url = f"sqlite+aiosqlite:///{db_path}"
    gates: dict[str, asyncio.Event] = {}

    async def wait_gate(name: str) -> None:
        await asyncio.wait_for(gates.setdefault(name, asyncio.Event()).wait(), timeout=120)

    @tool()
    async def lookup_order(order_id: str) -> dict[str, Any]:
        """Look an order up."""
        return {"order_id": order_id, "status": "delivered", "amount_usd": 42.5}

    @tool()
    async def refund_order(order_id: str, amount_usd: float) -> dict[str, Any]:
        """Refund an order (needs a human's approval)."""
        return {"order_id": order_id, "refunded_usd": amount_usd}

    @tool()
    async def send_voucher(order_id: str, amount_usd: float) -> dict[str, Any]:
        """Send the customer a voucher (needs a human's approval)."""
        return {"order_id": order_id, "voucher_usd": amount_usd}

    @tool()
    async def hold(gate: str = "g") -> str:
        """Wait until the test opens the gate."""
        await wait_gate(gate)
        return "confirmed"

    @tool(parallel=True)
    async def check_warehouse(index: int, gate: str = "g") -> dict[str, Any]:
        """Check one warehouse; all of them finish together when the gate opens."""
        await wait_gate(gate)
        return {"index": index, "stock": 3}

    agent = Agent(
        name=AGENT_NAME,
        provider=ScriptedLLM(),
        prompt="You are a refund assistant. Narrate briefly before using tools.",
        tools=[lookup_order, refund_order, send_voucher, hold, check_warehouse],
        require_approval=["refund_order", "send_voucher"],
        database_url=url,
        max_iterations=8,
    )
    store = RunStore.from_database_url(url)
    running: set[asyncio.Task[Any]] = set()

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # Runs still going (held at a gate, waiting on an approval) are cancelled and awaited: a run's
        # cancellation still writes through its aiosqlite connection, whose worker thread would otherwise
        # answer a loop that is closed by then ("RuntimeError: Event loop is closed" at teardown).
        stopping = list(running)
        for task in stopping:
            task.cancel()
        await asyncio.gather(*stopping, return_exceptions=True)
        await store.close()
        await agent.close()

    app = FastAPI(title="dendrux test app", lifespan=lifespan)

    def authorize(authorization: str | None = Header(default=None)) -> None:
        if token is not None and authorization != f"Bearer {token}":
            raise HTTPException(status_code=401, detail="Missing or wrong bearer token.")

    # The three lines an app adds (with the import of make_steer_router):
    app.include_router(make_read_router(store=store, authorize=authorize))
    if steer:
        app.include_router(make_steer_router(store=store, agents=[agent], authorize=authorize))

    @app.post("/_test/runs", status_code=201)
    async def start_run(body: StartRun) -> dict[str, str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(agent.run(body.input, notifier=_Captured(future)))
        running.add(task)
        task.add_done_callback(running.discard)
        done, _ = await asyncio.wait({future, task}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        if future in done:
            return {"run_id": future.result()}
        if task in done and task.exception() is not None:
            raise HTTPException(status_code=500, detail=repr(task.exception()))
        raise HTTPException(status_code=504, detail="the run did not start")

    @app.post("/_test/gates/{name}", status_code=204)
    async def open_gate(name: str) -> None:
        gates.setdefault(name, asyncio.Event()).set()

    app.state.agent = agent
    app.state.store = store
    return app
