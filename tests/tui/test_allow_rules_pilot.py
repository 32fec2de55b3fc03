"""Allow rules from the app, against the real local control plane over loopback (issue 25 §4).

``A`` on the inbox (or an approval's card) opens "allow calls like this for …"; a danger-risk call asks a
second time; the rule made shows in every screen's banner, decides the next matching call without
asking, and ``R`` lists and ends it. ``A`` is a decision-class key: a letter of a burst of typing is
text, and pressed too soon after the screen appeared it is not taken. A ``mute`` rule silences the
alert of a call it covers (which still waits)."""

from __future__ import annotations

import asyncio

import pytest

from client.alerts import AlertSettings
from client.backends.base import Backend
from client.models import RuleSpec
from server.harness_client import HarnessClient
from tests.tui.test_inbox_pilot import ask, inbox_rows, start
from tests.tui.test_pilot import until
from tui.app import PreloopApp
from tui.screens.allow import AllowScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.inbox import InboxScreen
from tui.screens.rules import RulesScreen
from tui.screens.sessions import SessionsScreen
from widgets.standing import StandingBanner


def banner(app: PreloopApp) -> list[str]:
    return app.screen.query_one(StandingBanner).shown


async def test_a_rule_made_from_the_inbox_shows_everywhere_decides_the_next_call_and_ends(
    client: Backend, harness: HarnessClient
) -> None:
    session = await start(harness, "builder")
    app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        first = ask(session, "pytest -q tests/")
        await pilot.press("i")
        await until(
            pilot, lambda: isinstance(app.screen, InboxScreen) and len(inbox_rows(app)) == 1, "the row"
        )
        await pilot.press("A")
        await until(pilot, lambda: isinstance(app.screen, AllowScreen), "the allow dialog")
        dialog = app.screen
        assert isinstance(dialog, AllowScreen)
        assert "✓ matches this call" in str(dialog.query_one("#pattern-says").render())
        await pilot.press("enter")  # Bash is danger-risk here: a second confirmation, naming it
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the second confirmation")
        assert "Also allow danger-risk calls without asking?" in str(
            app.screen.query_one("#question").render()
        )
        await pilot.press("y")
        await until(pilot, lambda: bool(banner(app)), "the banner")
        [line] = banner(app)
        assert line.startswith(f"⚠ auto-allow: Bash `pytest *` in {session.session_id[:8]} until ")
        assert "· 0 allowed · danger-risk too · set by Local Operator" in line
        assert len(inbox_rows(app)) == 1  # the call it was made from still waits: a rule decides no call

        second = await asyncio.wait_for(session.permission_check("Bash", {"command": "pytest -x"}), 10)
        assert second.decision == "allow"  # decided by the rule: nobody was asked
        app.refresh_standing()
        await until(pilot, lambda: "1 allowed" in " ".join(banner(app)), "the count in the banner")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        await until(pilot, lambda: "1 allowed" in " ".join(banner(app)), "the banner on the list too")

        await pilot.press("R")
        await until(
            pilot, lambda: isinstance(app.screen, RulesScreen) and bool(app.screen.rules), "the rules"
        )
        await pilot.press("x")
        rules_screen = app.screen
        await until(pilot, lambda: rules_screen.rules == [], "the rule ended")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen) and not banner(app), "no banner")
        assert await client.list_rules() == []
        await client.approve(app.inbox.approvals[0].id)
        assert (await asyncio.wait_for(first, 10)).decision == "allow"


@pytest.mark.type_ahead
async def test_A_in_a_burst_of_typing_is_text_and_too_soon_it_is_not_taken(
    client: Backend, harness: HarnessClient
) -> None:
    session = await start(harness, "builder")
    now = [100.0]
    app = PreloopApp(
        client, refresh_interval=0, alert_settings=AlertSettings(enabled=False), monotonic=lambda: now[0]
    )
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        task = ask(session, "make deploy")
        await until(pilot, lambda: app.inbox_count == 1, "the approval")
        now[0] += 1
        await pilot.press("i")
        now[0] += 1  # alone: i runs once its quiet window is over
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        now[0] += 1
        await pilot.press("A")
        now[0] += 0.1
        await pilot.press("l")  # "Al...": typing, never a command
        now[0] += 1
        await pilot.pause(0.2)
        assert app.screen is inbox  # the letters went to the draft of the session it came from, if any
        now[0] += 1
        inbox.guard.arm()  # the inbox comes up again (e.g. back from a dialog) ...
        now[0] += 0.2
        await pilot.press("A")  # ... and a lone A within half a second of that is not taken
        now[0] += 1
        await pilot.pause(0.2)
        assert app.screen is inbox
        now[0] += 1  # alone, and the inbox has been up long enough: the dialog opens
        await pilot.press("A")
        now[0] += 1
        await until(pilot, lambda: isinstance(app.screen, AllowScreen), "the allow dialog")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "nothing made")
        assert await client.list_rules() == []
        await client.decline(app.inbox.approvals[0].id)
        await task


async def test_a_mute_rule_silences_the_alert_and_the_call_still_waits(
    client: Backend, harness: HarnessClient
) -> None:
    session = await start(harness, "builder")
    rang: list[str] = []
    app = PreloopApp(
        client,
        refresh_interval=0,
        alert_settings=AlertSettings(desktop="osc9", in_tmux=True),
        alert_write=rang.append,
    )
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        await client.create_rule(
            RuleSpec(
                mode="mute", minutes=10, scope="session", session_id=session.session_id, tool_name="Bash"
            )
        )
        app.refresh_standing()
        await until(
            pilot, lambda: any("muted: Bash" in line for line in banner(app)), "the mute in the banner"
        )
        task = ask(session, "make deploy")
        await until(pilot, lambda: app.inbox_count == 1, "the approval, still asking")
        await pilot.pause(0.3)
        assert rang == []  # no bell, no desktop notification
        other = await harness.start_session(agent_name="tester")
        loud = ask(other, "rm -rf build")
        await until(pilot, lambda: app.inbox_count == 2, "an approval no rule covers")
        await until(pilot, lambda: bool(rang), "its alert")
        for approval in app.inbox.approvals:
            await client.decline(approval.id)
        await task
        await loud
