"""The Dendrux test app stops cleanly while runs are still going.

A run held at a gate and one waiting on an approval are both alive when the app stops. Their tasks are
cancelled at shutdown; unless they are awaited before the store closes and the loop ends, their aiosqlite
worker threads answer a closed loop and print "RuntimeError: Event loop is closed" into the test output.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.dendrux.conftest import run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer


def test_stopping_the_app_with_runs_still_going_leaves_no_thread_failing_on_a_closed_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failed.append(repr(args.exc_value)))
    app = DendruxAppServer(tmp_path / "dx.sqlite3").start()
    try:
        held = app.start_run("hold gate=g1: wait for the warehouse")
        waiting = app.start_run("refund: order A-17 arrived broken; refund it.")
        wait_for(lambda: run_status(app, waiting) == "waiting_approval", what="the refund to wait")
        assert run_status(app, held) == "running"
    finally:
        app.stop()
    for thread in threading.enumerate():  # the database connections' worker threads end with them
        if "_connection_worker_thread" in thread.name:
            thread.join(10)
    assert failed == []
