"""Steering (``client.steering``) against the real local server over loopback: every outcome an operator
is told about, and the one short-id resolver."""

from __future__ import annotations

import asyncio

import pytest

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.errors import AmbiguousId, NoMatchingId, NotFound, SessionEnded, UsageError
from client.ids import match_id, resolve_approval, resolve_id, resolve_note
from client.steering import (
    AlreadyDeciding,
    AlreadySettled,
    Decided,
    DecisionFailed,
    NotSent,
    Sent,
    Steering,
    TooLate,
    WithdrawFailed,
    Withdrawn,
    final_record,
)
from server.harness_client import HarnessClient
from tests.conftest import LiveServer


async def _pending(client: Backend, n: int) -> list[str]:
    async with asyncio.timeout(10):
        while len(items := (await client.list_approvals(status="pending")).items) < n:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    return [a.id for a in items]


async def test_a_decision_that_lost_the_race_says_who_won_and_is_not_ours(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    agent = await harness.start_session(agent_name="builder")
    call = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}, ask=True))
    [approval_id] = await _pending(client, 1)
    steering = Steering(client)
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as other:
        await Steering(other).decide(approval_id, "approve", "ship it")
    lost = await steering.decide(approval_id, "decline", "not today")
    assert isinstance(lost, AlreadySettled) and lost.verb == "decline"
    assert (lost.approval.status, lost.approval.approver_comment) == ("approved", "ship it")
    assert not steering.decisions.here(approval_id)  # not "decided here"
    assert (await call).decision == "allow"
    failed = await steering.decide("3f6c1a52-0000-4000-8000-000000000000", "approve")
    assert isinstance(failed, DecisionFailed) and isinstance(failed.error, NotFound)


async def test_a_second_decision_on_its_way_sends_nothing(client: Backend, harness: HarnessClient) -> None:
    agent = await harness.start_session(agent_name="builder")
    call = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}, ask=True))
    [approval_id] = await _pending(client, 1)
    steering = Steering(client)
    first, second = await asyncio.gather(
        steering.decide(approval_id, "approve"), steering.decide(approval_id, "approve")
    )
    assert isinstance(first, Decided) and isinstance(second, AlreadyDeciding)
    assert steering.decisions.here(approval_id) and not steering.decisions.deciding(approval_id)
    assert (await call).decision == "allow"


async def test_notes_sent_withdrawn_too_late_and_not_sent(client: Backend, harness: HarnessClient) -> None:
    agent = await harness.start_session(agent_name="builder")
    steering = Steering(client)
    sent = await steering.send_note("hold on", session_id=agent.session_id)
    assert isinstance(sent, Sent)
    withdrawn = await steering.withdraw(sent.note.note_id)
    assert isinstance(withdrawn, Withdrawn) and withdrawn.note.state == "cancelled"
    again = await steering.withdraw(sent.note.note_id)  # the server answers 200 with it unchanged
    assert isinstance(again, TooLate) and again.note.state == "cancelled"
    read = await steering.send_note("read this", session_id=agent.session_id)
    assert isinstance(read, Sent)
    await agent.claim_notes(turn_index=3)
    late = await steering.withdraw(read.note.note_id)
    assert isinstance(late, TooLate) and late.note.state == "delivered"
    unknown = await steering.withdraw("0123456789abcdef")
    assert isinstance(unknown, WithdrawFailed) and isinstance(unknown.error, NotFound)
    await agent.end()
    refused = await steering.send_note("too late", session_id=agent.session_id)
    assert isinstance(refused, NotSent) and refused.text == "too late"
    assert isinstance(refused.error, SessionEnded)


async def test_an_approval_that_vanished_is_read_once_for_its_real_status(
    client: Backend, harness: HarnessClient
) -> None:
    agent = await harness.start_session(agent_name="builder")
    call = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}, ask=True))
    await _pending(client, 1)
    (stale,) = (await client.list_approvals(status="pending")).items
    await client.decline(stale.id, "not on a Friday")
    final = await final_record(client, stale.id)
    assert final is not None and (final.status, final.approver_comment) == ("declined", "not on a Friday")
    assert (await call).decision == "deny"


async def test_one_resolver_for_sessions_notes_and_approvals(client: Backend, harness: HarnessClient) -> None:
    """A full id as given; 4+ characters matched, decided approvals included; none or several said with
    the kind of id."""
    agent = await harness.start_session(agent_name="builder")
    call = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}, ask=True))
    [approval_id] = await _pending(client, 1)
    await client.approve(approval_id)
    await call
    assert await resolve_approval(client, approval_id[:6]) == approval_id  # decided: still found
    note = await Steering(client).send_note("n", session_id=agent.session_id)
    assert isinstance(note, Sent)
    nid = note.note.note_id
    assert await resolve_note(client, nid[:6], agent.session_id) == nid
    assert await resolve_note(client, nid) == nid  # a full id is not looked up
    with pytest.raises(NoMatchingId, match="no approval starts with 'ffff'"):
        await resolve_approval(client, "ffff")
    with pytest.raises(NoMatchingId, match=f"no note of session {agent.session_id[:8]} starts with"):
        await resolve_note(client, "ffff", agent.session_id)
    with pytest.raises(AmbiguousId, match="matches 2 runs"):
        match_id("01HX", ["01HXAAAA", "01hxbbbb"], "run")
    with pytest.raises(UsageError, match="at least 4"):
        await resolve_id("ab", "session", lambda: asyncio.sleep(0, []))
