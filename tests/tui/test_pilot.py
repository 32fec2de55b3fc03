"""Pilot tests: the app against the real local control plane over loopback, driven by a harness agent.

Each test starts a session with ``server.harness_client`` (what a coding agent's hooks do), runs the app
with ``run_test`` on a real backend (``client.backends.connect``), presses keys like a user and checks
both what the screen shows and what the server recorded.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rich.console import Console
from textual import events
from textual.command import Command, CommandList, CommandPalette
from textual.widgets import Button, DataTable, Static
from textual.worker import WorkerState

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.models import NoteState
from client.status import Live, Reconnecting
from server.harness_client import HarnessSession
from tests.conftest import LiveServer, notices, said, until
from tui.app import PreloopApp
from tui.screens.arguments import ArgumentsScreen
from tui.screens.attach import AttachScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.help import HelpScreen
from tui.screens.sessions import SessionsScreen
from widgets.approvals_panel import ApprovalsPanel
from widgets.banner import Banner
from widgets.composer import Composer
from widgets.notes_panel import NotesPanel
from widgets.timeline_view import TimelineView

SIZE = (100, 30)


@pytest.fixture
async def agent(live_server: LiveServer) -> AsyncIterator[HarnessSession]:
    async with live_server.harness() as harness:
        session = await harness.start_session(agent_name="builder", cwd="/work/repo", title="Fix the build")
        await session.run_started("Fix the failing test")
        await session.narrate(1, ["Looking at the test first."])
        yield session


async def click_until(pilot: Any, selector: str, done: Callable[[], bool], what: str) -> None:
    """Click the button ``selector`` (see :func:`click`), then wait until ``done`` holds."""
    await click(pilot, selector)
    await until(pilot, done, what)


async def click(pilot: Any, selector: str) -> None:
    """Click a button once it is laid out where the user sees it and stays there (a panel that just
    appeared may not be placed yet on a loaded machine, and the header or the panel above it can still
    change height in the next frame: a click at its old place hits something else).

    A click that did not press the button (a notification or tooltip shown over it for a moment, a click
    lost by the test harness: both seen in CI's full runs) is tried again, as a user would; one that
    pressed it never is, however late its effect shows (a second press could undo it)."""
    regions: list[Any] = []

    def settled() -> bool:
        found = pilot.app.screen.query(selector)
        region = found.first().region if found else None
        regions.append(region)
        return region is not None and region.width > 0 and regions[-3:] == [region] * 3

    await until(pilot, settled, f"{selector} on screen, in the same place for three looks")
    await pilot.pause()
    button = pilot.app.screen.query_one(selector, Button)
    pressed: list[Button] = []
    press = button.press

    def counted_press() -> Button:
        if not button.disabled and button.display:
            pressed.append(button)
        return press()

    button.press = counted_press  # type: ignore[method-assign]
    try:
        for _ in range(30):
            await pilot.click(selector)  # returns once the screen has handled the click
            if pressed:
                return
            await pilot.pause(0.1)
    finally:
        del button.press
    raise AssertionError(f"{selector} was never pressed: every click reached something else")


def attach_screen(app: PreloopApp) -> AttachScreen:
    screen = app.screen
    assert isinstance(screen, AttachScreen), screen
    return screen


async def attached(pilot: Any, app: PreloopApp) -> AttachScreen:
    await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
    screen = attach_screen(app)
    await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
    view = screen.query_one(TimelineView)
    await until(pilot, lambda: any("Looking at the test" in line for line in view.lines_text), "narration")
    return screen


def plain(renderable: object, width: int = 100) -> str:
    """What a renderable shows, as plain text (dialog details are Rich tables and texts)."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def footer_actions(app: PreloopApp) -> list[str]:
    """What the footer offers right now (the keys a user can see)."""
    return [str(getattr(key, "action", "")) for key in app.screen.query("FooterKey")]


def note_states(screen: AttachScreen) -> list[str]:
    return [n.state for n in screen.query_one(NotesPanel).notes.values()]


async def test_sessions_list_then_attach_and_back(client: Backend, agent: HarnessSession) -> None:
    """The list shows the running session; Enter attaches, Escape returns (still following), q detaches
    (stops following), q quits."""
    app = PreloopApp(client, refresh_interval=0.5)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        sessions = app.screen
        assert isinstance(sessions, SessionsScreen)
        table = sessions.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 1, "one row")
        await pilot.press("enter")
        screen = await attached(pilot, app)
        assert screen.session_id == agent.session_id
        stream = [w for w in app.workers if w.node is screen and w.group == "attach-stream"]
        assert len(stream) == 1 and stream[0].state == WorkerState.RUNNING
        await pilot.press("escape", "escape")  # out of the note box, then back to the list
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list")
        # Escape keeps following it (quick switch comes back to it as it was); q stops.
        assert stream[0].state == WorkerState.RUNNING
        await pilot.press("enter")
        assert await attached(pilot, app) is screen
        await pilot.press("escape", "q")  # detach back to the list (opened from it), with a notice
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list after q")
        await until(pilot, lambda: stream[0].state == WorkerState.CANCELLED, "the stream worker to stop")
        await pilot.press("q")
    assert app.return_code == 0


async def test_escape_from_an_attach_opened_by_id_highlights_that_session_on_the_list(
    live_server: LiveServer, client: Backend, agent: HarnessSession
) -> None:
    """``preloop sessions attach ID`` then Escape: the list opens with that session highlighted, not the
    newest one (the trial lost its place among the sessions)."""
    async with live_server.harness() as harness:
        for name in ("reviewer", "migrator"):  # newer: listed above the one attached
            await harness.start_session(agent_name=name, title=f"{name} work")
    app = PreloopApp(client, start_session_id=agent.session_id, refresh_interval=0)
    async with app.run_test(size=SIZE) as pilot:
        await attached(pilot, app)
        await pilot.press("escape", "escape")  # out of the note box, then back to the list
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        table = app.screen.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 3, "the three sessions")

        def highlighted() -> str | None:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate)[0].value)

        await until(pilot, lambda: highlighted() == agent.session_id, "the attached session highlighted")
        assert table.cursor_row == 2  # the oldest of three: newest first


async def test_sessions_server_down_banner_and_retry(live_server: LiveServer) -> None:
    """With the server stopped the list shows the reason and a retry key; after a restart, r loads it."""
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as client:
        live_server.stop()
        app = PreloopApp(client, refresh_interval=0)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
            banner = app.screen.query_one(Banner)
            await until(pilot, lambda: banner.level == "error", "the error banner")
            assert "unreachable" in banner.message or "connect" in banner.message
            live_server.start()
            await pilot.press("r")
            await until(pilot, lambda: banner.level is None, "the banner to clear after retry")


async def test_server_going_down_keeps_the_rows_and_lets_them_age(
    live_server: LiveServer, agent: HarnessSession
) -> None:
    """The server dies after a good refresh: the rows stay under a banner that says they are the last
    known ones, and a session not heard of for minutes no longer reads "live" (times keep ageing)."""
    now = [datetime.now(UTC)]
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as client:
        app = PreloopApp(client, refresh_interval=0, clock=lambda: now[0])
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
            table = app.screen.query_one("#sessions-table", DataTable)
            await until(pilot, lambda: table.row_count == 1, "the row")
            assert "live" in str(table.get_cell(agent.session_id, "state"))
            live_server.stop()
            now[0] += timedelta(minutes=5)
            await pilot.press("r")
            banner = app.screen.query_one(Banner)
            await until(pilot, lambda: banner.level == "error", "the error banner")
            assert table.row_count == 1
            assert "from the last refresh" in str(banner.render())
            assert "idle" in str(table.get_cell(agent.session_id, "state"))
            live_server.start()


async def test_note_sent_with_enter_goes_pending_then_delivered(
    client: Backend, agent: HarnessSession, live_server: LiveServer
) -> None:
    """Enter sends; the note shows pending, then delivered once the agent's next call picks it up."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await pilot.press(*"use the staging db", "enter")  # the composer has the focus on attach
        await until(pilot, lambda: note_states(screen) == ["pending"], "the note to show as pending")
        composer = screen.query_one(Composer)
        assert composer.text == ""
        await pilot.press("escape")  # out of the note box: the footer lists the letter keys
        await until(pilot, lambda: "withdraw" in footer_actions(app), "withdraw offered for the pending note")
        claimed = await agent.claim_notes(channel="tool_result", event="post_tool_use")
        assert len(claimed.notes) == 1 and "use the staging db" in claimed.notes[0].text
        await until(pilot, lambda: note_states(screen) == ["delivered"], "the note to show as delivered")
        note = next(iter(screen.query_one(NotesPanel).notes.values()))
        assert note.delivery_channel == "tool_result"
        await until(pilot, lambda: "withdraw" not in footer_actions(app), "withdraw gone once delivered")


async def test_shift_enter_and_ctrl_j_insert_newlines_and_paste_never_sends(
    client: Backend, agent: HarnessSession
) -> None:
    """Shift+Enter (both encodings) and Ctrl+J insert line breaks; a multi-line paste inserts; Enter sends."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        composer = screen.query_one(Composer)
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        composer.post_message(events.Key("shift+\r", None))
        await pilot.pause()
        app.post_message(events.Paste("d\ne"))  # as a terminal's bracketed paste arrives
        await pilot.pause()
        assert composer.text == "a\nb\nc\nd\ne"
        notes = await client.list_notes(session_id=agent.session_id)
        assert notes.notes == [], "nothing may be sent before Enter"
        await pilot.press("enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "the sent note")
        notes = await client.list_notes(session_id=agent.session_id)
        assert [n.text for n in notes.notes] == ["a\nb\nc\nd\ne"]


async def test_empty_note_is_not_sent_and_a_failed_send_keeps_the_text(
    client: Backend, agent: HarnessSession, live_server: LiveServer
) -> None:
    """Blank text is refused locally; with the server down the text stays in the box with the reason."""
    app = PreloopApp(client, start_session_id=agent.session_id, follow=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "attach screen")
        screen = attach_screen(app)
        await until(pilot, lambda: screen.session is not None, "the session row")
        error_line = screen.query_one("#send-error", Static)
        await pilot.press("space", "enter")
        await pilot.pause()
        assert (await client.list_notes(session_id=agent.session_id)).notes == []
        assert "empty" in str(error_line.render())
        composer = screen.query_one(Composer)
        assert composer.text == " "  # the refused blank text is still there, untouched
        composer.clear()
        app.post_message(events.Paste("x" * 4097))
        await pilot.pause()
        assert "4097/4096" in str(composer.border_subtitle)
        await pilot.press("enter")
        await pilot.pause()
        assert "Too long" in str(error_line.render())
        assert len(composer.text) == 4097
        composer.clear()
        await pilot.pause()
        assert not error_line.has_class("-shown")  # "Too long" no longer describes the (empty) box
        live_server.stop()
        await pilot.press(*"too late", "enter")
        await until(pilot, lambda: "Not sent" in str(error_line.render()), "the failure under the box")
        assert composer.text == "too late"
        await pilot.press("!")
        await pilot.pause()
        assert "Not sent" in str(error_line.render())  # a server's reason stays while the text is edited
        await pilot.press("backspace")
        assert note_states(screen) == []
        live_server.start()
        await pilot.press("enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "the retried note")
        assert composer.text == ""
        assert not error_line.has_class("-shown")


async def test_withdraw_a_pending_note_after_confirmation(client: Backend, agent: HarnessSession) -> None:
    """w on a pending note asks first; y withdraws it and the badge turns cancelled."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await pilot.press(*"wrong session, sorry", "ctrl+s")  # Ctrl+S sends too
        await until(pilot, lambda: note_states(screen) == ["pending"], "the pending note")
        await pilot.press("escape")  # out of the composer
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: note_states(screen) == ["cancelled"], "the note to be withdrawn")
        claimed = await agent.claim_notes()
        assert claimed.notes == []


async def test_refused_withdraw_says_why(client: Backend, agent: HarnessSession) -> None:
    """A note the agent already picked up cannot be withdrawn: the app says it was already delivered."""
    app = PreloopApp(client, start_session_id=agent.session_id, follow=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "attach screen")
        screen = attach_screen(app)
        await pilot.press(*"check the logs", "enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "the pending note")
        await agent.claim_notes()  # delivered on the server; this screen has no stream to learn it
        await pilot.press("escape", "w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: note_states(screen) == [NoteState.DELIVERED], "the real state")
        messages = said(app)
        assert any("already delivered" in m for m in messages), messages


async def test_approve_and_decline_with_comment(client: Backend, agent: HarnessSession) -> None:
    """a approves the pending tool call; d asks for a comment and declines; the agent gets both verdicts."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        first = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
        await until(pilot, lambda: panel.count == 1, "the approval to appear")
        assert screen.header.pending_approvals == 1
        await pilot.press("a")  # typed into the note box, it approves nothing
        await pilot.pause(0.3)
        assert panel.count == 1 and screen.composer.text == "a"
        screen.composer.clear()
        await pilot.press("escape", "a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "Bash is danger: asked first")
        await pilot.press("y")
        verdict = await asyncio.wait_for(first, 30)
        assert verdict.decision == "allow"
        await until(pilot, lambda: panel.count == 0, "the approval to leave the panel")

        second = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf /"}))
        await until(pilot, lambda: panel.count == 1, "the second approval")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DeclineCommentScreen), "the comment prompt")
        await pilot.press(*"not on prod", "enter")
        verdict = await asyncio.wait_for(second, 30)
        assert verdict.decision == "deny"
        assert "not on prod" in (verdict.reason + (verdict.operator_note or ""))
        await until(pilot, lambda: panel.count == 0, "the declined approval to leave")


async def test_approval_decided_elsewhere_disappears_with_a_notice(
    client: Backend, agent: HarnessSession, live_server: LiveServer
) -> None:
    """Another operator approves first: the approval leaves this panel and a notice says so, naming them
    (issue 24); one approved with this operator's own token from another client reads "by you"."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        dana = live_server.add_operator("dana")
        for token, words in ((dana, "approved by dana "), (live_server.token, "approved by you ")):
            task = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
            await until(pilot, lambda: panel.count == 1, "the approval")
            approval = panel.selected
            assert approval is not None
            async with await connect(Settings(live_server.url, token, server_kind="local")) as other:
                await other.approve(approval.id)
            await asyncio.wait_for(task, 30)
            await until(pilot, lambda: panel.count == 0, "the approval to leave the panel")
            await until(
                pilot,
                lambda words=words: any(words in m for m in said(app)),
                f"the notice that it was {words.strip()}",
            )


async def test_read_only_hides_composer_and_refuses_decisions(client: Backend, agent: HarnessSession) -> None:
    """Read-only: no composer, a/d do nothing, the approval stays pending on the server."""
    app = PreloopApp(client, start_session_id=agent.session_id, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        assert not screen.note_box.display
        panel = screen.query_one(ApprovalsPanel)
        task = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
        await until(pilot, lambda: panel.count == 1, "the approval")
        await pilot.press("a", "n", "w")
        await pilot.pause(0.3)
        page = await client.list_approvals(session_id=agent.session_id)
        assert [a.status for a in page.items] == ["pending"]
        assert (await client.list_notes(session_id=agent.session_id)).notes == []
        await agent.end()
        await asyncio.wait_for(task, 30)


async def test_session_end_closes_the_composer_and_q_detaches(client: Backend, agent: HarnessSession) -> None:
    """The agent ends the session: the banner says so; the note box (it had the focus) closes, keeps the
    focus and says so; Escape puts it away; q leaves saying it ended (not "running")."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await agent.end("finished")
        await until(pilot, lambda: screen.ended, "the end of the session")
        assert "ended" in screen.query_one(Banner).message.lower()
        assert screen.composer.has_focus and "Esc to leave" in str(screen.composer.border_title)
        await pilot.press("q")  # typed into the closed box, not a detach
        assert app.is_running and screen.composer.text == "q"
        await pilot.press("escape")
        assert not screen.note_box.display
        await pilot.press("q")
    assert app.return_value is not None
    assert "has ended" in app.return_value and "keeps running" not in app.return_value


async def test_approve_and_expand_by_mouse(client: Backend, agent: HarnessSession) -> None:
    """The panel's buttons work with a mouse: "Show all" opens the whole call (Escape closes it), Approve
    lets the call run."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        args = {"command": "make deploy", "target": "staging", "notes": "x" * 300}
        task = asyncio.create_task(agent.permission_check("Bash", args))
        await until(pilot, lambda: panel.count == 1, "the approval")
        approval = panel.selected
        assert approval is not None
        await click_until(pilot, "#expand", lambda: isinstance(app.screen, ArgumentsScreen), "the whole call")
        whole = app.screen
        assert isinstance(whole, ArgumentsScreen) and whole.approval.id == approval.id
        assert "notes: " + "x" * 300 in [line.plain() for line in whole.preview.lines()]
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back on the session")
        await click_until(
            pilot, "#approve", lambda: isinstance(app.screen, ConfirmScreen), "Bash is danger: asked first"
        )
        await click(pilot, "#yes")
        verdict = await asyncio.wait_for(task, 30)
        assert verdict.decision == "allow"
        await until(pilot, lambda: panel.count == 0, "the approval to leave the panel")


async def test_sessions_filter_active_only_and_cursor_survives_refresh(
    client: Backend, live_server: LiveServer
) -> None:
    """/ filters, a hides ended sessions, and the timed refresh keeps the cursor on the same session."""
    harness = live_server.harness()
    alpha = await harness.start_session(agent_name="alpha", title="Alpha task")
    beta = await harness.start_session(agent_name="beta", title="Beta task")
    gamma = await harness.start_session(agent_name="gamma", title="Gamma task")
    await gamma.end()
    app = PreloopApp(client, refresh_interval=0.2)
    async with harness, app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        sessions = app.screen
        assert isinstance(sessions, SessionsScreen)
        table = sessions.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 3, "three rows")

        def cursor_id() -> str:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate)[0].value)

        def beta_row() -> Any:
            return next(row for row in sessions.sessions if row.id == beta.session_id)

        await pilot.press("down")
        chosen = cursor_id()
        quiet = beta_row()
        await beta.narrate(1, ["working"])  # activity changes a row while we look
        await until(pilot, lambda: beta_row() != quiet, "a refresh bringing beta's activity")
        assert cursor_id() == chosen

        await pilot.press("a")
        await until(pilot, lambda: table.row_count == 2, "ended session hidden")
        assert gamma.session_id not in [str(k.value) for k in table.rows]
        await pilot.press("a")
        await until(pilot, lambda: table.row_count == 3, "all sessions again")

        await pilot.press("slash", *"alpha")
        await until(pilot, lambda: table.row_count == 1, "filtered to one")
        assert [str(k.value) for k in table.rows] == [alpha.session_id]
        await pilot.press("escape")
        await until(pilot, lambda: table.row_count == 3, "filter cleared")


async def test_attach_survives_a_server_restart(
    client: Backend, agent: HarnessSession, live_server: LiveServer
) -> None:
    """The server goes away: the header and banner say reconnecting; it comes back: live, nothing lost."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        live_server.stop()
        await until(pilot, lambda: isinstance(screen.status, Reconnecting), "reconnecting", seconds=15)
        assert "reconnect" in screen.banner.message.lower()
        assert "reconnecting" in screen.header.connection_text().plain
        live_server.start()
        await agent.narrate(2, ["After the restart."])
        await until(pilot, lambda: isinstance(screen.status, Live), "live again", seconds=40)
        view = screen.query_one(TimelineView)
        await until(pilot, lambda: any("After the restart" in line for line in view.lines_text), "new events")
        await until(pilot, lambda: screen.banner.level is None, "the reconnecting banner to go")


async def test_command_palette_offers_what_the_screen_allows(client: Backend, agent: HarnessSession) -> None:
    """Ctrl+P lists the attach screen's actions; choosing "Withdraw" asks for confirmation like w does."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await pilot.press(*"palette note", "enter")
        await until(pilot, lambda: note_states(screen) == ["pending"], "the pending note")
        await pilot.press("escape")
        # key availability is re-checked a few times a second: out of the box, w is offered
        await until(pilot, lambda: "withdraw" in footer_actions(app), "withdraw offered")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
        await pilot.press(*"withdraw")
        commands = app.screen.query_one(CommandList)

        def withdraw_highlighted() -> bool:
            index = commands.highlighted
            return index is not None and "withdraw" in str(commands.get_option_at_index(index).prompt).lower()

        await until(pilot, withdraw_highlighted, "the Withdraw command highlighted")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, "back on the session")
        assert note_states(screen) == ["pending"]


async def test_decline_by_mouse_through_the_comment_dialog(client: Backend, agent: HarnessSession) -> None:
    """A mouse user clicks Decline, types a comment and clicks the dialog's Decline: the agent is denied."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        task = asyncio.create_task(agent.permission_check("Bash", {"command": "git push --force"}))
        await until(pilot, lambda: panel.count == 1, "the approval")
        await click_until(
            pilot, "#decline", lambda: isinstance(app.screen, DeclineCommentScreen), "the comment dialog"
        )
        await pilot.press(*"use a PR")
        await click(pilot, "#decline")  # the dialog's own button this time
        verdict = await asyncio.wait_for(task, 30)
        assert verdict.decision == "deny"
        assert "use a PR" in (verdict.reason + (verdict.operator_note or ""))
        await until(pilot, lambda: panel.count == 0, "the declined approval to leave")


async def test_cancel_in_the_comment_dialog_leaves_the_approval_pending(
    client: Backend, agent: HarnessSession
) -> None:
    """Cancel (mouse) closes the dialog and decides nothing: the approval is still pending on the server."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        task = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
        await until(pilot, lambda: panel.count == 1, "the approval")
        await click_until(
            pilot, "#decline", lambda: isinstance(app.screen, DeclineCommentScreen), "the comment dialog"
        )
        await click_until(pilot, "#cancel", lambda: app.screen is screen, "back on the attach screen")
        await pilot.pause(0.3)
        page = await client.list_approvals(session_id=agent.session_id)
        assert [a.status for a in page.items] == ["pending"] and panel.count == 1
        approval = panel.selected
        assert approval is not None
        await client.approve(approval.id)
        await asyncio.wait_for(task, 30)


async def test_unknown_session_is_refused_plainly(client: Backend, agent: HarnessSession) -> None:
    """An id the server does not know: one banner says so, no stream runs, no note box; q does not claim
    the session "keeps running"."""
    missing = "00000000-0000-4000-8000-000000000000"
    app = PreloopApp(client, start_session_id=missing)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
        screen = attach_screen(app)
        await until(pilot, lambda: screen.unavailable is not None, "the refusal")
        banner = screen.query_one(Banner)
        assert banner.level == "error" and "not found" in banner.message
        # The note box had the focus: it closes (nothing can be sent) instead of vanishing under the keys.
        assert screen.composer.closed is not None and screen.composer.has_focus
        await pilot.press("escape")
        assert not screen.note_box.display

        # The stream was asked for beside the session row; the row's refusal stops it.
        def streaming() -> bool:
            mine = [w for w in app.workers if w.node is screen and w.group == "attach-stream"]
            return not all(w.is_finished for w in mine)

        await until(pilot, lambda: not streaming(), "the stream stopped")
        assert "withdraw" not in footer_actions(app) and "focus_composer" not in footer_actions(app)
        assert not notices(app)  # the banner says it once, no toast on top
        await pilot.press("q")
    assert app.return_value is not None
    assert "not found" in app.return_value and "keeps running" not in app.return_value


async def test_sessions_rows_fit_80_columns_and_titles_use_the_room(
    client: Backend, live_server: LiveServer
) -> None:
    """At 80 columns no row runs off the edge; a short agent name leaves its spare columns to the title."""
    async with live_server.harness() as harness:
        await harness.start_session(
            agent_name="bob", cwd="/w", title="Add an index for invoice lookups please"
        )
        app = PreloopApp(client, refresh_interval=0)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
            table = app.screen.query_one("#sessions-table", DataTable)
            await until(pilot, lambda: table.row_count == 1, "the row")
            await pilot.pause()
            assert table.virtual_size.width <= table.size.width
            title = str(table.get_row_at(0)[-1])
            assert title.startswith("Add an index for invoice") and title.endswith("…")
            # A longer agent name appears: the title gives way, the row still fits.
            await harness.start_session(agent_name="a-very-long-agent-name", cwd="/w", title="x" * 90)
            await pilot.press("r")
            await until(pilot, lambda: table.row_count == 2, "the second row")
            await pilot.pause()
            assert table.virtual_size.width <= table.size.width


async def test_sessions_move_with_j_k_g_shift_g_and_keep_the_titles_end_at_80_columns(
    client: Backend, live_server: LiveServer
) -> None:
    """Issue 10 item 8: j/k/g/G move as in less and k9s; titles that differ only at their end stay told
    apart at 80 columns; newest start first, as `preloop sessions list`."""
    base = "Add an index for invoice lookups"
    async with live_server.harness() as harness:
        started = [
            await harness.start_session(
                agent_name="migrator", title=base if n == 1 else f"{base} (shift {n})"
            )
            for n in (1, 2, 3, 4)
        ]
        app = PreloopApp(client, refresh_interval=0)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
            table = app.screen.query_one("#sessions-table", DataTable)
            await until(pilot, lambda: table.row_count == 4, "the rows")
            await pilot.pause()
            order = [str(key.value) for key in table.rows]
            assert order == [s.session_id for s in reversed(started)]  # newest first
            titles = [str(table.get_row_at(i)[-1]) for i in range(4)]
            assert [t[-9:] for t in titles[:3]] == ["(shift 4)", "(shift 3)", "(shift 2)"]
            assert len(set(titles)) == 4 and table.virtual_size.width <= table.size.width
            assert table.cursor_row == 0
            await pilot.press("j", "j")
            assert table.cursor_row == 2
            await pilot.press("k")
            assert table.cursor_row == 1
            await pilot.press("G")
            assert table.cursor_row == 3
            await pilot.press("g")
            assert table.cursor_row == 0


async def test_command_palette_puts_this_screens_actions_first(
    client: Backend, agent: HarnessSession
) -> None:
    """Ctrl+P with nothing typed: the sessions screen's own actions head the list, before Textual's
    generic entries (Keys, Maximize, Screenshot, Theme)."""
    app = PreloopApp(client, refresh_interval=0)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        table = app.screen.query_one("#sessions-table", DataTable)
        await until(pilot, lambda: table.row_count == 1, "the row")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
        commands = app.screen.query_one(CommandList)
        palette = app.screen
        await until(pilot, lambda: commands.option_count >= 6, "the palette entries")
        await until(
            pilot, lambda: not any(w.node is palette for w in app.workers), "every provider's entries"
        )
        options = [commands.get_option_at_index(i) for i in range(commands.option_count)]
        assert all(isinstance(option, Command) for option in options)
        ranked = [(str(o.prompt), o.hit.score) for o in options if isinstance(o, Command)]
        ours = [score for prompt, score in ranked if "session" in prompt.lower() or "Help: all" in prompt]
        generic = [score for prompt, score in ranked if "Theme" in prompt or "Screenshot" in prompt]
        # Ranked, not merely first by luck: the palette orders by score, whichever provider answers first.
        assert ours and generic and min(ours) > max(generic)
        assert "Attach to the highlighted session" in ranked[0][0]
        await pilot.press("escape")


async def test_footer_fits_80_columns_and_regains_the_palette_hint_when_wider(
    client: Backend, agent: HarnessSession
) -> None:
    """At 80 columns the footer is compact and drops ``^p palette`` (help lists Ctrl+P) so ``? Help`` fits;
    widened to 200 columns, the hint comes back, and goes again when narrowed."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        await attached(pilot, app)
        await pilot.press("escape")

        def palette_hint() -> bool:
            return "command_palette" in footer_actions(app)

        await until(pilot, lambda: "app.help" in footer_actions(app), "the footer out of the note box")
        assert not palette_hint()
        await pilot.resize_terminal(200, 50)
        await until(pilot, palette_hint, "the palette hint at 200 columns")
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: not palette_hint(), "the hint gone again at 80 columns")


async def test_help_from_the_note_box_with_f1(client: Backend, agent: HarnessSession) -> None:
    """In the note box ? is text; F1 (shown in the footer while typing) opens help, and Escape returns
    with the draft intact. Outside the box F1 still opens help."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await attached(pilot, app)
        await pilot.press("w", "h", "y", "question_mark")
        assert screen.composer.text == "why?" and not isinstance(app.screen, HelpScreen)
        assert "help_from_box" in footer_actions(app)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help from the note box")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back on the session")
        assert screen.composer.text == "why?"
        await pilot.press("escape")  # leave the box
        await until(pilot, lambda: "help_from_box" not in footer_actions(app), "F1 out of the footer")
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help from outside the box")


async def test_notices_show_an_agents_tool_name_literally(client: Backend, agent: HarnessSession) -> None:
    """A tool name is the agent's text: in a notice its brackets are shown, never read as markup (an
    unbalanced tag used to take the app down; a click tag could have run an action)."""
    hostile = "[@click=app.quit]Bash[/] [/]"
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        task = asyncio.create_task(agent.permission_check(hostile, {"command": "make deploy"}))
        await until(pilot, lambda: panel.count == 1, "the approval")
        await pilot.press("escape", "a")
        assert (await asyncio.wait_for(task, 30)).decision == "allow"
        await until(pilot, lambda: any("Approved" in m for m in said(app)), "the notice")

        def toasts() -> list[str]:
            return [str(t.render()) for t in app.screen.query("Toast")]

        await until(
            pilot, lambda: any(hostile in text for text in toasts()), f"the name literally: {toasts()}"
        )
        assert app.is_running


async def test_approving_twice_quickly_decides_once_and_says_nothing_false(
    client: Backend, agent: HarnessSession
) -> None:
    """A second ``a`` before the first answer arrives must not report the approval as decided elsewhere."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(ApprovalsPanel)
        task = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
        await until(pilot, lambda: panel.count == 1, "the approval")
        approval = panel.selected
        assert approval is not None
        screen.decider.decide(approval, "approve", None)
        screen.decider.decide(approval, "approve", None)
        assert (await asyncio.wait_for(task, 30)).decision == "allow"
        await until(pilot, lambda: panel.count == 0, "the approval to leave the panel")
        await until(pilot, lambda: not any(w.group == "decide" for w in app.workers), "both answers told")
        messages = said(app)
        assert messages.count("Approved: Bash") == 1, messages
        assert not any("elsewhere" in m or "Could not" in m for m in messages), messages
