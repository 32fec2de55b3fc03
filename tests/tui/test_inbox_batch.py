"""Many approvals at once in the inbox (issue 25 §1), against the real local control plane over loopback:
mark rows (space, M), one dialog for the marked set, each row's own result, and the operator-safety rules
(the key pressed alone, the type-ahead guard, the dialog naming the risky calls).

The first tests press every key alone (``tests/conftest.py``); the ``type_ahead`` ones type at a person's
pace on a clock they move (``tests/tui/test_type_ahead.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.widgets import Static

from client.alerts import AlertSettings
from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from server.harness_client import HarnessClient, HarnessSession
from tests.conftest import LiveServer
from tests.tui.test_pilot import plain, until
from tests.tui.test_type_ahead import PERSON, TypingClock, inbox_ready, on_top, press_alone, type_keys
from tui.app import PreloopApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.inbox import InboxScreen
from widgets.inbox_view import InboxApprovals

QUIET = AlertSettings(enabled=False)


def ask(session: HarnessSession, tool: str, args: dict[str, Any], **kwargs: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(session.permission_check(tool, args, ask=True, **kwargs))


def inbox(app: PreloopApp) -> InboxScreen:
    screen = app.screen
    assert isinstance(screen, InboxScreen), screen
    return screen


def waiting_cells(app: PreloopApp) -> list[str]:
    table = inbox(app).query_one(InboxApprovals)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def text_of(app: PreloopApp, selector: str) -> str:
    return plain(app.screen.query_one(selector, Static).content, 200)


async def test_mark_then_approve_the_marked_set_in_one_dialog(
    client: Backend, harness: HarnessClient
) -> None:
    """Four approvals in three sessions; two are marked with space (the header counts them, the rows
    show ●), ``a`` opens one dialog naming both and the danger call by name; ``y`` approves those two
    only: each row's result is listed, the agents are answered, the others still wait, unmarked."""
    one, two, three = [await harness.start_session(agent_name=n) for n in ("builder", "tester", "ops")]
    calls = [
        ask(one, "Bash", {"command": "git push origin main"}),
        ask(two, "Read", {"path": "README.md"}),
        ask(three, "Read", {"path": "CHANGES.md"}),
        ask(one, "Read", {"path": "setup.cfg"}),
    ]
    app = PreloopApp(client, refresh_interval=0, alert_settings=QUIET)
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox_count == 4, "four approvals")
        await pilot.press("i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        order = [a.tool_args.get("command") or a.tool_args.get("path") for a in app.inbox.approvals]
        first, second = order.index("git push origin main"), order.index("README.md")
        for row in (first, second):
            inbox(app).query_one(InboxApprovals).move_cursor(row=row)
            await pilot.press("space")
        await until(pilot, lambda: "· 2 marked" in text_of(app, "#inbox-title"), "the count of marked")
        cells = waiting_cells(app)
        assert [i for i, c in enumerate(cells) if c.startswith("● ")] == sorted([first, second])
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the one dialog")
        dialog = plain(app.screen.query_one("#question", Static).content, 200)
        assert dialog.startswith("Approve these 2 calls?") and "2 calls in 2 sessions" in dialog
        assert "highest risk danger" in dialog
        detail = plain(app.screen.query_one("#detail", Static).content, 200)
        assert "Bash ×1" not in detail and "Bash" in detail and "Read" in detail
        assert "git push origin main" in detail  # the danger call lists itself by name
        assert "README.md" not in detail  # a low-risk call is counted, not named
        await pilot.press("y")
        verdicts = await asyncio.wait_for(asyncio.gather(calls[0], calls[1]), 30)
        assert [v.decision for v in verdicts] == ["allow", "allow"]
        await until(pilot, lambda: len(app.inbox.approvals) == 2, "the two approved ones to leave")
        results = text_of(app, "#inbox-batch")
        assert "Last decision: 2 of 2 marked approved" in results
        assert results.count("✓ approved") == 2 and "git push origin main" in results
        assert "marked" not in text_of(app, "#inbox-title").split("sessions", 1)[1]
        assert not any(c.startswith("● ") for c in waiting_cells(app))
        assert not calls[2].done() and not calls[3].done()
        for approval in app.inbox.approvals:
            await client.decline(approval.id)
    await asyncio.gather(*calls)


async def test_decline_all_with_one_comment_and_each_rows_own_result(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    """M marks all three; another operator approves one while the dialog is open; the comment goes with
    each of the other two; the one approved elsewhere is told as already approved (not declined over it),
    and nothing is left marked."""
    one, two = (
        await harness.start_session(agent_name="builder"),
        await harness.start_session(agent_name="ops"),
    )
    calls = [ask(one, "Read", {"path": f"file{n}.txt"}) for n in range(2)] + [ask(two, "Read", {"path": "x"})]
    app = PreloopApp(client, refresh_interval=0, alert_settings=QUIET)
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox_count == 3, "three approvals")
        await pilot.press("i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        await pilot.press("M")
        await until(pilot, lambda: "· 3 marked" in text_of(app, "#inbox-title"), "all marked")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DeclineCommentScreen), "the comment dialog")
        assert "Decline these 3 calls?" in plain(app.screen.query_one("#question", Static).content, 200)
        taken = app.inbox.approvals[1]
        async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as other:
            await other.approve(taken.id, "fine by me")
        await pilot.press(*"not now", "enter")
        verdicts = await asyncio.wait_for(asyncio.gather(*calls), 30)
        assert sorted(v.decision for v in verdicts) == ["allow", "deny", "deny"]
        assert all(v.reason == "not now" for v in verdicts if v.decision == "deny")
        await until(pilot, lambda: app.inbox_count == 0, "an empty inbox")
        await until(pilot, lambda: "Last decision" in text_of(app, "#inbox-batch"), "the results")
        results = text_of(app, "#inbox-batch")
        assert "2 of 3 marked declined · 1 not" in results
        assert results.count("✓ declined") == 2
        assert "↷" in results and "already approved: approval" in results and "was approved by " in results
        assert 'comment "fine by me"' in results


async def test_a_row_whose_session_ended_meanwhile_is_told_as_cancelled(
    client: Backend, harness: HarnessClient
) -> None:
    """The session of one marked approval ends while the dialog is open: that row is told as cancelled
    (not as approved, not as an error), the other is approved."""
    one, two = (
        await harness.start_session(agent_name="builder"),
        await harness.start_session(agent_name="ops"),
    )
    calls = [ask(one, "Read", {"path": "a"}), ask(two, "Read", {"path": "b"})]
    app = PreloopApp(client, refresh_interval=0, alert_settings=QUIET)
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox_count == 2, "two approvals")
        await pilot.press("i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        await pilot.press("M")
        await until(pilot, lambda: "· 2 marked" in text_of(app, "#inbox-title"), "both marked")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the dialog")
        await two.end()  # its approval is cancelled while the dialog is open
        await pilot.press("y")
        await until(pilot, lambda: "Last decision" in text_of(app, "#inbox-batch"), "the results")
        results = text_of(app, "#inbox-batch")
        assert "1 of 2 marked approved · 1 not" in results and "✓ approved" in results
        assert "is no longer pending (cancelled)" in results
        assert (await asyncio.wait_for(calls[0], 30)).decision == "allow"
    await asyncio.gather(*calls)


@pytest.mark.type_ahead
async def test_a_burst_of_typing_decides_no_marked_row_and_the_dialog_ignores_a_quick_yes(
    client: Backend, harness: HarnessClient
) -> None:
    """With rows marked, "ad" typed at a person's pace is text (kept as a draft), not a decision; ``a``
    pressed alone opens the dialog, whose ``y`` 80 ms later is not taken; a ``y`` after reading is."""
    one = await harness.start_session(agent_name="builder")
    calls = [ask(one, "Bash", {"command": f"make {n}"}) for n in range(2)]
    clock = TypingClock()
    app = PreloopApp(client, refresh_interval=0, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=(120, 32)) as pilot:
        await until(pilot, lambda: app.inbox_count == 2, "two approvals")
        await press_alone(pilot, clock, "i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        await press_alone(pilot, clock, "M")
        await until(pilot, lambda: "· 2 marked" in text_of(app, "#inbox-title"), "both marked")
        await type_keys(pilot, clock, "ad", PERSON)
        clock.advance(1.0)
        await until(pilot, lambda: not app.key_pace.holding, "the burst handled")
        await pilot.pause(0.2)
        assert on_top(app, InboxScreen) and not any(c.done() for c in calls)
        await press_alone(pilot, clock, "a")
        await until(pilot, lambda: on_top(app, ConfirmScreen), "the dialog")
        await press_alone(pilot, clock, "y", after=PERSON)
        await pilot.pause(0.2)
        assert on_top(app, ConfirmScreen) and not any(c.done() for c in calls)
        assert "Press approve 2 again" in plain(app.screen.query_one("#too-soon", Static).content, 200)
        await press_alone(pilot, clock, "y")
        verdicts = await asyncio.wait_for(asyncio.gather(*calls), 30)
        assert [v.decision for v in verdicts] == ["allow", "allow"]
