"""The demo agents behave like coding agents: narrate, call tools, wait on approvals, act on notes, end."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from srv_helpers import auth, read_stream

from server.demo import MIGRATOR, MIN_PATIENCE, start_demo_agents


async def _sessions(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await http.get("/api/v1/runtime-sessions", params={"limit": 100})).json()[
        "items"
    ]
    return items


async def _expire_pending(server: Any, http: httpx.AsyncClient) -> None:
    """Expire every waiting approval now, through the server's own expiry (what the demo's patience
    does some seconds later): for tests about something else, so they wait for no patience."""
    for approval in (await http.get("/api/v1/approval-requests", params={"status": "pending"})).json():
        await asyncio.to_thread(server.call, server.plane.approvals.expire_now(approval["id"]))


async def test_demo_agents_work_take_notes_and_change_plan_on_decline(live_server) -> None:
    handle = start_demo_agents(live_server.url, live_server.token, pace=40.0, seed=3)
    try:
        async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
            for _ in range(600):
                sessions = await _sessions(http)
                if {s["agent_name"] for s in sessions} >= {"builder", "reviewer", "migrator"}:
                    break
                await asyncio.sleep(0.05)
            builder = next(s for s in sessions if s["agent_name"] == "builder")
            note = await http.post(
                "/api/v1/operator-notes",
                json={"text": "Please run the tests before the push", "runtime_session_id": builder["id"]},
            )
            assert note.status_code == 201
            declined: set[str] = set()
            ended = False
            for _ in range(1200):  # decline every approval the agents ask for, until the migrator ends
                for approval in (
                    await http.get("/api/v1/approval-requests", params={"status": "pending"})
                ).json():
                    await http.post(
                        f"/api/v1/approval-requests/{approval['id']}/decline", json={"comment": "not today"}
                    )
                    declined.add(approval["runtime_session_id"])
                ended = any(s["agent_name"] == "migrator" and s["ended_at"] for s in await _sessions(http))
                if ended and builder["id"] in declined:
                    break
                await asyncio.sleep(0.05)
            assert ended, "the migrator never ended its session"
            assert builder["id"] in declined
            got = (await http.get(f"/api/v1/operator-notes/{note.json()['note_id']}")).json()
            assert got["state"] == "delivered"
            # Claimed as a real harness hook does (Preloop records hook / pre_tool_use), at a known turn.
            assert got["delivery_channel"] == "hook"
            assert got["delivery_event"] in ("pre_tool_use", "stop")
            assert got["delivered_turn_index"] is not None and got["delivered_turn_index"] >= 1

        stream = await read_stream(
            live_server.url,
            live_server.token,
            builder["id"],
            stop=lambda s: sum(t == "run.completed" for t in s.types) >= 2,
            seconds=20,
        )
    finally:
        handle.stop()
    steps = [f.data for f in stream.frames if f.event == "model.step"]
    narration = [s["text"] for s in steps if s["phase"] == "commentary"]
    assert any(
        t.startswith("Operator note received: “Please run the tests before the push”") for t in narration
    )
    assert any("Changing plan" in t and "not today" in t for t in narration)
    assert {"Read", "Grep", "Edit", "Bash"} <= {
        f.data["name"] for f in stream.frames if f.event == "tool.started"
    }
    assert any(f.data["status"] == "denied" for f in stream.frames if f.event == "tool.completed")
    answers = [f.data["answer"] for f in stream.frames if f.event == "run.completed"]
    assert answers and all(answers)
    assert "model.delta" in stream.types and "approval.requested" in stream.types


async def test_same_seed_same_work(live_server) -> None:
    """A seed makes a demo repeatable: two runs narrate in the same chunks and call the same tools."""
    runs = []
    for _ in range(2):
        handle = start_demo_agents(live_server.url, live_server.token, pace=100.0, seed=5, agents=1)
        try:
            async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
                for _ in range(600):
                    mine = [s for s in await _sessions(http) if s["id"] not in {r[0] for r in runs}]
                    if mine:
                        break
                    await asyncio.sleep(0.05)
            sid = mine[0]["id"]
            stream = await read_stream(
                live_server.url, live_server.token, sid, stop=lambda s: "run.completed" in s.types, seconds=20
            )
        finally:
            handle.stop()
        work = [
            (f.event, f.data.get("text") or f.data.get("name") or f.data.get("answer"))
            for f in stream.frames
            if f.event in ("model.delta", "model.step", "tool.started", "run.completed")
        ]
        runs.append((sid, work))
    assert runs[0][1] == runs[1][1] and len(runs[0][1]) > 10


async def test_unanswered_approvals_expire_by_the_demos_policy_and_the_agent_says_why(live_server) -> None:
    """Issue 10 item 11: with nobody at the keyboard the demo must not stall on approvals for minutes; the
    approval expires after the agent's patience and the agent says so and carries on."""
    handle = start_demo_agents(live_server.url, live_server.token, pace=40.0, seed=3)
    try:
        async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
            for _ in range(1200):
                migrator = [s for s in await _sessions(http) if s["agent_name"] == "migrator"]
                if migrator:
                    break
                await asyncio.sleep(0.05)
        stream = await read_stream(
            live_server.url,
            live_server.token,
            migrator[0]["id"],
            stop=lambda s: "approval.decided" in s.types and "run.completed" in s.types,
            seconds=60,
        )
    finally:
        handle.stop()
    [decided] = [f.data["approval"] for f in stream.frames if f.event == "approval.decided"]
    assert decided["status"] == "expired"
    narration = [f.data["text"] for f in stream.frames if f.event == "model.step"]
    limit = f"{max(MIN_PATIENCE, MIGRATOR.patience / 40.0):.0f}s"  # minutes at pace 1, seconds here
    assert any(
        t.startswith(f"Approval expired (nobody answered within {limit}, the demo's limit). Changing plan:")
        for t in narration
    ), narration
    answers = [f.data["answer"] for f in stream.frames if f.event == "run.completed"]
    assert any("the approval for `alembic upgrade head` expired" in a for a in answers), answers


async def test_demo_agents_take_turns_at_the_approval_desk(live_server) -> None:
    """Issue 10 item 11: the three agents used to be all waiting on approvals within ~20 s; now one waits
    on the operator at a time while the others keep working (side work, then their turn). Each approval
    is expired through the server (what its patience does) once another agent has run a tool while it
    waited, so the test waits for that work, not for the demo's patience."""
    handle = start_demo_agents(live_server.url, live_server.token, pace=40.0, seed=3)
    most = 0
    waited: dict[str, dict[str, int]] = {}  # pending approval -> every session's tool count when first seen
    expired: set[str] = set()  # sessions whose approval expired
    try:
        async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
            for _ in range(2400):
                pending = (await http.get("/api/v1/approval-requests", params={"status": "pending"})).json()
                most = max(most, len(pending))
                tools = {s["id"]: s["tool_call_count"] or 0 for s in await _sessions(http)}
                for approval in pending:
                    mine = approval["runtime_session_id"]
                    seen = waited.setdefault(approval["id"], tools)
                    if any(n > seen.get(sid, 0) for sid, n in tools.items() if sid != mine):
                        # Others worked meanwhile: expire it now (unless the demo's patience just did).
                        expire = live_server.server.plane.approvals.expire_now(approval["id"])
                        await asyncio.to_thread(live_server.server.call, expire)
                        expired.add(mine)
                if len(expired) >= 3:
                    break
                await asyncio.sleep(0.05)
            assert len(expired) >= 3, expired
            sessions = await _sessions(http)
    finally:
        handle.stop()
    assert most == 1
    assert {s["agent_name"] for s in sessions} == {"builder", "reviewer", "migrator"}


def test_an_approval_waits_minutes_for_a_newcomer_at_the_demos_own_pace() -> None:
    """Issue 23: 40-60 s was too short to find the approval and read it; it waits minutes now (the
    other agents keep doing side work meanwhile: test_demo_agents_take_turns_at_the_approval_desk)."""
    import random

    from server.demo import SPECS, DemoAgent

    for spec in SPECS:
        patience = DemoAgent(None, spec, pace=1.0, rng=random.Random(1)).patience  # type: ignore[arg-type]
        assert 120 <= patience < 300, (spec.name, patience)  # under the server's 300 s cap


async def test_a_restarted_demo_resumes_its_sessions_where_they_were(tmp_path) -> None:
    """Issue 23: a restarted demo ended every open session ("the demo stopped before this session
    finished") and started its agents over, titles from the first again. Now each agent carries on in
    its open session (the same id, its notes still waiting for it), and a new session of an agent that
    ends its shifts goes on with the next number."""
    from server.demo import start_demo

    db = tmp_path / "demo.sqlite3"
    first = await asyncio.to_thread(start_demo, db, port=0, pace=40.0, seed=3)
    try:
        async with httpx.AsyncClient(base_url=first.url, headers=auth(first.token)) as http:
            for _ in range(1200):
                before = await _sessions(http)
                shifts = [s for s in before if s["agent_name"] == "migrator"]
                if len(shifts) >= 2 and {s["agent_name"] for s in before} >= {"builder", "reviewer"}:
                    break
                await _expire_pending(first.server, http)
                await asyncio.sleep(0.05)
            builder = next(s for s in before if s["agent_name"] == "builder")
            note = await http.post(
                "/api/v1/operator-notes",
                json={"text": "still there after the restart?", "runtime_session_id": builder["id"]},
            )
            assert note.status_code == 201
            before = await _sessions(http)
    finally:
        await asyncio.to_thread(first.stop)  # (a kill leaves the same rows: a stop ends nothing either)
    open_before = {s["id"] for s in before if s["ended_at"] is None}
    assert builder["id"] in open_before
    second = await asyncio.to_thread(start_demo, db, port=0, pace=40.0, seed=3)
    try:
        async with httpx.AsyncClient(base_url=second.url, headers=auth(second.token)) as http:
            grown: set[str] = set()
            for _ in range(1200):
                after = await _sessions(http)
                grown = {s["id"] for s in after if s["tool_call_count"] > _tools(before, s["id"])}
                if open_before <= grown:
                    break
                await _expire_pending(second.server, http)
                await asyncio.sleep(0.05)
            assert open_before <= grown, (open_before, grown)  # every open session carries on
            titles = [s["title"] for s in after]
            assert len(titles) == len(set(titles)), titles  # the numbering goes on: no title twice
            notes = (
                await http.get("/api/v1/operator-notes", params={"runtime_session_id": builder["id"]})
            ).json()["notes"]
            assert [n["text"] for n in notes] == ["still there after the restart?"]
            assert notes[0]["state"] != "undeliverable"  # read by the resumed agent, or still waiting
    finally:
        await asyncio.to_thread(second.stop)


def _tools(rows: list[dict[str, Any]], session_id: str) -> int:
    return next((int(s["tool_call_count"] or 0) for s in rows if s["id"] == session_id), 0)
