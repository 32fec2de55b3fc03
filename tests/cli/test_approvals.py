"""``preloop approvals list | approve | decline`` while a real agent waits on a permission check."""

from __future__ import annotations

import asyncio
import json

import pytest

from cli.main import main
from client.backends import connect
from client.config import Settings


async def _wait_pending(url: str, token: str, count: int) -> list[str]:
    async with await connect(Settings(url, token)) as client:
        for _ in range(600):
            page = await client.list_approvals(status="pending")
            if len(page.items) >= count:
                return [a.id for a in page.items]
            await asyncio.sleep(0.05)
    raise AssertionError("the approval never became pending")


async def test_list_approve_by_short_id_and_decline_with_comment(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        first = asyncio.create_task(
            agent.permission_check("Bash", {"command": "rm -rf build/"}, reasoning="clean the build")
        )
        [approval_id] = await _wait_pending(live_server.url, live_server.token, 1)

        assert await asyncio.to_thread(main, ["approvals", "list"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split() == ["ID", "SESSION", "STATUS", "REQUESTED", "TOOL", "SUMMARY"]
        assert lines[1].startswith(approval_id) and " Bash " in lines[1] and agent.session_id[:8] in lines[1]
        assert (
            await asyncio.to_thread(main, ["approvals", "list", "--session", agent.session_id[:8], "--json"])
            == 0
        )
        data = json.loads(capsys.readouterr().out)
        assert data["total"] == 1 and data["items"][0]["tool_name"] == "Bash"
        assert await asyncio.to_thread(main, ["approvals", "list", "-o", "id"]) == 0
        assert capsys.readouterr().out == f"{approval_id}\n"

        assert await asyncio.to_thread(main, ["approvals", "approve", approval_id[:6]]) == 0
        assert capsys.readouterr().out == f"Approval {approval_id} (Bash) approved.\n"
        verdict = await asyncio.wait_for(first, 30)
        assert verdict.decision == "allow"

        # Again, by its full id or its short one (issue 18: the short id said "no such approval"): the
        # same answer, what happened to it and by whom.
        for typed in (approval_id, approval_id[:6]):
            assert await asyncio.to_thread(main, ["approvals", "approve", typed]) == 1
            err = capsys.readouterr().err
            # approved with this very token a moment ago (another command): the server names us, "you"
            said = f"preloop: already approved: approval {approval_id[:8]} (Bash) was approved by you at "
            assert err.startswith(said), err

        second = asyncio.create_task(agent.permission_check("Bash", {"command": "git push --force"}))
        [other] = await _wait_pending(live_server.url, live_server.token, 1)
        code = await asyncio.to_thread(
            main, ["approvals", "decline", other, "--comment", "not on main", "--json"]
        )
        assert code == 0
        record = json.loads(capsys.readouterr().out)  # one object per id: here one
        assert (record["id"], record["result"], record["status"]) == (other, "decided", "declined")
        assert record["approval"]["approver_comment"] == "not on main"
        verdict = await asyncio.wait_for(second, 30)
        assert verdict.decision == "deny"

        assert await asyncio.to_thread(main, ["approvals", "list"]) == 0
        assert capsys.readouterr().out == "No pending approvals.\n"
        assert await asyncio.to_thread(main, ["approvals", "list", "--status", "all", "--json"]) == 0
        statuses = sorted(a["status"] for a in json.loads(capsys.readouterr().out)["items"])
        assert statuses == ["approved", "declined"]


def test_unknown_approval_is_refused(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    """A short id that names no approval is a usage error (issue 25: before anything is decided); a full
    id the server does not know is its refusal."""
    assert main(["approvals", "approve", "abcd"]) == 2
    assert "no approval starts with 'abcd'" in capsys.readouterr().err
    assert main(["approvals", "decline", "3f6c1a52-0000-4000-8000-000000000000"]) == 1
    assert "not found" in capsys.readouterr().err
