"""One decision for many approvals (``Steering.decide_many``) against the real local server over loopback:
each approval's own outcome (decided, already settled and by whom, expired, unknown), none lost, none
decided twice, and the agents answered."""

from __future__ import annotations

import asyncio
from typing import Any

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.errors import NotFound
from client.steering import AlreadyDeciding, AlreadySettled, Decided, DecisionFailed, Steering
from server.harness_client import HarnessClient, HarnessSession
from tests.conftest import LiveServer

UNKNOWN = "3f6c1a52-0000-4000-8000-000000000000"


async def _pending(client: Backend, *commands: str) -> list[str]:
    """The ids of the pending approvals of these commands, in that order (asked at once, they reach the
    server in any order)."""
    async with asyncio.timeout(20):
        while len(items := (await client.list_approvals(status="pending")).items) < len(commands):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    by_command = {a.tool_args.get("command"): a.id for a in items}
    return [by_command[c] for c in commands]


def _ask(session: HarnessSession, command: str, **kw: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(session.permission_check("Bash", {"command": command}, **kw))


async def test_each_approval_of_a_batch_gets_its_own_outcome(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    """Five approvals over two sessions, one of them approved by another operator first and one expired,
    plus an unknown id: the three still waiting are declined with the one comment; the other three are
    told as what they are, and the batch's order is kept."""
    one = await harness.start_session(agent_name="builder")
    two = await harness.start_session(agent_name="tester")
    calls = [_ask(one, "make a"), _ask(two, "make b"), _ask(one, "make c"), _ask(two, "make d")]
    expiring = _ask(one, "make e")
    ids = await _pending(client, "make a", "make b", "make c", "make d", "make e")
    await live_server.expire_approval(ids[4])
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as other:
        await other.approve(ids[1], "fine by me")
    expired = await asyncio.wait_for(expiring, 30)
    assert expired.timed_out
    steering = Steering(client)
    batch = await steering.decide_many([*ids, UNKNOWN, ids[0]], "decline", "not today")
    assert [
        o.approval.id if isinstance(o, Decided | AlreadySettled) else o.approval_id for o in batch.outcomes
    ] == [
        *ids,
        UNKNOWN,
    ]
    kinds = [type(o).__name__ for o in batch.outcomes]
    assert kinds == ["Decided", "AlreadySettled", "Decided", "Decided", "AlreadySettled", "DecisionFailed"]
    settled, lapsed = batch.outcomes[1], batch.outcomes[4]
    assert isinstance(settled, AlreadySettled) and settled.approval.status == "approved"
    assert settled.approval.approver_comment == "fine by me" and settled.approval.decided_by_human
    assert isinstance(lapsed, AlreadySettled) and lapsed.approval.status == "expired"
    failed = batch.outcomes[5]
    assert isinstance(failed, DecisionFailed) and isinstance(failed.error, NotFound)
    assert not batch.all_decided and len(batch.decided) == 3
    for outcome in batch.decided:
        assert outcome.approval.status == "declined" and outcome.approval.approver_comment == "not today"
        assert steering.decisions.here(outcome.approval.id)
    assert not steering.decisions.here(ids[1])  # lost to the other operator: not "decided here"
    verdicts = await asyncio.gather(*calls)
    assert [v.decision for v in verdicts] == ["deny", "allow", "deny", "deny"]
    assert all("not today" in v.reason for i, v in enumerate(verdicts) if i != 1)


async def test_a_batch_already_on_its_way_sends_nothing_twice(
    client: Backend, harness: HarnessClient
) -> None:
    """The same approvals decided twice at once (two key presses): the second batch says "already being
    decided" for those it shares with the first, and decides only the others."""
    agent = await harness.start_session(agent_name="builder")
    calls = [_ask(agent, f"make {n}") for n in range(3)]
    ids = await _pending(client, "make 0", "make 1", "make 2")
    steering = Steering(client)
    first, second = await asyncio.gather(
        steering.decide_many(ids[:2], "approve"), steering.decide_many(ids[1:], "approve")
    )
    assert first.all_decided
    assert [type(o) for o in second.outcomes] == [AlreadyDeciding, Decided]
    assert [v.decision for v in await asyncio.gather(*calls)] == ["allow", "allow", "allow"]
