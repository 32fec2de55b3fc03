"""The timeline's entry cursor, find and views, in a small host app wired as a screen wires them."""

from __future__ import annotations

from typing import Any

import pytest
from rich.segment import Segment
from textual.filter import Monochrome
from textual.geometry import Region
from textual.pilot import Pilot

from client.events import Event
from client.timeline import TextEntry, Timeline, ToolEntry
from client.views import View
from tests.tui.fakes import Script, ago
from tests.widgets.feed import feed
from tests.widgets.memory_host import SID, MemoryHost, incident_script, settle, tool_calls
from widgets.timeline_render import CURSOR_MARK
from widgets.timeline_view import TimelineView


def rows(view: TimelineView) -> list[list[Segment]]:
    """What the view paints on each visible row, after the app's line filters (NO_COLOR among them)."""
    strips = view.render_lines(Region(0, 0, view.size.width, view.size.height))
    return [list(strip) for strip in strips]


def row_text(row: list[Segment]) -> str:
    return "".join(segment.text for segment in row)


def screen_text(view: TimelineView) -> list[str]:
    return [row_text(row).rstrip() for row in rows(view)]


def cursor_rows(view: TimelineView) -> list[str]:
    return [text for text in screen_text(view) if text.startswith(CURSOR_MARK)]


def entry_text(view: TimelineView, entry_id: int | None) -> str:
    assert entry_id is not None
    entry = view.timeline.get(entry_id)
    assert isinstance(entry, ToolEntry)
    return entry.args_summary


async def start(pilot: Pilot[Any], events: list[Event]) -> TimelineView:
    app = pilot.app
    assert isinstance(app, MemoryHost)
    feed(app.view, events)
    await settle(pilot)
    return app.view


# ---------------------------------------------------------------------------------------------- cursor


async def test_the_cursor_follows_new_output_until_moved_up_and_end_resumes() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    async with app.run_test(size=(60, 12)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 30))
        assert view.following and entry_text(view, view.cursor_id) == "make step-29"
        assert cursor_rows(view)[-1].startswith("▌✓ Bash  make step-29")  # drawn, on the newest line

        feed(view, tool_calls(ev, 30, 2))
        await settle(pilot)
        assert entry_text(view, view.cursor_id) == "make step-31", "following moves the cursor"

        moves = app.cursor_moves
        await pilot.press("k", "up")
        assert entry_text(view, view.cursor_id) == "make step-29"
        assert app.cursor_moves == moves + 2
        assert not view.following, "moving the cursor up pauses following"
        scroll = view.scroll_y
        feed(view, tool_calls(ev, 32, 5))
        await settle(pilot)
        assert entry_text(view, view.cursor_id) == "make step-29", "new output does not move it"
        assert view.scroll_y == scroll and view.unseen == 5
        assert any(text.startswith("▌✓ Bash  make step-29") for text in screen_text(view))

        await pilot.press("j")
        assert entry_text(view, view.cursor_id) == "make step-30" and not view.following
        await pilot.press("end")
        assert view.following and view.at_bottom and view.unseen == 0
        assert entry_text(view, view.cursor_id) == "make step-36"
        feed(view, tool_calls(ev, 37, 1))
        await settle(pilot)
        assert entry_text(view, view.cursor_id) == "make step-37" and view.at_bottom

        await pilot.press("g")
        assert entry_text(view, view.cursor_id) == "make step-0" and view.scroll_y == 0
        assert not view.following
        await pilot.press("G")
        assert entry_text(view, view.cursor_id) == "make step-37" and view.following


async def test_down_to_the_newest_entry_resumes_following() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    async with app.run_test(size=(60, 12)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 30))
        await pilot.press("k", "k")
        assert not view.following
        await pilot.press("j", "j")
        assert entry_text(view, view.cursor_id) == "make step-29"
        assert view.following
        feed(view, tool_calls(ev, 30, 1))
        await settle(pilot)
        assert entry_text(view, view.cursor_id) == "make step-30"


async def test_the_cursor_steps_through_an_entry_taller_than_the_window_line_by_line() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    long_text = " ".join(f"word{i}" for i in range(200))
    events = [
        ev("model.delta", run_id="r", iteration=1, text=long_text),
        ev("model.step", run_id="r", iteration=1, phase="commentary", tool_calls=1),
        *tool_calls(ev, 0, 3),
    ]
    async with app.run_test(size=(40, 10)) as pilot:
        view = await start(pilot, events)
        await pilot.press("g")
        commentary = view.cursor_id
        assert isinstance(view.timeline.get(commentary or 0), TextEntry)
        tall = len([line for line in view.lines_text if line.startswith("│")])
        assert tall > view.size.height
        for _ in range(tall - view.size.height):
            await pilot.press("j")
        assert view.cursor_id == commentary, "still reading the tall entry"
        assert view.scroll_y == tall - view.size.height
        await pilot.press("j")
        assert entry_text(view, view.cursor_id) == "make step-0"


async def test_page_keys_scroll_and_bring_the_cursor_along_only_when_it_left() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    async with app.run_test(size=(60, 12)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 40))
        await pilot.press("pageup")
        assert not view.following and not view.at_bottom
        cursor = view.cursor_id
        assert cursor is not None and len(cursor_rows(view)) == 1, "the cursor is on screen"
        await pilot.press("pageup")
        assert view.cursor_id != cursor and len(cursor_rows(view)) == 1
        feed(view, tool_calls(ev, 40, 2))
        await settle(pilot)
        assert view.unseen == 2
        await pilot.press("pagedown", "pagedown", "pagedown")
        assert view.at_bottom and view.following, "paging back to the end resumes following"
        assert entry_text(view, view.cursor_id) == "make step-41"


async def test_a_click_highlights_the_entry_under_the_mouse() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    async with app.run_test(size=(60, 12)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 5))
        await pilot.click(TimelineView, offset=(3, 1))
        assert entry_text(view, view.cursor_id) == "make step-1"
        assert not view.following
        assert view.cursor_text().startswith("✓ Bash  make step-1  ok")


async def test_the_cursor_is_drawn_only_while_the_timeline_has_the_focus_or_a_find_is_open() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        assert cursor_rows(view)
        view.blur()
        await pilot.pause()
        assert not cursor_rows(view)
        await pilot.press("slash", *"orders")
        assert cursor_rows(view), "the current match's entry is marked while typing"


async def test_cursor_text_is_the_whole_entry_as_read() -> None:
    app = MemoryHost()
    async with app.run_test(size=(50, 20)) as pilot:
        view = await start(pilot, incident_script())
        text = next(entry for entry in view.timeline if isinstance(entry, TextEntry))
        assert view.move_cursor_to(text.id)
        assert view.cursor_text() == text.text.strip()  # not wrapped, not cut
        denied = [e for e in view.timeline if isinstance(e, ToolEntry) and e.result_summary]
        assert view.move_cursor_to(denied[0].id)
        assert view.cursor_text() == "✗ Bash  pytest -k checkout  failed 8.1s  — exit 1: 2 failed, 14 passed"
        assert not view.move_cursor_to(10_000)


# ------------------------------------------------------------------------------------------------ find


async def test_find_with_no_hit_says_so_and_leaves_the_cursor_where_it_was() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("k", "k")
        before = view.cursor_id
        await pilot.press("slash", *"staging")
        assert view.cursor_id != before
        await pilot.press(*"-zebra")
        assert str(app.bar.status) == "no match"
        assert "no match" in row_text(list(app.bar.query_one("#find-count").render_line(0)))
        assert view.cursor_id == before, "no match: back where typing started"
        assert not any(s.style and s.style.underline for row in rows(view) for s in row)
        await pilot.press("enter", "down", "up")  # nothing to go to: nothing moves, nothing breaks
        assert view.cursor_id == before


async def test_find_moves_between_matches_wrapping_and_escape_keeps_the_position() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("g", "slash", *"staging")
        assert str(app.bar.status) == "1 / 5"
        first = view.cursor_id
        await pilot.press("enter")
        assert str(app.bar.status) == "2 / 5"
        await pilot.press("down", "down", "down")
        assert str(app.bar.status) == "5 / 5"
        await pilot.press("down")
        assert str(app.bar.status) == "1 / 5" and view.cursor_id == first, "wraps to the first"
        await pilot.press("up")
        assert str(app.bar.status) == "5 / 5"
        at = view.cursor_id
        await pilot.press("escape")
        assert not app.bar.is_open and view.has_focus
        assert view.cursor_id == at and view.reader.find_status.total == 0
        assert not any(s.style and s.style.underline for row in rows(view) for s in row)


async def test_typing_starts_from_the_newest_match_while_following() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("slash", *"bump")
        assert str(app.bar.status) == "2 / 2", "the newest match first while following"
        await pilot.press("backspace", "backspace", "backspace", "backspace")
        assert view.reader.find_status.query == ""
        last = view.shown_ids[-1]
        assert view.cursor_id == last, "an emptied query brings the cursor back"


async def test_find_unfolds_the_folded_commentary_that_holds_the_match() -> None:
    app = MemoryHost(collapse_commentary=True)
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        folded = view.lines_text
        assert sum(line.startswith("▸ commentary") for line in folded) == 2
        assert not any("reload the fixture" in line for line in folded)
        await pilot.press("slash", *"reload the fixture")
        assert str(app.bar.status) == "1 / 1"
        entry = view.cursor_entry
        assert isinstance(entry, TextEntry) and "reload the fixture" in entry.text
        unfolded = view.lines_text
        assert sum(line.startswith("▸ commentary") for line in unfolded) == 1
        assert any(line.startswith("│ ") and "reload the fixture" in line for line in unfolded)
        highlighted = [s.text for row in rows(view) for s in row if s.style and s.style.reverse]
        assert "".join(highlighted) == "reload the fixture"
        # The match moves elsewhere: the entry find opened folds back.
        await pilot.press("ctrl+a", "ctrl+k", *"conftest")
        assert str(app.bar.status) == "1 / 1"
        assert view.cursor_text().startswith("✓ Edit  tests/conftest.py")
        assert view.lines_text == folded
        # Escape on a match inside folded commentary keeps it open to read.
        await pilot.press("ctrl+a", "ctrl+k", *"wall-clock", "escape")
        assert any(line.startswith("│ ") and "wall-clock" in line for line in view.lines_text)
        assert view.collapse_commentary and view.has_focus
        await pilot.press("c", "c")  # folding again folds it too
        assert view.lines_text == folded


async def test_a_search_for_markup_finds_the_literal_text_and_styles_nothing() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("slash", *"[red]")
        assert str(app.bar.status) == "2 / 2"
        painted = rows(view)
        shown = [row_text(row) for row in painted]
        assert sum("Bump the version [red]now[/red]." in line for line in shown) == 2
        marked = [
            s.text for row in painted for s in row if s.style and (s.style.underline or s.style.reverse)
        ]
        assert marked.count("[red]") == 2 and set(marked) == {"[red]"}
        for row in painted:
            for segment in row:
                if "now" in segment.text:  # the agent's "[red]" made nothing red
                    color = segment.style.color if segment.style else None
                    assert color is None or color.name != "red"


async def test_new_output_updates_the_count_without_moving_the_cursor() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 10))
        await pilot.press("k", "k", "slash", *"step-1")
        assert str(app.bar.status) == "1 / 1"
        at = view.cursor_id
        feed(view, tool_calls(ev, 10, 3))  # step-10, step-11, step-12
        await settle(pilot)
        assert str(app.bar.status) == "1 / 4" and view.cursor_id == at


# ----------------------------------------------------------------------------------------------- views


async def test_a_view_shows_only_its_entries_and_keeps_following() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("f")
        assert view.view is View.PROBLEMS
        assert [line.split("  ")[0] for line in view.lines_text] == [
            "✗ Bash",
            "✗ approval declined",
            "✉ note undeliverable ⊗",
            "✗ run failed",
        ]
        assert view.following and view.cursor_entry is not None
        assert view.cursor_id == view.shown_ids[-1]
        # A tool call that fails later appears in place; following moves the cursor to the newest.
        ev = Script(SID, ago(minutes=1))
        ev.seq = view.timeline.last_seq
        feed(
            view,
            [
                ev("tool.started", run_id="r2", call_id="z1", name="Bash", args_summary="make deploy"),
                ev("tool.started", run_id="r2", call_id="z2", name="Bash", args_summary="make lint"),
                ev("tool.completed", run_id="r2", call_id="z2", name="Bash", status="ok"),
            ],
        )
        await settle(pilot)
        assert len(view.lines_text) == 4, "running and passing calls are not problems"
        feed(view, [ev("tool.completed", run_id="r2", call_id="z1", name="Bash", status="error")])
        await settle(pilot)
        assert view.lines_text[-1].startswith("✗ Bash  make deploy  failed")
        assert entry_text(view, view.cursor_id) == "make deploy"

        await pilot.press("f")
        assert view.view is View.STEERING
        assert all(line.startswith(("✉ note", "⏸ approval", "✗ approval")) for line in view.lines_text)
        await pilot.press("f")
        assert view.view is View.TOOLS
        assert all(line.startswith(("✓", "✗", "◌")) for line in view.lines_text)
        await pilot.press("f")
        assert view.view is View.EVERYTHING and len(view.lines_text) > 15


async def test_find_works_inside_a_view() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("slash", *"staging")
        assert view.reader.find_status.total == 5  # two notes, two approval lines and a commentary
        await pilot.press("escape", "f", "f")
        assert view.view is View.STEERING
        await pilot.press("slash")
        assert str(app.bar.status) == "4 / 4", "the commentary is not in this view"
        await pilot.press("down")
        assert str(app.bar.status) == "1 / 4" and view.cursor_id == view.shown_ids[0]


async def test_a_view_with_nothing_in_it_says_so() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost()
    async with app.run_test(size=(100, 12)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 12))
        await pilot.press("f")
        assert view.lines_text == ["∅ no problems so far · view: problems only · 12 entries in other views"]
        assert screen_text(view)[0].startswith("∅ no problems so far")
        assert view.cursor_id is None and view.cursor_text() == ""
        assert not view.next_problem() and not view.previous_problem()
        await pilot.press("j", "k", "g", "G", "pageup")  # nothing to move to: nothing breaks
        await pilot.press("slash", *"step")
        assert str(app.bar.status) == "no match"


# -------------------------------------------------------------------------------------------- problems


async def test_problem_jumps_move_the_cursor_in_any_view() -> None:
    app = MemoryHost()
    async with app.run_test(size=(100, 12)) as pilot:
        view = await start(pilot, incident_script())
        await pilot.press("g")
        seen: list[str] = []
        while view.next_problem():
            seen.append(view.cursor_text().split("  ")[0])
        assert seen == ["✗ Bash", "✗ approval declined", "✉ note undeliverable ⊗", "✗ run failed"]
        assert view.following, "the last problem is the newest entry: following again"
        assert view.previous_problem()
        assert view.cursor_text().startswith("✉ note undeliverable")
        # The tools view holds one problem: the failed call.
        await pilot.press("f", "f", "f")
        assert view.view is View.TOOLS
        await pilot.press("g")
        assert view.next_problem() and view.cursor_text().startswith("✗ Bash  pytest")
        assert not view.next_problem()
        assert view.cursor_text().startswith("✗ Bash  pytest"), "no later problem: it stays"


async def test_a_problem_jump_brings_an_off_screen_entry_into_sight() -> None:
    ev = Script(SID, ago(minutes=5))
    events = tool_calls(ev, 0, 5)
    events.append(ev("tool.started", run_id="r1", call_id="bad", name="Bash", args_summary="make boom"))
    events.append(ev("tool.completed", run_id="r1", call_id="bad", name="Bash", status="error"))
    events.extend(tool_calls(ev, 5, 40))
    app = MemoryHost()
    async with app.run_test(size=(60, 12)) as pilot:
        view = await start(pilot, events)
        assert view.previous_problem()
        assert any(text.startswith("▌✗ Bash  make boom") for text in screen_text(view))
        assert not view.following


# ------------------------------------------------------------------------------------------- no colour


async def test_cursor_and_matches_are_visible_without_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = MemoryHost()
    assert app.no_color
    async with app.run_test(size=(100, 20)) as pilot:
        view = await start(pilot, incident_script())
        assert any(isinstance(f, Monochrome) for f in app.get_line_filters())
        await pilot.press("slash", *"staging", "up", "up", "up")  # 5 / 5 → 2 / 5, the note delivered
        assert str(app.bar.status) == "2 / 5"
        painted = rows(view)
        for row in painted:  # no colour reaches the screen: only greys
            for segment in row:
                for color in (segment.style.color, segment.style.bgcolor) if segment.style else ():
                    if color is not None and color.triplet is not None:
                        r, g, b = color.triplet
                        assert r == g == b
        current = [row for row in painted if row_text(row).startswith(CURSOR_MARK)]
        assert len(current) == 1 and "note delivered" in row_text(current[0])
        body = [s for s in current[0][1:] if s.text.strip()]
        assert all(s.style and s.style.bold for s in body), "the cursor's entry is bold"
        reversed_ = [s.text for s in current[0] if s.style and s.style.reverse]
        assert reversed_ == ["staging"], "the current match is in reverse"
        underlined = [s.text for row in painted for s in row if s.style and s.style.underline]
        assert underlined.count("staging") >= 3, "the other matches are underlined"


async def test_a_query_matching_thousands_of_entries_counts_them_and_wraps() -> None:
    ev = Script(SID, ago(minutes=5))
    app = MemoryHost(Timeline(max_entries=5_000))
    async with app.run_test(size=(80, 12)) as pilot:
        view = await start(pilot, tool_calls(ev, 0, 4_000))
        await pilot.press("slash", *"make")
        assert str(app.bar.status) == "4000 / 4000"
        await pilot.press("down")
        assert str(app.bar.status) == "1 / 4000" and view.scroll_y == 0
