"""The Dendrux backend against a real Dendrux 0.4.1 app over loopback (tests/dendrux_app).

Parallel tools finishing together, a note delivered mid-run, approve and decline with a reason, and a
follower that survives the app restarting. Waits are on conditions, bounded and generous.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from client.backends.dendrux import DendruxBackend
from client.backends.dendrux.feed import FeedStats, follow
from client.connection import Connection
from client.errors import Unsupported
from client.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    ModelStep,
    NoteEvent,
    RunCompleted,
    SessionEnded,
    ToolCompleted,
    ToolStarted,
)
from client.status import Ended, Reconnecting, Refused, StreamStatus
from tests.dendrux_app.server import DendruxAppServer

Item = Event | StreamStatus


class Follower:
    """One follow running in the background; tests wait on what it has seen."""

    def __init__(self, backend: DendruxBackend, run_id: str) -> None:
        self.items: list[Item] = []
        self.stats = FeedStats()
        self._task = asyncio.create_task(self._run(backend, run_id))

    async def _run(self, backend: DendruxBackend, run_id: str) -> None:
        async for item in follow(backend, run_id, stats=self.stats):
            self.items.append(item)

    @property
    def events(self) -> list[Event]:
        return [i for i in self.items if not isinstance(i, StreamStatus.__args__)]  # type: ignore[attr-defined]

    async def wait(self, check: Callable[[list[Item]], Any], what: str) -> Any:
        async with asyncio.timeout(60):
            while not (found := check(self.items)):
                if self._task.done():
                    self._task.result()
                    raise AssertionError(f"the follow ended before {what}: {self.items[-3:]}")
                await asyncio.sleep(0.02)
        return found

    async def done(self) -> None:
        async with asyncio.timeout(60):
            await self._task

    async def cancel(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@pytest.fixture
async def backend(dendrux_app: DendruxAppServer) -> AsyncIterator[DendruxBackend]:
    conn = Connection(dendrux_app.url, dendrux_app.token, backoff_initial=0.05, backoff_max=0.5)
    async with DendruxBackend(conn) as b:
        yield b


def _of(kind: type[Any]) -> Callable[[list[Item]], list[Any]]:
    return lambda items: [i for i in items if isinstance(i, kind)]


async def _start(app: DendruxAppServer, text: str) -> str:
    return await asyncio.to_thread(app.start_run, text)


async def test_parallel_tools_finishing_together_lose_nothing_over_20_runs(
    dendrux_app: DendruxAppServer, backend: DendruxBackend
) -> None:
    runs, tools = 20, 8
    lost = duplicated = gaps = backfilled = 0
    longest = 0.0

    async def one(k: int) -> None:
        nonlocal lost, duplicated, gaps, backfilled, longest
        run_id = await _start(dendrux_app, f"parallel gate=p{k} n={tools}: check stock everywhere")
        follower = Follower(backend, run_id)
        await follower.wait(lambda items: len(_of(ToolStarted)(items)) == tools, "all tools started")
        await asyncio.to_thread(dendrux_app.open_gate, f"p{k}")
        await follower.done()
        rest = await backend.get_json(f"/runs/{run_id}/events", params={"limit": 1000})
        expected = [item["sequence_index"] for item in rest["items"]]
        released = follower.stats.released
        lost += len(set(expected) - set(released))
        duplicated += len(released) - len(set(released))
        gaps += follower.stats.gaps
        backfilled += follower.stats.backfilled
        longest = max(longest, follower.stats.longest_fill)
        completed = _of(ToolCompleted)(follower.items)
        assert sorted(c.call_id for c in completed) == sorted(
            s.call_id for s in _of(ToolStarted)(follower.items)
        )
        assert [e.seq for e in follower.events] == list(range(1, len(follower.events) + 1))
        assert isinstance(follower.items[-1], Ended)

    gate = asyncio.Semaphore(5)

    async def limited(k: int) -> None:
        async with gate:
            await one(k)

    await asyncio.gather(*(limited(k) for k in range(runs)))
    print(
        f"\nDendrux parallel tools: {runs} runs x {tools} tools: lost {lost}, duplicated {duplicated}, "
        f"gaps seen on the stream {gaps}, events backfilled from REST {backfilled}, "
        f"longest fill {longest * 1000:.0f} ms"
    )
    assert (lost, duplicated) == (0, 0)


async def test_note_sent_mid_run_is_delivered_and_shown_once(
    dendrux_app: DendruxAppServer, backend: DendruxBackend
) -> None:
    run_id = await _start(dendrux_app, "hold gate=n1: wait for the warehouse")
    follower = Follower(backend, run_id)
    await follower.wait(_of(ToolStarted), "the hold tool")
    note = await backend.send_note("Customer is a VIP, be polite.", session_id=run_id)
    assert note.state == "pending"
    await asyncio.to_thread(dendrux_app.open_gate, "n1")
    await follower.done()
    delivered = [e for e in _of(NoteEvent)(follower.items) if e.type == "note.delivered"]
    assert [(n.note.note_id, n.note.text) for n in delivered] == [
        (note.note_id, "Customer is a VIP, be polite.")
    ]
    steps = _of(ModelStep)(follower.items)
    assert [s.phase for s in steps] == ["commentary", "final_answer"]
    assert steps[0].text == "Waiting for the warehouse to confirm."
    answer = _of(RunCompleted)(follower.items)[0].answer
    assert answer == "The warehouse confirmed. Notes seen: 1 (Customer is a VIP, be polite.)."
    listed = await backend.list_notes(session_id=run_id)
    assert [(n.note_id, n.state) for n in listed.notes] == [(note.note_id, "delivered")]


async def test_decline_with_a_reason_and_approve_per_call(
    dendrux_app: DendruxAppServer, backend: DendruxBackend
) -> None:
    run_id = await _start(dendrux_app, "refund voucher=yes: order A-17 arrived broken; refund it.")
    follower = Follower(backend, run_id)
    requested = await follower.wait(
        lambda items: (found := _of(ApprovalRequested)(items)) and len(found) == 2 and found, "two approvals"
    )
    refund, voucher = (r.approval for r in requested)
    assert (refund.tool_name, refund.tool_args) == ("refund_order", {"order_id": "A-17", "amount_usd": 42.5})
    pending = await backend.list_approvals(session_id=run_id)
    assert sorted(a.id for a in pending.items) == sorted([refund.id, voucher.id])
    declined = await backend.decline(refund.id, "Refunds over $40 need a manager.")
    assert declined.status == "declined"
    await backend.approve(voucher.id)
    await follower.done()
    decided = {d.approval.id: d.approval for d in _of(ApprovalDecided)(follower.items)}
    assert decided[refund.id].status == "declined"
    assert decided[refund.id].approver_comment == "Refunds over $40 need a manager."
    assert decided[voucher.id].status == "approved"
    results = {c.call_id: c.status for c in _of(ToolCompleted)(follower.items)}
    assert (results[refund.id], results[voucher.id]) == ("denied", "ok")
    assert _of(RunCompleted)(follower.items)[0].answer.startswith("The refund was not approved")


async def test_follow_survives_the_app_restarting_and_resumes_without_repeats(
    dendrux_app: DendruxAppServer, backend: DendruxBackend
) -> None:
    run_id = await _start(dendrux_app, "refund: order A-17 arrived broken; refund it.")
    follower = Follower(backend, run_id)
    approval = (await follower.wait(_of(ApprovalRequested), "the approval"))[0].approval
    before = len(follower.events)
    await asyncio.to_thread(dendrux_app.stop)
    await follower.wait(_of(Reconnecting), "the follower to notice")
    await asyncio.to_thread(dendrux_app.start)
    await backend.approve(approval.id)
    await follower.done()
    events = follower.events
    assert len(events) > before
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len(_of(ApprovalRequested)(events)) == 1 and len(_of(SessionEnded)(events)) == 1
    assert len(follower.stats.released) == len(set(follower.stats.released))
    assert _of(RunCompleted)(events)[0].answer == "Refunded $42.50 for order A-17. Notes seen: 0."


async def test_what_a_dendrux_app_cannot_do_is_said_not_attempted(
    dendrux_app: DendruxAppServer, backend: DendruxBackend
) -> None:
    caps = backend.capabilities
    assert (caps.notes, caps.approvals, caps.withdraw_notes, caps.end_session) == (True, True, False, False)
    run_id = await _start(dendrux_app, "answer: hello")
    with pytest.raises(Unsupported, match="withdraw"):
        await backend.withdraw_note("01M8P3TRQSAGWNBSZN3W1BM6CD")
    with pytest.raises(Unsupported, match="cannot end a run"):
        await backend.end_session(run_id)


async def test_unknown_run_is_refused_once_the_start_grace_is_over(dendrux_app: DendruxAppServer) -> None:
    conn = Connection(dendrux_app.url, dendrux_app.token, backoff_initial=0.05, backoff_max=0.1)
    async with DendruxBackend(conn, run_grace=3.0) as b:  # the first 404s come well within 3 s
        items = [item async for item in follow(b, "01M8P3TR0QRQVHABBEDAPX4Y8X")]
    assert any(isinstance(i, Reconnecting) and "not visible yet" in i.reason for i in items)
    assert isinstance(items[-1], Refused) and items[-1].status == 404


async def test_an_app_without_the_steer_router_is_followed_and_says_it_takes_no_notes(tmp_path: Any) -> None:
    with DendruxAppServer(tmp_path / "read-only.sqlite3", steer=False) as app:
        conn = Connection(app.url, app.token, backoff_initial=0.05, backoff_max=0.5)
        async with DendruxBackend(conn) as b:
            run_id = await _start(app, "answer: hello")
            items = [item async for item in follow(b, run_id)]
            assert isinstance(items[-1], Ended)
            assert _of(RunCompleted)(items)[0].answer == "Nothing to do: here is the answer. Notes seen: 0."
            with pytest.raises(Unsupported, match="no steer router"):
                await b.send_note("hello", session_id=run_id)
            assert not b.capabilities.notes and not b.capabilities.approvals
