"""The operator's memory on the attach screen: find (``/``), views (``f``), problem jumps (``]`` / ``[``) and
copy (``y``), against the real local control plane over loopback with a harness agent.

Each test drives the real app as an operator would (Escape out of the note box, then the keys) and checks
what the screen shows. None of these keys may act from the note box, where every key is text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from textual.widgets import Static

from client.backends.base import Backend
from client.views import View
from server.harness_client import HarnessSession
from tests.conftest import LiveServer, said
from tests.tui.test_pilot import attached, footer_actions, until
from tests.tui.test_type_ahead import PERSON, SLOW, TypingClock, on_top, press_alone, type_keys
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.sessions import SessionsScreen
from widgets.find_bar import FindBar

SIZE = (120, 32)


@pytest.fixture
async def agent(live_server: LiveServer) -> AsyncIterator[HarnessSession]:
    """A session with commentary, a tool call that worked, one that failed, more commentary, another
    failure and a last call that worked: two problems, with plain entries around them."""
    async with live_server.harness() as harness:
        session = await harness.start_session(agent_name="builder", cwd="/work/repo", title="Fix the build")
        await session.run_started("Fix the failing test")
        await session.narrate(1, ["Looking at the test first. ", "The fixture reads a stale clock."])
        ok = await session.tool_started("Read", {"path": "tests/test_checkout.py"})
        await session.tool_completed(ok, "Read", duration_ms=40)
        bad = await session.tool_started("Bash", {"command": "pytest -k checkout"})
        await session.tool_completed(bad, "Bash", status="error", result_summary="exit 1: 2 failed")
        await session.narrate(2, ["Pinning the clock in the fixture, then running the suite again."])
        worse = await session.tool_started("Bash", {"command": "make migrate"})
        await session.tool_completed(worse, "Bash", status="error", result_summary="database locked")
        last = await session.tool_started("Edit", {"path": "tests/conftest.py"})
        await session.tool_completed(last, "Edit", duration_ms=12)
        yield session


def bound(app: PreloopApp) -> set[str]:
    """The actions the screen's keys can run now, listed in the keys line or not."""
    return {str(active.binding.action).split("(")[0] for active in app.screen.active_bindings.values()}


def listed(app: PreloopApp) -> set[str]:
    """The actions the keys line lists now (the keys a user can see), without their parameters."""
    return {action.split("(")[0] for action in footer_actions(app)}


def bar_of(screen: AttachScreen) -> FindBar:
    return screen.body.pane.find_bar


def count_text(screen: AttachScreen) -> str:
    return str(bar_of(screen).query_one("#find-count", Static).content)


def view_line(screen: AttachScreen) -> str:
    line = screen.body.pane.query_one("#view-line", Static)
    return str(line.content) if line.display else ""


def folded(screen: AttachScreen, start: str) -> bool:
    """Whether the narration that starts with ``start`` is shown folded (one ``▸ commentary`` line)."""
    lines = [line for line in screen.view.lines_text if start in line]
    return bool(lines) and all("▸ commentary" in line for line in lines)


def cursor_text(screen: AttachScreen) -> str:
    return screen.view.cursor_text()


async def out_of_the_box(pilot: Any, app: PreloopApp) -> AttachScreen:
    """Attach, wait for the whole scripted session, and leave the note box (the timeline has the focus)."""
    screen = await attached(pilot, app)
    await until(
        pilot, lambda: any("tests/conftest.py" in line for line in screen.view.lines_text), "last call"
    )
    await pilot.press("escape")
    await until(pilot, lambda: screen.view.has_focus, "the timeline focused")
    return screen


async def find(pilot: Any, screen: AttachScreen, query: str) -> None:
    await pilot.press("slash")
    await until(pilot, lambda: screen.body.pane.finding, "the find line open, with the focus")
    await pilot.press(*query)
    await until(pilot, lambda: bar_of(screen).status.query == query, f"the find for {query!r}")


async def test_find_with_no_hit_says_so_and_escape_keeps_the_place(
    client: Backend, agent: HarnessSession
) -> None:
    """``/`` opens the find line at the bottom; a word that is nowhere says "no match" and the highlighted
    entry stays; Escape closes the line (not the screen) and gives the timeline the focus back."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await out_of_the_box(pilot, app)
        before = screen.view.cursor_id
        await find(pilot, screen, "zebra")
        assert count_text(screen) == "no match"
        assert bar_of(screen).query_one("#find-count").has_class("-none")
        assert screen.view.cursor_id == before
        assert bar_of(screen).region.y + 1 == screen.body.region.bottom  # the last line of the timeline
        await pilot.press("escape")
        await until(pilot, lambda: not bar_of(screen).is_open, "the find line closed")
        assert app.screen is screen and screen.view.has_focus and screen.view.cursor_id == before


async def test_find_steps_through_matches_and_unfolds_a_folded_commentary(
    client: Backend, agent: HarnessSession
) -> None:
    """With the commentary folded (``c``), "clock" is in both narrations: the newest is current ("2 / 2"),
    its narration shown whole; ↑ goes to the first (which unfolds, and the second folds back), Enter and ↓
    wrap round; Escape closes the line on the match, which stays open and highlighted."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await out_of_the_box(pilot, app)
        await pilot.press("c")
        await until(pilot, lambda: folded(screen, "Pinning the clock"), "the narration folded")
        assert folded(screen, "Looking at the test first")
        await find(pilot, screen, "clock")
        assert count_text(screen) == "2 / 2"
        assert "Pinning the clock" in cursor_text(screen)
        assert not folded(screen, "Pinning the clock")  # the current match, shown whole
        await pilot.press("up")
        await until(pilot, lambda: count_text(screen) == "1 / 2", "the previous match")
        assert "stale clock" in cursor_text(screen)
        assert not folded(screen, "Looking at the test first") and folded(screen, "Pinning the clock")
        assert any("stale clock" in line for line in screen.view.lines_text)
        await pilot.press("enter")
        await until(pilot, lambda: count_text(screen) == "2 / 2", "Enter: the next match")
        await pilot.press("down")
        await until(pilot, lambda: count_text(screen) == "1 / 2", "↓ wraps to the first")
        await pilot.press("escape")
        await until(pilot, lambda: not bar_of(screen).is_open, "closed")
        assert "stale clock" in cursor_text(screen) and screen.view.has_focus
        assert not folded(screen, "Looking at the test first")  # still open where the find stopped


async def test_a_search_for_markup_finds_the_literal_text(client: Backend, agent: HarnessSession) -> None:
    """The agent writes ``[red]`` in its narration: a search for ``[red]`` finds it once, and the line shows
    the brackets as typed (nothing turned red, nothing hidden)."""
    await agent.narrate(3, ["Set the banner to [red]alert[/red] before the release."])
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: any("[red]alert" in line for line in screen.view.lines_text), "narration")
        await pilot.press("escape")
        await find(pilot, screen, "[red]")
        assert count_text(screen) == "1 / 1"
        assert "[red]alert[/red]" in cursor_text(screen)
        assert any("[red]alert[/red]" in line for line in screen.view.lines_text)


async def test_views_cycle_with_f_and_an_empty_view_says_so(client: Backend, live_server: LiveServer) -> None:
    """On a session where nothing went wrong: ``f`` shows problems only (the line above the timeline names
    it, and the timeline says there are none), then steering only (none either), then tools only (the
    call), then everything again (the line goes)."""
    async with live_server.harness() as harness:
        calm = await harness.start_session(agent_name="builder", title="Quiet work")
        await calm.run_started("Read the docs")
        await calm.narrate(1, ["Looking at the test first."])
        call = await calm.tool_started("Read", {"path": "docs/cli.md"})
        await calm.tool_completed(call, "Read", duration_ms=5)
        app = PreloopApp(client, start_session_id=calm.session_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await attached(pilot, app)
            await until(pilot, lambda: any("docs/cli.md" in line for line in screen.view.lines_text), "call")
            await pilot.press("escape", "f")
            await until(pilot, lambda: screen.view.view is View.PROBLEMS, "problems only")
            await until(pilot, lambda: "problems only" in view_line(screen), "the view named")
            assert any("no problems so far" in line for line in screen.view.lines_text)
            assert screen.view.shown_ids == []
            await pilot.press("f")
            await until(pilot, lambda: "steering only" in view_line(screen), "steering only")
            assert any("no notes, approvals or decisions yet" in line for line in screen.view.lines_text)
            await pilot.press("f")
            await until(pilot, lambda: "tools only" in view_line(screen), "tools only")
            assert [line for line in screen.view.lines_text if line.strip()][-1].count("docs/cli.md") == 1
            assert not any("Looking at the test" in line for line in screen.view.lines_text)
            await pilot.press("f")
            await until(pilot, lambda: view_line(screen) == "", "everything: the line goes")
            assert any("Looking at the test" in line for line in screen.view.lines_text)
            await pilot.press("right_square_bracket")
            await until(pilot, lambda: "No problem in this session so far." in said(app), "none at all")


async def test_problem_jumps_in_any_view_and_say_when_there_is_none(
    client: Backend, agent: HarnessSession
) -> None:
    """From the newest entry: ``]`` finds nothing below and says so; ``[`` goes to the second failure,
    again to the first, and a third time says there is none above. In the problems view ``]`` goes on to
    the second failure, and past it says there is none (no hint to change a view that hides none); in the
    steering view (no failed call shown) it says the view hides them; in the tools view ``[`` from the
    newest call finds the second failure."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await out_of_the_box(pilot, app)
        await pilot.press("right_square_bracket")
        await until(pilot, lambda: "No later problem." in said(app), "nothing below")
        assert "tests/conftest.py" in cursor_text(screen)
        await pilot.press("left_square_bracket")
        await until(pilot, lambda: "make migrate" in cursor_text(screen), "the second failure")
        await pilot.press("left_square_bracket")
        await until(pilot, lambda: "pytest -k checkout" in cursor_text(screen), "the first failure")
        assert not screen.view.following  # a jump back pauses following, as reading back does
        await pilot.press("left_square_bracket")
        await until(pilot, lambda: "No earlier problem." in said(app), "nothing above")
        assert "pytest -k checkout" in cursor_text(screen)
        await pilot.press("f")
        await until(pilot, lambda: screen.view.view is View.PROBLEMS, "problems only")
        assert "pytest -k checkout" in cursor_text(screen)  # still on the same entry
        await pilot.press("right_square_bracket")
        await until(
            pilot, lambda: "make migrate" in cursor_text(screen), "the next failure among the problems"
        )
        await pilot.press("right_square_bracket")  # this view hides no problem: no hint to change it
        await pilot.pause(0.3)
        assert not any("f changes the view" in m for m in said(app))
        assert "make migrate" in cursor_text(screen)
        await pilot.press("f")  # steering only: this session has no notes or approvals
        await until(pilot, lambda: screen.view.view is View.STEERING, "steering only")
        await pilot.press("left_square_bracket")
        hint = "No earlier problem in steering only (f changes the view)."
        await until(pilot, lambda: hint in said(app), "the view hides them")
        await pilot.press("f")
        await until(pilot, lambda: screen.view.view is View.TOOLS, "tools only")
        await pilot.press("left_square_bracket")  # from the newest call shown
        await until(pilot, lambda: "make migrate" in cursor_text(screen), "the failure among the tools")


async def test_y_copies_the_highlighted_entry(
    client: Backend, agent: HarnessSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``y`` puts the highlighted entry, as read and whole, on the clipboard (``copy_to_clipboard``: OSC 52)
    and says so; it is offered only while the timeline has the focus. (Outside tmux: inside, the notice
    says where it went, tests/tui/test_copy_in_tmux.py.)"""
    monkeypatch.delenv("TMUX", raising=False)
    app = PreloopApp(client, start_session_id=agent.session_id)
    copied: list[str] = []
    original = app.copy_to_clipboard

    def record(text: str) -> None:
        copied.append(text)
        original(text)

    app.copy_to_clipboard = record  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        screen = await out_of_the_box(pilot, app)
        assert "copy_entry" in bound(app)
        await pilot.press("left_square_bracket")  # the failed migration
        await until(pilot, lambda: "make migrate" in cursor_text(screen), "the failure highlighted")
        await pilot.press("y")
        await until(pilot, lambda: bool(copied), "the copy")
        assert copied == [cursor_text(screen)]
        assert "Bash" in copied[0] and "make migrate" in copied[0] and "database locked" in copied[0]
        assert any(m.startswith("Copied ") and "make migrate" in m for m in said(app))
        assert app.clipboard == copied[0]
        await pilot.press("tab")  # to the side panels: y is not offered (nothing highlighted is shown)
        await until(pilot, lambda: not screen.view.has_focus, "the focus elsewhere")
        assert "copy_entry" not in bound(app)
        await pilot.press("y")
        await pilot.pause(0.2)
        assert len(copied) == 1


async def test_the_timeline_keys_are_text_in_the_note_box(client: Backend, agent: HarnessSession) -> None:
    """In the note box ``/ f ] [ y`` are letters of the note: no find line, no view change, no jump, no
    copy, and the keys line offers none of them; out of the box it offers find and views."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: any("tests/conftest.py" in line for line in screen.view.lines_text), "all")
        cursor = screen.view.cursor_id
        assert screen.composer.has_focus
        await pilot.press("slash", "f", "right_square_bracket", "left_square_bracket", "y")
        await pilot.pause(0.3)
        assert screen.composer.text == "/f][y"
        assert not bar_of(screen).is_open and screen.view.view is View.EVERYTHING
        assert screen.view.cursor_id == cursor and copied == [] and screen.composer.has_focus
        assert not {"find", "cycle_view", "next_problem", "previous_problem", "copy_entry"} & bound(app)
        await pilot.press("escape")
        await until(pilot, lambda: {"find", "cycle_view"} <= listed(app), "the keys listed")
        assert screen.composer.text == "/f][y"  # the draft stays


async def test_escape_closes_an_open_find_line_before_leaving_the_screen(
    client: Backend, agent: HarnessSession
) -> None:
    """The find line stays open when the operator moves into the timeline (its matches still marked);
    Escape there closes it first, and only the next Escape goes back to the sessions list."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await out_of_the_box(pilot, app)
        await find(pilot, screen, "Bash")
        screen.view.focus()  # (a click in the timeline)
        await until(pilot, lambda: screen.view.has_focus, "the timeline focused")
        assert bar_of(screen).is_open
        await pilot.press("escape")
        await until(pilot, lambda: not bar_of(screen).is_open, "the find line closed")
        assert app.screen is screen
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list")


async def test_narrow_with_the_notes_shown_offers_no_timeline_keys(
    client: Backend, agent: HarnessSession
) -> None:
    """Below 90 columns ``p`` puts the notes list in the timeline's place: find and views are not offered
    and do nothing until ``p`` brings the timeline back."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await out_of_the_box(pilot, app)
        await pilot.press("p")
        await until(pilot, lambda: screen.body.showing_notes, "the notes list")
        await until(pilot, lambda: "find" not in bound(app), "find not offered")
        await pilot.press("slash", "f")
        await pilot.pause(0.2)
        assert not bar_of(screen).is_open and screen.view.view is View.EVERYTHING
        await pilot.press("p")
        await until(pilot, lambda: "find" in listed(app), "find listed again")


@pytest.mark.type_ahead
async def test_a_decision_key_right_after_leaving_the_find_line_decides_nothing(
    client: Backend, agent: HarnessSession
) -> None:
    """The operator types "deploy" into the find line, Escape, and a ``d`` at typing pace (the query's
    rhythm): no decline box opens (the ``d`` is text); a ``d`` pressed alone after a pause does."""
    call = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}, ask=True))
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=agent.session_id, monotonic=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"])
        await type_keys(pilot, clock, ["slash"], SLOW)
        await until(pilot, lambda: screen.body.pane.finding, "the find line")
        await type_keys(pilot, clock, "deploy")
        await type_keys(pilot, clock, ["escape", "d"], PERSON)
        await pilot.pause(0.3)
        assert not isinstance(app.screen, DeclineCommentScreen) and not call.done()
        assert screen.composer.has_focus and screen.composer.text.endswith("d")  # a letter of the typing
        await type_keys(pilot, clock, ["escape"], SLOW)
        await press_alone(pilot, clock, "d")
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the comment box")
        await pilot.press("escape")
    await agent.end()
    await asyncio.wait_for(call, 10)


async def test_at_80_columns_an_approval_keeps_its_keys_and_help_in_the_keys_line(
    client: Backend, agent: HarnessSession
) -> None:
    """At 80 columns the keys line lists ``/ Find`` and ``f View`` while nothing waits; when an approval
    waits, its ``a`` / ``d`` take their room and ``? Help`` stays at the end, and ``/`` still finds."""
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await out_of_the_box(pilot, app)
        await until(pilot, lambda: {"find", "cycle_view", "app.help"} <= listed(app), "find and views listed")
        call = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}, ask=True))
        await until(pilot, lambda: {"approve", "decline", "app.help"} <= listed(app), "the approval's keys")
        assert not {"find", "cycle_view"} & listed(app)
        keys = list(app.screen.query("FooterKey"))
        assert all(key.region.right <= 80 for key in keys)  # ? Help included, not cut off
        await pilot.press("slash")
        await until(pilot, lambda: screen.body.pane.finding, "the find line, from its unlisted key")
        await agent.end()
        await asyncio.wait_for(call, 10)
