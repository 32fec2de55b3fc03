"""``preloop notes send | list | withdraw`` against the real local server over loopback."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import pytest

from cli.main import main
from client.backends import connect
from client.config import Settings
from server.harness_client import HarnessSession
from tests.cli.helpers import preloop, run, shell, with_sessions


def _one_session(live_server, **spec: object) -> str:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a", **spec}])
    return ids[0]


def _notes(live_server, session_id: str) -> list[dict[str, object]]:
    async def go() -> list[dict[str, object]]:
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            page = await client.list_notes(session_id=session_id)
            return [n.model_dump(mode="json") for n in page.notes]

    return run(go())


def test_send_with_a_short_id_and_json_prints_id_and_target_only(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _one_session(live_server)
    assert main(["notes", "send", "--session", sid[:6], "run the tests first", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"note_id", "target"}
    assert data["target"] == {"kind": "session", "id": sid}
    [note] = _notes(live_server, sid)
    assert note["note_id"] == data["note_id"] and note["text"] == "run the tests first"
    assert note["state"] == "pending"


def test_send_plain_output_and_expiry(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _one_session(live_server)
    assert main(["notes", "send", "--session", sid, "--expires-in", "2h", "check the logs"]) == 0
    captured = capsys.readouterr()
    assert (
        captured.out.startswith("Sent note ") and f"to session {sid} (pending; expires in 2h" in captured.out
    )
    assert "preloop notes withdraw" in captured.err
    [note] = _notes(live_server, sid)
    created = datetime.fromisoformat(str(note["created_at"]))
    expires = datetime.fromisoformat(str(note["expires_at"]))
    assert (expires - created).total_seconds() == pytest.approx(7200, abs=2)


def test_heredoc_note_keeps_its_lines(live_server) -> None:
    sid = _one_session(live_server)
    body = "first line\n  indented second line\n\nfourth line after a blank one"
    done = shell(f"preloop notes send --session {sid[:8]} <<'EOF'\n{body}\nEOF")
    assert done.returncode == 0, done.stderr
    [note] = _notes(live_server, sid)
    assert note["text"] == body
    piped = preloop("notes", "send", "--session", sid, "-", "--json", input="a\nb\n")
    assert piped.returncode == 0, piped.stderr
    assert sorted(str(n["text"]) for n in _notes(live_server, sid)) == sorted([body, "a\nb"])


def test_agent_and_execution_targets(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    execution = str(uuid.uuid4())
    sid = _one_session(live_server, flow_execution_id=execution)
    assert main(["sessions", "list", "--json"]) == 0
    agent_id = json.loads(capsys.readouterr().out)["items"][0]["agent_id"]
    assert main(["notes", "send", "--agent", agent_id, "for the next session", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == {"kind": "agent", "id": agent_id}
    assert main(["notes", "send", "--execution", execution, "for the flow", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == {"kind": "execution", "id": execution}
    assert main(["notes", "send", "--execution", str(uuid.uuid4()), "nobody"]) == 1
    assert "not found" in capsys.readouterr().err.lower()
    assert sid


def test_list_with_state_filter(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    async def deliver_one(sessions: list[HarnessSession]) -> None:
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            await client.send_note("delivered one", session_id=sessions[0].session_id)
            await sessions[0].claim_notes()
            await client.send_note("still\npending", session_id=sessions[0].session_id)

    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}], deliver_one)
    assert main(["notes", "list", "--session", ids[0][:8]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NOTE", "STATE", "BY", "CREATED", "SETTLED", "TEXT"]
    states = {line.split()[1]: line for line in lines[1:]}
    assert set(states) == {"delivered", "pending"}
    assert "still pending" in states["pending"]  # one line per note, newline shown as a space
    assert main(["notes", "list", "--session", ids[0], "--state", "pending", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["text"] for n in data["notes"]] == ["still\npending"]
    assert main(["notes", "list", "--session", ids[0], "--state", "expired"]) == 0
    assert capsys.readouterr().out == f"No notes in state expired for session {ids[0][:8]}.\n"


def test_a_note_over_the_limit_is_refused_before_any_request(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 18: a 10,000-character note was sent and refused by the server (exit 1); the CLI refuses it
    (exit 2, naming the limit) without asking anything: against a dead address it still exits 2."""
    sid = _one_session(live_server)
    text = "y" * 10_000
    argv = ["--url", "http://127.0.0.1:9", "--token", "t", "--server-kind", "local", "notes", "send"]
    assert main([*argv, "--session", sid, text]) == 2
    assert capsys.readouterr().err == (
        "preloop: the note is 10,000 characters long and the limit is 4,096: shorten it, or send it as "
        "several notes\n"
    )
    assert main(["notes", "send", "--session", sid, text]) == 2
    assert _notes(live_server, sid) == []
    assert main(["notes", "send", "--session", sid, "z" * 4096]) == 0  # the limit itself is fine


def test_a_long_note_is_cut_in_the_table_and_whole_in_json(
    live_server, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 18: ``notes list`` printed a 4096-character note whole; the table cuts it with "…" (to the
    terminal's width there, to 200 characters when piped); ``--json`` keeps it whole."""
    from cli.commands import notes as notes_command

    sid = _one_session(live_server)
    long = "check the canary first; " * 170 + "END"
    long = long[-4096:]
    assert main(["notes", "send", "--session", sid, long]) == 0
    capsys.readouterr()
    assert main(["notes", "list", "--session", sid]) == 0  # piped (captured): no terminal width
    [header, row] = capsys.readouterr().out.splitlines()
    text = row[header.index("TEXT") :]
    assert text.endswith("…") and len(text) == 200 and long.startswith(text[:-1])
    monkeypatch.setattr(notes_command, "terminal_width", lambda _stream: 80)
    assert main(["notes", "list", "--session", sid]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("…") and max(len(line) for line in lines) == 80
    assert main(["notes", "list", "--session", sid, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"][0]["text"] == long


def test_withdraw_pending_then_again_and_delivered(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    async def two_notes(sessions: list[HarnessSession]) -> tuple[str, str]:
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            delivered = await client.send_note("read this", session_id=sessions[0].session_id)
            await sessions[0].claim_notes(turn_index=3)
            pending = await client.send_note("never mind", session_id=sessions[0].session_id)
            return delivered.note_id, pending.note_id

    _, result = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}], two_notes)
    assert result is not None
    delivered, pending = result
    assert main(["notes", "withdraw", pending]) == 0
    assert "is withdrawn (cancelled)" in capsys.readouterr().out
    # Withdrawn before: the state the operator wants holds, so it says so and exits 0 (issue 23), as
    # --help says; a note that reached the agent could not be withdrawn: exit 1.
    assert main(["notes", "withdraw", pending]) == 0
    assert "was already withdrawn: the agent will not see it" in capsys.readouterr().out
    assert main(["notes", "withdraw", delivered]) == 1
    out = capsys.readouterr().out
    assert "is delivered: nothing changed, because it was already delivered at turn 3" in out
    assert main(["notes", "withdraw", delivered, "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["state"] == "delivered" and "nothing changed" in captured.err


def test_refusals_404_422_429(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _one_session(live_server)
    assert main(["notes", "list", "--session", str(uuid.uuid4())]) == 1
    assert "not found" in capsys.readouterr().err
    assert main(["notes", "withdraw", "0123456789abcdef"]) == 1
    assert "not found" in capsys.readouterr().err
    assert main(["notes", "send", "--session", sid, "x" * 4097]) == 2  # refused before any request
    err = capsys.readouterr().err
    assert err.startswith("preloop: the note is 4,097 characters long and the limit is 4,096")

    async def twenty() -> None:
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            for i in range(19):
                await client.send_note(f"note {i}", session_id=sid)

    run(twenty())
    assert main(["notes", "send", "--session", sid, "the twentieth"]) == 0
    capsys.readouterr()
    assert main(["notes", "send", "--session", sid, "the twenty-first"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("preloop: rate limited:") and "Traceback" not in err
    assert len(_notes(live_server, sid)) == 20


def test_withdraw_and_list_accept_the_short_ids_the_cli_prints(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 10 item 10: "Note fbdd7902 is withdrawn" is printed, so `notes withdraw fbdd7902` must work."""
    sid = _one_session(live_server)
    other = _one_session(live_server, agent_name="b")
    assert main(["notes", "send", "--session", sid, "first"]) == 0
    assert main(["notes", "send", "--session", other, "second"]) == 0
    capsys.readouterr()
    assert main(["notes", "list", "--session", sid[:8], "-o", "id"]) == 0
    [first] = capsys.readouterr().out.split()
    assert main(["notes", "withdraw", first[:8]]) == 0
    printed = capsys.readouterr().out
    assert printed == f"Note {first[:8]} is withdrawn (cancelled): the agent will not see it.\n"
    # The short id it printed works again, narrowed to a session too; the note is already cancelled.
    assert main(["notes", "withdraw", first[:8], "--session", sid[:8]]) == 0
    assert "was already withdrawn" in capsys.readouterr().out
    assert [n["state"] for n in _notes(live_server, sid)] == ["cancelled"]
    assert [n["state"] for n in _notes(live_server, other)] == ["pending"]
    assert main(["notes", "withdraw", "0000"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("preloop: no such note: no note of the newest") and "notes list" in err
    assert main(["notes", "list", "--session", sid, "-o", "id", "--json"]) == 2
    assert "keep one of them" in capsys.readouterr().err


def test_a_note_for_an_ended_session_exits_1_and_says_so(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "Sent note … (undeliverable …)" with exit 0 and a withdraw hint: the server refuses it (409)."""

    async def end(sessions: list[HarnessSession]) -> None:
        await sessions[0].end()

    [sid], _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}], end)
    assert main(["notes", "send", "--session", sid[:8], "too late"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"preloop: session ended: session {sid[:8]} has ended, so the note was not sent (a note can only "
        "reach a live session): `preloop sessions list` shows which sessions are still running\n"
    )
    assert _notes(live_server, sid) == []


def test_list_says_who_sent_each_note(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 24: every note is stored with its operator; the list's BY column names a colleague, and says
    "you" for the operator listing them."""
    session_id = _one_session(live_server)
    dana = live_server.add_operator("dana")
    assert main(["notes", "send", "--session", session_id, "mine"]) == 0
    assert main(["notes", "send", "--session", session_id, "hers", "--token", dana]) == 0
    capsys.readouterr()
    assert main(["notes", "list", "--session", session_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["NOTE", "STATE", "BY"]
    by_text = {line.split()[-1]: line.split()[2] for line in lines[1:]}
    assert by_text == {"mine": "you", "hers": "dana"}


def test_a_full_session_id_that_does_not_exist_is_named_in_full(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trial: the error named the unknown id's first 8 characters, which are a live session's short id."""
    sid = _one_session(live_server)
    unknown = sid[:8] + "-0000-4000-8000-000000000000"
    for argv in (
        ["notes", "send", "--session", unknown, "hello"],
        ["notes", "list", "--session", unknown],
        ["sessions", "export", unknown, "-o", "-"],
        ["sessions", "digest", unknown, "--since", "1h"],
        ["sessions", "attach", unknown, "--plain"],
    ):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert f"session {unknown} does not exist" in err, (argv, err)
