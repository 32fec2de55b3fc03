"""``preloop serve``: the real console script serves over loopback and stops cleanly on Ctrl+C."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cli.main import main
from server.store import SCHEMA_VERSION
from tests.cli.helpers import PRELOOP, preloop


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
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err  # Ctrl+C: the shell's convention, as every other command
    assert "Stopped." in out and "Traceback" not in err
    with sqlite3.connect(db) as conn:  # shut down cleanly: the operator's token is kept for the next start
        assert conn.execute("SELECT count(*) FROM tokens").fetchone()[0] >= 1


def test_serve_refuses_a_directory_as_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_no_command_off_a_terminal_points_at_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "needs a terminal" in err and "preloop sessions list" in err


def _schema_too_new(path: Path) -> Path:
    """A database written by a newer version of this program (schema version 99)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (99)")
    return path


def test_serve_on_a_database_from_a_newer_version_says_so_in_one_line(isolated_dirs: Path) -> None:
    db = _schema_too_new(isolated_dirs / "newer.sqlite3")
    done = preloop("serve", "--port", "0", "--db", str(db), timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"preloop: the local server did not start: {db} has schema version 99; "
        f"this program knows up to {SCHEMA_VERSION}: upgrade preloop, or pass --db with another file"
    ]
    assert done.stdout == ""


def test_serve_on_a_file_that_is_not_a_database(isolated_dirs: Path) -> None:
    db = isolated_dirs / "notes.txt"
    db.write_text("shopping list: eggs, milk, and a great deal of padding to fill a page " * 20)
    done = preloop("serve", "--port", "0", "--db", str(db), timeout=30)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"preloop: the local server did not start: {db} is not a usable SQLite")
    assert db.read_text().startswith("shopping list")  # nothing written over it


def test_serve_on_a_port_in_use_names_the_fix(isolated_dirs: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = preloop("serve", "--port", str(port), "--db", str(isolated_dirs / "db.sqlite3"), timeout=30)
    assert done.returncode == 1
    assert done.stderr == (
        f"preloop: cannot serve on 127.0.0.1:{port}: Address already in use; pick another --port "
        "(0 = any free port)\n"
    )


def test_demo_on_a_database_from_a_newer_version_says_so(isolated_dirs: Path) -> None:
    db = _schema_too_new(isolated_dirs / "newer.sqlite3")
    done = preloop("demo", "--no-tui", "--db", str(db), "--port", "0", timeout=30)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "the demo server did not start" in done.stderr and "schema version 99" in done.stderr


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_without_the_server_extra_serve_and_demo_name_what_to_install(
    command: str, isolated_dirs: Path
) -> None:
    """A base install (no FastAPI, uvicorn or aiosqlite) is a terminal client: ``preloop serve`` and
    ``preloop demo`` exit 2 naming the extra instead of failing on an import."""
    import sys

    code = (
        "import sys\n"
        "for name in ('fastapi', 'uvicorn', 'aiosqlite'):\n"
        "    sys.modules[name] = None  # as if not installed\n"
        "from cli.main import main\n"
        f"sys.exit(main([{command!r}, '--port', '0']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'preloop-steer[server]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_add_operator_prints_a_token_once_that_decides_under_their_name(live_server, tmp_path: Path) -> None:
    """``preloop serve --add-operator dana --db FILE`` on the file a server is serving: dana's token works
    at once and says who she is; her name cannot be taken twice."""
    added = preloop("serve", "--add-operator", "dana", "--db", str(live_server.db_path))
    assert added.returncode == 0, added.stderr
    token = next(line.strip() for line in added.stdout.splitlines() if line.strip().startswith("plo_"))
    assert "dana" in added.stdout and "preloop login" in added.stdout
    import httpx

    me = httpx.get(f"{live_server.url}/api/v1/auth/users/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["full_name"] == "dana"
    again = preloop("serve", "--add-operator", "dana", "--db", str(live_server.db_path))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert "plo_" not in again.stdout + again.stderr


def test_demo_add_operator_names_the_port_the_running_demo_took(tmp_path: Path) -> None:
    """``preloop demo --add-operator`` while a demo runs on a port other than its usual one (8766 was
    taken): the sign-in line names the URL that demo wrote to the local-server file, not 8766."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "local-server.json").write_text(
        '{"url": "http://127.0.0.1:39233", "token": "t", "started_by": "demo"}', encoding="utf-8"
    )
    env = {"PRELOOP_STATE_DIR": str(state)}
    added = preloop("demo", "--add-operator", "dana", "--db", str(tmp_path / "demo.sqlite3"), env=env)
    assert added.returncode == 0, added.stderr
    assert "preloop login --url http://127.0.0.1:39233 --with-token" in added.stdout
    other = preloop(
        "demo", "--add-operator", "erin", "--db", str(tmp_path / "demo.sqlite3"), "--port", "9001"
    )
    assert "preloop login --url http://127.0.0.1:9001 --with-token" in other.stdout, other.stderr
