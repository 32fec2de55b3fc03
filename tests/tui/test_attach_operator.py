"""The attach screen as an on-call operator uses it (issue 10): withdraw, following, drafts, risky
approvals, narrow terminals, the words shown. Against the real local server over loopback, like
``test_pilot.py`` (whose fixtures and helpers these tests share)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import DataTable, Static

from client.backends.base import Backend
from client.drafts import DraftStore
from client.status import Live, Reconnecting
from server.harness_client import HarnessSession
from tests.conftest import LiveServer, notices, said
from tests.tui import test_pilot
from tests.tui.test_pilot import SIZE, attached, note_states, plain, until
from tui.app import PreloopApp, confirm_risks_from_env
from tui.screens.confirm import ConfirmScreen
from tui.screens.sessions import SessionsScreen
from tui.screens.withdraw_pick import WithdrawPickScreen

agent = test_pilot.agent


async def test_withdraw_targets_the_newest_pending_note(client: Backend, agent: HarnessSession) -> None:
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
        await until(pilot, lambda: "Nothing pending to withdraw." in said(app), "the nothing-pending notice")
        assert app.screen is screen


async def test_withdraw_asks_which_when_several_are_pending(client: Backend, agent: HarnessSession) -> None:
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

        def by_text() -> dict[str, str]:
            return {n.text: n.state for n in screen.notes_panel.notes.values()}

        await until(
            pilot,
            lambda: by_text() == {"first": "cancelled", "second": "pending"},
            lambda: f"only the first note withdrawn (now {by_text()}; said {said(app)})",
        )


async def _tools(agent: HarnessSession, count: int, tag: str) -> None:
    for i in range(count):
        call = await agent.tool_started("Bash", {"command": f"echo {tag} {i}"})
        await agent.tool_completed(call, "Bash", duration_ms=5)


async def test_paused_following_says_how_much_is_new_and_end_resumes(
    client: Backend, agent: HarnessSession
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


DRAFT = ("Stop: the migration must run on staging first. " * 90)[:4195] + " END."  # 4,200 characters


async def test_a_long_draft_survives_leaving_and_reattaching(
    client: Backend, agent: HarnessSession, tmp_path: Path
) -> None:
    """A 4,200-character unsent draft: Esc → list → Enter finds it again, so does q (detach) → Enter with
    a new screen, and it is on disk (0600)."""
    assert len(DRAFT) == 4200
    drafts = DraftStore(tmp_path / "drafts")
    app = PreloopApp(client, refresh_interval=0, drafts=drafts)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        table = app.screen.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 1, "the session row")
        await pilot.press("enter")
        screen = await attached(pilot, app)
        app.post_message(events.Paste(DRAFT))
        await until(pilot, lambda: screen.composer.text == DRAFT, "the pasted draft")
        await pilot.press("escape", "escape")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list")
        await pilot.press("enter")
        again = await attached(pilot, app)  # still followed (quick switch): the same screen, as it was left
        assert again is screen and again.composer.text == DRAFT
        await until(pilot, lambda: again.composer.has_focus, "the note box focused again")
        await pilot.press("escape", "q")  # detached: the screen goes, the draft store keeps the text
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list after q")
        await pilot.press("enter")
        again = await attached(pilot, app)
        assert again is not screen
        assert again.composer.text == DRAFT
        assert (await client.list_notes(session_id=agent.session_id)).notes == []  # nothing was sent
    (saved,) = DraftStore(tmp_path / "drafts").saved(agent.session_id)
    assert saved.text == DRAFT and saved.path.stat().st_mode & 0o777 == 0o600
    # A fresh store (a new process) reads it back; sending the note forgets it.
    assert DraftStore(tmp_path / "drafts").get(agent.session_id) == DRAFT
    app = PreloopApp(client, start_session_id=agent.session_id, drafts=DraftStore(tmp_path / "drafts"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        assert screen.composer.text == DRAFT
        screen.composer.load_text("short now")
        await pilot.press("enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "the sent note")
        gone = DraftStore(tmp_path / "drafts")
        await until(pilot, lambda: gone.saved(agent.session_id) == [], "the draft file removed once sent")


async def test_risky_approvals_ask_first_and_low_risk_stays_one_key(
    client: Backend, agent: HarnessSession
) -> None:
    """`rm -rf dist/` (Bash: risk danger) asks before a approves; n keeps it pending. A caution-level tool
    is approved by the one key. With no levels configured, danger is one key too."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        panel = screen.approvals_panel
        risky = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf dist/"}))
        await until(pilot, lambda: panel.count == 1, "the risky approval")
        await pilot.press("escape", "a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the are-you-sure question")
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        assert "danger-risk Bash" in confirm.question and "rm -rf dist/" in plain(confirm.detail)
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, "back, nothing decided")
        await pilot.pause(0.3)
        assert panel.count == 1 and not risky.done()
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked again")
        await pilot.press("y")
        assert (await asyncio.wait_for(risky, 30)).decision == "allow"
        await until(pilot, lambda: panel.count == 0, "the approved call gone")

        harmless = asyncio.create_task(agent.permission_check("Read", {"path": "README.md"}))
        await until(pilot, lambda: panel.count == 1, "the caution-level approval")
        await pilot.press("a")
        assert (await asyncio.wait_for(harmless, 30)).decision == "allow"
        assert app.screen is screen

    app = PreloopApp(client, start_session_id=agent.session_id, confirm_risks=frozenset())
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        task = asyncio.create_task(agent.permission_check("Bash", {"command": "git push"}))
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await pilot.press("escape", "a")
        assert (await asyncio.wait_for(task, 30)).decision == "allow"


def test_confirm_risk_levels_come_from_the_environment(monkeypatch: Any) -> None:
    monkeypatch.delenv("PRELOOP_CONFIRM_RISK", raising=False)
    assert confirm_risks_from_env() == {"high", "danger", "critical"}
    monkeypatch.setenv("PRELOOP_CONFIRM_RISK", "Caution, danger")
    assert confirm_risks_from_env() == {"caution", "danger"}
    monkeypatch.setenv("PRELOOP_CONFIRM_RISK", "none")
    assert confirm_risks_from_env() == frozenset()


async def test_header_says_waiting_for_approval_and_toasts_leave_the_box_alone(
    client: Backend, agent: HarnessSession
) -> None:
    """A session blocked on an approval reads "⚑ waiting for approval", not idle; a notice (toast) never
    covers the note box, the keys or the newest timeline lines."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await attached(pilot, app)
        header = screen.header
        assert "agent ● live" in str(header.render())
        task = asyncio.create_task(agent.permission_check("Read", {"path": "README.md"}))
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await until(pilot, lambda: "waiting for approval" in str(header.render()), "the waiting state")
        assert "idle" not in str(header.render())
        await pilot.press(*"look at the README", "enter")
        await until(pilot, lambda: bool(screen.query("Toast")), "the note-queued notice")
        await pilot.pause()
        toast = screen.query_one("Toast")
        bottom_of_view = screen.view.region.bottom - 3  # the newest three lines
        assert toast.region.bottom <= bottom_of_view, (toast.region, screen.view.region)
        assert not toast.region.overlaps(screen.composer.region)
        await pilot.press("escape", "a")
        await asyncio.wait_for(task, 30)


async def test_narrow_terminals_stack_the_panels_and_too_small_says_so(
    client: Backend, agent: HarnessSession
) -> None:
    """At 60×20 approvals sit under the timeline at full width with whole button labels, the notes list is
    one count line until p; at 40×12 one notice replaces the crushed layout and q still detaches."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=(60, 20)) as pilot:
        screen = await attached(pilot, app)
        task = asyncio.create_task(agent.permission_check("Read", {"path": "README.md"}))
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await pilot.pause()
        view, panel = screen.view.region, screen.approvals_panel.region
        assert panel.width >= 58 and panel.y >= view.bottom, (view, panel)  # under it, full width
        assert view.width >= 58
        for button in screen.approvals_panel.query("Button"):
            assert str(button.label) in ("Approve", "Decline", "Show all")
            assert button.region.width >= len(str(button.label)), button.region
        hint = screen.query_one("#notes-hint", Static)
        assert not screen.notes_panel.display or screen.notes_panel.region.height == 0
        await pilot.press(*"check the README", "enter")
        await until(pilot, lambda: "Notes (1) · 1 waiting" in str(hint.render()), "the notes count line")
        await pilot.press("escape", "p")
        await until(pilot, lambda: screen.notes_panel.region.height > 3, "the notes list shown")
        assert screen.view.region.height == 0 or not screen.query_one("#main").display
        assert app.focused is screen.notes_panel  # w acts on its highlighted note; letters stay keys
        await pilot.press("w")  # the pending note: asked first
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the withdraw question")
        await pilot.press("n")  # keep it
        await until(pilot, lambda: app.screen is screen, "back on the session")
        assert app.focused is screen.notes_panel  # not the note box: the next letter is still a key
        await pilot.press("p")
        await until(pilot, lambda: screen.view.region.height > 3, "the timeline back")
        assert app.focused is screen.view

        await pilot.resize_terminal(40, 12)
        notice = screen.query_one("#too-small", Static)
        await until(pilot, lambda: bool(notice.region.height), "the too-small notice")
        assert "Terminal too small (40×12)" in str(notice.render())
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: not notice.region.height, "the layout back when large enough")
        side = screen.query_one("#side")
        assert side.region.x > screen.view.region.x  # side by side again
        await pilot.resize_terminal(40, 12)
        await until(pilot, lambda: bool(notice.region.height), "the notice again")
        await pilot.press("q")
        await until(pilot, lambda: app.return_value is not None or not app.is_running, "q detaches")
    task.cancel()


async def test_a_not_sent_line_goes_once_it_is_no_longer_true(
    client: Backend, agent: HarnessSession, live_server: LiveServer
) -> None:
    """Issue 18: "✗ Not sent, your text is kept" stayed after the reconnect and after the session ended.
    Sent while the server is down, the line says why; once the stream is live again that is no longer
    why (the text is still in the box: Enter sends it). A note refused for itself (a NUL in it) keeps its
    line until the session ends, when the box itself says that nothing can be sent any more."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        line = screen.query_one("#send-error", Static)
        await asyncio.to_thread(live_server.stop)
        await until(pilot, lambda: isinstance(screen.status, Reconnecting), "the stream lost", seconds=15)
        await pilot.press(*"after the restart", "enter")
        await until(pilot, lambda: "Not sent" in str(line.render()), "the failure above the box")
        await asyncio.to_thread(live_server.start)
        await until(pilot, lambda: isinstance(screen.status, Live), "live again", seconds=30)
        await until(pilot, lambda: not line.has_class("-shown"), "the line gone with its reason")
        assert screen.composer.text == "after the restart"

        screen.composer.load_text("a\x00b")
        await pilot.press("enter")
        await until(pilot, lambda: "NUL" in str(line.render()), "the note's own refusal")
        await agent.end("finished its shift")
        await until(pilot, lambda: screen.ended, "the end")
        await until(pilot, lambda: not line.has_class("-shown"), "the line gone at the end")
        assert "Session ended" in str(screen.composer.border_title)


async def test_notices_are_not_stacked_twice_and_leave_the_panels_alone(
    client: Backend, agent: HarnessSession
) -> None:
    """Issue 18: pressing e several times stacked one notice per press down over the screen. The same
    notice is shown once while it is on screen (and ``e`` again rewrites the same file); notices never
    cover the approvals or notes panel, wide (side column) or narrow (under the timeline)."""
    task = asyncio.create_task(agent.permission_check("Read", {"path": "README.md"}))
    for size in ((100, 30), (80, 24)):
        app = PreloopApp(client, start_session_id=agent.session_id)
        async with app.run_test(size=size, notifications=True) as pilot:
            screen = await attached(pilot, app)
            await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")  # noqa: B023
            await pilot.press("escape", *"eeeee")
            await until(pilot, lambda: bool(screen.query("Toast")), "the export notice")  # noqa: B023
            await pilot.pause(0.5)
            exported = [n for n in notices(app) if n.title == "Session exported"]
            assert len(exported) == 1 and len(screen.query("Toast")) == 1, exported
            for n in range(6):  # different notices, as many as fit and more
                screen.notify(f"notice {n}: " + "words " * 12, markup=False)
            await until(
                pilot,
                lambda: sum(t.region.width > 0 for t in screen.query("Toast")) == 7,  # noqa: B023
                "the seven notices placed",
            )
            for panel in (screen.approvals_panel, screen.notes_panel):  # what is painted on each cell
                region = panel.region
                over = {
                    type(screen.get_widget_at(x, y)[0]).__name__
                    for y in range(region.y, region.bottom)
                    for x in range(region.x, region.right)
                }
                assert not over & {"Toast", "ToastHolder"}, (size, region, over)
            assert any(t.region.x <= 2 for t in screen.query("Toast"))  # top-left, over the oldest lines
    await client.decline((await client.list_approvals(session_id=agent.session_id)).items[0].id)
    await task
