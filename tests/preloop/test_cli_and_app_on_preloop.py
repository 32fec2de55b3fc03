"""The ``preloop`` command line and the full-screen app against the fake Preloop, as a user runs them.

No ``--server-kind``: the kind is detected on first contact, exactly as with a real Preloop URL. The
commands are run in-process (``cli.main.main``), the attach in a thread while the test drives the fake.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from client import config
from client.backends import connect
from client.config import Settings
from client.status import Live
from tests.cli.helpers import PRELOOP
from tests.conftest import until
from tests.fake_preloop import FOREIGN_SESSION, MAIN_SESSION, RATE_SESSION, TOKEN, FakePreloop
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.timeline_view import TimelineView

LINE = re.compile(r"^\d\d:\d\d:\d\d (\S+)\s+(.*)$")


pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


@pytest.fixture
def flags(base_url: str) -> list[str]:
    return ["--url", base_url, "--token", TOKEN]


class Output:
    """Everything the CLI printed so far (stdout and stderr), read while a command is still running."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys
        self.out = ""
        self.err = ""

    def read(self) -> None:
        captured = self.capsys.readouterr()
        self.out += captured.out
        self.err += captured.err

    def wait_for(self, check: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.read()
            if check():
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}; stdout:\n{self.out}\nstderr:\n{self.err}"
                )
            time.sleep(0.05)

    def lines(self) -> list[tuple[str, str]]:
        return [(m.group(1), m.group(2)) for m in map(LINE.match, self.out.splitlines()) if m]


@pytest.fixture
def output(capsys: pytest.CaptureFixture[str]) -> Output:
    return Output(capsys)


@pytest.fixture
def background() -> Iterator[Callable[[list[str]], threading.Thread]]:
    """Run ``main(argv)`` in a thread (its own event loop); its exit code lands in ``thread.code``."""
    threads: list[threading.Thread] = []

    def start(argv: list[str]) -> threading.Thread:
        thread = threading.Thread(target=lambda: setattr(thread, "code", main(argv)), daemon=True)
        thread.start()
        threads.append(thread)
        return thread

    yield start
    for thread in threads:
        thread.join(20)
        assert not thread.is_alive(), "a CLI command never returned"


def test_sessions_list_detects_preloop_and_prints_the_table_ids_and_json(
    flags: list[str], output: Output
) -> None:
    assert main(["sessions", "list", *flags]) == 0
    output.read()
    header, *rows = output.out.splitlines()
    assert header.split() == [
        "ID", "AGENT", "STARTED", "LAST", "ACTIVITY", "STATE", "TOOLS", "MODEL", "PENDING", "TITLE"
    ]  # fmt: skip
    # Newest start first, as the sessions screen (the server sends the most recently active first).
    assert [row.split()[0] for row in rows] == [RATE_SESSION[:8], MAIN_SESSION[:8]]
    assert "Claude Code in /home/dev/demo" in rows[1]  # the title made from kind and cwd
    assert main(["sessions", "list", "-o", "id", *flags]) == 0
    output.out = ""
    output.read()
    assert output.out.split() == [RATE_SESSION, MAIN_SESSION]
    assert main(["sessions", "list", "--json", "--limit", "1", *flags]) == 0
    output.out = ""
    output.read()
    page = json.loads(output.out)
    assert (page["total"], page["has_more"], len(page["items"])) == (2, True, 1)
    item = page["items"][0]
    assert item["id"] == MAIN_SESSION and item["started_at"].endswith("Z")  # zone-less time read as UTC
    assert {"display_title", "state"} <= item.keys()


def test_sessions_list_active_means_activity_in_the_last_ten_minutes(
    fake: FakePreloop, flags: list[str], output: Output
) -> None:
    fake.tool_call("Read")  # the main session is busy now; the other one last moved when it was recorded
    assert main(["sessions", "list", "--active", "-o", "id", *flags]) == 0
    output.read()
    assert output.out.split() == [MAIN_SESSION]


def test_plain_attach_replays_history_then_live_tool_calls_notes_and_the_end(
    fake: FakePreloop,
    flags: list[str],
    output: Output,
    background: Callable[[list[str]], threading.Thread],
) -> None:
    # --since far enough back to cover the recorded history (it is replayed before the live events).
    attach = background(
        ["sessions", "attach", MAIN_SESSION[:4], "--plain", "--read-only", "--since", "3650d", *flags]
    )
    output.wait_for(lambda: "-- live" in output.err, "the attach to go live")
    fake.tool_call("Grep", summary="3 matches in shop/")
    output.wait_for(lambda: "Grep ok" in output.out, "the pushed tool call")

    # Notes from another shell while attached: one delivered (pushed), one withdrawn (seen by polling).
    assert main(["notes", "send", "--session", MAIN_SESSION[:8], "Run the unit tests first.", *flags]) == 0
    assert main(["notes", "send", "--session", MAIN_SESSION[:8], "Stop touching migrations.", *flags]) == 0
    output.read()
    keep, drop = re.findall(r"Sent note (\w+) to session", output.out)
    assert main(["notes", "withdraw", drop, *flags]) == 0
    fake.deliver_notes()
    output.wait_for(lambda: f"delivered {keep[:8]}" in output.out, "the pushed delivery")
    output.wait_for(lambda: f"cancelled {drop[:8]}" in output.out, "the polled withdrawal")

    fake.end_session()
    attach.join(20)
    assert getattr(attach, "code", None) == 0
    output.read()
    lines = output.lines()
    kinds = [kind for kind, _ in lines]
    assert lines[0] == ("session", "started: Claude Code in /home/dev/demo started 2026-11-30 11:36")
    assert ("tool", "Read ok in 9 ms: claude_code") in lines  # from the recorded history
    assert lines.count(("tool", "Grep ok in 15 ms: 3 matches in shop/")) == 1  # pushed and replayed: once
    assert ("note", f"delivered {keep[:8]}: Run the unit tests first.") in lines
    assert ("note", f"cancelled {drop[:8]}: Stop touching migrations.") in lines
    assert f"delivered {drop[:8]}" not in output.out
    assert kinds[-1] == "session" and lines[-1][1].startswith("ended")
    assert "-- session ended" in output.err


def test_json_attach_to_an_ended_session_is_its_history_as_json_lines(
    fake: FakePreloop, flags: list[str], output: Output
) -> None:
    fake.end_session()
    assert main(["sessions", "attach", MAIN_SESSION, "--json", *flags]) == 0
    output.read()
    events = [json.loads(line) for line in output.out.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "session.started" and events[-1]["type"] == "session.ended"
    assert {"tool.started", "tool.completed"} <= {e["type"] for e in events}


def test_a_refused_attach_exits_1_with_the_servers_reason(flags: list[str], output: Output) -> None:
    assert main(["sessions", "attach", FOREIGN_SESSION, "--plain", *flags]) == 1
    output.read()
    assert "not found" in output.err and FOREIGN_SESSION[:8] in output.err


def test_notes_send_from_stdin_keeps_lines_and_withdraw_says_why_nothing_changed(
    fake: FakePreloop, flags: list[str], output: Output, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("first line\n  second, indented\n\nfourth\n"))
    assert main(["notes", "send", "--session", MAIN_SESSION[:8], "--json", *flags]) == 0
    output.read()
    sent = json.loads(output.out)
    assert sent["target"] == {"kind": "session", "id": MAIN_SESSION}
    assert fake.notes[sent["note_id"]]["text"] == "first line\n  second, indented\n\nfourth"

    fake.deliver_notes()
    output.out = ""
    assert main(["notes", "withdraw", sent["note_id"], *flags]) == 1
    output.read()
    assert "nothing changed, because it was already delivered" in output.out + output.err

    assert main(["notes", "list", "--session", MAIN_SESSION[:8], *flags]) == 0
    output.read()
    assert re.search(rf"{sent['note_id']}\s+delivered", output.out)


def test_approvals_list_and_approve_by_short_id(fake: FakePreloop, flags: list[str], output: Output) -> None:
    approval_id = fake.request_approval("git push origin main")
    assert main(["approvals", "list", "--session", MAIN_SESSION[:8], *flags]) == 0
    output.read()
    assert approval_id in output.out and "command=git push origin main" in output.out
    assert main(["approvals", "approve", approval_id[:6], "--comment", "go ahead", *flags]) == 0
    output.read()
    assert f'Approval {approval_id} (Bash) approved with comment "go ahead".' in output.out
    assert fake.approvals[approval_id]["status"] == "approved"
    assert main(["approvals", "decline", approval_id, *flags]) == 1  # decided already: said what happened
    output.read()
    # approved with this very token by the command before: the history names its user, who is "you"
    assert output.err.startswith(
        f"preloop: already approved: approval {approval_id[:8]} (Bash) was approved by you at "
    )
    assert output.err.endswith(', comment "go ahead"\n')
    assert main(["approvals", "list", *flags]) == 0
    output.read()
    assert output.out.endswith("No pending approvals.\n")


def test_the_detected_kind_is_remembered_in_the_profile_and_the_flag_overrides(
    base_url: str, fake: FakePreloop, output: Output
) -> None:
    config.save_profile("work", base_url)
    assert config.load_config().profiles["work"].server_kind is None
    assert main(["--profile", "work", "--token", TOKEN, "sessions", "list", "-o", "id"]) == 0
    assert config.load_config().profiles["work"].server_kind == "preloop"
    health_calls = fake.requests.count(("GET", "/api/v1/health"))
    assert health_calls == 1
    assert main(["--profile", "work", "--token", TOKEN, "sessions", "list", "-o", "id"]) == 0
    assert fake.requests.count(("GET", "/api/v1/health")) == health_calls  # remembered: not asked again
    # --server-kind is for this run only: it is not written to the profile.
    args = ["--profile", "work", "--token", TOKEN, "--server-kind", "local", "sessions", "list", "-o", "id"]
    assert main(args) == 0
    assert config.load_config().profiles["work"].server_kind == "preloop"
    output.read()


async def test_the_app_attached_through_the_real_client_shows_a_pushed_tool_call(
    base_url: str, fake: FakePreloop
) -> None:
    """The same app as for the local server: the client detects Preloop and follows its websocket."""
    async with await connect(Settings(base_url, TOKEN)) as client:
        app = PreloopApp(client, start_session_id=MAIN_SESSION, refresh_interval=0)
        async with app.run_test(size=(110, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
            assert client.server_kind == "preloop"
            view = screen.query_one(TimelineView)
            assert not any("Grep" in line for line in view.lines_text)
            fake.tool_call("Grep", summary="3 matches in shop/")
            await until(
                pilot, lambda: any("Grep" in line for line in view.lines_text), "the pushed Grep call"
            )
            grep = [line for line in view.lines_text if "Grep" in line]
            assert len(grep) == 1 and "ok 15ms" in grep[0]  # pushed and replayed, shown once, completed


def test_plain_attach_names_the_approvals_already_waiting_oldest_first_at_most_five(
    fake: FakePreloop,
    flags: list[str],
    output: Output,
    background: Callable[[list[str]], threading.Thread],
) -> None:
    waiting = [fake.request_approval(f"git push origin branch-{i}") for i in range(7)]
    attach = background(
        ["sessions", "attach", MAIN_SESSION[:8], "--plain", "--read-only", "--since", "0s", *flags]
    )  # no history: every waiting approval is older than what is shown, so each is named up front
    output.wait_for(lambda: "-- live" in output.err, "the attach to go live")
    named = re.findall(
        r"-- approval (\w+) is waiting: .*branch-(\d)\? \[risk danger\]$", output.err, re.MULTILINE
    )
    assert named == [(approval_id[:8], str(i)) for i, approval_id in enumerate(waiting[:5])]
    assert f"-- and 2 more waiting: preloop approvals list --session {MAIN_SESSION[:8]}" in output.err
    assert "/approve" not in output.err  # read-only: nothing to type
    fake.end_session()
    attach.join(20)
    assert getattr(attach, "code", None) == 0


async def test_typed_note_and_approve_in_plain_attach_reach_preloop(
    fake: FakePreloop, flags: list[str]
) -> None:
    """The console script on a pipe, as a user's shell runs it: a polled approval is approved by typing."""
    import os
    import sys

    preloop = str(Path(sys.executable).parent / "preloop")
    proc = await asyncio.create_subprocess_exec(
        preloop, "sessions", "attach", MAIN_SESSION[:8], "--plain", *flags,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def read_until(stream: asyncio.StreamReader, needle: str) -> str:
        async with asyncio.timeout(20):
            while True:
                line = (await stream.readline()).decode()
                assert line, f"ended before {needle!r}"
                if needle in line:
                    return line

    try:
        await read_until(proc.stderr, "-- live")
        proc.stdin.write(b"please stop after this step \\\nand summarise\n")
        await proc.stdin.drain()
        await read_until(proc.stderr, "sent (pending)")
        assert [n["text"] for n in fake.notes.values()] == ["please stop after this step \nand summarise"]
        approval_id = fake.request_approval("git push origin main")  # never pushed: found by polling
        requested = await read_until(proc.stdout, "approval   requested")
        assert approval_id[:8] in requested and "git push origin main" in requested
        proc.stdin.write(b"/approve\n")  # a danger call (as Preloop rates Bash): its id is asked for
        await proc.stdin.drain()
        await read_until(proc.stderr, f"decided by its id: /approve {approval_id[:8]}")
        proc.stdin.write(f"/approve {approval_id[:8]}\n".encode())
        await proc.stdin.drain()
        await read_until(proc.stderr, "approve Bash git push origin main? [y/N]")
        proc.stdin.write(b"y\n")
        await proc.stdin.drain()
        await read_until(proc.stderr, f"approval {approval_id[:8]} approved")
        assert fake.approvals[approval_id]["status"] == "approved"
        # the decision, polled back, with who made it (this token's user: Preloop's history names them)
        await read_until(proc.stdout, f"approved {approval_id[:8]} by you")
        fake.end_session()
        await read_until(proc.stdout, "session    ended")
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


ENDED_SENTENCE = f"session ended: session {MAIN_SESSION[:8]} has ended, so the note was not sent"


def test_a_note_for_a_session_that_ended_is_refused_before_anything_is_sent(
    fake: FakePreloop, flags: list[str], output: Output
) -> None:
    """Preloop would accept it and leave it pending for ever (capture 117): the row is read first."""
    fake.end_session(push=False)  # the idle sweep: nothing pushed, the row says it
    assert main(["notes", "send", "--session", MAIN_SESSION[:8], "too late", *flags]) == 1
    output.read()
    assert output.out == ""
    assert f"preloop: {ENDED_SENTENCE}" in output.err
    assert "Withdraw it with" not in output.err
    assert ("POST", "/api/v1/operator-notes") not in fake.requests
    assert fake.notes == {}


async def test_plain_attach_prints_the_refusal_of_a_note_for_an_ended_session_and_keeps_going(
    fake: FakePreloop, flags: list[str]
) -> None:
    """The session ended silently (polled only every 30 s): the typed note is refused, shown back, and
    the attach goes on (a command typed next is answered; the pushed end still ends it)."""
    import os
    import sys

    preloop = str(Path(sys.executable).parent / "preloop")
    proc = await asyncio.create_subprocess_exec(
        preloop, "sessions", "attach", MAIN_SESSION[:8], "--plain", "--since", "0s", *flags,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    seen: list[str] = []

    async def read_until(stream: asyncio.StreamReader, needle: str) -> str:
        async with asyncio.timeout(20):
            while True:
                line = (await stream.readline()).decode()
                assert line, f"ended before {needle!r}; got {seen}"
                seen.append(line)
                if needle in line:
                    return line

    try:
        await read_until(proc.stderr, "-- live")
        fake.end_session(push=False)
        proc.stdin.write(b"too late for this\n")
        await proc.stdin.drain()
        await read_until(proc.stderr, ENDED_SENTENCE)
        await read_until(proc.stderr, "your note was NOT sent; it was:")
        assert "too late for this" in await read_until(proc.stderr, "too late for this")
        proc.stdin.write(b"/help\n")
        await proc.stdin.drain()
        await read_until(proc.stderr, "/withdraw")  # still reading what is typed
        assert proc.returncode is None
        assert fake.notes == {}
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_the_app_keeps_a_note_for_an_ended_session_in_the_box_with_the_reason(
    base_url: str, fake: FakePreloop
) -> None:
    """The session ended without a push (the app learns it at its next poll): Enter is refused, the text
    stays in the note box and the line under it says why."""
    from textual.widgets import Static

    from widgets.composer import Composer

    async with await connect(Settings(base_url, TOKEN)) as client:
        app = PreloopApp(client, start_session_id=MAIN_SESSION, refresh_interval=0, attention=False)
        async with app.run_test(size=(110, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
            fake.end_session(push=False)
            await pilot.press(*"stop after the deploy", "enter")
            error_line = screen.query_one("#send-error", Static)
            await until(
                pilot, lambda: "session ended" in str(error_line.render()), "the refusal under the box"
            )
            assert "Not sent, your text is kept" in str(error_line.render())
            assert screen.query_one(Composer).text == "stop after the deploy"
            assert fake.notes == {}


async def test_watch_json_reports_a_decision_made_elsewhere_with_its_final_record(
    fake: FakePreloop, flags: list[str]
) -> None:
    """A Preloop server pushes no approval changes: the watch polls, and an approval decided elsewhere
    only disappears from the pending list. It was reported as ``"status": "gone"`` with the stale pending
    copy (``resolved_at: null``); the decided row is fetched, so the record says declined, with the
    comment and when."""
    approval_id = fake.request_approval("git push origin main")
    proc = await asyncio.create_subprocess_exec(
        PRELOOP, "approvals", "list", "--all-sessions", "--watch", "--json", *flags,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None

    async def record() -> dict[str, Any]:
        async with asyncio.timeout(60):
            line = await proc.stdout.readline()  # type: ignore[union-attr]
        assert line, (await proc.stderr.read()).decode()  # type: ignore[union-attr]
        result: dict[str, Any] = json.loads(line)
        return result

    try:
        first = await record()
        assert first["type"] == "approval.pending" and first["approval"]["id"] == approval_id
        assert fake.decide(approval_id, "decline", "Not on a Friday.")[0] == 200  # another operator
        resolved = await record()
        assert resolved["type"] == "approval.resolved" and resolved["elsewhere"] is True
        assert resolved["status"] == "declined"
        approval = resolved["approval"]
        assert (approval["id"], approval["status"]) == (approval_id, "declined")
        assert approval["approver_comment"] == "Not on a Friday."
        assert approval["resolved_at"] is not None and approval["decided_by_human"] is True
    finally:
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 130
