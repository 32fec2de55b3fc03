"""Allow rules on the local server, through the client's backend over loopback: a rule decides a covered
call where the approval is raised (the agent is answered at once, the record names the rule and who set
it), a danger-risk call only when the rule was made for it, ``mute`` still asks, revoking ends it, and
rules survive a restart. Bad input is refused with a sentence."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from srv_helpers import read_until

from client.backends.local import LocalBackend
from client.connection import Connection
from client.errors import NotFound, ValidationFailed
from client.models import RuleSpec
from server.harness_client import HarnessSession


@pytest.fixture
async def backend(live_server: Any) -> Any:
    async with LocalBackend(Connection(live_server.url, live_server.token)) as b:
        yield b


def _session_rule(session_id: str, **kw: Any) -> RuleSpec:
    fields: dict[str, Any] = {"mode": "allow", "minutes": 30, "scope": "session", "session_id": session_id}
    fields.update(kw)
    return RuleSpec(**fields)


async def _pending(backend: LocalBackend, session_id: str) -> list[Any]:
    for _ in range(3000):
        page = await backend.list_approvals(session_id=session_id)
        if page.items:
            return page.items
        await asyncio.sleep(0.01)
    raise AssertionError("no approval showed up")


async def test_a_rule_decides_a_covered_call_at_once_and_names_itself(live_server, harness, backend) -> None:
    agent: HarnessSession = await harness.start_session(agent_name="builder")
    rule = await backend.create_rule(
        _session_rule(agent.session_id, tool_name="Bash", pattern="pytest *", danger=True)
    )
    assert (rule.set_by, rule.pattern, rule.allowed_count) == ("Local Operator", "pytest *", 0)

    verdict = await asyncio.wait_for(agent.permission_check("Bash", {"command": "pytest -q tests/"}), 10)
    assert verdict.decision == "allow" and rule.id[:8] in verdict.reason
    decided = await backend.get_approval(verdict.request_id or "")
    assert decided.status == "approved" and not decided.decided_by_human
    assert decided.rule is not None and decided.rule.id == rule.id and decided.rule.set_by == "Local Operator"
    # the session's stream tells the call as decided by the rule, and never as waiting
    stream = await read_until(live_server, agent.session_id, "approval.decided")
    assert "approval.requested" not in stream.types
    assert stream.first("approval.decided").data["approval"]["rule"]["id"] == rule.id
    [held] = await backend.list_rules()
    assert held.allowed_count == 1


async def test_a_call_outside_the_pattern_or_the_session_still_asks(live_server, harness, backend) -> None:
    agent = await harness.start_session(agent_name="builder")
    other = await harness.start_session(agent_name="other")
    await backend.create_rule(
        _session_rule(agent.session_id, tool_name="Bash", pattern="pytest *", danger=True)
    )
    chained = asyncio.create_task(agent.permission_check("Bash", {"command": "pytest x; rm -rf ~"}))
    elsewhere = asyncio.create_task(other.permission_check("Bash", {"command": "pytest -q"}))
    assert len(await _pending(backend, agent.session_id)) == 1  # `*` never reaches past a `;`
    assert len(await _pending(backend, other.session_id)) == 1
    assert not chained.done() and not elsewhere.done()
    for approval in (await backend.list_approvals()).items:
        await backend.decline(approval.id, "no")
    assert (await chained).decision == (await elsewhere).decision == "deny"


async def test_a_danger_risk_call_needs_a_rule_made_for_it(live_server, harness, backend) -> None:
    agent = await harness.start_session(agent_name="builder")
    await backend.create_rule(_session_rule(agent.session_id, tool_name="Bash"))  # no second confirmation
    asked = asyncio.create_task(agent.permission_check("Bash", {"command": "ls"}))  # Bash is danger here
    [waiting] = await _pending(backend, agent.session_id)
    assert waiting.risk_level == "danger" and waiting.rule is None
    await backend.approve(waiting.id)
    assert (await asked).decision == "allow"
    # a caution-risk tool is covered by the same kind of rule without it
    await backend.create_rule(_session_rule(agent.session_id, tool_name="Read"))
    verdict = await asyncio.wait_for(agent.permission_check("Read", {"file_path": "README.md"}), 10)
    assert verdict.decision == "allow" and (await backend.get_approval(verdict.request_id or "")).rule


async def test_mute_still_asks_and_says_which_rule_silenced_it(live_server, harness, backend) -> None:
    agent = await harness.start_session(agent_name="builder")
    rule = await backend.create_rule(_session_rule(agent.session_id, mode="mute", tool_name="Bash"))
    asked = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
    [waiting] = await _pending(backend, agent.session_id)
    assert waiting.pending and waiting.rule is not None and waiting.rule.id == rule.id
    assert waiting.rule.mode == "mute"
    await backend.decline(waiting.id, "not now")
    assert (await asked).decision == "deny"


async def test_revoked_rules_cover_nothing_and_rules_survive_a_restart(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="builder")
    async with LocalBackend(Connection(live_server.url, live_server.token)) as backend:
        kept = await backend.create_rule(_session_rule(agent.session_id, tool_name="Read"))
        ended = await backend.create_rule(_session_rule(agent.session_id, tool_name="Grep"))
        revoked = await backend.revoke_rule(ended.id)
        assert revoked.revoked_at is not None and revoked.revoked_by == "Local Operator"
    live_server.stop()
    live_server.start()
    async with LocalBackend(Connection(live_server.url, live_server.token)) as backend:
        assert [r.id for r in await backend.list_rules()] == [kept.id]
        verdict = await asyncio.wait_for(agent.permission_check("Read", {"file_path": "a.py"}), 10)
        assert verdict.decision == "allow"
        grep = asyncio.create_task(agent.permission_check("Grep", {"pattern": "x"}))
        [waiting] = await _pending(backend, agent.session_id)
        assert waiting.tool_name == "Grep"
        assert [r.id for r in await backend.revoke_all_rules()] == [kept.id]
        assert await backend.list_rules() == []
        await backend.decline(waiting.id)
        assert (await grep).decision == "deny"


async def test_bad_rules_are_refused_with_a_sentence(live_server, harness, backend) -> None:
    agent = await harness.start_session(agent_name="builder")
    sid = agent.session_id
    for spec, words in (
        (_session_rule(sid, tool_name="Bash", pattern="pytest [x"), "never closed"),
        (_session_rule(sid, minutes=0), "greater than or equal to 1"),
        (_session_rule(sid, minutes=481), "less than or equal to 480"),
        (_session_rule(sid, pattern="pytest *"), "belongs to one tool"),
    ):
        with pytest.raises(ValidationFailed) as refused:
            await backend.create_rule(spec)
        assert words in str(refused.value)
    with pytest.raises(NotFound):  # a session of another account is no session at all
        async with LocalBackend(Connection(live_server.url, live_server.other_token)) as other:
            await other.create_rule(_session_rule(sid))
    with pytest.raises(NotFound):
        await backend.revoke_rule("00000000-0000-4000-8000-000000000000")
    assert await backend.list_rules() == []
