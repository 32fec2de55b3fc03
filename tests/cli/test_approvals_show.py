"""``preloop approvals show ID``: one approval and what its call will change, over the real local server."""

from __future__ import annotations

import asyncio
import json

import pytest

from cli.main import main
from client.backends import connect
from client.config import Settings


async def _pending(url: str, token: str, count: int) -> list[str]:
    async with await connect(Settings(url, token)) as client:
        for _ in range(600):
            page = await client.list_approvals(status="pending")
            if len(page.items) >= count:
                return [a.id for a in page.items]
            await asyncio.sleep(0.05)
    raise AssertionError("the approval never became pending")


EDIT = {
    "file_path": "src/checkout.py",
    "old_string": "def total(cart):\n    return sum(cart)\n",
    "new_string": "def total(cart):\n    return round(sum(cart), 2)\n",
}


async def test_show_prints_the_diff_of_an_edit_and_json_gives_the_model(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        task = asyncio.create_task(agent.permission_check("Edit", EDIT))
        [approval_id] = await _pending(live_server.url, live_server.token, 1)

        assert await asyncio.to_thread(main, ["approvals", "show", approval_id[:6]]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == f"Approval  {approval_id}"
        assert out[1] == f"Session   {agent.session_id[:8]} (builder)"
        assert out[2] == "Tool      Edit  (risk danger)"  # the local server rates file writes
        assert out[3].startswith("Status    pending, requested ")
        assert out[4].startswith("Asks      Allow Edit")  # the server's summary (the agent gave no reasoning)
        assert out[5].startswith("Rule      Agent permission hook: ")  # no rule named: the hook's own words
        assert out[6] == ""
        assert out[7:] == [
            "src/checkout.py  +1 −1",
            " def total(cart):",
            "-    return sum(cart)",
            "+    return round(sum(cart), 2)",
        ]

        assert await asyncio.to_thread(main, ["approvals", "show", approval_id, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert (
            data["approval"]["id"] == approval_id
            and data["approval"]["tool_args"]["file_path"] == EDIT["file_path"]
        )
        preview = data["preview"]
        assert preview["kind"] == "diff" and preview["first_line"] == "src/checkout.py +1 −1"
        assert preview["files"][0]["added"] == 1 and preview["files"][0]["lang"] == "python"
        assert [line["kind"] for line in preview["lines"]] == ["file", "ctx", "del", "add"]
        assert preview["more_lines"] == 0

        assert await asyncio.to_thread(main, ["approvals", "approve", approval_id]) == 0
        capsys.readouterr()
        await asyncio.wait_for(task, 30)
        # Decided: it says so, and still shows what was approved.
        assert await asyncio.to_thread(main, ["approvals", "show", approval_id[:8]]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[3] == "Status    approved"
        assert any(line.startswith("Decided   approved by you ") for line in out)  # the same token decided
        assert "+    return round(sum(cart), 2)" in out


async def test_show_prints_every_line_of_a_command_and_bad_input_raw(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        script = "\n".join(f"echo step {n}" for n in range(40))
        shell = asyncio.create_task(
            agent.permission_check("Bash", {"command": script, "description": "forty steps", "timeout": 60})
        )
        bad = asyncio.create_task(agent.permission_check("Edit", {"old_string": "a", "new_string": "b"}))
        first, second = await _pending(live_server.url, live_server.token, 2)
        ids = {first, second}
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            by_tool = {(await client.get_approval(i)).tool_name: i for i in ids}

        assert await asyncio.to_thread(main, ["approvals", "show", by_tool["Bash"]]) == 0
        out = capsys.readouterr().out.splitlines()
        body = out[out.index("") + 1 :]
        assert body[0] == "$ echo step 0" and body[39] == "  echo step 39"  # nothing cut
        assert body[40:] == ["timeout: 60", "description: forty steps"]

        assert await asyncio.to_thread(main, ["approvals", "show", by_tool["Edit"]]) == 0
        out = capsys.readouterr().out.splitlines()
        body = out[out.index("") + 1 :]
        assert body[0] == "No diff shown: the call names no file (file_path is missing)."
        assert json.loads("\n".join(body[1:])) == {"old_string": "a", "new_string": "b"}

        for approval_id in ids:
            assert await asyncio.to_thread(main, ["approvals", "decline", approval_id]) == 0
        capsys.readouterr()
        await asyncio.wait_for(asyncio.gather(shell, bad), 30)


def test_show_an_unknown_or_malformed_id(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approvals", "show", "abcd"]) == 1
    assert "abcd" in capsys.readouterr().err
    assert main(["approvals", "show", "not-an-id!"]) == 2
    assert "is not an approval id" in capsys.readouterr().err


async def test_show_says_why_it_is_asked_and_who_decided_it(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 §2-3: the agent's reasoning and the rule its hook named, then, once a colleague decided,
    who, when and with which comment; ``--original`` says the local server keeps no originals."""
    dana = live_server.add_operator("dana")
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        task = asyncio.create_task(
            agent.permission_check(
                "Bash", {"command": "git push"}, reasoning="Publish the fix.", rule="git push needs a human"
            )
        )
        [approval_id] = await _pending(live_server.url, live_server.token, 1)
        assert await asyncio.to_thread(main, ["approvals", "show", approval_id]) == 0
        out = capsys.readouterr().out
        assert "Why       Publish the fix.\n" in out
        assert "Rule      git push needs a human: The agent's permission hook asked" in out
        assert "Decided" not in out and "Redacted" not in out
        async with await connect(Settings(live_server.url, dana)) as colleague:
            await colleague.approve(approval_id, "looks fine")
        await asyncio.wait_for(task, 30)
        assert await asyncio.to_thread(main, ["approvals", "show", approval_id]) == 0
        out = capsys.readouterr().out
        assert "Status    approved\n" in out
        [decided] = [line for line in out.splitlines() if line.startswith("Decided")]
        assert decided.startswith("Decided   approved by dana ") and decided.endswith(": “looks fine”")
        assert await asyncio.to_thread(main, ["approvals", "show", approval_id, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["why"]["reasoning"] == "Publish the fix." and data["why"]["redacted"] is None
        assert data["decided_by"]["name"] == "dana" and data["decided_by"]["you"] is False
        assert await asyncio.to_thread(main, ["approvals", "show", approval_id, "--token", dana]) == 0
        assert "Decided   approved by you " in capsys.readouterr().out
        assert await asyncio.to_thread(main, ["approvals", "show", approval_id, "--original"]) == 1
        assert "No original arguments are available for this request" in capsys.readouterr().err
