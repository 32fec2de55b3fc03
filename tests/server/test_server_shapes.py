"""Our responses have Preloop 0.17.1's shapes: every key a recorded response has, with the same JSON types.

Each test drives the local server into the same situation as a capture, then compares key sets and types
recursively (ours may add keys, e.g. ``correlation_id``; it may never lack one).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from srv_helpers import auth, capture

from server.harness_client import HarnessClient, HarnessSession


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def assert_same_shape(ours: Any, theirs: Any, path: str = "$") -> None:
    """Every key of ``theirs`` is in ``ours`` with a compatible type (null is compatible with anything)."""
    if theirs is None or ours is None:
        return
    assert _kind(ours) == _kind(theirs), f"{path}: {_kind(ours)} != {_kind(theirs)}"
    if isinstance(theirs, dict):
        missing = set(theirs) - set(ours)
        assert not missing, f"{path}: missing keys {sorted(missing)}"
        for key, value in theirs.items():
            assert_same_shape(ours[key], value, f"{path}.{key}")
    elif isinstance(theirs, list) and theirs and ours:
        assert_same_shape(ours[0], theirs[0], f"{path}[0]")


@pytest.fixture
async def http(live_server) -> httpx.AsyncClient:
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as client:
        yield client


async def _agent(harness: HarnessClient) -> HarnessSession:
    agent = await harness.start_session(agent_name="demo-agent-main", cwd="/home/dev/demo")
    await agent.run_started("shape check")
    call = await agent.tool_started("Read", {"file_path": "README.md"}, iteration=1)
    await agent.tool_completed(call, "Read", duration_ms=9, result_summary="42 lines")
    return agent


async def test_health_has_preloop_status_and_says_local(live_server) -> None:
    async with httpx.AsyncClient(base_url=live_server.url) as anon:
        response = await anon.get("/api/v1/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == capture("001")["body"]["status"] == "healthy"
    assert body["server_kind"] == "local"


async def test_runtime_token_mint_matches_capture(http: httpx.AsyncClient) -> None:
    cap = capture("007")
    response = await http.post("/api/v1/auth/runtime-sessions/token", json=cap["request"]["json"])
    assert response.status_code == cap["status_code"] == 201
    assert_same_shape(response.json(), cap["body"])


async def test_session_list_detail_and_activity_match_captures(http, harness) -> None:
    agent = await _agent(harness)
    page = await http.get("/api/v1/runtime-sessions")
    assert_same_shape(page.json(), capture("012")["body"])
    detail = await http.get(f"/api/v1/runtime-sessions/{agent.session_id}")
    assert_same_shape(detail.json(), capture("017")["body"])
    assert detail.json()["session"]["tool_call_count"] == 1
    activity = await http.get(f"/api/v1/runtime-sessions/{agent.session_id}/activity")
    assert_same_shape(activity.json(), capture("018")["body"])
    kinds = [item["activity_type"] for item in activity.json()["items"]]
    assert kinds == ["tool_call", "session_started"]


async def test_session_list_bad_status_is_a_422_like_preloop(http) -> None:
    cap = capture("016")
    response = await http.get("/api/v1/runtime-sessions", params={"status": "running"})
    assert response.status_code == 422
    assert response.json() == cap["body"]


async def test_note_lifecycle_shapes_match_captures(http, harness) -> None:
    agent = await _agent(harness)
    created = await http.post(
        "/api/v1/operator-notes",
        json={"text": "Please run the unit tests", "runtime_session_id": agent.session_id},
    )
    assert created.status_code == 201
    assert_same_shape(created.json(), capture("027")["body"])
    listing = await http.get("/api/v1/operator-notes", params={"runtime_session_id": agent.session_id})
    assert_same_shape(listing.json(), capture("032")["body"])
    pulled = await agent.claim_notes(channel="hook", event="pre_tool_use")
    assert_same_shape(pulled.model_dump(mode="json"), capture("042")["body"])
    empty = await agent.claim_notes(channel="hook", event="stop")
    assert empty.model_dump(mode="json") == capture("043")["body"]
    delivered = await http.get(f"/api/v1/operator-notes/{created.json()['note_id']}")
    assert_same_shape(delivered.json(), capture("044")["body"])
    assert delivered.json()["state"] == "delivered"


async def test_approval_shapes_match_captures(http, harness) -> None:
    agent = await _agent(harness)
    check = asyncio.create_task(
        agent.permission_check(
            "Bash", {"command": "git push origin main"}, reasoning="Ship", cwd="/home/dev/demo"
        )
    )
    async with asyncio.timeout(30):
        while True:
            listing = await http.get("/api/v1/approval-requests", params={"status": "pending"})
            pending: list[dict[str, Any]] = listing.json()
            # The total and the page are two reads: an approval stored between them is listed but not yet
            # counted, so wait for a listing that has settled.
            if pending and listing.headers["x-total-count"] == str(len(pending)):
                break
            await asyncio.sleep(0.02)
    cap = capture("069")
    assert listing.headers["x-total-count"] == "1"
    assert_same_shape(pending[0], cap["body"][0])
    got = await http.get(f"/api/v1/approval-requests/{pending[0]['id']}")
    assert_same_shape(got.json(), capture("071")["body"])
    approved = await http.post(
        f"/api/v1/approval-requests/{pending[0]['id']}/approve", json={"comment": "go"}
    )
    assert_same_shape(approved.json(), capture("074")["body"])
    verdict = await asyncio.wait_for(check, 30)
    assert_same_shape(verdict.model_dump(mode="json"), capture("075")["body"])
    assert (verdict.decision, verdict.reason, verdict.request_id) == ("allow", "go", pending[0]["id"])


async def test_permission_check_without_ask_allows_like_preloop(harness) -> None:
    agent = await _agent(harness)
    verdict = await agent.permission_check(
        "Bash", {"command": "ls -la"}, ask=False, evaluation_phase="pre_tool_use"
    )
    assert verdict.model_dump(mode="json") == capture("010")["body"]


async def test_session_end_and_ack_match_captures(http, harness) -> None:
    agent = await _agent(harness)
    note = await http.post(
        "/api/v1/operator-notes", json={"text": "defer me", "runtime_session_id": agent.session_id}
    )
    claimed = await agent.claim_notes(defer=True)
    assert [n.note_id for n in claimed.notes] == [note.json()["note_id"]]
    assert_same_shape(claimed.model_dump(mode="json"), capture("051")["body"])
    ack = await agent._post("/agents/notes/ack", {"note_ids": [note.json()["note_id"]]})
    assert ack == capture("053")["body"]
    ended = await agent.end()
    assert_same_shape(ended.model_dump(mode="json"), capture("108")["body"])


@pytest.mark.parametrize("name", ["060", "061", "062", "063", "064", "065"])
async def test_note_validation_errors_match_captures(http, harness, name: str) -> None:
    agent = await _agent(harness)
    cap = capture(name)
    body = dict(cap["request"]["json"])
    if body.get("runtime_session_id") not in (None, "nope"):
        body["runtime_session_id"] = agent.session_id
    if "agent_id" in body:
        body["agent_id"] = "2618a221-b8ee-48a3-a51a-f78dcb1c5af8"
    response = await http.post("/api/v1/operator-notes", json=body)
    assert response.status_code == 422
    ours, theirs = response.json()["detail"][0], cap["body"]["detail"][0]
    assert (ours["type"], ours["loc"], ours["msg"]) == (theirs["type"], theirs["loc"], theirs["msg"])
    assert ours.get("ctx") == theirs.get("ctx")


async def test_list_query_errors_match_captures(http) -> None:
    bad_state = await http.get(
        "/api/v1/operator-notes",
        params={"runtime_session_id": "f7303a36-18c9-406b-825f-6a43b492ec5e", "state": "bogus"},
    )
    assert bad_state.json() == capture("066")["body"]
    bad_filter = await http.get("/api/v1/approval-requests", params={"runtime_session_id": "nope"})
    assert bad_filter.json() == capture("083")["body"]
    no_target = await http.get("/api/v1/operator-notes")
    assert (no_target.status_code, no_target.json()) == (400, capture("035")["body"])


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("024", "/api/v1/runtime-sessions/00000000-0000-0000-0000-000000000000"),
        ("055", "/api/v1/operator-notes/note_doesnotexist"),
        ("079", "/api/v1/approval-requests/00000000-0000-0000-0000-000000000000"),
    ],
)
async def test_not_found_sentences_match_captures(http, name: str, path: str) -> None:
    response = await http.get(path)
    assert (response.status_code, response.json()) == (404, capture(name)["body"])


async def test_non_uuid_session_id_is_a_clean_404_not_a_500(http) -> None:
    for suffix in ("", "/activity", "/events"):
        response = await http.get(f"/api/v1/runtime-sessions/not-a-uuid{suffix}")
        assert response.status_code == 404
        assert response.json() == {"detail": "Runtime session not found"}
