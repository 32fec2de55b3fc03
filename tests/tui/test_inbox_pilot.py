"""Pilot tests of the attention inbox and alerts against the real local control plane over loopback.

Agents raise approvals with ``server.harness_client`` (a blocking permission check, as a coding agent's
hook does); the app runs on a real backend (``client.backends.connect``) and its live attention feed.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from textual.widgets import DataTable

from client.alerts import AlertSettings
from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.present import relative_time
from server.harness_client import HarnessClient, HarnessSession
from tests.conftest import LiveServer
from tests.tui.test_pilot import SIZE, attached, plain, until
from tui.app import PreloopApp
from tui.screens.arguments import ArgumentsScreen
from tui.screens.attach import AttachScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.inbox import InboxScreen
from tui.screens.sessions import SessionsScreen
from widgets.inbox_view import InboxApprovals, InboxBadge


async def start(harness: HarnessClient, name: str) -> HarnessSession:
    session = await harness.start_session(agent_name=name, title=f"{name} at work")
    await session.run_started("work")
    await session.narrate(1, ["Looking at the test first."])
    return session


def ask(session: HarnessSession, command: str) -> asyncio.Task[Any]:
    return asyncio.create_task(session.permission_check("Bash", {"command": command}, ask=True))


def inbox_rows(app: PreloopApp) -> list[str]:
    screen = app.screen
    assert isinstance(screen, InboxScreen), screen
    table = screen.query_one(InboxApprovals)
    return [str(table.get_row_at(i)[5]) for i in range(table.row_count)]


async def test_inbox_shows_every_sessions_approvals_and_decides_them(
    client: Backend, harness: HarnessClient
) -> None:
    """Approvals from two sessions reach the header count and the inbox (oldest first); a approves the
    first, d with a comment declines the second; the agents get the decisions."""
    one, two = await start(harness, "builder"), await start(harness, "tester")
    app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        badge = app.screen.query_one(InboxBadge)
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        assert badge.count == 0 and not badge.display
        first = ask(one, "git push origin main")
        await until(pilot, lambda: app.inbox_count == 1, "the first approval in the inbox")
        second = ask(two, "rm -rf build")
        await until(pilot, lambda: badge.count == 2, "the count in the sessions header")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        await until(pilot, lambda: len(inbox_rows(app)) == 2, "two rows")
        assert "git push origin main" in inbox_rows(app)[0]  # oldest first
        await pilot.press("a")  # Bash is a danger-risk tool on the local server: it asks first
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the risk question")
        await pilot.press("y")
        verdict = await asyncio.wait_for(first, 30)
        assert verdict.decision == "allow"
        await until(pilot, lambda: len(inbox_rows(app)) == 1, "the approved one to leave")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DeclineCommentScreen), "the comment prompt")
        await pilot.press(*"not on prod", "enter")
        refused = await asyncio.wait_for(second, 30)
        assert refused.decision == "deny" and "not on prod" in refused.reason
        await until(pilot, lambda: app.inbox_count == 0, "an empty inbox")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        assert not inbox.query_one("#inbox-recent").display  # decided here, not "elsewhere"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list")


async def test_inbox_follows_decisions_made_elsewhere_and_failed_notes(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    """Another operator approves while the inbox is open: the row leaves and a line says so, naming them; a
    note that becomes undeliverable appears in the notes section, live."""
    session = await start(harness, "builder")
    app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        await pilot.press("i")
        task = ask(session, "make deploy")
        await until(pilot, lambda: len(inbox_rows(app)) == 1, "the approval")
        dana = live_server.add_operator("dana")
        async with await connect(Settings(live_server.url, dana, server_kind="local")) as other:
            approval_id = app.inbox.approvals[0].id
            await other.approve(approval_id, "ship it")
            await other.send_note("stop after the deploy", session_id=session.session_id)
        await until(pilot, lambda: inbox_rows(app) == [], "the row to leave")
        assert (await asyncio.wait_for(task, 30)).decision == "allow"
        recent = app.screen.query_one("#inbox-recent")
        # the colleague is named, with the time and the comment (issue 24)
        await until(pilot, lambda: "approved by dana " in str(recent.render()), "the elsewhere line")
        assert ": “ship it”" in str(recent.render())
        await session.end()
        notes = app.screen.query_one("#inbox-notes")
        await until(pilot, lambda: "stop after the deploy" in str(notes.render()), "the undeliverable note")
        assert app.inbox_count == 0  # seen: the inbox is open


async def test_inbox_from_an_attach_screen_and_back(client: Backend, harness: HarnessClient) -> None:
    """i (outside the note box) opens the inbox from a session; Enter opens another session's approval,
    Escape there comes back to the inbox, Escape again to the first session."""
    watched, other = await start(harness, "builder"), await start(harness, "tester")
    app = PreloopApp(client, start_session_id=watched.session_id, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=SIZE) as pilot:
        await attached(pilot, app)
        task = ask(other, "deploy")
        badge = app.screen.query_one(InboxBadge)
        await until(pilot, lambda: badge.count == 1, "the count in the attach header")
        await pilot.press("escape", "i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        await until(pilot, lambda: len(inbox_rows(app)) == 1, "the approval")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the other session")
        screen = app.screen
        assert isinstance(screen, AttachScreen) and screen.session_id == other.session_id
        await pilot.press("escape", "escape")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "back in the inbox")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "back in the first session")
        first = app.screen
        assert isinstance(first, AttachScreen) and first.session_id == watched.session_id
        await client.decline(app.inbox.approvals[0].id)
        await task


async def test_alerts_ring_for_other_sessions_once_per_interval(
    client: Backend, harness: HarnessClient
) -> None:
    """A new approval in another session rings once (bell + OSC 9); a second one right after is held
    back by the rate limit; one in the session on screen never rings."""
    watched, a, b = (
        await start(harness, "builder"),
        await start(harness, "tester"),
        await start(harness, "ops"),
    )
    written: list[str] = []
    settings = AlertSettings(desktop="osc9", min_interval=600.0)
    app = PreloopApp(
        client, start_session_id=watched.session_id, alert_settings=settings, alert_write=written.append
    )
    async with app.run_test(size=SIZE) as pilot:
        await attached(pilot, app)
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        own = ask(watched, "ls")
        await until(pilot, lambda: app.inbox_count == 1, "the watched session's approval")
        assert written == []  # the operator is looking at it
        first = ask(a, "git push")
        await until(pilot, lambda: app.inbox_count == 2, "another session's approval")
        assert len(written) == 1
        assert written[0].startswith("\a\x1b]9;Approval needed: tester")
        assert written[0].endswith("\a") and written[0].count("\x1b") == 1
        second = ask(b, "rm -rf /")
        await until(pilot, lambda: app.inbox_count == 3, "a third approval")
        assert len(written) == 1 and app.alerter.suppressed == 1
        for approval in app.inbox.approvals:
            await client.decline(approval.id)
        await asyncio.gather(own, first, second)


async def test_an_arrival_leaves_the_rows_the_cursor_and_the_footer_alone(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    """The operator reads the 2nd of three approvals when one arrives on another session, then another
    operator settles the 1st: the cursor stays on the approval being read, the rows already there are the
    same rows (added or removed one by one, not the table rebuilt), the new one comes last (oldest first),
    and the footer is not rebuilt for any of it, only once nothing is left to approve. The 1 s tick redraws
    nothing while no age or countdown text changes, and only the cells whose text did. The sessions list
    under the inbox keeps its header count until it is shown again (a change there would repaint the
    inbox), then shows the current one."""
    sessions = [await start(harness, name) for name in ("builder", "tester", "ops", "docs")]
    now = [datetime.now(UTC)]
    app = PreloopApp(
        client, refresh_interval=0, alert_settings=AlertSettings(enabled=False), clock=lambda: now[0]
    )
    tasks: list[asyncio.Task[Any]] = []
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        for n, command in enumerate(("make build", "make test", "make deploy")):
            tasks.append(ask(sessions[n], command))
            await until(pilot, lambda n=n: app.inbox_count == n + 1, f"approval {n + 1}")
        list_badge = app.screen.query_one(InboxBadge)
        assert isinstance(app.screen, SessionsScreen) and list_badge.count == 3
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        screen = app.screen
        assert isinstance(screen, InboxScreen)
        table = screen.query_one(InboxApprovals)
        await until(pilot, lambda: len(inbox_rows(app)) == 3, "three rows")
        await until(pilot, lambda: footer_offers(app, "approve"), "approve offered")
        await pilot.press("down")
        reading = table.selected
        assert reading is not None and "make test" in str(reading.tool_args)
        rows = {key.value: key for key in table.rows}
        footer_keys = list(screen.query("FooterKey"))
        footer_checks: list[object] = []
        screen.bindings_updated_signal.subscribe(screen, footer_checks.append, immediate=True)

        tasks.append(ask(sessions[3], "make docs"))
        await until(pilot, lambda: len(inbox_rows(app)) == 4, "the new approval's row")
        await pilot.pause()
        assert "make docs" in inbox_rows(app)[3]
        assert table.selected == reading and table.cursor_row == 1
        assert kept_rows(table, rows) == list(rows)  # the same rows, not new ones
        assert footer_checks == [] and list(screen.query("FooterKey")) == footer_keys

        async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as other:
            await other.approve(app.inbox.approvals[0].id, "fine")
            await until(pilot, lambda: len(inbox_rows(app)) == 3, "the first one settled elsewhere")
            await pilot.pause()
            assert table.selected == reading and table.cursor_row == 0
            assert kept_rows(table, rows) == list(rows)[1:]
            assert footer_checks == [] and list(screen.query("FooterKey")) == footer_keys

            redrawn: list[tuple[object, ...]] = []
            update_cell = table.update_cell

            def counting(*args: Any, **kwargs: Any) -> None:
                redrawn.append(args[:2])
                update_cell(*args, **kwargs)

            table.update_cell = counting  # type: ignore[method-assign]
            table.tick(now[0])
            assert redrawn == []  # nothing reads differently: nothing is redrawn
            now[0] += timedelta(minutes=2)
            table.tick(now[0])
            assert {str(column) for _, column in redrawn} <= {"waiting", "expires"} and redrawn
            ages = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert ages == [relative_time(a.requested_at, now[0]) for a in app.inbox.approvals]
            assert "just now" not in ages

            for approval in app.inbox.approvals:
                await other.decline(approval.id)
        await until(pilot, lambda: inbox_rows(app) == [], "an empty inbox")
        await until(pilot, lambda: not footer_offers(app, "approve"), "approve dimmed in the footer")
        assert footer_checks  # the keys were checked again when the last approval left
        assert list_badge.count == 3  # the list's header, hidden under the inbox, is not redrawn...
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list")
        await until(pilot, lambda: list_badge.count == 0 and not list_badge.display, "...until it shows")
    await asyncio.gather(*tasks)


def footer_offers(app: PreloopApp, action: str) -> bool:
    """Whether the footer shows ``action``'s key enabled (not dimmed)."""
    return any(
        getattr(key, "action", "") == action and not key.has_class("-disabled")
        for key in app.screen.query("FooterKey")
    )


def kept_rows(table: InboxApprovals, before: dict[str | None, Any]) -> list[str | None]:
    """The approval ids whose row is still the very row (the same key object) it was ``before``."""
    now = {key.value: key for key in table.rows}
    return [value for value, key in before.items() if now.get(value) is key]


async def test_an_approval_decided_on_an_attach_screen_is_not_approved_elsewhere_in_the_inbox(
    client: Backend, harness: HarnessClient
) -> None:
    """Issue 18: approved with ``a`` on the session's own screen, the inbox then said "approved
    elsewhere". The app keeps one record of what it decided, for every screen and the inbox."""
    session = await start(harness, "builder")
    app = PreloopApp(client, start_session_id=session.session_id, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        task = asyncio.create_task(session.permission_check("Read", {"path": "README.md"}, ask=True))
        await until(pilot, lambda: screen.approvals_panel.count == 1 and app.inbox_count == 1, "the approval")
        await pilot.press("escape", "a")  # low risk: one key
        assert (await asyncio.wait_for(task, 10)).decision == "allow"
        await until(pilot, lambda: app.inbox_count == 0, "the inbox emptied by the echo")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        await pilot.pause(0.2)
        recent = app.screen.query_one("#inbox-recent")
        assert not recent.display and "elsewhere" not in str(recent.render())


async def test_the_sessions_list_counts_what_the_inbox_counts(
    client: Backend, harness: HarnessClient
) -> None:
    """Issue 18: the header said "⚑ 1 waiting" while every PENDING cell said 0 until the list's next
    refresh. The PENDING column follows the live inbox (here with no refresh at all)."""
    session = await start(harness, "builder")
    app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 1 and app.inbox.synced, "the row and the inbox")

        def pending_cell() -> str:
            return str(table.get_cell(session.session_id, "pending"))

        assert pending_cell() == "0"
        task = ask(session, "git push origin main")
        await until(pilot, lambda: app.inbox_count == 1, "the header's count")
        await until(pilot, lambda: pending_cell() == "⚑ 1", "the PENDING cell saying the same")
        await client.decline(app.inbox.approvals[0].id)
        await until(pilot, lambda: pending_cell() == "0", "and 0 again once decided")
        await task


async def test_the_whole_arguments_of_an_approval_are_one_key_away(
    client: Backend, harness: HarnessClient
) -> None:
    """Issue 18: at 80 columns the ARGUMENTS column read `{ "co`, cut with no sign of it. It ends in "…"
    where it is cut, ``x`` shows the whole call (and decides nothing), Enter still opens the session."""
    session = await start(harness, "builder")
    command = "git push --force-with-lease origin hotfix/discount-order && make deploy ENV=production"
    app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=(80, 24)) as pilot:
        task = ask(session, command)
        await until(pilot, lambda: app.inbox_count == 1, "the approval")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        table = app.screen.query_one(InboxApprovals)
        await until(pilot, lambda: inbox_rows(app) and inbox_rows(app)[0].endswith("…"), "the cut cell")
        (shown,) = inbox_rows(app)
        columns = list(table.columns.values())
        assert sum(c.get_render_width(table) for c in columns) <= table.size.width  # nothing cut at the edge
        assert command not in shown
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ArgumentsScreen), "the whole call")
        whole = app.screen
        assert isinstance(whole, ArgumentsScreen) and "builder" in plain(whole.card, 200)
        assert whole.preview.lines()[0].text == command  # the command whole, in the view below the card
        await pilot.press("a")  # decides nothing here
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "back to the list")
        assert app.inbox_count == 1 and not task.done()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AttachScreen), "Enter opens the session")
        await client.decline(app.inbox.approvals[0].id)
        await task
