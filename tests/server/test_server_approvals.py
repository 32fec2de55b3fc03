"""Approvals: a permission check blocks until a human decides; deciding twice is a 400; paging by skip."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from srv_helpers import auth, capture, read_until

from server.harness_client import HarnessSession


@pytest.fixture
async def http(live_server) -> httpx.AsyncClient:
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as client:
        yield client


async def _wait_pending(http: httpx.AsyncClient, session_id: str, count: int = 1) -> list[dict[str, Any]]:
    for _ in range(3000):
        items: list[dict[str, Any]] = (
            await http.get(
                "/api/v1/approval-requests", params={"status": "pending", "runtime_session_id": session_id}
            )
        ).json()
        if len(items) >= count:
            return items
        await asyncio.sleep(0.01)
    raise AssertionError("approval never showed up")


async def _ask(agent: HarnessSession, command: str, **kw: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(agent.permission_check("Bash", {"command": command}, cwd="/repo", **kw))


async def test_permission_check_blocks_until_approved(live_server, http, harness) -> None:
    agent = await harness.start_session(agent_name="asker")
    check = await _ask(agent, "git push origin main", reasoning="Need to publish the fix.")
    [approval] = await _wait_pending(http, agent.session_id)
    await asyncio.sleep(0.3)
    assert not check.done()  # still waiting for a human
    detail = (await http.get(f"/api/v1/runtime-sessions/{agent.session_id}")).json()["session"]
    assert detail["pending_approval_count"] == 1
    approved = await http.post(
        f"/api/v1/approval-requests/{approval['id']}/approve", json={"comment": "ok, go ahead"}
    )
    assert approved.status_code == 200
    assert (approved.json()["status"], approved.json()["approver_comment"]) == ("approved", "ok, go ahead")
    assert approved.json()["decided_by_human"] is True
    verdict = await asyncio.wait_for(check, 30)
    assert (verdict.decision, verdict.reason, verdict.timed_out) == ("allow", "ok, go ahead", False)
    stream = await read_until(live_server, agent.session_id, "approval.decided")
    requested, decided = stream.first("approval.requested"), stream.first("approval.decided")
    assert requested.data["approval"]["id"] == decided.data["approval"]["id"] == approval["id"]
    assert requested.data["approval"]["status"] == "pending"
    assert decided.data["approval"]["status"] == "approved"


async def test_decline_denies_with_the_comment_and_twice_is_400(http, harness) -> None:
    agent = await harness.start_session(agent_name="decliner")
    check = await _ask(agent, "rm -rf build/")
    [approval] = await _wait_pending(http, agent.session_id)
    declined = await http.post(
        f"/api/v1/approval-requests/{approval['id']}/decline", json={"comment": "keep it"}
    )
    assert declined.json()["status"] == "declined"
    verdict = await asyncio.wait_for(check, 30)
    assert (verdict.decision, verdict.reason, verdict.request_id) == ("deny", "keep it", approval["id"])
    again = await http.post(f"/api/v1/approval-requests/{approval['id']}/approve", json={})
    assert (again.status_code, again.json()) == (400, {"detail": "Request already declined"})


async def test_approving_twice_is_preloops_400(http, harness) -> None:
    agent = await harness.start_session(agent_name="twice")
    check = await _ask(agent, "make deploy")
    [approval] = await _wait_pending(http, agent.session_id)
    assert (await http.post(f"/api/v1/approval-requests/{approval['id']}/approve")).status_code == 200
    again = await http.post(f"/api/v1/approval-requests/{approval['id']}/approve", json={})
    assert (again.status_code, again.json()) == (400, capture("076")["body"])
    await asyncio.wait_for(check, 30)


async def test_unanswered_approval_expires_and_the_agent_is_told(http, harness) -> None:
    agent = await harness.start_session(agent_name="impatient")
    verdict = await agent.permission_check("Bash", {"command": "sleep 1"}, timeout_seconds=0.5)
    assert (verdict.decision, verdict.timed_out) == ("deny", True)
    got = (await http.get(f"/api/v1/approval-requests/{verdict.request_id}")).json()
    assert got["status"] == "expired"
    late = await http.post(f"/api/v1/approval-requests/{verdict.request_id}/approve")
    assert (late.status_code, late.json()) == (400, {"detail": "Request already expired"})


async def test_ending_the_session_releases_a_blocked_check(http, harness) -> None:
    agent = await harness.start_session(agent_name="cut-short")
    check = await _ask(agent, "make release")
    [approval] = await _wait_pending(http, agent.session_id)
    ended = await http.patch(f"/api/v1/runtime-sessions/{agent.session_id}", json={"action": "end"})
    assert ended.status_code == 200 and ended.json()["ended_at"]
    verdict = await asyncio.wait_for(check, 30)
    assert verdict.decision == "deny"
    assert (await http.get(f"/api/v1/approval-requests/{approval['id']}")).json()["status"] == "cancelled"


async def test_approvals_list_is_a_bare_array_with_total_header_and_skip(http, harness) -> None:
    agent = await harness.start_session(agent_name="pager")
    checks = [await _ask(agent, f"step {i}") for i in range(3)]
    pending = await _wait_pending(http, agent.session_id, 3)
    page = await http.get("/api/v1/approval-requests", params={"status": "pending", "limit": 1, "skip": 1})
    assert isinstance(page.json(), list) and len(page.json()) == 1
    assert page.headers["x-total-count"] == "3"
    assert page.json()[0]["id"] == pending[1]["id"]  # newest first, like Preloop
    for approval in pending:
        await http.post(f"/api/v1/approval-requests/{approval['id']}/approve")
    await asyncio.gather(*checks)
    approved = await http.get("/api/v1/approval-requests", params={"status": "approved"})
    assert approved.headers["x-total-count"] == "3"
    assert (await http.get("/api/v1/approval-requests", params={"status": "pending"})).json() == []


async def test_decide_batch_decides_each_on_its_own_and_never_fails_as_a_whole(
    live_server, http, harness
) -> None:
    """Preloop's ``decide-batch`` contract on our server (issue 25 §3): one result per id in the order
    sent, duplicates dropped; an unknown id, another account's, or one decided already is its own result
    (with its row: ours), the rest are decided, each by the operator, with the one comment; the answer
    has the shape of Preloop's (capture 141)."""
    from test_server_shapes import assert_same_shape

    one = await harness.start_session(agent_name="one")
    two = await harness.start_session(agent_name="two")
    checks = [await _ask(one, "make a"), await _ask(two, "make b"), await _ask(one, "make c")]
    pending = [*await _wait_pending(http, one.session_id, 2), *await _wait_pending(http, two.session_id)]
    by_command = {a["tool_args"]["command"]: a["id"] for a in pending}
    a, b, c = by_command["make a"], by_command["make b"], by_command["make c"]
    assert (
        await http.post(f"/api/v1/approval-requests/{c}/approve", json={"comment": "mine"})
    ).status_code == 200
    unknown = "3f6c1a52-0000-4000-8000-000000000000"
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.other_token)) as other:
        foreign = await other.post(
            "/api/v1/approval-requests/decide-batch", json={"ids": [a], "approved": True}
        )
    assert foreign.status_code == 200
    assert foreign.json()["results"] == [
        {"id": a, "ok": False, "status": None, "error": "Approval request not found"}
    ]
    answer = await http.post(
        "/api/v1/approval-requests/decide-batch",
        json={"ids": [a, c, unknown, b, a], "approved": False, "comment": "not now"},
    )
    assert answer.status_code == 200
    body = answer.json()
    assert_same_shape(body, capture("141")["body"])
    assert [(r["id"], r["ok"], r["status"], r["error"]) for r in body["results"]] == [
        (a, True, "declined", None),
        (c, False, "approved", "Request already approved"),
        (unknown, False, None, "Approval request not found"),
        (b, True, "declined", None),
    ]
    assert (body["succeeded"], body["failed"]) == (2, 2)
    assert body["results"][1]["approval"]["approver_comment"] == "mine"  # ours: the row as it is
    assert body["results"][0]["approval"]["approver_comment"] == "not now"
    verdicts = await asyncio.gather(*checks)
    assert [(v.decision, v.reason) for v in verdicts] == [
        ("deny", "not now"),
        ("deny", "not now"),
        ("allow", "mine"),
    ]
    stream = await read_until(live_server, two.session_id, "approval.decided")
    assert stream.first("approval.decided").data["approval"]["status"] == "declined"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"ids": [], "approved": True}, "too_short"),
        ({"ids": ["3f6c1a52-0000-4000-8000-000000000000"] * 101, "approved": True}, "too_long"),
        ({"ids": ["not-an-id"], "approved": True}, "uuid_parsing"),
        ({"ids": ["3f6c1a52-0000-4000-8000-000000000000"]}, "missing"),
    ],
)
async def test_decide_batch_refuses_a_malformed_body_as_preloop_does(http, body, why) -> None:
    """Empty, over 100 ids, a non-UUID or no decision: Preloop's 422 with its field list, nothing decided."""
    answer = await http.post("/api/v1/approval-requests/decide-batch", json=body)
    assert answer.status_code == 422
    assert why in {d["type"] for d in answer.json()["detail"]}
