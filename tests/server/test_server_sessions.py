"""Session list filters and paging, counters, the operator's end, and the activity feed."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from srv_helpers import auth, read_stream, read_until, subscribed


@pytest.fixture
async def http(live_server) -> httpx.AsyncClient:
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as client:
        yield client


async def test_filters_and_paging(http, harness) -> None:
    a = await harness.start_session(agent_name="alpha", agent_kind="claude_code")
    b = await harness.start_session(agent_name="beta", agent_kind="codex")
    c = await harness.start_session(agent_name="alpha", agent_kind="claude_code")
    await b.end()

    async def ids(**params: object) -> list[str]:
        return [s["id"] for s in (await http.get("/api/v1/runtime-sessions", params=params)).json()["items"]]

    assert set(await ids(status="active")) == {a.session_id, c.session_id}
    assert await ids(status="ended") == [b.session_id]
    assert set(await ids(agent="alpha")) == {a.session_id, c.session_id}
    assert await ids(agent_kind="codex") == [b.session_id]
    assert len(await ids(active_within_minutes=5)) == 3
    first = (await http.get("/api/v1/runtime-sessions", params={"limit": 2})).json()
    rest = (await http.get("/api/v1/runtime-sessions", params={"limit": 2, "offset": 2})).json()
    assert (first["total"], first["has_more"], rest["has_more"]) == (3, True, False)
    assert len({s["id"] for s in first["items"] + rest["items"]}) == 3


async def test_counters_follow_the_agents_work(live_server, http, harness) -> None:
    agent = await harness.start_session(agent_name="counter")
    await agent.run_started("count")
    await agent.narrate(1, ["Reading ", "the file."])
    call = await agent.tool_started("Read", {"file_path": "a.py"}, iteration=1)
    await agent.tool_completed(call, "Read", duration_ms=5)
    await http.post("/api/v1/operator-notes", json={"text": "n", "runtime_session_id": agent.session_id})
    row = (await http.get("/api/v1/runtime-sessions")).json()["items"][0]
    assert (row["tool_call_count"], row["total_requests"], row["note_count"]) == (1, 1, 1)
    stream = await read_until(live_server, agent.session_id, "note.created")
    updates = [f.data["session"] for f in stream.frames if f.event == "session.updated"]
    assert updates and updates[-1]["tool_call_count"] == 1 and updates[-1]["total_requests"] == 1


async def test_operator_end_is_idempotent_and_final(live_server, http, harness) -> None:
    agent = await harness.start_session(agent_name="stopper")
    reader = asyncio.create_task(read_stream(live_server.url, live_server.token, agent.session_id))
    await subscribed(live_server.server, agent.session_id)
    first = await http.patch(f"/api/v1/runtime-sessions/{agent.session_id}", json={"action": "end"})
    second = await http.patch(f"/api/v1/runtime-sessions/{agent.session_id}", json={"action": "end"})
    assert first.status_code == second.status_code == 200
    assert (
        first.json()["ended_at"] == second.json()["ended_at"] and first.json()["activity_status"] == "ended"
    )
    stream = await asyncio.wait_for(reader, 30)
    assert stream.types[-1] == "session.ended" and stream.types.count("session.ended") == 1
    bad = await http.patch(f"/api/v1/runtime-sessions/{agent.session_id}", json={"action": "pause"})
    assert bad.status_code == 422


async def test_agent_cannot_forge_server_events_or_post_after_end(harness) -> None:
    from server.harness_client import HarnessError

    agent = await harness.start_session(agent_name="forger")
    with pytest.raises(HarnessError) as forged:
        await agent.emit({"type": "note.delivered", "note": {}})
    assert forged.value.status == 422
    with pytest.raises(HarnessError) as invalid:
        await agent.emit({"type": "model.step", "iteration": 1, "phase": "thinking"})
    assert invalid.value.status == 422
    await agent.end()
    with pytest.raises(HarnessError) as late:
        await agent.delta("too late", iteration=1)
    assert (late.value.status, late.value.detail) == (409, "Runtime session has ended")


async def test_activity_lists_tool_calls_and_delivered_notes_newest_first(http, harness) -> None:
    agent = await harness.start_session(agent_name="active")
    call = await agent.tool_started("Bash", {"command": "pytest -q"}, iteration=1)
    await agent.tool_completed(call, "Bash", duration_ms=1200, result_summary="12 passed")
    await http.post(
        "/api/v1/operator-notes", json={"text": "ship it", "runtime_session_id": agent.session_id}
    )
    await agent.claim_notes()
    await agent.end()
    items = (await http.get(f"/api/v1/runtime-sessions/{agent.session_id}/activity")).json()["items"]
    assert [i["activity_type"] for i in items] == [
        "session_ended",
        "agent_control_message",
        "tool_call",
        "session_started",
    ]
    assert items[1]["metadata"]["kind"] == "operator_note" and items[1]["summary"] == "ship it"
    assert items[2]["metadata"]["duration_ms"] == 1200 and items[2]["summary"] == "12 passed"


async def test_a_list_page_counts_each_session_as_its_detail_does(http, harness) -> None:
    """The list reads every row's counters in three queries for the whole page: each row must still say
    what the session's own detail says (note count, latest note, pending approvals), for every row."""
    quiet = await harness.start_session(agent_name="quiet")
    noted = await harness.start_session(agent_name="noted")
    asking = await harness.start_session(agent_name="asking")
    for text in ("first", "second", "third"):
        note = {"text": text, "runtime_session_id": noted.session_id}
        assert (await http.post("/api/v1/operator-notes", json=note)).status_code == 201
        await asyncio.sleep(0.002)  # distinct created_at: the latest note is the third
    note = {"text": "one", "runtime_session_id": asking.session_id}
    assert (await http.post("/api/v1/operator-notes", json=note)).status_code == 201
    check = asyncio.create_task(asking.permission_check("Bash", {"command": "ls"}, timeout_seconds=30))
    for _ in range(3000):
        pending = (await http.get("/api/v1/approval-requests", params={"status": "pending"})).json()
        if pending:
            break
        await asyncio.sleep(0.01)
    items = (await http.get("/api/v1/runtime-sessions")).json()["items"]
    by_id = {row["id"]: row for row in items}
    counted = ("note_count", "latest_note_at", "latest_note_author_display", "pending_approval_count")
    for agent, expected in ((quiet, (0, None, 0)), (noted, (3, "x", 0)), (asking, (1, "x", 1))):
        detail = (await http.get(f"/api/v1/runtime-sessions/{agent.session_id}")).json()["session"]
        row = by_id[agent.session_id]
        assert {k: row[k] for k in counted} == {k: detail[k] for k in counted}
        assert row["note_count"] == expected[0] and row["pending_approval_count"] == expected[2]
        assert (row["latest_note_at"] is None) == (expected[1] is None)
    await http.patch(f"/api/v1/runtime-sessions/{asking.session_id}", json={"action": "end"})
    await asyncio.wait_for(check, 30)
