"""``serve()`` (what ``preloop serve`` runs, waiting in the command's event loop): prints the URL and a
masked token, answers, stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def test_serve_prints_url_and_masked_token_and_stops_cleanly(isolated_dirs: Path) -> None:
    db = isolated_dirs / "serve.sqlite3"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, pathlib\n"
            "from cli.commands.serve import until_stopped\n"
            "from server.main import serve\n"
            f"asyncio.run(serve('127.0.0.1', 0, pathlib.Path({str(db)!r}), until_stopped))",
        ],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(5)]
        url = lines[0].strip().rsplit(" ", 1)[-1]
        state = json.loads((isolated_dirs / "state" / "local-server.json").read_text())
        assert state["url"] == url
        printed = "".join(lines)
        assert state["token"] not in printed  # never in full
        assert state["token"][:8] + "…" in printed
        health = httpx.get(f"{url}/api/v1/health", timeout=5)
        assert health.json()["server_kind"] == "local"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0
        assert "Stopped." in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert db.exists()
