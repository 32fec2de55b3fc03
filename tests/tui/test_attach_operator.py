"""The attach screen as an on-call operator uses it (issue 10): withdraw, following, drafts, risky
approvals, narrow terminals, the words shown. Against the real local server over loopback, like
``test_pilot.py`` (whose fixtures and helpers these tests share)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from client.api import Client
from server.harness_client import HarnessSession
from tests.tui import test_pilot
from tests.tui.test_pilot import SIZE, attached, note_states, until
from tui.app import PreloopApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.withdraw_pick import WithdrawPickScreen

client = test_pilot.client
agent = test_pilot.agent


def _messages(app: PreloopApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_withdraw_targets_the_newest_pending_note(client: Client, agent: HarnessSession) -> None:
    """Note A withdrawn, then note B sent: w offers and withdraws B (the old selection was A, cancelled)."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await attached(pilot, app)
        await pilot.press(*"note A", "enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "note A pending")
        await pilot.press("escape", "w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation for A")
        await pilot.press("y")
        await until(pilot, lambda: note_states(screen) == ["cancelled"], "note A withdrawn")
        await pilot.press("n", *"note B", "enter")
        await until(pilot, lambda: sorted(note_states(screen)) == ["cancelled", "pending"], "note B pending")
        assert screen.notes_panel.highlighted_note is not None
        assert screen.notes_panel.highlighted_note.text == "note B"  # the newest note is under the cursor
        await pilot.press("escape", "w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation for B")
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen) and confirm.detail == "note B"
        await pilot.press("y")
        await until(pilot, lambda: note_states(screen) == ["cancelled", "cancelled"], "note B withdrawn")
        await pilot.pause()
        await pilot.press("w")  # nothing pending any more: w says so instead of doing nothing
        await until(
            pilot, lambda: "Nothing pending to withdraw." in _messages(app), "the nothing-pending notice"
        )
        assert app.screen is screen


async def test_withdraw_asks_which_when_several_are_pending(client: Client, agent: HarnessSession) -> None:
    """Two pending notes: w lists both (newest highlighted); Enter withdraws the highlighted one only."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await pilot.press(*"first", "enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "the first note")
        await pilot.press(*"second", "enter")
        await until(pilot, lambda: note_states(screen) == ["pending", "pending"], "the second note")
        await pilot.press("escape", "w")
        await until(pilot, lambda: isinstance(app.screen, WithdrawPickScreen), "the picker")
        picker: Any = app.screen
        assert [n.text for n in picker.notes] == ["second", "first"]
        await pilot.press("down", "enter")  # the older one
        await until(pilot, lambda: isinstance(app.screen, type(screen)), "back on the attach screen")
        by_text = {n.text: n.state for n in screen.notes_panel.notes.values()}
        await until(
            pilot,
            lambda: (
                {n.text: n.state for n in screen.notes_panel.notes.values()}
                == {"first": "cancelled", "second": "pending"}
            ),
            f"only the first note withdrawn (was {by_text})",
        )


async def _tools(agent: HarnessSession, count: int, tag: str) -> None:
    for i in range(count):
        call = await agent.tool_started("Bash", {"command": f"echo {tag} {i}"})
        await agent.tool_completed(call, "Bash", duration_ms=5)


async def test_paused_following_says_how_much_is_new_and_end_resumes(
    client: Client, agent: HarnessSession
) -> None:
    """PageUp pauses following: a "↓ N new · End to follow" line counts what arrives below; End resumes."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        hint = screen.query_one("#follow-hint", Static)
        view = screen.view
        await _tools(agent, 40, "first")
        await until(pilot, lambda: any("first 39" in line for line in view.lines_text), "the first batch")
        assert not hint.display  # following: no hint
        await pilot.press("escape", "pageup")
        await until(pilot, lambda: bool(hint.display), "the paused hint")
        assert "following paused · End to follow" in str(hint.render())
        await _tools(agent, 3, "later")
        await until(
            pilot, lambda: "↓ 3 new · End to follow" in str(hint.render()), "the count of new entries"
        )
        assert not view.at_bottom  # the reader is not yanked down
        await pilot.press("end")
        await until(pilot, lambda: not hint.display, "the hint gone once following again")
        assert view.at_bottom
