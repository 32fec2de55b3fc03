"""``preloop sessions export``: a scripted agent session on the real local server, exported by the real
console script to both formats; the JSON validates against docs/export.schema.json."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
from markdown_it import MarkdownIt

from client.backends import connect
from client.config import Settings
from server.harness_client import HarnessClient
from tests.cli.helpers import preloop, run, with_sessions
from tests.cli.test_approvals import _wait_pending

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())


async def _incident(url: str, token: str, decider: str | None = None) -> str:
    """An agent narrates, runs a tool, reads a note, changes course, is declined (with ``decider``'s token
    when given), answers and ends; its first model call reports what it used."""
    async with (
        HarnessClient(url, token) as harness,
        await connect(Settings(url, token)) as client,
        await connect(Settings(url, decider or token)) as declining,
    ):
        agent = await harness.start_session(agent_name="builder", title="Fix the flaky build")
        await agent.run_started("fix the build")
        usage = {"model": "m", "input_tokens": 9800, "output_tokens": 2200, "cost_usd": 0.42}
        await agent.narrate(1, ["I will clean ", "the build folder."], usage=usage)
        call = await agent.tool_started("Bash", {"command": "ls dist"}, iteration=1)
        await agent.tool_completed(call, "Bash", duration_ms=1250, result_summary="3 files")
        note = await client.send_note("run | the tests first, no rm", session_id=agent.session_id)
        await agent.claim_notes()
        await agent.narrate(2, ["Running the tests first."])
        check = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf dist"}))
        [approval_id] = await _wait_pending(url, token, 1)
        await declining.decline(approval_id, "not | now")
        await asyncio.wait_for(check, 30)
        await agent.final_answer(3, "Tests pass; nothing removed.")
        await agent.end("done")
        assert note.note_id
        return agent.session_id


def test_export_a_session_to_json_and_markdown(live_server, tmp_path: Path) -> None:
    session_id = run(_incident(live_server.url, live_server.token))

    target = tmp_path / "incident.json"
    done = preloop("sessions", "export", session_id[:8], "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert f"Exported session {session_id[:8]} to {target} (json," in done.stderr
    doc = json.loads(target.read_text())
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["session"]["id"] == session_id and doc["session"]["title"] == "Fix the flaky build"
    kinds = [item["kind"] for item in doc["timeline"]]
    assert kinds.count("commentary") == 2 and kinds.count("final_answer") == 1
    assert doc["final_answer"] == "Tests pass; nothing removed."
    tools = [item for item in doc["timeline"] if item["kind"] == "tool_call"]
    assert (tools[0]["name"], tools[0]["outcome"], tools[0]["duration_ms"]) == ("Bash", "completed", 1250)
    [note] = doc["notes"]
    assert [s["state"] for s in note["states"]] == ["pending", "claimed", "delivered"]
    assert all(s["at"] for s in note["states"])
    assert note["then"]["summary"] == "commentary: Running the tests first."
    [approval] = doc["approvals"]
    assert (approval["status"], approval["comment"]) == ("declined", "not | now")
    assert approval["decided_by"]["kind"] == "human" and approval["decided_at"]

    shown = preloop("sessions", "export", session_id, "--format", "md")
    assert shown.returncode == 0, shown.stderr
    md = shown.stdout
    assert md.startswith("# Session Fix the flaky build\n")
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    fences = [t.content for t in tokens if t.type == "fence"]
    assert "Running the tests first.\n" in fences and "Tests pass; nothing removed.\n" in fences
    assert "| declined |" in md and "not \\| now" in md and "run \\| the tests first, no rm" in md


def test_a_decision_names_its_operator_and_the_exporter_reads_you(live_server) -> None:
    """Issue 24: every decision is stored with the operator who made it. dana declined: the export says
    dana to her colleague (whose notes are by "Local Operator"), and "you" to dana herself; the session's
    cost is in both formats."""
    dana = live_server.add_operator("dana")
    session_id = run(_incident(live_server.url, live_server.token, dana))
    done = preloop("sessions", "export", session_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    [note], [approval] = doc["notes"], doc["approvals"]
    assert note["author"] == "Local Operator"
    who = approval["decided_by"]
    assert (who["kind"], who["detail"], who["name"], who["you"]) == ("human", "dana", "dana", False)
    assert doc["session"]["cost"] == {
        "input_tokens": 9800,
        "output_tokens": 2200,
        "total_tokens": 12000,
        "cost_usd": 0.42,
    }
    md = preloop("sessions", "export", session_id, "--format", "md").stdout
    assert "declined by dana" in md and "an operator" not in md
    [row] = [line for line in md.splitlines() if line.startswith("| ") and "| declined |" in line]
    assert "| dana |" in row
    assert "| Cost | \\$0.42 · 12k tokens (9.8k in / 2.2k out) |" in md
    hers = preloop("sessions", "export", session_id, "--format", "json", "--token", dana)
    assert json.loads(hers.stdout)["approvals"][0]["decided_by"]["detail"] == "you"


def test_export_refuses_a_folder_and_an_unknown_session(live_server, tmp_path: Path) -> None:
    folder = preloop("sessions", "export", "abcd1234", "-o", str(tmp_path))
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    unknown = preloop("sessions", "export", "abcd1234", "--format", "json")
    assert unknown.returncode == 1 and "no session starts with 'abcd1234'" in unknown.stderr
    assert unknown.stdout == ""


def test_a_running_session_is_exported_as_of_now(live_server, tmp_path: Path) -> None:
    async def narrate(sessions: list) -> None:  # type: ignore[type-arg]
        await sessions[0].run_started("watch the queue")
        await sessions[0].narrate(1, ["Polling the queue."])

    [session_id], _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "watcher"}], narrate)
    target = tmp_path / "running.md"
    done = preloop("sessions", "export", session_id[:6], "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert "(still running: exported as of now)" in done.stderr and "(md," in done.stderr
    md = target.read_text()
    assert "| Ended (UTC) | still running |" in md and "Polling the queue." in md
