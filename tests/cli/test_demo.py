"""``preloop demo``: real server and demo agents, watched with the printed commands, stopped by Ctrl+C."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import jsonschema
import pytest
from markdown_it import MarkdownIt

from cli.commands import export
from cli.main import main
from client import paths
from tests.cli.helpers import PRELOOP, preloop
from tests.cli.test_tui_launch import _run_in_pty


def test_demo_without_tui_prints_working_instructions(isolated_dirs: Path) -> None:
    proc = subprocess.Popen(
        [PRELOOP, "demo", "--no-tui", "--pace", "50", "--seed", "7", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert proc.stdout is not None
        shown: list[str] = []
        while not shown or "Press Ctrl+C" not in shown[-1]:
            line = proc.stdout.readline()
            assert line, "".join(shown)
            shown.append(line)
        text = "".join(shown)
        curl = re.search(r"curl -N -H \"Authorization: Bearer \$TOKEN\" (\S+/events)", text)
        assert curl, text
        token = json.loads(paths.local_server_file().read_text())["token"]
        assert token not in text  # the token is never printed
        # what the curl line does: the stream carries the agent's events
        with (
            httpx.Client(timeout=20) as http,
            http.stream("GET", curl.group(1), headers={"Authorization": f"Bearer {token}"}) as response,
        ):
            assert response.status_code == 200
            kinds = []
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kinds.append(line[7:])
                if len(kinds) >= 4:
                    break
        assert kinds[0] == "session.started"
        listed = preloop("sessions", "list", "--active", "--json")
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)["items"]) >= 3
        note = re.search(r'preloop notes send --session (\w+) "', text)
        assert note
        sent = preloop("notes", "send", "--session", note.group(1), "explain your plan first", "--json")
        assert sent.returncode == 0, sent.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err  # Ctrl+C: the shell's convention, as every other command
    assert "Demo stopped." in err and "Traceback" not in err
    # a clean shutdown: the note is in the demo's database for the next `preloop demo`
    with sqlite3.connect(paths.state_dir() / "demo.sqlite3") as conn:
        bodies = [row[0] for row in conn.execute("SELECT text FROM notes")]
    assert "explain your plan first" in bodies


def test_demo_opens_the_sessions_screen_on_a_terminal(isolated_dirs: Path) -> None:
    code, screen = _run_in_pty(["demo", "--pace", "50", "--seed", "7", "--port", "0"], b"builder", b"q")
    assert code == 0
    assert b"Traceback" not in screen


def test_ctrl_c_quits_the_demos_app_and_stops_its_server(isolated_dirs: Path) -> None:
    """What the README and ``demo --help`` say: Ctrl+C stops the demo (the app quits, then its server)."""
    code, screen = _run_in_pty(["demo", "--pace", "50", "--seed", "7", "--port", "0"], b"builder", b"\x03")
    assert code == 130, screen[-2000:]  # Ctrl+C, as the README says
    assert b"Demo stopped." in screen and b"Traceback" not in screen
    url = json.loads(paths.local_server_file().read_text())["url"]
    try:
        httpx.get(f"{url}/api/v1/health", timeout=5)
    except httpx.ConnectError:
        pass
    else:
        raise AssertionError(f"the demo's server still answers on {url}")


def _start_demo(port: int, pace: int = 20) -> tuple[subprocess.Popen[str], str]:
    """``preloop demo --no-tui`` on ``port`` (0: any free one); the process and what it printed up to
    "Ctrl+C"."""
    proc = subprocess.Popen(
        [PRELOOP, "demo", "--no-tui", "--pace", str(pace), "--seed", "7", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    shown: list[str] = []
    while not shown or "Press Ctrl+C" not in shown[-1]:
        line = proc.stdout.readline()
        assert line, "".join(shown) + (proc.stderr.read() if proc.stderr else "")
        shown.append(line)
    return proc, "".join(shown)


def test_demo_rerun_after_a_crash_keeps_sessions_and_notes_and_attached_clients_reconnect(
    isolated_dirs: Path,
) -> None:
    """Issue 10 item 11: kill -9 the demo, run it again: same URL, same database, nothing lost. Issue 23:
    the agents carry on in the sessions they left open (not ended), so a client still attached to one
    reconnects and sees its agent at work again."""
    first, text = _start_demo(0)  # a free port, bound at once (one picked and freed first could be taken)
    attached: subprocess.Popen[str] | None = None
    second: subprocess.Popen[str] | None = None
    try:
        address = re.search(r"http://127\.0\.0\.1:(\d+)", text)
        assert address, text
        port = int(address.group(1))
        sid = re.search(r'preloop notes send --session (\w+) "', text)
        assert sid
        sent = preloop("notes", "send", "--session", sid.group(1), "keep this note", "--json")
        assert sent.returncode == 0, sent.stderr
        note_id = json.loads(sent.stdout)["note_id"]
        before = json.loads(preloop("sessions", "list", "--json", "--limit", "100").stdout)["items"]
        session = next(s["id"] for s in before if s["id"].startswith(sid.group(1)))
        # A client attached to a session of the first run, as a second terminal would be.
        attached = subprocess.Popen(
            [PRELOOP, "sessions", "attach", session, "--json", "--read-only", "--since", "0s"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert attached.stderr is not None and attached.stdout is not None
        while "-- live" not in attached.stderr.readline():
            pass
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in attached.stdout], daemon=True).start()
        first.kill()  # a crash: no clean shutdown, nothing flushed on the way out
        first.wait(30)
        restarted = datetime.now(UTC)
        second, _ = _start_demo(port)
        after = json.loads(preloop("sessions", "list", "--json", "--limit", "100").stdout)["items"]
        assert {s["id"] for s in before} <= {s["id"] for s in after}
        kept = json.loads(preloop("notes", "list", "--session", session, "--json").stdout)["notes"]
        assert note_id in [n["note_id"] for n in kept]
        # The first run's session is not ended: its agent carries on in it.
        old = next(s for s in after if s["id"] == session)
        assert old["ended_at"] is None
        # The attached client reconnected to the same address and sees the agent at work again.
        deadline = time.monotonic() + 60
        carried_on = False
        while not carried_on and time.monotonic() < deadline:
            try:
                event = json.loads(lines.get(timeout=1))
            except queue.Empty:
                continue
            carried_on = datetime.fromisoformat(event["at"].replace("Z", "+00:00")) >= restarted
        assert carried_on, "no event of the resumed agent reached the attached client"
        attached.send_signal(signal.SIGINT)
        _, err = attached.communicate(timeout=60)
        assert "reconnecting" in err
    finally:
        if second is not None:
            second.send_signal(signal.SIGINT)
            _, err = second.communicate(timeout=60)
            assert second.returncode == 130, err
            assert "Run `preloop demo` again to carry on" in err
        for proc in (first, attached):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(30)


def test_with_the_demo_stopped_an_error_says_to_run_the_demo_again(isolated_dirs: Path) -> None:
    """Issue 18: with the demo stopped, commands said "`preloop serve` starts a local one" about the
    demo's address; they name the demo (and its port, when not the usual one)."""
    proc, _ = _start_demo(0)
    url = json.loads(paths.local_server_file().read_text())["url"]
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    listed = preloop("sessions", "list")
    assert listed.returncode == 1
    port = url.rsplit(":", 1)[1]
    assert listed.stderr == (
        f"preloop: server unreachable: cannot reach {url}: is `preloop demo --port {port}` running? "
        "(it was the last local server here)\n"
    )


def test_a_second_demo_on_the_same_data_is_refused(isolated_dirs: Path) -> None:
    first, _ = _start_demo(0)
    try:
        again = preloop("demo", "--no-tui", "--port", "0")
        assert again.returncode == 1
        assert "another `preloop demo` is running" in again.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)


def test_a_demo_session_exports_to_json_and_markdown(
    isolated_dirs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11: the post-incident export of a real demo session (demo agents, their tools and narration),
    in both formats; the JSON validates against the documented schema. The demo is the console script;
    the export runs ``main()`` in-process (the console script's export: tests/cli/test_sessions_export.py)."""
    schema = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())
    # A demo session at pace 100 rarely goes quiet for the export's 1.5 s (its events come faster): the
    # export takes its history as complete after a shorter quiet window (the window's own behaviour:
    # tests/cli/test_sessions_export.py::test_a_running_session_is_exported_as_of_now).
    monkeypatch.setattr(export, "QUIET_SECONDS", 0.5)
    proc, _ = _start_demo(0, pace=100)
    try:
        busy: dict[str, object] | None = None
        deadline = time.monotonic() + 60
        server = json.loads(paths.local_server_file().read_text())
        # Waiting for a busy session asks the API itself: a console script per look costs a second of CPU.
        with httpx.Client(base_url=server["url"], timeout=20) as http:
            while busy is None and time.monotonic() < deadline:
                listed = http.get(
                    "/api/v1/runtime-sessions", headers={"Authorization": f"Bearer {server['token']}"}
                )
                assert listed.status_code == 200, listed.text
                worked = [s for s in listed.json()["items"] if (s.get("tool_call_count") or 0) >= 2]
                busy = worked[0] if worked else None
                time.sleep(0.1)
        assert busy is not None, "no demo session ran two tools within a minute"
        session_id = str(busy["id"])

        target = tmp_path / "demo.json"
        capsys.readouterr()
        assert main(["sessions", "export", session_id[:8], "-o", str(target)]) == 0, capsys.readouterr().err
        doc = json.loads(target.read_text())
        jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
        assert doc["session"]["id"] == session_id and doc["session"]["agent"] == busy["agent_name"]
        kinds = {item["kind"] for item in doc["timeline"]}
        assert {"session_started", "commentary", "tool_call"} <= kinds
        assert doc["tool_calls"]["count"] >= 2 and "events_not_loaded" not in doc

        assert main(["sessions", "export", session_id, "--format", "md"]) == 0
        md = capsys.readouterr().out
        assert md.startswith("# Session ") and "## Timeline" in md and "## Tool calls" in md
        tokens = MarkdownIt("commonmark").enable("table").parse(md)
        assert any(t.type == "table_open" for t in tokens)  # the summary and tool tables render as tables
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
