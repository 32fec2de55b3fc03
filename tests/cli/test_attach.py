"""``preloop sessions attach`` off a terminal: plain lines, JSON lines, stdin steering, pipes, Ctrl+C.

Agents are driven through the real harness API while the CLI follows the real SSE stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import uuid
from collections.abc import Callable

import pytest

from cli.main import main
from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from server.harness_client import HarnessSession
from tests.cli.helpers import PRELOOP

LINE = re.compile(r"^\d\d:\d\d:\d\d (\S+)\s+(.*)$")


async def _work(agent: HarnessSession) -> None:
    """One small turn: narration, a tool call, the final answer."""
    await agent.run_started("Fix the failing test")
    await agent.narrate(1, ["Looking at ", "the test\x1b[2J first."])
    call = await agent.tool_started("Read", {"file_path": "tests/test_x.py"}, iteration=1)
    await agent.tool_completed(call, "Read", duration_ms=12, result_summary="120 lines")
    await agent.final_answer(2, "Done: the test passes.", chunks=["Done: ", "the test passes."])


async def _spawn(*args: str, stdin: bool = False) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        PRELOOP,
        *args,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _read_until(stream: asyncio.StreamReader, needle: str) -> list[str]:
    lines: list[str] = []
    async with asyncio.timeout(60):  # generous: a loaded machine starts processes slowly
        while True:
            raw = await stream.readline()
            if not raw:
                raise AssertionError(f"stream ended before {needle!r}; got {lines}")
            lines.append(raw.decode())
            if needle in lines[-1]:
                return lines


async def test_json_lines_are_the_stream_as_carried(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder", title="Fix it")
        await _work(agent)
        await agent.end()
        code = await asyncio.to_thread(
            main, ["sessions", "attach", agent.session_id[:8], "--json", "--since", "1h"]
        )
    assert code == 0
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    types = [e["type"] for e in events]
    assert types[0] == "session.started" and types[-1] == "session.ended"
    assert "model.delta" in types and "tool.completed" in types and "run.completed" in types
    # notices (connection states) only on stderr
    assert "-- live" in captured.err and "-- session ended" in captured.err


async def test_plain_lines_one_per_event_safe_and_without_colour(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        await _work(agent)
        await agent.end()
        code = await asyncio.to_thread(
            main, ["sessions", "attach", agent.session_id, "--plain", "--since", "1h"]
        )
    assert code == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    parsed = [LINE.match(line) for line in out.splitlines()]
    assert all(parsed), out
    kinds = [(m.group(1), m.group(2)) for m in parsed if m]
    assert ("commentary", "Looking at the test\ufffd first. (1 tool call)") in kinds
    assert any(k == "tool" and t.startswith("Read ok in 12 ms: 120 lines") for k, t in kinds)
    assert ("answer", "Done: the test passes.") in kinds and ("done", "Done: the test passes.") in kinds
    assert not any(k == "text" for k, _ in kinds)  # deltas are folded into their step's line


async def test_text_that_never_ended_is_shown_as_cut_off(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    """A step whose run failed before it ended still shows its text, once, marked as cut off; a step that
    ended shows its text on the step's line only."""
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        await _work(agent)
        await agent.run_started("Try again")
        await agent.delta("Half a ", 3)
        await agent.delta("thought", 3)
        await agent.run_failed("the model went away")
        await agent.end()
        code = await asyncio.to_thread(
            main, ["sessions", "attach", agent.session_id, "--plain", "--since", "1h"]
        )
    assert code == 0
    kinds = [(m.group(1), m.group(2)) for m in map(LINE.match, capsys.readouterr().out.splitlines()) if m]
    cut = kinds.index(("text", "Half a thought (cut off)"))
    assert kinds[cut + 1] == ("failed", "the model went away")
    assert [k for k, _ in kinds].count("text") == 1


async def test_ended_session_replays_everything_without_since(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        await _work(agent)
        await agent.end()
    assert await asyncio.to_thread(main, ["sessions", "attach", agent.session_id, "--plain"]) == 0
    out = capsys.readouterr().out
    assert "session    started" in out and "session    ended" in out


async def test_piped_into_head_reads_lines_and_exits_quietly(live_server) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        await _work(agent)
        env = {**os.environ, "PATH": f"{os.path.dirname(PRELOOP)}:{os.environ['PATH']}"}
        proc = await asyncio.create_subprocess_shell(
            f"set -o pipefail; preloop sessions attach {agent.session_id[:8]} --json --since 1h | head -n 5",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            env=env,
            executable="/bin/bash",
        )
        lines = await _read_until_count(proc.stdout, 5)
        # head has left; the next event makes preloop notice the closed pipe and exit
        for i in range(50):
            if proc.returncode is not None:
                break
            await agent.delta(f"more {i}", 9)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 0.2)
        await asyncio.wait_for(proc.wait(), 30)
        stderr = (await proc.stderr.read()).decode() if proc.stderr else ""
    assert proc.returncode == 0, stderr
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4, 5]
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr


async def _read_until_count(stream: asyncio.StreamReader | None, count: int) -> list[str]:
    assert stream is not None
    lines: list[str] = []
    async with asyncio.timeout(60):  # generous: a loaded machine starts processes slowly
        while len(lines) < count:
            raw = await stream.readline()
            if not raw:
                break
            lines.append(raw.decode())
    return lines


async def test_typed_lines_steer_and_unknown_commands_are_never_sent(live_server) -> None:
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn(
            "sessions", "attach", agent.session_id[:8], "--plain", "--since", "0s", stdin=True
        )
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        await _read_until(proc.stderr, "-- live")

        proc.stdin.write(b"please run the tests \\\nbefore you push\n/aprove\n//etc is read-only\n")
        await proc.stdin.drain()
        await _read_until(proc.stderr, "unknown command /aprove: not sent")
        await _read_until(proc.stderr, "note ")

        verdict = asyncio.create_task(agent.permission_check("Read", {"file_path": "README.md"}))
        await _read_until(proc.stdout, "approval   requested")
        proc.stdin.write(b"/approve\n")  # the one shown, of low risk: no id needed
        await proc.stdin.drain()
        assert (await asyncio.wait_for(verdict, 30)).decision == "allow"

        decline = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf /"}))
        sid = _requested_id((await _read_until(proc.stdout, "approval   requested"))[-1])
        proc.stdin.write(f"/decline {sid} absolutely not\n".encode())
        await proc.stdin.drain()
        assert (await asyncio.wait_for(decline, 30)).decision == "deny"

        notes = (await client.list_notes(session_id=agent.session_id)).notes
        texts = sorted(n.text for n in notes)
        assert texts == ["/etc is read-only", "please run the tests \nbefore you push"]
        pending = next(n for n in notes if n.text.startswith("/etc"))
        proc.stdin.write(f"/withdraw {pending.note_id[:6]}\n".encode())
        await proc.stdin.drain()
        await _read_until(proc.stderr, "is withdrawn (cancelled)")

        await agent.end()
        out = await asyncio.wait_for(proc.stdout.read(), 30)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    assert b"session    ended" in out


async def test_read_only_never_reads_stdin(live_server) -> None:
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--plain", "--read-only", stdin=True)
        assert proc.stdin is not None and proc.stderr is not None
        await _read_until(proc.stderr, "-- live")
        proc.stdin.write(b"this must not be sent\n")
        await proc.stdin.drain()
        await agent.run_started("next task")
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert (await client.list_notes(session_id=agent.session_id)).notes == []


async def test_attach_by_execution(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    execution = str(uuid.uuid4())
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="flow-step", flow_execution_id=execution)
        await agent.end()
    assert await asyncio.to_thread(main, ["sessions", "attach", "--execution", execution, "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {e["session_id"] for e in events} == {agent.session_id}


def test_refusals(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "attach", str(uuid.uuid4()), "--plain"]) == 1
    assert "not found" in capsys.readouterr().err
    assert main(["sessions", "attach", "abcdef12", "--plain"]) == 1
    assert "no session starts with 'abcdef12'" in capsys.readouterr().err
    assert main(["sessions", "attach", "abcdef12", "--plain", "--token", "nope"]) == 1
    assert "preloop login" in capsys.readouterr().err


async def test_ctrl_c_exits_130_quietly(live_server) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--plain")
        assert proc.stderr is not None
        await _read_until(proc.stderr, "-- live")
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 130
        rest = (await proc.stderr.read()).decode()
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest


async def test_server_restart_mid_attach_is_a_notice_and_the_stream_resumes(live_server) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--json", "--read-only")
        assert proc.stderr is not None and proc.stdout is not None
        await _read_until(proc.stderr, "-- live")
        await agent.run_started("before the restart")
        before = await _read_until(proc.stdout, "before the restart")
        await asyncio.to_thread(live_server.stop)
        await _read_until(proc.stderr, "reconnecting in")
        await asyncio.to_thread(live_server.start)
        await agent.run_started("after the restart")
        after = await _read_until(proc.stdout, "after the restart")
        await agent.end()
        rest = (await asyncio.wait_for(proc.stdout.read(), 20)).decode().splitlines()
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    seqs = [json.loads(line)["seq"] for line in [*before, *after, *rest] if line.strip()]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # nothing lost, nothing twice


async def test_an_approval_already_waiting_is_named_on_attach_and_can_be_approved(live_server) -> None:
    """With --since 0s the history is not printed, but the approval blocking the agent must be."""
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder")
        verdict = asyncio.create_task(agent.permission_check("Bash", {"command": "git push origin main"}))
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            async with asyncio.timeout(30):
                while not (await client.list_approvals(session_id=agent.session_id)).items:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            (waiting,) = (await client.list_approvals(session_id=agent.session_id)).items
        proc = await _spawn(
            "sessions", "attach", agent.session_id[:8], "--plain", "--since", "0s", stdin=True
        )
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        lines = await _read_until(proc.stderr, "-- live")
        sid = waiting.id[:8]
        assert any(
            line.startswith(f"-- approval {sid} is waiting: ")
            and "git push origin main" in line
            and "[risk danger]" in line
            and f"(/approve {sid} or /decline {sid})" in line
            for line in lines
        ), lines
        proc.stdin.write(f"/approve {sid}\ny\n".encode())  # a danger call: its id, then a yes
        await proc.stdin.drain()
        assert (await asyncio.wait_for(verdict, 30)).decision == "allow"
        await _read_until(proc.stderr, f"approval {sid} approved")
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


@pytest.mark.parametrize("output", ["--plain", "--json"])
async def test_attaching_to_an_idle_session_shows_its_recent_history(live_server, output: str) -> None:
    """Issue 10 item 9: like `kubectl logs -f`, not four notices and nothing else; --since 0s shows none."""
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder", title="Fix it")
        await _work(agent)  # then the agent goes quiet: nothing new arrives while we attach
        proc = await _spawn("sessions", "attach", agent.session_id[:8], output, "--read-only")
        assert proc.stderr is not None and proc.stdout is not None
        notices = await _read_until(proc.stderr, "-- live")
        assert any("showing its history from" in line and "--since" in line for line in notices), notices
        printed = await _read_until(proc.stdout, "the test passes")
        if output == "--json":
            events = [json.loads(line) for line in printed]
            assert events[0]["type"] == "session.started" and events[0]["seq"] == 1
            assert "tool.completed" in [e["type"] for e in events]
        else:
            assert "Looking at the test" in "".join(printed) and "Read ok in 12 ms" in "".join(printed)
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0

        none = await _spawn("sessions", "attach", agent.session_id[:8], output, "--since", "0s")
        out, _ = await asyncio.wait_for(none.communicate(), 60)
        assert none.returncode == 0
        assert b"the test passes" not in out  # ended, and --since 0s asked for no history


async def test_plain_attach_says_a_refused_token_once_and_resumes_after_a_new_one(live_server) -> None:
    """The server stops accepting the token mid-attach (rotated, then a restart drops the stream): one
    line says so whatever the retries, and the attach goes on by itself once a new token can be read."""
    import io

    from cli.plain import follow_plain
    from client.backends import connect
    from client.config import resolve_settings, token_reader
    from server.embedded import write_local_server_file

    out, err = io.StringIO(), io.StringIO()
    reads: list[str | None] = []
    read_again = token_reader(resolve_settings())

    def source() -> str | None:
        reads.append(read_again())
        return reads[-1]

    backend = await connect(
        resolve_settings(), server_kind="local", backoff_initial=0.05, backoff_max=0.2, token_source=source
    )
    async with live_server.harness() as harness, backend:
        agent = await harness.start_session(agent_name="night-shift")
        attach = asyncio.create_task(
            follow_plain(
                backend, agent.session_id, since=None, json_lines=False, read_only=True, out=out, err=err
            )
        )

        async def wait_for(check: Callable[[], bool]) -> None:
            async with asyncio.timeout(30):
                while True:
                    if check():
                        return
                    await asyncio.sleep(0.02)

        await wait_for(lambda: "-- live" in err.getvalue())
        new = live_server.rotate_token()
        await asyncio.to_thread(live_server.stop)
        await asyncio.to_thread(live_server.start)
        await agent.run_started("while the token is refused")
        await wait_for(lambda: len(reads) >= 4)  # four attempts, each reading the token again
        write_local_server_file(live_server.url, new)
        await wait_for(lambda: "while the token is refused" in out.getvalue())
        await agent.end()
        assert await asyncio.wait_for(attach, 20) == 0
    notices = err.getvalue()
    assert notices.count("refused the token (401): run `preloop login` in another terminal") == 1
    assert notices.count("-- live") == 2  # then live again, without a restart
    assert "refused (401)" not in notices


async def test_a_plain_line_over_the_limit_is_not_sent_and_is_printed_back(live_server) -> None:
    """Issue 18: a typed line longer than 4096 characters is refused by the client with the limit (never
    asked of the server, which answered "invalid request"), printed back, and the attach goes on."""
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--plain", "--since", "0s", stdin=True)
        assert proc.stdin is not None and proc.stderr is not None
        await _read_until(proc.stderr, "-- live")
        proc.stdin.write(b"w" * 5000 + b"\nshort one\n")
        await proc.stdin.drain()
        said = await _read_until(proc.stderr, "your note was NOT sent")
        assert "bad input: the note is 5,000 characters long and the limit is 4,096" in said[-2], said[-2:]
        assert "w" * 5000 in (await proc.stderr.readline()).decode()
        await _read_until(proc.stderr, "sent (pending)")
        assert [n.text for n in (await client.list_notes(session_id=agent.session_id)).notes] == ["short one"]
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_plain_attach_says_a_lost_stream_in_words_once_not_at_every_retry(live_server) -> None:
    """The trial: "connection lost (RemoteProtocolError); reconnecting in 2.0s (attempt 3)" and a
    "connecting" line at every retry. Now: the loss in words, once (again only if why changes), and
    live again, each line short enough for 80 columns."""
    import io

    from cli.plain import follow_plain
    from client.config import resolve_settings

    out, err = io.StringIO(), io.StringIO()
    backend = await connect(resolve_settings(), server_kind="local", backoff_initial=0.05, backoff_max=0.2)
    async with live_server.harness() as harness, backend:
        agent = await harness.start_session(agent_name="night-shift")
        attach = asyncio.create_task(
            follow_plain(
                backend, agent.session_id, since=None, json_lines=False, read_only=True, out=out, err=err
            )
        )

        async def wait_for(check: Callable[[], bool]) -> None:
            async with asyncio.timeout(30):
                while True:
                    if check():
                        return
                    await asyncio.sleep(0.02)

        await wait_for(lambda: "-- live" in err.getvalue())
        await asyncio.to_thread(live_server.stop)
        await asyncio.sleep(2.0)  # retries every 0.2 s: about ten of them
        await asyncio.to_thread(live_server.start)
        await agent.run_started("after the outage")
        await wait_for(lambda: "after the outage" in out.getvalue())
        await agent.end()
        assert await asyncio.wait_for(attach, 20) == 0
    notices = err.getvalue().splitlines()
    assert "Error" not in err.getvalue()  # no exception's name
    lost = [line for line in notices if line.startswith("-- reconnecting")]
    assert 1 <= len(lost) <= 2, notices  # the loss, and maybe once more when why changed
    assert not [line for line in notices if line.startswith("-- connecting (attempt")], notices
    assert [line for line in notices if line.startswith("-- live again")], notices
    assert all(len(line) <= 80 for line in notices), notices


# ------------------------------------------------------------------------------------------------
# Issue 23 section 3: a typed decision names the approval it decides


async def _pending_ids(client: Backend, session_id: str) -> list[str]:
    return [a.id for a in (await client.list_approvals(session_id=session_id, status="pending")).items]


def _requested_id(line: str) -> str:
    """The short id a printed "approval requested" line names."""
    found = re.search(r"approval +requested (\w+):", line)
    assert found, line
    return found.group(1)


async def _say(proc: asyncio.subprocess.Process, line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(f"{line}\n".encode())
    await proc.stdin.drain()


async def test_a_danger_call_is_approved_only_by_its_id_and_a_yes_to_a_question_naming_it(
    live_server,
) -> None:
    """`/approve` alone approved a danger call at once (the trial): now it is refused, saying what to type;
    `/approve ID` asks "approve Bash rm -rf build/? [y/N]" on the next line and anything but y approves
    nothing; y approves it."""
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--plain", "--since", "0s", stdin=True)
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        await _read_until(proc.stderr, "-- live")
        verdict = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf build/\nls"}))
        requested = (await _read_until(proc.stdout, "approval   requested"))[-1]
        (approval_id,) = await _pending_ids(client, agent.session_id)
        sid = approval_id[:8]
        assert "[risk danger]" in requested and f"(/approve {sid} or /decline {sid})" in requested

        await _say(proc, "/approve")
        refused = (await _read_until(proc.stderr, "nothing approved"))[-1]
        assert f"approval {sid} is a danger-risk Bash call (rm -rf build/ …)" in refused
        assert refused.rstrip().endswith(f"decided by its id: /approve {sid}"), refused
        await _say(proc, "/decline not like this")
        refused = (await _read_until(proc.stderr, "nothing declined"))[-1]
        assert refused.rstrip().endswith(f"/decline {sid} not like this"), refused
        assert await _pending_ids(client, agent.session_id) == [approval_id]

        await _say(proc, f"/approve {approval_id[:5]}")
        assert (await proc.stderr.readline()).decode() == "approve Bash rm -rf build/ …? [y/N]\n"
        await _say(proc, "sure go ahead")  # not y: nothing approved, and the words are not lost silently
        await _read_until(proc.stderr, f"-- not approved: approval {sid} (Bash) still waits")
        said = (await proc.stderr.readline()).decode()
        assert said == "-- the line 'sure go ahead' answered the question; not sent as a note\n"
        await _say(proc, f"/approve {sid}")
        await _read_until(proc.stderr, "[y/N]")
        await _say(proc, "")  # Enter alone: the default, no
        await _read_until(proc.stderr, f"-- not approved: approval {sid} (Bash) still waits")
        assert await _pending_ids(client, agent.session_id) == [approval_id]
        assert (await client.list_notes(session_id=agent.session_id)).notes == []

        await _say(proc, f"/approve {sid}")
        await _read_until(proc.stderr, "[y/N]")
        await _say(proc, "Y")
        await _read_until(proc.stderr, f"-- approval {sid} approved")
        assert (await asyncio.wait_for(verdict, 30)).decision == "allow"
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_once_two_approvals_were_shown_a_decision_names_its_id(live_server) -> None:
    """Two calls shown: `/approve` alone is refused and lists what is pending with ids, tools and first
    lines, even after one of them was decided (the other may not be the one the operator meant); an id
    decides a low-risk call at once, without a question."""
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--plain", "--since", "0s", stdin=True)
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        await _read_until(proc.stderr, "-- live")
        first = asyncio.create_task(agent.permission_check("Read", {"file_path": "notes/a.md"}))
        a = _requested_id((await _read_until(proc.stdout, "approval   requested"))[-1])
        second = asyncio.create_task(agent.permission_check("Read", {"file_path": "notes/b.md"}))
        b = _requested_id((await _read_until(proc.stdout, "approval   requested"))[-1])

        await _say(proc, "/approve")
        refused = (await _read_until(proc.stderr, "nothing approved"))[-1]
        assert "2 approvals have been shown in this attach: name the one to approve" in refused
        assert f"Pending now: {a[:8]} Read [risk caution]: file_path: notes/a.md; {b[:8]} Read" in refused
        assert refused.rstrip().endswith(f"Type e.g. /approve {a[:8]}"), refused
        assert sorted(i[:8] for i in await _pending_ids(client, agent.session_id)) == sorted([a, b])

        await _say(proc, f"/decline {b[:6]} not that one")
        await _read_until(proc.stderr, f"-- approval {b[:8]} declined")
        assert (await asyncio.wait_for(second, 30)).decision == "deny"
        await _say(proc, "/approve")
        refused = (await _read_until(proc.stderr, "nothing approved"))[-1]
        assert (
            f"Pending now: {a[:8]} Read [risk caution]: file_path: notes/a.md. Type e.g. /approve {a[:8]}"
            in refused
        )
        await _say(proc, f"/approve {a[:8]}")
        await _read_until(proc.stderr, f"-- approval {a[:8]} approved")
        assert (await asyncio.wait_for(first, 30)).decision == "allow"
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_an_approval_no_longer_pending_is_refused_by_name_and_never_swapped_for_another(
    live_server,
) -> None:
    """The trial: the approval read expired and another replaced it; `/approve` must not approve the
    unseen one. The expired one is refused by name (alone, and by its id), and what waits is named."""
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="builder")
        proc = await _spawn("sessions", "attach", agent.session_id, "--plain", "--since", "0s", stdin=True)
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        await _read_until(proc.stderr, "-- live")
        expiring = asyncio.create_task(agent.permission_check("Read", {"file_path": "a.md"}))
        await _read_until(proc.stdout, "approval   requested")
        (old,) = await _pending_ids(client, agent.session_id)
        await live_server.expire_approval(old)
        await _read_until(proc.stdout, f"expired {old[:8]}")  # the server's expiry, as printed
        assert (await asyncio.wait_for(expiring, 30)).decision != "allow"

        await _say(proc, "/approve")
        refused = (await _read_until(proc.stderr, "nothing approved"))[-1]
        assert f"-- approval {old[:8]} (Read) expired before anyone decided at " in refused
        assert "No approval is pending in this session now." in refused

        replacement = asyncio.create_task(agent.permission_check("Read", {"file_path": "b.md"}))
        await _read_until(proc.stdout, "approval   requested")
        (new,) = await _pending_ids(client, agent.session_id)
        await _say(proc, "/approve")  # two shown now: the new one is named, not approved
        refused = (await _read_until(proc.stderr, "nothing approved"))[-1]
        assert f"Type e.g. /approve {new[:8]}" in refused
        await _say(proc, f"/approve {old[:6]}")
        refused = (await _read_until(proc.stderr, "nothing approved"))[-1]
        assert f"approval {old[:8]} (Read) expired before anyone decided" in refused
        assert f"Pending now: {new[:8]} Read [risk caution]: file_path: b.md" in refused
        assert await _pending_ids(client, agent.session_id) == [new]

        await client.approve(new, None)  # decided elsewhere, then asked for here
        await _say(proc, f"/decline {new[:8]} too late")
        refused = (await _read_until(proc.stderr, "nothing declined"))[-1]
        # decided with this operator's own token from another client: the server names them, "you"
        assert f"-- approval {new[:8]} (Read) was approved by you" in refused
        assert (await asyncio.wait_for(replacement, 30)).decision == "allow"
        await agent.end()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
