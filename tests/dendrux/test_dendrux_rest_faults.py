"""The Dendrux feed against the real test app when the REST calls its mapping needs misbehave: one answers
500 while a released batch is being mapped, or ``/traces`` lags behind the run's events (the app's SQLite
writes waiting on a lock on a loaded machine). Neither can be produced on demand by a real app, so the
requests go to the real app over loopback through a transport that injects exactly that fault."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from client.backends.dendrux import DendruxBackend
from client.backends.dendrux.feed import FeedStats, follow
from client.connection import Connection
from client.events import Event, ModelStep, RunCompleted, SessionEnded, ToolCompleted, ToolStarted
from client.status import Ended, Reconnecting, StreamStatus
from client.timeline import TextEntry, TextPhase, Timeline
from tests.dendrux_app.server import DendruxAppServer

Item = Event | StreamStatus


class RestFaults(httpx.AsyncBaseTransport):
    """Forwards to the real app; ``fail[name]`` lists which asks of ``/runs/{id}/<name>`` answer 500 (1 =
    the first), and while ``traces_held`` is set ``/traces`` answers as if no new row had landed yet."""

    def __init__(self, fail: dict[str, set[int]] | None = None) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.fail = fail or {}
        self.asked: dict[str, int] = {}
        self.failed: list[str] = []
        self.traces_held = False
        self.held_asks = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        name = path.rsplit("/", 1)[-1] if path.count("/") == 3 else ""
        self.asked[name] = self.asked.get(name, 0) + 1
        if self.asked[name] in self.fail.get(name, set()):
            self.failed.append(path)
            return httpx.Response(500, json={"detail": "Internal Server Error"}, request=request)
        if name == "traces" and self.traces_held:
            self.held_asks += 1
            return httpx.Response(200, json={"items": [], "total": 0}, request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _backend(app: DendruxAppServer, faults: RestFaults, **options: float) -> DendruxBackend:
    conn = Connection(app.url, app.token, transport=faults, backoff_initial=0.05, backoff_max=0.2)
    return DendruxBackend(conn, **options)


def _events(items: list[Item]) -> list[Event]:
    return [i for i in items if not isinstance(i, StreamStatus.__args__)]  # type: ignore[attr-defined]


async def _whole_follow(backend: DendruxBackend, run_id: str, stats: FeedStats) -> list[Item]:
    async with asyncio.timeout(30):  # a run whose end was lost is followed forever: fail instead
        return [item async for item in follow(backend, run_id, stats=stats)]


@pytest.mark.parametrize(
    ("fault", "what"),
    [
        ({"traces": {1}}, "the step's text, right after its llm.completed was released"),
        ({"notes": {2}}, "the notes, read again once the terminal event was released"),
    ],
)
async def test_a_rest_call_failing_while_a_batch_is_mapped_loses_no_event(
    dendrux_app: DendruxAppServer, fault: dict[str, set[int]], what: str
) -> None:
    """One 500 from ``/traces`` once made a run's final answer vanish (and one from ``/notes`` its end):
    the events had left the orderer, and the reconnect resumed after them."""
    run_id = await asyncio.to_thread(dendrux_app.start_run, "answer: hello")
    faults = RestFaults(fault)
    stats = FeedStats()
    async with _backend(dendrux_app, faults) as backend:
        items = await _whole_follow(backend, run_id, stats)
        rest = await backend.get_json(f"/runs/{run_id}/events", params={"limit": 1000})

    assert len(faults.failed) == 1, what
    assert any(isinstance(i, Reconnecting) and "500" in i.reason for i in items)
    events = _events(items)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    steps = [(s.phase, s.text) for s in events if isinstance(s, ModelStep)]
    assert steps == [("final_answer", "Nothing to do: here is the answer. Notes seen: 0.")]
    assert [type(e) for e in events[-2:]] == [RunCompleted, SessionEnded]
    assert items[-1] == Ended(events[-1].seq)
    assert stats.released == [item["sequence_index"] for item in rest["items"]]


@pytest.fixture
async def held(dendrux_app: DendruxAppServer) -> AsyncIterator[tuple[RestFaults, DendruxBackend]]:
    faults = RestFaults()
    faults.traces_held = True
    async with _backend(dendrux_app, faults, trace_wait=0.3) as backend:
        yield faults, backend


async def _wait(items: list[Item], check: Any, task: asyncio.Task[Any], what: str) -> None:
    async with asyncio.timeout(30):
        while not check():
            if task.done():
                task.result()
                raise AssertionError(f"the follow ended before {what}: {items[-3:]}")
            await asyncio.sleep(0.02)


async def test_a_model_step_whose_trace_lags_is_filled_in_while_the_stream_is_quiet(
    dendrux_app: DendruxAppServer, held: tuple[RestFaults, DendruxBackend]
) -> None:
    """Past ``trace_wait`` a step used to be shown without its text for good. It goes out without it, and
    once the trace row lands, with the stream quiet (the run's tool waits on a gate), the same step comes
    again with its text and the call it made starts; the timeline shows the text in the step's one entry."""
    faults, backend = held
    run_id = await asyncio.to_thread(dendrux_app.start_run, "hold gate=late: wait for the warehouse")
    items: list[Item] = []

    async def run() -> None:
        async for item in follow(backend, run_id):
            items.append(item)

    task = asyncio.create_task(run())
    try:
        steps = lambda: [e for e in items if isinstance(e, ModelStep)]  # noqa: E731
        await _wait(items, steps, task, "the first step")
        assert [(s.iteration, s.phase, s.text) for s in steps()] == [(1, "commentary", "")]
        asked = faults.held_asks
        await _wait(items, lambda: faults.held_asks >= asked + 2, task, "the text to be asked for again")
        faults.traces_held = False  # the row lands; nothing else happens in the run meanwhile
        await _wait(items, lambda: len(steps()) == 2, task, "the step again, with its text")
        assert [(s.iteration, s.text) for s in steps()] == [
            (1, ""),
            (1, "Waiting for the warehouse to confirm."),
        ]
        started = [e for e in items if isinstance(e, ToolStarted)]
        assert [(t.name, t.args) for t in started] == [("hold", {"gate": "late"})]
        assert not any(isinstance(e, ToolCompleted) for e in items)  # still quiet: the gate is shut
        await asyncio.to_thread(dendrux_app.open_gate, "late")
        async with asyncio.timeout(30):
            await task
    finally:
        task.cancel()
    events = _events(items)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.call_id for e in events if isinstance(e, ToolCompleted)] == [started[0].call_id]
    timeline = Timeline()
    timeline.apply_many(events)
    texts = [(e.iteration, e.phase, e.text) for e in timeline if isinstance(e, TextEntry)]
    assert texts == [
        (1, TextPhase.COMMENTARY, "Waiting for the warehouse to confirm."),
        (2, TextPhase.FINAL, "The warehouse confirmed. Notes seen: 0."),
    ]
