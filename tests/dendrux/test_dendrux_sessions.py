"""Listing a Dendrux app's runs by time, against the real app: Dendrux 0.4.1 answers 500 to its own
``started_after`` / ``started_before`` filters, so "started since" and "active within N minutes" are the
client's to apply. A run is made older by moving its times back in the app's SQLite file."""

from __future__ import annotations

import io
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from cli.main import main
from client.backends.attention import failed_notes
from client.backends.base import SessionFilter
from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from tests.dendrux.conftest import run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer


def _age(app: DendruxAppServer, run_id: str, by: timedelta) -> None:
    """Move a run's start and last activity ``by`` into the past, as if it had run then."""
    with sqlite3.connect(app.db_path) as db:
        (created, updated) = db.execute(
            "select created_at, updated_at from agent_runs where id = ?", (run_id,)
        ).fetchone()
        older = [(datetime.fromisoformat(t) - by).isoformat(sep=" ") for t in (created, updated)]
        db.execute("update agent_runs set created_at = ?, updated_at = ? where id = ?", (*older, run_id))


def _finished_run(app: DendruxAppServer, text: str) -> str:
    run_id = app.start_run(text)
    wait_for(lambda: run_status(app, run_id) == "success", what="the run")
    return run_id


@pytest.fixture
def old_and_new(dendrux_app: DendruxAppServer) -> tuple[str, str]:
    """Two finished runs: one started and last active three hours ago, one just now."""
    old = _finished_run(dendrux_app, "answer: yesterday's question")
    new = _finished_run(dendrux_app, "answer: today's question")
    _age(dendrux_app, old, timedelta(hours=3))
    return old, new


def test_dendrux_itself_refuses_its_time_filters(dendrux_app: DendruxAppServer) -> None:
    """Why the client filters: any ``started_after`` gets a 500 from Dendrux 0.4.1's read router."""
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    headers = {"Authorization": f"Bearer {dendrux_app.token}"}
    answer = httpx.get(f"{dendrux_app.url}/runs", params={"started_after": since}, headers=headers)
    assert answer.status_code == 500


async def test_runs_are_listed_by_start_and_by_last_activity(
    dendrux_app: DendruxAppServer, old_and_new: tuple[str, str]
) -> None:
    old, new = old_and_new
    now = datetime.now(UTC)
    async with DendruxBackend(Connection(dendrux_app.url, dendrux_app.token)) as backend:

        async def ids(**f: object) -> list[str]:
            page = await backend.list_sessions(SessionFilter(**f))  # type: ignore[arg-type]
            return [s.id for s in page.items]

        assert await ids() == [new, old]
        assert await ids(active_within_minutes=60) == [new]
        assert await ids(active_within_minutes=240) == [new, old]
        assert await ids(start_date=now - timedelta(hours=2)) == [new]
        assert await ids(start_date=now - timedelta(hours=4)) == [new, old]
        assert await ids(start_date=now + timedelta(hours=1)) == []
        assert await ids(status="ended", active_within_minutes=60) == [new]
        assert await ids(status="active", active_within_minutes=240) == []
        paged = backend.iter_sessions(SessionFilter(start_date=now - timedelta(hours=4)), page_size=1)
        assert [s.id async for s in paged] == [new, old]
        first = await backend.list_sessions(SessionFilter(active_within_minutes=240), limit=1)
        assert (first.has_more, [s.id for s in first.items]) == (True, [new])
        assert first.items[0].title == "answer: today's question"
        # the inbox's look for notes that failed lately asks for the runs active in its window
        assert await failed_notes(backend, now - timedelta(hours=6)) == []


def test_sessions_list_active_shows_the_running_run(
    dendrux_app: DendruxAppServer, isolated_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sessions list --active` (active status, active lately) exited with Dendrux's 500."""
    done = _finished_run(dendrux_app, "answer: hello")
    running = dendrux_app.start_run("hold gate=a1: wait for the warehouse")
    wait_for(lambda: run_status(dendrux_app, running) == "running", what="the run to start")
    for name in ("PRELOOP_URL", "PRELOOP_TOKEN", "PRELOOP_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    out, err = io.StringIO(), io.StringIO()
    flags = ["--url", dendrux_app.url, "--token", str(dendrux_app.token), "--server-kind", "dendrux"]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["sessions", "list", "--active", "-o", "id", *flags])
    finally:
        dendrux_app.open_gate("a1")
    assert code == 0, err.getvalue()
    assert out.getvalue().split() == [running] and done != running
