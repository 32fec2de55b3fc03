"""``preloop approvals list --all-sessions --watch``: the real console script against the local server.

NDJSON with ``--json`` (one object per change, stdout only), human lines otherwise, 130 on Ctrl+C, and a
quiet exit when the reader of the pipe goes away.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import signal
from pathlib import Path
from typing import Any

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from server.harness_client import HarnessSession
from tests.cli.helpers import PRELOOP, preloop
from tests.conftest import LiveServer, until


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        PRELOOP,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _line(stream: asyncio.StreamReader | None) -> str:
    assert stream is not None
    async with asyncio.timeout(60):  # generous: a loaded machine starts processes slowly
        raw = await stream.readline()
    assert raw, "the watch ended early"
    return raw.decode()


def ask(session: HarnessSession, command: str) -> asyncio.Task[Any]:
    return asyncio.create_task(session.permission_check("Bash", {"command": command}, ask=True))


async def pending(client: Backend, n: int) -> None:
    for _ in range(1500):
        if len((await client.list_approvals(status="pending")).items) >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{n} pending approvals never showed")


async def test_watch_json_is_ndjson_of_changes_and_ctrl_c_exits_130(live_server: LiveServer) -> None:
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        one = await harness.start_session(agent_name="builder")
        two = await harness.start_session(agent_name="tester")
        first = ask(one, "git push origin main")
        await pending(client, 1)
        proc = await _spawn("approvals", "list", "--all-sessions", "--watch", "--json")
        now = json.loads(await _line(proc.stdout))  # what is pending already comes first
        assert now["type"] == "approval.pending"
        assert now["approval"]["tool_args"]["command"] == "git push origin main"
        second = ask(two, "rm -rf build")
        new = json.loads(await _line(proc.stdout))
        assert new["type"] == "approval.pending" and new["approval"]["runtime_session_id"] == two.session_id
        await client.decline(new["approval"]["id"], "not today")
        gone = json.loads(await _line(proc.stdout))
        assert gone["type"] == "approval.resolved" and gone["status"] == "declined" and gone["elsewhere"]
        assert gone["approval"]["approver_comment"] == "not today"
        await client.send_note("run the linter", session_id=one.session_id)
        await one.end()  # the pending note becomes undeliverable, the approval is cancelled
        lines = [json.loads(await _line(proc.stdout)) for _ in range(2)]
        assert sorted(x["type"] for x in lines) == ["approval.resolved", "note.failed"]
        note = next(x for x in lines if x["type"] == "note.failed")["note"]
        assert note["state"] == "undeliverable" and note["text"] == "run the linter"
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 130
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert "Traceback" not in err and "KeyboardInterrupt" not in err
        await asyncio.gather(first, second)


async def test_watch_human_lines_and_a_closed_pipe_ends_quietly(
    live_server: LiveServer, tmp_path: Path
) -> None:
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        first = ask(agent, "make deploy")
        await pending(client, 1)
        err_file = tmp_path / "err.txt"
        env = {**os.environ, "PATH": f"{Path(PRELOOP).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            f"set -o pipefail; preloop approvals list --all-sessions --watch 2>{err_file} | head -1",
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        line = await _line(proc.stdout)
        assert "⚑ pending" in line and "make deploy" in line and "builder" in line and "expires in" in line
        # head has gone; the next change makes preloop write into the closed pipe, and it leaves quietly
        second = ask(agent, "make release")
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        assert "Traceback" not in err_file.read_text() and "Broken pipe" not in err_file.read_text()
        for approval in (await client.list_approvals(status="pending")).items:
            await client.approve(approval.id)
        await asyncio.gather(first, second)


def test_watch_flag_combinations_are_usage_errors(live_server: LiveServer) -> None:
    both = preloop("approvals", "list", "--all-sessions", "--session", "abcd1234", "--watch")
    assert both.returncode == 2 and "contradict" in both.stderr
    status = preloop("approvals", "list", "--watch", "--status", "approved")
    assert status.returncode == 2 and "--watch" in status.stderr


async def test_watch_says_a_refused_token_once_and_goes_on_with_a_new_one(live_server: LiveServer) -> None:
    """The token is revoked and the server restarted: one line on stderr whatever the retries, and the
    watch resumes by itself once the new token is where it looks (no restart of the command)."""
    from server.embedded import write_local_server_file

    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("approvals", "list", "--all-sessions", "--watch", "--json")
        assert proc.stderr is not None
        bus = live_server.server.plane.bus
        await until(None, lambda: bus.subscriber_count(None) == 1, "the watch's feed up (nothing pending)")
        new = live_server.rotate_token()
        await asyncio.to_thread(live_server.stop)
        await asyncio.to_thread(live_server.start)
        accounts, refused = live_server.server.plane.accounts, [0]
        authenticate = accounts.authenticate

        async def counted(token: str) -> Any:
            principal = await authenticate(token)
            refused[0] += principal is None
            return principal

        accounts.authenticate = counted  # type: ignore[method-assign]
        await until(None, lambda: refused[0] >= 2, "two attempts refused")  # 1 s, then 2-4 s apart
        assert proc.returncode is None
        write_local_server_file(live_server.url, new)
        waiting = ask(agent, "git push origin main")
        now = json.loads(await _line(proc.stdout))
        assert (
            now["type"] == "approval.pending"
            and now["approval"]["tool_args"]["command"] == "git push origin main"
        )
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 130
        err = (await proc.stderr.read()).decode()
        assert (
            err.count("preloop: the server refused the token (401): run `preloop login` in another terminal")
            == 1
        )
        async with await connect(Settings(live_server.url, new)) as client:
            for approval in (await client.list_approvals(status="pending")).items:
                await client.approve(approval.id)
        await waiting


async def test_watch_says_approved_declined_or_expired_never_gone_or_expired_elsewhere(
    live_server: LiveServer,
) -> None:
    """Issue 18: an expiry was printed "✓ expired (elsewhere)" and, after a reconnect, an approval decided
    meanwhile "✓ gone (elsewhere)". An expiry is no one's decision; an approval seen to go without its
    final record (the snapshot after a reconnect still had the pending copy) is read once, so the line
    says approved, by whom (a colleague by name: issue 24), with the comment."""
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("approvals", "list", "--all-sessions", "--watch")
        decided = ask(agent, "make deploy")
        assert "⚑ pending" in await _line(proc.stdout)
        expiring = asyncio.create_task(agent.permission_check("Read", {"path": "README.md"}, ask=True))
        assert "⚑ pending" in await _line(proc.stdout)
        (read,) = [a for a in (await client.list_approvals(status="pending")).items if a.tool_name == "Read"]
        await live_server.expire_approval(read.id)
        expired = await _line(proc.stdout)
        assert "⌛ expired" in expired and "Read" in expired and "elsewhere" not in expired, expired
        await asyncio.wait_for(expiring, 10)
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 30)

        # The inbox's view after a reconnect: the approval vanished from the snapshot, its last record the
        # pending one; meanwhile another operator approved it.
        from cli.commands.approvals import _emit
        from client.inbox import ApprovalGone, Inbox
        from client.models import AttentionSnapshot
        from client.steering import Steering

        (stale,) = (await client.list_approvals(status="pending")).items
        async with await connect(Settings(live_server.url, live_server.add_operator("dana"))) as colleague:
            await colleague.approve(stale.id, "ship it")
        inbox = Inbox()
        inbox.reset(AttentionSnapshot(approvals=[stale]))
        (gone,) = inbox.reset(AttentionSnapshot(approvals=[]))
        assert isinstance(gone, ApprovalGone) and gone.approval.pending
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            await _emit(argparse.Namespace(json=False), gone, None, Steering(client))
            await _emit(argparse.Namespace(json=True), gone, None, Steering(client))
        human, machine = out.getvalue().splitlines()
        assert "✓ approved (elsewhere)" in human and "approved by dana " in human and ": “ship it”" in human
        record = json.loads(machine)
        assert (record["status"], record["elsewhere"], record["decided_by"]["kind"]) == (
            "approved",
            True,
            "human",
        )
        assert (record["decided_by"]["name"], record["decided_by"]["you"]) == ("dana", False)
        assert (await asyncio.wait_for(decided, 10)).decision == "allow"
