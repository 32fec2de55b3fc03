"""``preloop serve``: the real console script serves over loopback and stops cleanly on Ctrl+C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import PRELOOP, preloop
from tui.cli import main


def test_serve_then_use_it_then_ctrl_c(isolated_dirs: Path) -> None:
    db = isolated_dirs / "served.sqlite3"
    proc = subprocess.Popen(
        [PRELOOP, "serve", "--port", "0", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert match, first
        # the server wrote the local-server file: a plain command finds it with no flags
        listed = preloop("sessions", "list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout == "No sessions match.\n"
        status = preloop("auth", "status")
        assert match.group(0) in status.stdout and "ok, local server" in status.stdout
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Stopped." in out and "Traceback" not in err
    assert db.exists()


def test_serve_refuses_a_directory_as_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_no_command_off_a_terminal_points_at_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "needs a terminal" in err and "preloop sessions list" in err
