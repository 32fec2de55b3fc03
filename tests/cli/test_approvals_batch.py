"""``preloop approvals approve|decline ID [ID ...]`` on the local server over loopback (issue 25 §2, §5): one
decision for many ids, one line per id, exit 0 only when every id was decided by this command, a short id
that names no approval a usage error before anything is decided, nothing decided twice."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cli.main import main
from client.backends import connect
from client.config import Settings
from server.harness_client import HarnessClient, HarnessSession
from tests.conftest import LiveServer

UNKNOWN = "3f6c1a52-0000-4000-8000-000000000000"


async def _pending(live_server: LiveServer, *commands: str) -> list[str]:
    """The ids of the pending approvals of these commands, in that order."""
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as client:
        async with asyncio.timeout(20):
            while len(items := (await client.list_approvals(status="pending")).items) < len(commands):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    by_command = {a.tool_args.get("command"): a.id for a in items}
    return [by_command[c] for c in commands]


def _ask(session: HarnessSession, command: str) -> asyncio.Task[Any]:
    return asyncio.create_task(session.permission_check("Bash", {"command": command}))


async def test_approve_many_across_sessions_one_line_each(
    live_server: LiveServer, harness: HarnessClient, capsys: pytest.CaptureFixture[str]
) -> None:
    one = await harness.start_session(agent_name="builder")
    two = await harness.start_session(agent_name="tester")
    calls = [_ask(one, "make a"), _ask(two, "make b"), _ask(one, "make c")]
    ids = await _pending(live_server, "make a", "make b", "make c")
    code = await asyncio.to_thread(main, ["approvals", "approve", ids[0][:8], ids[1], ids[2][:6]])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == [f"Approval {i} (Bash) approved." for i in ids]
    assert captured.err == ""
    assert [v.decision for v in await asyncio.gather(*calls)] == ["allow", "allow", "allow"]


async def test_a_mixed_batch_decides_what_waits_and_says_what_the_rest_is(
    live_server: LiveServer, harness: HarnessClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """One waiting, one approved by another operator first, one unknown (full id), one waiting given
    twice: the waiting ones are declined once each, the other two told on stderr, exit 1; --json gives
    one object per id. Who settled each first is named: the colleague, and "you" for this operator's own."""
    agent = await harness.start_session(agent_name="builder")
    calls = [_ask(agent, "make a"), _ask(agent, "make b"), _ask(agent, "make c")]
    first, taken, last = await _pending(live_server, "make a", "make b", "make c")
    dana = live_server.add_operator("dana")
    async with await connect(Settings(live_server.url, dana, server_kind="local")) as other:
        await other.approve(taken, "fine by me")
    argv = ["approvals", "decline", first, taken, UNKNOWN, last, first[:8], "--comment", "not now"]
    code = await asyncio.to_thread(main, argv)
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out.splitlines() == [
        f'Approval {first} (Bash) declined with comment "not now".',
        f'Approval {last} (Bash) declined with comment "not now".',
    ]
    err = captured.err.splitlines()
    assert err[0].startswith(
        f"preloop: already approved: approval {taken[:8]} (Bash) was approved by dana at "
    )
    assert err[0].endswith('comment "fine by me"')
    assert err[1].startswith(f"preloop: approval {UNKNOWN[:8]} not declined: not found: ")
    assert err[2] == "preloop: 2 of 4 declined here; 2 not (said above)"
    assert len(err) == 3
    verdicts = await asyncio.gather(*calls)
    assert [v.decision for v in verdicts] == ["deny", "allow", "deny"]
    assert verdicts[1].reason == "fine by me"  # not declined over the other operator's approval

    again = await asyncio.to_thread(main, ["approvals", "approve", first, taken, "--json"])
    captured = capsys.readouterr()
    assert again == 1
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [(r["id"], r["result"], r["status"]) for r in records] == [
        (first, "already_settled", "declined"),
        (taken, "already_settled", "approved"),
    ]
    assert (
        records[0]["decided_by"]["kind"] == "human"
        and records[0]["approval"]["approver_comment"] == "not now"
    )
    # Declined by this operator (in the command before): "you"; the colleague by name.
    assert records[0]["decided_by"]["you"] is True and records[0]["decided_by"]["detail"] == "you"
    assert records[1]["decided_by"]["name"] == "dana" and records[1]["decided_by"]["you"] is False
    assert "was declined by you at" in captured.err.splitlines()[0]


async def test_a_short_id_that_names_nothing_decides_nothing(
    live_server: LiveServer, harness: HarnessClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo among good ids: exit 2 before any decision, each bad id named; the good ones still wait."""
    agent = await harness.start_session(agent_name="builder")
    call = _ask(agent, "make a")
    [waiting] = await _pending(live_server, "make a")
    typo = "0000" if not waiting.startswith("0000") else "ffff"
    code = await asyncio.to_thread(main, ["approvals", "approve", waiting[:8], typo, "xyz!"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "'xyz!' is not an approval id" in captured.err  # refused before any request
    code = await asyncio.to_thread(main, ["approvals", "approve", waiting[:8], typo])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.splitlines() == [
        f"preloop: no such approval: no approval starts with '{typo}': "
        "`preloop approvals list --status all` shows them",
        "preloop: nothing was approved",
    ]
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as client:
        assert (await client.get_approval(waiting)).pending
        await client.decline(waiting)
    await call
