"""Quick switch between followed sessions: ``b`` jumps back, ``s`` lists them; each session keeps its
scroll position, folded commentary and note draft. Pilot tests on the real local server, plus the pure
ordering."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from textual.widgets import DataTable, OptionList
from textual.worker import WorkerState

from client.backends.base import Backend
from server.harness_client import HarnessSession
from tests.conftest import LiveServer
from tests.tui.test_pilot import SIZE, footer_actions, until
from tui.app import PreloopApp
from tui.following import Following
from tui.screens.attach import AttachScreen
from tui.screens.sessions import SessionsScreen
from tui.screens.switch import SwitchScreen
from widgets.timeline_view import TimelineView


def test_following_orders_by_last_shown_and_lets_the_oldest_go() -> None:
    following = Following(limit=3)
    assert following.previous(None) is None
    assert following.touch("a") == [] and following.touch("b") == []
    assert following.previous("b") == "a" and following.previous("a") == "b"
    assert following.touch("a") == [] and following.recent == ["a", "b"]
    assert following.touch("c") == [] and following.touch("d") == ["b"]  # b was shown longest ago
    assert following.recent == ["d", "c", "a"] and "b" not in following
    following.forget("c")
    assert following.recent == ["d", "a"] and following.previous("d") == "a"
    with pytest.raises(ValueError):
        Following(limit=0)


@pytest.fixture
async def agents(live_server: LiveServer) -> AsyncIterator[list[HarnessSession]]:
    """Two sessions: "alpha" with a long history (something to scroll and fold), then "beta"."""
    async with live_server.harness() as harness:
        alpha = await harness.start_session(agent_name="alpha", title="Alpha run")
        await alpha.run_started("alpha task")
        for i in range(1, 30):
            await alpha.narrate(i, [f"Alpha step {i}: reading\nthe next file."])
        beta = await harness.start_session(agent_name="beta", title="Beta run")
        await beta.run_started("beta task")
        await beta.narrate(1, ["Beta looks around."])
        yield [alpha, beta]


def current(app: PreloopApp) -> AttachScreen:
    screen = app.screen
    assert isinstance(screen, AttachScreen), screen
    return screen


async def shown(pilot: object, app: PreloopApp, words: str) -> AttachScreen:
    await until(pilot, lambda: isinstance(app.screen, AttachScreen), "an attach screen")
    screen = current(app)
    view = screen.query_one(TimelineView)
    await until(pilot, lambda: any(words in line for line in view.lines_text), words)
    return screen


async def test_switching_keeps_each_sessions_scroll_folds_and_draft(
    client: Backend, agents: list[HarnessSession]
) -> None:
    alpha_id, beta_id = agents[0].session_id, agents[1].session_id
    app = PreloopApp(client, refresh_interval=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list")
        table = app.screen.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 2, "both rows")
        table.move_cursor(row=table.get_row_index(alpha_id))
        await pilot.press("enter")
        alpha = await shown(pilot, app, "Alpha step 29")
        assert alpha.session_id == alpha_id
        await pilot.press(*"for alpha", "escape", "c", "home")  # a draft, folded narration, scrolled up
        view = alpha.query_one(TimelineView)
        await until(pilot, lambda: view.collapse_commentary and not view.at_bottom, "fold and scroll")
        await pilot.press("up")  # somewhere in the middle after a fold, nothing special
        scroll = view.scroll_y
        assert "app.switch_session" not in footer_actions(app)  # only one session followed so far

        await pilot.press("escape")  # back to the list; alpha stays followed
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list again")
        table.move_cursor(row=table.get_row_index(beta_id))
        await pilot.press("enter")
        beta = await shown(pilot, app, "Beta looks around.")
        await pilot.press(*"for beta", "escape")
        await until(pilot, lambda: "app.switch_session" in footer_actions(app), "s offered with two followed")

        await pilot.press("b")  # back to alpha, exactly as it was left
        await until(pilot, lambda: app.screen is alpha, "alpha again")
        assert view.collapse_commentary and view.scroll_y == scroll
        assert alpha.composer.text == "for alpha"
        # Typing goes into the note box again, never into key actions (a approves!): Escape first.
        await until(pilot, lambda: alpha.composer.has_focus, "alpha's note box focused")
        await pilot.press("!")
        assert alpha.composer.text == "for alpha!"
        await pilot.press("escape")
        # It kept following while in the background: new work is there.
        await agents[0].narrate(40, ["Alpha carried on meanwhile."])
        await agents[1].narrate(2, ["Beta carried on too."])
        beta_view = beta.query_one(TimelineView)
        await until(pilot, lambda: any("Beta carried on" in line for line in beta_view.lines_text), "beta bg")
        await until(pilot, lambda: any("Alpha carried on" in line for line in view.lines_text), "alpha on")
        assert view.scroll_y == scroll  # new output did not move the reader

        await pilot.press("s")  # the list of followed sessions, beta (the previous one) highlighted
        await until(pilot, lambda: isinstance(app.screen, SwitchScreen), "the switch list")
        options = app.screen.query_one(OptionList)
        assert options.option_count == 2 and options.highlighted == 1
        assert "alpha" in str(options.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is beta, "beta from the list")
        assert beta.composer.text == "for beta" and not beta.query_one(TimelineView).collapse_commentary
        await pilot.press("escape", "b")
        await until(pilot, lambda: app.screen is alpha, "alpha with b again")

        await pilot.press("escape", "q")  # detach alpha: it stops following; b now has only beta to go to
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the list after q")
        stream = [w for w in app.workers if w.node is alpha and w.group == "attach-stream"]
        assert all(w.state != WorkerState.RUNNING for w in stream)
        assert app.following.recent == [beta_id]
