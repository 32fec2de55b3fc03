"""``preloop approvals allow | rules | rules revoke``: the real command against the local server, the fake
Preloop and a Dendrux app, with its exit codes (0 done, 1 refused by the server, 2 bad input or a rule the
server cannot hold, caught before any rule request)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cli.main import main
from client.backends import connect
from client.config import Settings
from tests.cli.helpers import preloop
from tests.fake_preloop import TOKEN, running_fake_preloop

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())
AGENT = "2618a221-b8ee-48a3-a51a-f78dcb1c5af8"  # the fake Preloop's agent


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_allow_then_a_matching_call_is_decided_and_listed_and_revoked(
    live_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        code, out, err = await asyncio.to_thread(
            _run, capsys, "approvals", "allow", "--session", agent.session_id[:8], "--tool", "Bash",
            "--match", "pytest *", "--for", "30m", "--danger", "--reason", "test loop",
        )  # fmt: skip
        assert code == 0, err
        first = out.splitlines()[0]
        assert first.startswith("Rule ") and "made: auto-allow: Bash `pytest *` in " in first
        assert agent.session_id[:8] in first and "· 0 allowed · danger-risk too" in first
        assert out.splitlines()[-1].startswith("End it sooner: preloop approvals rules revoke ")
        rule_id = first.split()[1]

        verdict = await asyncio.wait_for(agent.permission_check("Bash", {"command": "pytest -q"}), 10)
        assert verdict.decision == "allow"

        code, out, _ = await asyncio.to_thread(_run, capsys, "approvals", "rules")
        header, row = out.splitlines()
        assert header.split() == ["ID", "MODE", "UNTIL", "ALLOWED", "SET", "BY", "COVERS"]
        assert row.startswith(rule_id) and " allow " in row and " 1 " in row and "Local Operator" in row
        code, out, _ = await asyncio.to_thread(_run, capsys, "approvals", "rules", "--json")
        listed = json.loads(out)
        assert listed["total"] == 1 and listed["items"][0]["allowed_count"] == 1

        code, out, _ = await asyncio.to_thread(_run, capsys, "approvals", "rules", "revoke", rule_id[:6])
        assert code == 0 and out == (
            f"Rule {rule_id} ended: Bash `pytest *` in {agent.session_id[:8]} is asked about again; it "
            "allowed 1 call.\n"
        )
        code, out, _ = await asyncio.to_thread(_run, capsys, "approvals", "rules")
        assert out == "No allow rule holds: every call is asked about.\n"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--tool", "Bash", "--match", "pytest [x", "--for", "30m"], "has a [ that is never closed"),
        (["--tool", "Bash", "--for", "0m"], "at least 1 minute (there is no forever"),
        (["--tool", "Bash", "--for", "9h"], "a rule lasts at most 8 hours (480 minutes)"),
        (["--tool", "Bash", "--for", "30"], "has no unit"),
        (["--for", "30m"], "a rule for one session names its tool"),
        (["--tool", "Bash", "--for", "30m", "--account"], "--session and --account contradict each other"),
    ],
)
def test_bad_input_exits_2_with_a_sentence_before_any_rule_is_made(
    live_server: Any, argv: list[str], words: str
) -> None:
    done = preloop("approvals", "allow", "--session", "1a2b3c4d", *argv)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and done.stdout == ""


def test_revoke_needs_an_id_or_all_and_an_unknown_id_exits_1_as_for_every_id(live_server: Any) -> None:
    neither = preloop("approvals", "rules", "revoke")
    assert neither.returncode == 2 and "or give --all" in neither.stderr
    unknown = preloop("approvals", "rules", "revoke", "abcdef12")
    assert unknown.returncode == 1 and "no rule starts with 'abcdef12'" in unknown.stderr
    none = preloop("approvals", "rules", "revoke", "--all")
    assert none.returncode == 0 and none.stdout == "No allow rule held: nothing to end.\n"


def test_on_preloop_a_finer_scope_is_refused_saying_what_preloop_can_and_a_403_is_exit_1() -> None:
    with running_fake_preloop() as (fake, url):
        flags = ["--url", url, "--token", TOKEN, "--server-kind", "preloop"]
        finer = preloop(
            "approvals", "allow", "--session", "f7303a36", "--tool", "Bash", "--match", "pytest *",
            "--for", "30m", *flags,
        )  # fmt: skip
        assert finer.returncode == 2
        assert (
            "Preloop's approval bypasses cannot cover one session: they cover one agent or the whole account"
            in finer.stderr
        )
        unconfirmed = preloop("approvals", "allow", "--agent", AGENT, "--for", "30m", *flags)
        assert (
            unconfirmed.returncode == 2
            and "danger-risk ones too: confirm that a second time" in unconfirmed.stderr
        )
        assert not any(path.startswith("/api/v1/approval-bypasses") for _, path in fake.requests)

        made = preloop("approvals", "allow", "--agent", AGENT, "--for", "15m", "--danger", "--json", *flags)
        assert made.returncode == 0, made.stderr
        rule = json.loads(made.stdout)
        assert (rule["scope"], rule["agent_id"], rule["mode"], rule["set_by"]) == (
            "agent",
            AGENT,
            "allow",
            "you",
        )
        listed = preloop("approvals", "rules", *flags)
        assert listed.returncode == 0 and f"every tool of agent {AGENT[:8]}" in listed.stdout

        fake.can_decide = False
        refused = preloop("approvals", "allow", "--account", "--mute", "--for", "1h", *flags)
        assert refused.returncode == 1
        assert "Insufficient permissions. Required: decide_approvals" in refused.stderr
        fake.can_decide = True
        ended = preloop("approvals", "rules", "revoke", "--all", *flags)
        assert ended.returncode == 0 and ended.stdout.startswith(
            f"Rule {rule['id']} ended: every tool of agent"
        )


async def test_the_rule_made_on_preloop_is_the_bypass_its_console_sees() -> None:
    with running_fake_preloop() as (fake, url):
        done = await asyncio.to_thread(
            preloop, "approvals", "allow", "--account", "--mute", "--for", "2h",
            "--url", url, "--token", TOKEN, "--server-kind", "preloop",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        [bypass] = fake.bypasses.values()
        assert (bypass["mode"], bypass["managed_agent_id"], bypass["created_via"]) == (
            "mute_notifications",
            None,
            "cli",
        )
        async with await connect(Settings(url, TOKEN, server_kind="preloop")) as client:
            [rule] = (await client.standing()).rules
        assert rule.mode == "mute" and rule.scope == "account"


async def test_a_call_a_rule_allowed_is_told_so_in_the_timeline_the_digest_and_the_export(
    live_server: Any,
) -> None:
    from client.entry_words import entry_words
    from client.timeline import ApprovalEntry, Timeline
    from widgets.timeline_render import line_plain, render_entry

    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        sid = agent.session_id
        made = await asyncio.to_thread(
            preloop, "approvals", "allow", "--session", sid, "--tool", "Bash", "--match", "pytest *",
            "--for", "30m", "--danger", "--json",
        )  # fmt: skip
        rule = json.loads(made.stdout)
        verdict = await asyncio.wait_for(agent.permission_check("Bash", {"command": "pytest -q"}), 10)
        assert verdict.decision == "allow"
        told = f"rule {rule['id'][:8]} (Bash `pytest *` in {sid[:8]}), set by Local Operator"

        async with await connect(Settings(live_server.url, live_server.token)) as client:
            timeline = Timeline()
            timeline.apply_many(await client.history(sid))
        [entry] = [e for e in timeline if isinstance(e, ApprovalEntry)]
        [line] = [line_plain(x).rstrip() for x in render_entry(entry, 200)]
        assert line == f"✓ approval approved  Bash  by {told}  pytest -q"
        assert f"by {told}" in entry_words(entry)  # what find searches is what the line shows

        digest = await asyncio.to_thread(preloop, "sessions", "digest", sid, "--since", "30m")
        assert digest.returncode == 0, digest.stderr
        assert f"Bash approved by {told}" in digest.stdout
        export = await asyncio.to_thread(preloop, "sessions", "export", sid, "--format", "md")
        assert f"Approval for **Bash** approved by {told}" in export.stdout.replace("\\", "")
        data = json.loads(
            (await asyncio.to_thread(preloop, "sessions", "export", sid, "--format", "json")).stdout
        )
        [approval] = data["approvals"]
        assert approval["decided_by"] == {"kind": "rule", "detail": told}
        jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
