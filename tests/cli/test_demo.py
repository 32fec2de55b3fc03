"""``preloop demo``: real server and demo agents, watched with the printed commands, stopped by Ctrl+C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx

from client import paths
from tests.cli.helpers import PRELOOP, preloop
from tests.cli.test_tui_launch import _run_in_pty


def test_demo_without_tui_prints_working_instructions(isolated_dirs: Path) -> None:
    proc = subprocess.Popen(
        [PRELOOP, "demo", "--no-tui", "--pace", "50", "--seed", "7"],
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
    assert proc.returncode == 0, err
    assert "Demo stopped." in err and "Traceback" not in err


def test_demo_opens_the_sessions_screen_on_a_terminal(isolated_dirs: Path) -> None:
    code, screen = _run_in_pty(["demo", "--pace", "50", "--seed", "7"], b"builder", b"q")
    assert code == 0
    assert b"Traceback" not in screen
