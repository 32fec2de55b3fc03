"""Fixtures for the Dendrux tests: a real Dendrux 0.4.1 app (tests/dendrux_app) on loopback."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from client.backends.dendrux import DendruxBackend
from tests.dendrux_app.server import DendruxAppServer


@pytest.fixture(autouse=True)
def _model_text_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Dendrux backend of these tests, the CLI's included, waits up to 60 s (not 3) for a model
    step's text to land in ``/traces``. The app writes it after the step's event, and on a loaded machine
    its SQLite writes can wait seconds on a lock; past ``trace_wait`` the step goes out without its text
    and again with it once it lands (test_dendrux_rest_faults.py), which would make the exact sequence of
    events and ``--plain`` lines these tests compare depend on the machine's load. A backend given its
    own ``trace_wait`` keeps it."""
    monkeypatch.setitem(DendruxBackend.__init__.__kwdefaults__, "trace_wait", 60.0)


@pytest.fixture
def dendrux_app(tmp_path: Path) -> Iterator[DendruxAppServer]:
    """A started Dendrux app (token ``dx-test-token``) on a fresh SQLite file; stopped afterwards."""
    server = DendruxAppServer(tmp_path / "dendrux.sqlite3").start()
    try:
        yield server
    finally:
        server.stop()


def wait_for(check: Callable[[], Any], *, timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy (bounded; the suite runs on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def run_status(app: DendruxAppServer, run_id: str) -> str:
    """The run's status as the read router reports it."""
    status: str = app.get(f"/runs/{run_id}")["status"]
    return status


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Run ``preloop ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()
