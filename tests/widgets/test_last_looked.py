""" "New since you last looked" on a timeline view, in a small host wired as the attach screen wires it:
the rule above the first new entry, the view opening there with following paused, the digest above it
after a while away, nothing when nothing is new, and the mark following what is on screen."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from textual import on
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

from client.events import Event
from client.marks import Mark, MarkStore
from client.session import SessionCore
from client.timeline import Place
from tests.tui.fakes import NOW, Script, ago, frozen_clock
from tests.widgets.memory_host import SID, tool_calls
from widgets.last_looked import LastLooked
from widgets.timeline_view import TimelineView

RULE = "── new since you last looked"


class Host(App[None]):
    """A timeline view and its :class:`LastLooked`, the way the attach screen holds them."""

    def __init__(self, marks: MarkStore) -> None:
        super().__init__()
        self.core = SessionCore(SID, clock=frozen_clock)
        self.marks = marks
        self.ticks = [0.0]

    def compose(self) -> ComposeResult:
        yield TimelineView(self.core.timeline, id="timeline")

    def on_mount(self) -> None:
        self.last = LastLooked(
            self.view, self.core, self.marks, clock=frozen_clock, monotonic=lambda: self.ticks[0]
        )

    @on(TimelineView.Resized)
    def _resized(self) -> None:
        self.last.relaid()

    @property
    def view(self) -> TimelineView:
        return self.query_one(TimelineView)

    def feed(self, events: list[Event]) -> None:
        """What the attach screen does with a batch: the core applies it, the view and the mark follow."""
        change = self.core.apply_events(events)
        if change.timeline is not None:
            self.view.show(change.timeline)
        self.last.changed()


def history(count: int = 40) -> tuple[Script, list[Event]]:
    """``count`` finished tool calls, one event a second, half an hour ago."""
    ev = Script(SID, ago(minutes=30))
    return ev, tool_calls(ev, 1, count)


def place_of(events: list[Event], seq: int) -> Place:
    event = events[seq - 1]
    return Place(str(event.seq), event.at, event.seq)


async def settle(pilot: Pilot[Any]) -> None:
    await pilot.pause(0.05)
    app = pilot.app
    assert isinstance(app, Host)
    await pilot.pause()


async def test_coming_back_opens_at_the_rule_with_the_digest_above_it(tmp_path: Path) -> None:
    _, events = history()
    marks = MarkStore(tmp_path)
    looked = NOW - timedelta(minutes=20)
    marks.put(SID, Mark(place_of(events, 40), looked))  # seen up to the 20th tool call
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events)
        await settle(pilot)
        view = app.view
        text = view.lines_text
        rule = next(i for i, line in enumerate(text) if line.startswith(RULE))
        assert f"({looked.astimezone().strftime('%H:%M')})" in text[rule]
        assert "make step-21" in text[rule + 1] and "make step-20" in text[rule - 4]
        digest = text[rule - 3 : rule]  # three lines: nothing happened but 20 tool calls
        assert (
            digest[0].startswith("  Away 20 min (last looked ") and "20 tool calls, none failed" in digest[0]
        )
        assert digest[1] == "  Approvals: none decided · none waiting"
        assert digest[2].startswith("  Agent: no commentary since")
        entry = view.cursor_entry
        assert entry is not None and entry.seq == 41 and view.reader.rule_at == entry.id
        assert not view.following  # the operator reads on from where they left
        assert view.scroll_y > 0 and view.scroll_y <= rule  # the rule near the top, not the end


async def test_nothing_new_shows_no_rule_and_follows_the_end(tmp_path: Path) -> None:
    _, events = history()
    marks = MarkStore(tmp_path)
    marks.put(SID, Mark(place_of(events, 80), NOW - timedelta(hours=1)))
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events)
        await settle(pilot)
        assert not any(line.startswith(RULE) for line in app.view.lines_text)
        assert app.view.following and app.view.reader.rule_at is None


async def test_what_arrives_while_watching_gets_no_rule(tmp_path: Path) -> None:
    ev, events = history(10)
    marks = MarkStore(tmp_path)
    marks.put(SID, Mark(place_of(events, 20), NOW - timedelta(minutes=5)))
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events)
        await settle(pilot)
        ev.at = NOW + timedelta(seconds=30)  # the agent goes on while the operator watches
        app.feed(tool_calls(ev, 11, 2))
        await settle(pilot)
        assert not any(line.startswith(RULE) for line in app.view.lines_text)
        assert app.view.following


async def test_the_mark_follows_what_is_on_screen_only_forward_and_only_while_looking(tmp_path: Path) -> None:
    _, events = history()
    marks = MarkStore(tmp_path)
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events)
        await settle(pilot)
        app.last.tick(looking=False)  # the terminal does not have the focus: nothing was seen
        assert app.last.looking.mark is None
        app.last.tick(looking=True)
        seen = app.last.looking.mark
        assert seen is not None and seen.place.number == 80  # following the end: the newest was on screen
        app.view.action_cursor_first()
        await settle(pilot)
        app.last.tick(looking=True)
        assert app.last.looking.mark is not None and app.last.looking.mark.place == seen.place
        app.ticks[0] = 5.0
        app.last.tick(looking=True)
        assert MarkStore(tmp_path).get(SID) is not None  # written when due: a crash keeps it
        app.last.leave()
        written = MarkStore(tmp_path).get(SID)
        assert written is not None and written.place.number == 80


async def test_the_rest_of_a_backlog_arriving_later_brings_the_rule_near_the_top(tmp_path: Path) -> None:
    _, events = history()
    marks = MarkStore(tmp_path)
    marks.put(SID, Mark(place_of(events, 40), NOW - timedelta(minutes=20)))
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events[:42])  # the first new entry is the last one so far: the rule can only go low
        await settle(pilot)
        app.feed(events[42:])  # the rest of the backlog, the operator has not moved
        await settle(pilot)
        rule = next(i for i, line in enumerate(app.view.lines_text) if line.startswith(RULE))
        assert app.view.scroll_y == rule - 3 - 1  # the digest's three lines and one line before them


async def test_a_view_the_operator_moved_stays_when_more_arrives(tmp_path: Path) -> None:
    _, events = history()
    marks = MarkStore(tmp_path)
    marks.put(SID, Mark(place_of(events, 40), NOW - timedelta(minutes=20)))
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events[:60])
        await settle(pilot)
        app.view.action_cursor_first()  # the operator goes to read the beginning
        await settle(pilot)
        app.feed(events[60:])
        await settle(pilot)
        assert app.view.scroll_y == 0


async def test_a_view_opened_at_the_rule_keeps_the_newest_entry_on_screen_when_its_window_shrinks(
    tmp_path: Path,
) -> None:
    # A stress run: the view opened at the rule (clamped to the end), then lines under the timeline
    # ("following paused", the notes line, the keys line) each took a line of its window; one laid out
    # after the last reopen left the view one line short and the last entry ("run failed") cut off.
    _, events = history()
    marks = MarkStore(tmp_path)
    marks.put(SID, Mark(place_of(events, 76), NOW - timedelta(minutes=1)))  # two new entries: clamped
    app = Host(marks)
    async with app.run_test(size=(100, 24)) as pilot:
        app.last.visit()
        app.feed(events)  # opens at the rule; a reopen waits for the next refresh
        assert app.last.placing
        await settle(pilot)
        assert not app.last.placing and app.view.scroll_y == app.view.max_scroll_y
        await app.mount(Static("✉ Notes (2)", id="notes"))  # a line the view is not told of takes a line
        await settle(pilot)
        view = app.view
        assert not app.last.placing
        assert view.scroll_y == view.max_scroll_y  # the newest entry is on screen, not cut off
        assert "make step-40" in view.lines_text[-1]
