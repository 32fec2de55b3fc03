"""Why it is asked, who decided, what it cost: the local server's side of issue 24 (sections 2 to 4).

An agent names its reasoning and the rule that asks when it asks for approval; every person has a name and
a token of their own (``add_operator``) and every decision is stored with who made it; an agent reports what
each model call used and the session row sums it. Through the real server over loopback.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from srv_helpers import auth, read_until

from server import store as store_module
from server.accounts import Accounts, OperatorNameError
from server.main import add_operator
from server.store import SCHEMA_VERSION, Store


async def _pending(http: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    for _ in range(3000):
        items: list[dict[str, Any]] = (
            await http.get(
                "/api/v1/approval-requests", params={"status": "pending", "runtime_session_id": session_id}
            )
        ).json()
        if items:
            return items[0]
        await asyncio.sleep(0.01)
    raise AssertionError("approval never showed up")


async def test_an_approval_says_why_the_agent_asks_and_which_rule_asked(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="asker")
    check = asyncio.create_task(
        agent.permission_check(
            "Bash", {"command": "git push"}, reasoning="Publish the fix.", rule="git push needs a human"
        )
    )
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        approval = await _pending(http, agent.session_id)
        assert approval["agent_reasoning"] == "Publish the fix."
        assert approval["rule_context"]["rule_name"] == "git push needs a human"
        assert approval["rule_context"]["source"] == "agent_permission_hook"
        assert approval["decider"] is None  # nobody has decided yet
        await http.post(f"/api/v1/approval-requests/{approval['id']}/decline", json={"comment": "not now"})
    await asyncio.wait_for(check, 30)


async def test_without_a_rule_name_the_hook_is_named_as_preloop_names_it(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="asker")
    check = asyncio.create_task(agent.permission_check("Bash", {"command": "ls"}))
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        approval = await _pending(http, agent.session_id)
        assert approval["rule_context"]["rule_name"] == "Agent permission hook"
        await http.post(f"/api/v1/approval-requests/{approval['id']}/approve")
    await asyncio.wait_for(check, 30)


async def test_a_decision_is_stored_with_the_person_who_made_it(live_server, harness) -> None:
    dana = live_server.add_operator("dana")
    agent = await harness.start_session(agent_name="asker")
    check = asyncio.create_task(agent.permission_check("Bash", {"command": "git push"}))
    async with (
        httpx.AsyncClient(base_url=live_server.url, headers=auth(dana)) as as_dana,
        httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as as_me,
    ):
        approval = await _pending(as_me, agent.session_id)
        me = (await as_me.get("/api/v1/auth/users/me")).json()
        dana_me = (await as_dana.get("/api/v1/auth/users/me")).json()
        assert dana_me["full_name"] == "dana" and dana_me["id"] != me["id"]
        decided = await as_dana.post(
            f"/api/v1/approval-requests/{approval['id']}/approve", json={"comment": "looks fine"}
        )
        assert decided.json()["decider"]["name"] == "dana"
        # The colleague reads the same: decider, by name and user id, on the REST row and the stream.
        row = (await as_me.get(f"/api/v1/approval-requests/{approval['id']}")).json()
        assert row["decider"]["name"] == "dana"
        assert row["decider"]["user_id"] == dana_me["id"]
        assert row["decider"]["kind"] == "person"
        assert row["approver_comment"] == "looks fine"
        stream = await read_until(live_server, agent.session_id, "approval.decided")
        assert stream.first("approval.decided").data["approval"]["decider"]["name"] == "dana"
        # A note dana sends carries her name as its author.
        note = await as_dana.post(
            "/api/v1/operator-notes", json={"text": "run the tests", "runtime_session_id": agent.session_id}
        )
        assert note.json()["author"]["display"] == "dana"
    await asyncio.wait_for(check, 30)


async def test_a_batch_decision_is_stored_with_the_person_who_made_it(live_server, harness) -> None:
    """``decide-batch`` by dana: each approval it decided names her (row and stream), as one decision does."""
    dana = live_server.add_operator("dana")
    agent = await harness.start_session(agent_name="asker")
    check = asyncio.create_task(agent.permission_check("Bash", {"command": "git push"}))
    async with (
        httpx.AsyncClient(base_url=live_server.url, headers=auth(dana)) as as_dana,
        httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as as_me,
    ):
        approval = await _pending(as_me, agent.session_id)
        batch = await as_dana.post(
            "/api/v1/approval-requests/decide-batch",
            json={"ids": [approval["id"]], "approved": False, "comment": "not today"},
        )
        (result,) = batch.json()["results"]
        assert result["ok"] and result["approval"]["decider"]["name"] == "dana"
        row = (await as_me.get(f"/api/v1/approval-requests/{approval['id']}")).json()
        assert row["status"] == "declined" and row["decider"]["name"] == "dana"
        stream = await read_until(live_server, agent.session_id, "approval.decided")
        assert stream.first("approval.decided").data["approval"]["decider"]["name"] == "dana"
    await asyncio.wait_for(check, 30)


async def test_an_expired_approval_has_no_decider(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="asker")
    verdict = await agent.permission_check("Bash", {"command": "ls"}, timeout_seconds=0.3)
    assert verdict.timed_out
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        row = (await http.get(f"/api/v1/approval-requests/{verdict.request_id}")).json()
    assert row["status"] == "expired" and row["decider"] is None and row["decided_by_human"] is False


async def test_operator_names_are_checked_and_never_taken_twice(live_server) -> None:
    live_server.add_operator("dana")
    with pytest.raises(OperatorNameError, match="already exists"):
        live_server.add_operator("  dana ")
    with pytest.raises(OperatorNameError, match="empty"):
        live_server.add_operator("   ")
    with pytest.raises(OperatorNameError, match="control"):
        live_server.add_operator("da\x1b[2Jna")


async def test_originals_are_never_kept_here_and_it_says_so_as_preloop_does(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="asker")
    check = asyncio.create_task(agent.permission_check("Bash", {"command": "ls"}))
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        approval = await _pending(http, agent.session_id)
        original = await http.get(f"/api/v1/approval-requests/{approval['id']}/original-args")
        assert original.status_code == 404
        assert original.json() == {"detail": "No original arguments are available for this request"}
        unknown = await http.get(
            "/api/v1/approval-requests/00000000-0000-0000-0000-000000000000/original-args"
        )
        assert unknown.json() == {"detail": "Approval request not found"}
        await http.post(f"/api/v1/approval-requests/{approval['id']}/approve")
    await asyncio.wait_for(check, 30)


async def test_the_session_row_sums_what_its_model_calls_used(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="counter")
    await agent.run_started("task")
    usage = {"model": "m-large", "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.0081}
    await agent.step(1, "commentary", "a", tool_calls=1, usage=usage)
    await agent.step(2, "commentary", "b", tool_calls=1, usage={**usage, "cost_usd": 0.0019})
    await agent.step(3, "commentary", "c", usage={"model": "m-small", "input_tokens": 50, "output_tokens": 5})
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        detail = (await http.get(f"/api/v1/runtime-sessions/{agent.session_id}")).json()
        row = detail["session"]
        assert row["token_usage"]["input_tokens"] == 2450
        assert row["token_usage"]["output_tokens"] == 605
        assert row["token_usage"]["total_tokens"] == 3055
        assert row["estimated_cost"] == pytest.approx(0.01)
        by_model = {m["model_alias"]: m for m in detail["usage_by_model"]}
        assert by_model["m-large"]["total_requests"] == 2
        assert by_model["m-small"]["estimated_cost"] is None  # it reported tokens, no cost
        listed = (await http.get("/api/v1/runtime-sessions")).json()["items"]
        assert [r["estimated_cost"] for r in listed if r["id"] == agent.session_id] == [pytest.approx(0.01)]
    # The row is re-sent when usage moves, so a client attached sees the cost live.
    stream = await read_until(live_server, agent.session_id, "session.updated")
    assert stream.first("model.step").data["usage"]["input_tokens"] == 1200


async def test_a_session_that_reported_no_usage_has_none_not_zero(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="quiet")
    await agent.run_started("task")
    await agent.step(1, "final_answer", "done")
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        row = (await http.get(f"/api/v1/runtime-sessions/{agent.session_id}")).json()["session"]
    assert row["token_usage"] is None and row["estimated_cost"] is None


async def test_bad_usage_is_refused_with_the_field_named(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="liar")
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        answer = await http.post(
            "/api/v1/agents/events",
            headers=auth(agent.token),
            json={
                "events": [
                    {
                        "type": "model.step",
                        "iteration": 1,
                        "phase": "commentary",
                        "usage": {"input_tokens": -5},
                    }
                ]
            },
        )
    assert answer.status_code == 422
    assert "model.step" in answer.json()["detail"]


async def test_add_operator_on_a_database_file_prints_nothing_it_keeps(tmp_path: Path) -> None:
    db = tmp_path / "cp.sqlite3"
    token = await add_operator(db, "erin")
    assert token.startswith("plo_")
    store = Store(db)
    await store.open()
    try:
        principal = await Accounts(store).authenticate(token)
        assert principal is not None and getattr(principal, "display", None) == "erin"
    finally:
        await store.close()
    assert token.encode() not in _file_bytes(db)  # only its hash is stored


def _file_bytes(db: Path) -> bytes:
    wal = Path(f"{db}-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


@pytest.mark.parametrize("written_by", [3, 4])
async def test_a_database_from_before_names_and_costs_is_upgraded_keeping_its_rows(
    tmp_path: Path, written_by: int
) -> None:
    """A demo database from before named operators and costs (version 3, or 4: main's allow rules) opens
    with the newest schema and keeps its rows; an old decision names nobody rather than inventing one."""
    db = tmp_path / "old.sqlite3"
    with sqlite3.connect(db) as conn:  # what that version of this program wrote
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for version in range(1, written_by + 1):
            for statement in store_module._split_sql(store_module.MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
        conn.execute("INSERT INTO accounts VALUES ('a', 'local', '2026-01-01T00:00:00.000000+00:00')")
        conn.execute(
            "INSERT INTO sessions (id, account_id, started_at, last_activity_at) VALUES"
            " ('11111111-1111-1111-1111-111111111111', 'a', '2026-01-01T00:00:00.000000+00:00',"
            " '2026-01-01T00:00:00.000000+00:00')"
        )
        conn.execute(
            "INSERT INTO approvals (id, account_id, session_id, tool_name, tool_args, status, requested_at,"
            " expires_at, decided_by_human) VALUES ('22222222-2222-2222-2222-222222222222', 'a',"
            " '11111111-1111-1111-1111-111111111111', 'Bash', '{}', 'approved',"
            " '2026-01-01T00:00:00.000000+00:00', '2026-01-01T00:05:00.000000+00:00', 1)"
        )
    store = Store(db)
    await store.open()
    try:
        assert await store.schema_version() == SCHEMA_VERSION
        from server.rows import approval_dict, session_dict

        approval = await approval_dict(store, "22222222-2222-2222-2222-222222222222")
        assert approval["status"] == "approved" and approval["decided_by_human"] is True
        assert approval["decider"] is None  # decided before operators had names: not invented
        session = await session_dict(store, "11111111-1111-1111-1111-111111111111")
        assert session["estimated_cost"] is None
    finally:
        await store.close()
