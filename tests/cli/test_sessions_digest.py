"""``preloop sessions digest`` and the shift handoff against the real local server, by the real console
script: the lines an operator reads, the Markdown pasted into a ticket, the JSON a script reads, and
``--since-last`` from the mark the app keeps (which the command never moves)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime

from client.backends import connect
from client.config import Settings
from client.marks import Mark, MarkStore
from client.paths import state_dir
from client.timeline import Place
from server.harness_client import HarnessClient
from tests.cli.helpers import preloop, run
from tests.cli.test_approvals import _wait_pending

USAGE = {"model": "m-large", "input_tokens": 9000, "output_tokens": 400, "cost_usd": 0.033}
"""Each of the three model calls of the shift: +$0.10 · 28k tokens in all."""


async def _shift(url: str, token: str, colleague: str | None = None) -> tuple[str, str, Place]:
    """A session: a tool call, a failing one, a note read and acted on, a decline made from another
    client (by ``colleague``'s token when given), a final answer, three model calls reporting usage; and
    a second session left waiting for an approval. Returns both ids and the place of the first session's
    event just before the note was sent (where a mark would be)."""
    async with (
        HarnessClient(url, token) as harness,
        await connect(Settings(url, token)) as client,
        await connect(Settings(url, colleague or token)) as decider,
    ):
        agent = await harness.start_session(agent_name="builder", title="Fix the flaky build")
        await agent.run_started("fix the build")
        await agent.narrate(1, ["Listing the build folder."], usage=USAGE)
        call = await agent.tool_started("Bash", {"command": "ls dist"}, iteration=1)
        await agent.tool_completed(call, "Bash", duration_ms=20, result_summary="3 files")
        failing = await agent.tool_started("Bash", {"command": "make"}, iteration=1)
        await agent.tool_completed(failing, "Bash", status="error", result_summary="exit 2")
        note = await client.send_note("run | the tests first", session_id=agent.session_id)
        await agent.claim_notes()
        await agent.narrate(2, ["Running the tests first, as asked."], usage=USAGE)
        check = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf dist"}))
        [approval_id] = await _wait_pending(url, token, 1)
        await decider.decline(approval_id, "not | now")
        await asyncio.wait_for(check, 30)
        await agent.final_answer(3, "Tests pass; nothing removed.", usage=USAGE)
        other = await harness.start_session(agent_name="deployer", title="Ship it")
        waiting = asyncio.create_task(other.permission_check("Write", {"path": "prod.yaml"}))
        await _wait_pending(url, token, 1)
        waiting.cancel()
        events = await client.history(agent.session_id)
        created = next(e for e in events if e.type == "note.created" and e.note.note_id == note.note_id)
        before = events[events.index(created) - 1]
        return agent.session_id, other.session_id, Place(str(before.seq), before.at, before.seq)


def test_digest_of_one_session_as_text_markdown_and_json(live_server) -> None:
    dana = live_server.add_operator("dana")
    session_id, _, _ = run(_shift(live_server.url, live_server.token, dana))

    text = preloop("sessions", "digest", session_id[:8], "--since", "30m")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"Session {session_id[:8]} builder “Fix the flaky build”")
    body = "\n".join(lines[1:])
    assert 3 <= len(lines) - 1 <= 6
    assert "2 tool calls, 1 failed · +$0.10 · 28k tokens" in body
    assert "Bash declined by dana: “not | now”" in body  # a colleague's decision names them
    then = "then: commentary: Running the tests first, as asked."
    assert f"Note “run | the tests first” delivered → {then}" in body
    assert "final answer: “Tests pass; nothing removed.”" in body

    md = preloop("sessions", "digest", session_id, "--since", "30m", "--format", "md")
    assert md.returncode == 0, md.stderr
    zone = datetime.now().astimezone().tzname() or ""
    assert md.stdout.startswith("### Session Fix the flaky build (")
    assert f" {zone}" in md.stdout.splitlines()[2]  # every time carries its zone
    assert "not \\| now" in md.stdout and "- **Final answer**: “Tests pass; nothing removed.”" in md.stdout
    assert "declined `Bash` by dana" in md.stdout
    assert "- **Cost since**: +\\$0.10 · 28k tokens (27k in / 1.2k out)" in md.stdout  # "$" escaped (math)

    as_json = preloop("sessions", "digest", session_id, "--since", "30m", "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert (doc["tool_calls"], doc["tool_calls_failed"]) == (2, 1)
    [decided] = doc["approvals_decided"]
    assert (decided["status"], decided["comment"], decided["by"]) == ("declined", "not | now", "dana")
    assert decided["you"] is False
    assert doc["cost_since"] == {
        "input_tokens": 27000,
        "output_tokens": 1200,
        "total_tokens": 28200,
        "cost_usd": 0.099,
    }
    assert doc["cost_total"]["total_tokens"] == 28200
    [note] = doc["notes"]
    assert note["then"] == "commentary: Running the tests first, as asked." and note["state"] == "delivered"
    assert doc["final_answer"] == "Tests pass; nothing removed." and doc["needs_human"] is True


def test_since_last_reads_the_apps_mark_and_leaves_it_where_it_was(live_server) -> None:
    session_id, _, place = run(_shift(live_server.url, live_server.token))
    missing = preloop("sessions", "digest", session_id, "--since-last")
    assert missing.returncode == 2 and "never looked at in the app on this machine" in missing.stderr

    store = MarkStore(state_dir() / "marks")
    looked = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    store.put(session_id, Mark(place, looked))
    before = (state_dir() / "marks" / f"{session_id}.json").read_text()

    since_last = preloop("sessions", "digest", session_id, "--since-last", "--json")
    assert since_last.returncode == 0, since_last.stderr
    doc = json.loads(since_last.stdout)
    assert doc["tool_calls"] == 0  # both tool calls came before the mark
    assert [n["text"] for n in doc["notes"]] == ["run | the tests first"]
    assert doc["last_looked_at"] == "2026-01-02T03:04:00Z" and doc["since_place"]["number"] == place.number
    assert (state_dir() / "marks" / f"{session_id}.json").read_text() == before


def test_a_window_after_the_final_answer_does_not_say_there_is_none_yet(live_server) -> None:
    """The agent answered before the window: the digest says none came since, not "no final answer yet"
    (which would send the operator looking for an answer the agent already gave)."""
    session_id, _, _ = run(_shift(live_server.url, live_server.token))
    time.sleep(1.5)
    text = preloop("sessions", "digest", session_id, "--since", "1s")
    assert text.returncode == 0, text.stderr
    assert "no final answer since" in text.stdout and "yet" not in text.stdout
    md = preloop("sessions", "digest", session_id, "--since", "1s", "--format", "md")
    assert "- **Final answer**: none since" in md.stdout


def test_the_shift_handoff_puts_what_needs_a_human_first(live_server) -> None:
    session_id, waiting_id, _ = run(_shift(live_server.url, live_server.token))
    done = preloop("sessions", "digest", "--all", "--since", "8h")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("Shift handoff · ") and "2 sessions with activity" in out
    first, _, decided = out.partition("Decided in this window:")
    need = first.partition("Needs a human first:")[2]
    # both need a person (an approval waits in one, a tool call failed in the other): the waiting one first
    assert need.index(f"{waiting_id[:8]} deployer") < need.index(f"{session_id[:8]} builder")
    assert "⚑ 1 waiting now (Write)" in need
    # each session's "Since" is its own start (a minute ago), not the 8 h window's
    assert "(8 h 00 min)" not in first and "(7 h 59 min)" not in first
    # decided with this operator's own token (from another client): "you"
    assert f"{session_id[:8]} ✗ Bash declined by you: “not | now”" in decided
    assert " · +$0.10 · 28k tokens since " in out.splitlines()[0]
    assert f"{session_id[:8]} note “run | the tests first” delivered → then:" in decided
    as_json = json.loads(preloop("sessions", "digest", "--all", "--since", "8h", "--json").stdout)
    assert [d["session_id"] for d in as_json["needs_human"]][:1] == [waiting_id]
    assert [x["comment"] for x in as_json["decided"]] == ["not | now"]


def test_digest_refuses_what_it_cannot_answer(live_server) -> None:
    both = preloop("sessions", "digest", "abcd1234", "--since", "30m", "--since-last")
    assert both.returncode == 2 and "--since 30m, or --since-last" in both.stderr
    neither = preloop("sessions", "digest", "--all")
    assert neither.returncode == 2 and "--all needs a window" in neither.stderr
    zero = preloop("sessions", "digest", "abcd1234", "--since", "0m")
    assert zero.returncode == 2 and "no time at all" in zero.stderr
