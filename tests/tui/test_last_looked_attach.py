""" "New since you last looked" on the real attach screen, against the real local server: the mark kept in
the state dir across a restart of the app (the rule, the digest above it, the view opening there), the
digest after a decline made by another client, nothing marked for what arrived while the operator watched,
the terminal's focus deciding what was looked at (events that came while it was elsewhere are new), and a
mark older than the loaded tail (the rule at the top, with how many stored events lie between).

The apps' clocks are set back where a test needs "a while ago" (the mark's time): the server stamps its
events with the real time, which is what the marks are compared with."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual import events

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.marks import LIVE_SKEW, Mark, MarkStore
from server.harness_client import HarnessSession
from tests.cli.test_approvals import _wait_pending
from tests.conftest import LiveServer
from tests.tui import test_pilot
from tests.tui.test_pilot import attached, until
from tui.app import PreloopApp
from tui.screens import attach
from tui.screens.attach import AttachScreen
from widgets.timeline_view import TimelineView

agent = test_pilot.agent

RULE = "── new since you last looked"
SIZE = (200, 40)
"""Wide enough for the digest's lines in the timeline column (they are cut to its width)."""


def clock_of(offset: list[timedelta]) -> Callable[[], datetime]:
    """The real time moved by ``offset[0]`` (a test changes it to pass time)."""
    return lambda: datetime.now(UTC) + offset[0]


def rule_row(view: TimelineView) -> int | None:
    return next((i for i, line in enumerate(view.lines_text) if line.startswith(RULE)), None)


def view_of(screen: AttachScreen) -> TimelineView:
    return screen.query_one(TimelineView)


async def look_then_quit(client: Backend, marks: Path, session_id: str, last_words: str) -> Mark:
    """An operator's earlier run of the app, twenty minutes ago: attached, looked at the session up to
    ``last_words``, quit. Returns the mark it left in the state dir."""
    app = PreloopApp(
        client, start_session_id=session_id, refresh_interval=0, marks=MarkStore(marks),
        clock=clock_of([timedelta(minutes=-20)]),
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        view = view_of(screen)
        await until(pilot, lambda: any(last_words in line for line in view.lines_text), last_words)
        await pilot.press("ctrl+c")  # at once: quitting writes what was on screen, due or not
    mark = MarkStore(marks).get(session_id)
    assert mark is not None and mark.place == screen.core.timeline.last_place
    return mark


async def reattach(pilot: Any, app: PreloopApp, words: str) -> tuple[AttachScreen, TimelineView, int]:
    """The attach screen once ``words`` and the rule are shown; the rule's row."""
    await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
    screen = app.screen
    assert isinstance(screen, AttachScreen)
    view = view_of(screen)
    await until(pilot, lambda: any(words in line for line in view.lines_text), words)
    await until(pilot, lambda: rule_row(view) is not None, "the rule")
    row = rule_row(view)
    assert row is not None
    return screen, view, row


async def test_after_a_restart_the_rule_and_the_digest_open_where_the_operator_left(
    client: Backend, agent: HarnessSession, tmp_path: Path
) -> None:
    for i in range(2, 12):
        await agent.narrate(i, [f"Before the restart, step {i}."])
    marks = tmp_path / "marks"
    mark = await look_then_quit(client, marks, agent.session_id, "step 11.")
    for i in range(12, 40):  # the agent carries on while the app is closed
        await agent.narrate(i, [f"After the restart, step {i}."])
        if i == 20:
            call = await agent.tool_started("Read", {"file_path": "tests/test_x.py"}, iteration=i)
            await agent.tool_completed(call, "Read", duration_ms=12, result_summary="120 lines")

    app = PreloopApp(client, start_session_id=agent.session_id, refresh_interval=0, marks=MarkStore(marks))
    async with app.run_test(size=SIZE) as pilot:
        screen, view, row = await reattach(pilot, app, "step 39.")
        lines = view.lines_text
        looked = mark.looked_at.astimezone().strftime("%H:%M")
        assert lines[row].startswith(f"{RULE} ({looked}) ")
        new = lines[row + 1 :]
        assert any("After the restart, step 12." in line for line in new[:4])  # the first new entry, next
        assert not any("Before the restart" in line for line in new)
        digest = lines[row - 3 : row]
        assert digest[0].startswith("  Away 20 min (last looked ") and "1 tool call, none failed" in digest[0]
        assert digest[1] == "  Approvals: none decided · none waiting"
        assert digest[2].startswith("  Agent: “After the restart, step 39.”")
        # The view opens there, following paused: the rule near the top, not the end of the session.
        assert not view.following
        assert view.scroll_y <= row - 3 < view.scroll_y + view.scrollable_content_region.height
        assert screen.query_one("#follow-hint").has_class("-shown")  # "End to follow"


async def test_the_digest_names_a_decline_made_elsewhere_and_its_comment(
    client: Backend, agent: HarnessSession, live_server: LiveServer, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    await look_then_quit(client, marks, agent.session_id, "Looking at the test first.")
    asking = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf dist"}))
    [approval_id] = await _wait_pending(live_server.url, live_server.token, 1)
    dana = live_server.add_operator("dana")
    async with await connect(Settings(live_server.url, dana, server_kind="local")) as other:
        await other.decline(approval_id, "not [red]now[/red]")  # another client, another operator's screen
    assert (await asyncio.wait_for(asking, 30)).decision == "deny"
    await agent.narrate(3, ["Leaving dist alone."])

    app = PreloopApp(client, start_session_id=agent.session_id, refresh_interval=0, marks=MarkStore(marks))
    async with app.run_test(size=SIZE) as pilot:
        _, view, row = await reattach(pilot, app, "Leaving dist alone.")
        digest = view.lines_text[:row]
        approvals = next(line for line in digest if line.startswith("  Approvals: "))
        # Who (as far as the server says), and the comment as typed: literal, styling nothing.
        assert "✗ Bash declined by dana: “not [red]now[/red]”" in approvals
        assert approvals.endswith("· none waiting")


async def test_what_arrives_while_the_operator_watches_gets_no_rule(
    client: Backend, agent: HarnessSession, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    await look_then_quit(client, marks, agent.session_id, "Looking at the test first.")
    # This app's clock is a little behind the server's: as if the operator had been watching for longer
    # than the margin allowed for the server's clock (LIVE_SKEW), without the test waiting that long.
    offset = [-(LIVE_SKEW + timedelta(seconds=2))]
    app = PreloopApp(
        client, start_session_id=agent.session_id, refresh_interval=0, marks=MarkStore(marks),
        clock=clock_of(offset),
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        view = view_of(screen)
        for i in range(2, 30):
            await agent.narrate(i, [f"Seen as it came, step {i}."])
        await until(pilot, lambda: any("step 29." in line for line in view.lines_text), "the new steps")
        await pilot.pause(0.3)
        assert rule_row(view) is None and view.reader.rule_at is None
        assert view.following  # still at the end, as before


async def test_events_that_came_while_the_terminal_was_elsewhere_are_new(
    client: Backend, agent: HarnessSession, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    offset = [timedelta(minutes=-10)]
    app = PreloopApp(
        client, start_session_id=agent.session_id, refresh_interval=0, marks=MarkStore(marks),
        clock=clock_of(offset),
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        view = view_of(screen)
        looking = screen.last_looked.looking
        ticks = [0]
        tick = looking.tick

        def counted_tick() -> None:
            tick()
            ticks[0] += 1

        looking.tick = counted_tick  # type: ignore[method-assign]

        async def ticked(times: int) -> None:
            target = ticks[0] + times
            await until(pilot, lambda: ticks[0] >= target, f"{times} more looks at the screen")

        await ticked(1)  # a tick with the focus: what is on screen was looked at
        app.post_message(events.AppBlur())  # the operator goes to another window
        await until(pilot, lambda: not app.app_focus, "the blur")
        left = MarkStore(marks).get(agent.session_id)  # written at once, on the blur
        assert left is not None
        for i in range(2, 8):
            await agent.narrate(i, [f"While you were away, step {i}."])
        await until(pilot, lambda: any("step 7." in line for line in view.lines_text), "the new steps")
        await ticked(2)  # ticks pass: on screen, but nobody looked
        assert MarkStore(marks).get(agent.session_id) == left
        [(_, _, news)] = app.followed_news()
        assert news.new is not None and news.new > 0  # the inbox and the list count them as new
        assert rule_row(view) is None  # nothing marked yet: the operator is not back

        offset[0] = timedelta(0)  # ten minutes later, back at the terminal
        app.post_message(events.AppFocus())
        await until(pilot, lambda: rule_row(view) is not None, "the rule on coming back")
        row = rule_row(view)
        assert row is not None
        lines = view.lines_text
        assert any("While you were away, step 2." in line for line in lines[row + 1 : row + 4])
        assert lines[row - 3].startswith("  Away 10 min")
        assert not view.following

        def moved_on() -> bool:  # looking again: the mark moves to what is on screen now, written when due
            back = MarkStore(marks).get(agent.session_id)
            return back is not None and left.place.before(back.place)

        await until(pilot, moved_on, "the mark to move on", seconds=10)


async def test_a_mark_older_than_the_loaded_tail_puts_the_rule_at_the_top_with_the_gap(
    client: Backend, agent: HarnessSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = tmp_path / "marks"
    mark = await look_then_quit(client, marks, agent.session_id, "Looking at the test first.")
    for i in range(2, 22):  # twenty steps while the app is closed
        await agent.narrate(i, [f"Much later, step {i}."])
    monkeypatch.setattr(attach, "HISTORY_EVENTS", 12)  # a long session opens at its newest events only

    app = PreloopApp(client, start_session_id=agent.session_id, refresh_interval=0, marks=MarkStore(marks))
    async with app.run_test(size=SIZE) as pilot:
        screen, view, row = await reattach(pilot, app, "Much later, step 21.")
        lines = view.lines_text
        gap = re.search(r"· ([\d,]+) events? between not loaded", lines[row])
        assert gap is not None, lines[row]
        first = screen.core.timeline.get(screen.core.timeline.first_id)
        assert first is not None and first.first_place is not None and mark.place.number is not None
        assert int(gap[1]) == first.first_place.number - mark.place.number - 1  # by the server's numbers
        assert "from the loaded part only" in lines[row - 3]
        away = next(i for i, line in enumerate(lines) if line.startswith("  Away"))
        assert away <= 1 and "Much later" not in "".join(lines[:away])  # at the top (under "not loaded")
