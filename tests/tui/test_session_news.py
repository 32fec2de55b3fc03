"""What each session holds for the operator, on the sessions list (the NEW column) and in the inbox (the
sessions they follow): new events since they last looked at a session followed here, ✗ when something went
wrong, ✉ when the agent read their note. Pilot tests on the real local server, driven by harness agents."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from client.alerts import AlertSettings
from client.backends.base import Backend
from client.marks import MarkStore
from server.harness_client import HarnessSession
from tests.conftest import WAIT_SECONDS, LiveServer
from tests.tui.test_pilot import until
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from tui.screens.inbox import InboxScreen
from tui.screens.sessions import SessionsScreen
from widgets.timeline_view import TimelineView


@pytest.fixture
async def agents(live_server: LiveServer) -> AsyncIterator[list[HarnessSession]]:
    """The session "alpha" with some history (the operator will follow it), and "beta" (never opened here)."""
    async with live_server.harness() as harness:
        alpha = await harness.start_session(agent_name="alpha", title="Alpha run")
        await alpha.run_started("alpha task")
        for i in range(1, 4):
            await alpha.narrate(i, [f"Alpha step {i}."])
        beta = await harness.start_session(agent_name="beta", title="Beta run")
        await beta.run_started("beta task")
        yield [alpha, beta]


def new_cell(app: PreloopApp, session_id: str) -> str:
    """The NEW column's text for a session's row ("" when the column is not shown)."""
    screen = app.screen
    assert isinstance(screen, SessionsScreen), screen
    layout = screen.columns_layout
    if layout is None or "new" not in layout.keys:
        return ""
    table = screen.query_one("#sessions-table", DataTable)
    return str(table.get_cell(session_id, "new"))


async def refreshed_until(pilot: Any, condition: Callable[[], bool], what: str) -> None:
    """Press ``r`` (the list asks the server again) and let that load finish, until ``condition`` holds:
    the followed session's own stream brings its events at its own pace, and the list reads them when it
    is drawn. A load is never cut short by the next ``r`` (a new load replaces one in flight), however
    slowly the machine runs it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while True:
        await pilot.press("r")
        await until(pilot, lambda: not any(w.group == "sessions-load" for w in pilot.app.workers), "the load")
        if condition():
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await pilot.pause(0.1)


async def test_the_list_and_the_inbox_say_what_is_new_in_a_followed_session(
    client: Backend, agents: list[HarnessSession], tmp_path: Path
) -> None:
    alpha, beta = agents
    app = PreloopApp(
        client,
        refresh_interval=0,
        marks=MarkStore(tmp_path / "marks"),
        attention_poll_interval=0.5,
        alert_settings=AlertSettings(enabled=False),
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list")
        table = app.screen.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 2, "both rows")
        sessions = app.screen
        assert isinstance(sessions, SessionsScreen)
        layout = sessions.columns_layout
        assert layout is not None and "new" not in layout.keys  # nothing to say yet: no NEW column

        table.move_cursor(row=table.get_row_index(alpha.session_id))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "alpha's screen")
        view = app.screen.query_one(TimelineView)
        await until(
            pilot, lambda: any("Alpha step 3." in line for line in view.lines_text), "alpha's history"
        )
        await pilot.press("escape", "escape")  # out of the note box, back to the list; alpha stays followed
        await until(pilot, lambda: app.screen is sessions, "the list again")
        # Just looked at all of it (the mark took what was on screen on leaving): nothing new yet.
        await until(pilot, lambda: new_cell(app, alpha.session_id) == "·", "the NEW column")
        assert new_cell(app, beta.session_id) == "-"  # not followed here, nothing wrong: nothing to say

        # Meanwhile: a failed tool call in alpha, and a note the operator sent that the agent read.
        call = await alpha.tool_started("Bash", {"command": "make"}, iteration=4)
        await alpha.tool_completed(call, "Bash", status="error", result_summary="exit 2")
        await client.send_note("run the tests first", session_id=alpha.session_id)
        await alpha.claim_notes()
        await alpha.narrate(5, ["Running the tests first."])
        await refreshed_until(
            pilot,
            lambda: "✗" in new_cell(app, alpha.session_id) and "✉" in new_cell(app, alpha.session_id),
            "alpha's problem and read note",
        )
        alpha_cell = new_cell(app, alpha.session_id)
        assert alpha_cell.startswith("+"), alpha_cell

        # Beta, never opened here: a note that could not be delivered (the session ended) is a problem.
        await client.send_note("and beta?", session_id=beta.session_id)
        await beta.end()
        await until(pilot, lambda: new_cell(app, beta.session_id) == "✗", "beta's failed note")

        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        followed = app.screen.query_one("#inbox-followed")
        await until(pilot, lambda: "Sessions you follow" in str(followed.render()), "the followed part")
        text = str(followed.render())
        alpha_line = next(line for line in text.splitlines() if "alpha" in line)
        assert "new since you looked" in alpha_line
        assert "✗ something went wrong since you looked" in alpha_line
        assert "✉ the agent read a note" in alpha_line
        assert "beta" not in text  # followed sessions only


async def test_after_a_restart_the_list_shows_new_from_the_marks_on_disk_and_counts_agree(
    client: Backend, agents: list[HarnessSession], tmp_path: Path
) -> None:
    """The trial: restarted, the app showed no NEW column until a session was opened again. The mark on
    disk says the operator looked at alpha; what came since shows at once, and once alpha is followed the
    list shows the count (entries, as the inbox and the timeline's rule count them)."""
    from client.marks import Mark
    from client.timeline import Place

    alpha, beta = agents
    events = await client.history(alpha.session_id)
    seen = events[1]  # the operator had looked as far as the run's start, in an earlier run of the app
    marks = MarkStore(tmp_path / "marks")
    marks.put(alpha.session_id, Mark(Place.of(seen.seq, seen.at, seen.origin), seen.at), durable=True)

    app = PreloopApp(
        client,
        refresh_interval=0,
        marks=MarkStore(tmp_path / "marks"),  # a new process reads what the last one wrote
        attention_poll_interval=0.5,
        alert_settings=AlertSettings(enabled=False),
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list")
        table = app.screen.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 2, "both rows")
        await until(pilot, lambda: new_cell(app, alpha.session_id) == "new", "alpha's NEW from its mark")
        assert new_cell(app, beta.session_id) == "-"  # never looked at here

        # Followed now: the count itself, the one the inbox and the timeline's rule share (entries:
        # tests/client/test_marks.py), in place of "new".
        sessions = app.screen
        table.move_cursor(row=table.get_row_index(alpha.session_id))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "alpha's screen")
        view = app.screen.query_one(TimelineView)
        await until(pilot, lambda: view.reader.rule_from is not None, "the rule above what is new")
        await pilot.press("escape", "escape")
        await until(pilot, lambda: app.screen is sessions, "the list again")
        cell = new_cell(app, alpha.session_id)
        assert cell == "·" or cell.startswith("+"), cell
