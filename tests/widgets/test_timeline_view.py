"""TimelineView in a small app: following output, collapsing narration, hostile text, the line cap."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from client.events import Event, event_from_dict
from client.timeline import Timeline
from tests.widgets.feed import feed
from widgets.timeline_view import TimelineView

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"


class Feed:
    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, type_: str, **fields: Any) -> Event:
        self.seq += 1
        return event_from_dict(
            {"seq": self.seq, "type": type_, "session_id": SID, "at": "2026-03-01T10:00:00Z", **fields}
        )

    def tools(self, count: int, start: int = 0) -> list[Event]:
        out: list[Event] = []
        for i in range(start, start + count):
            out.append(self("tool.started", call_id=f"c{i}", name="Bash", args_summary=f"echo {i}"))
        return out


class TimelineApp(App[None]):
    def __init__(self, timeline: Timeline | None = None, **view_args: Any) -> None:
        super().__init__()
        self.timeline = timeline if timeline is not None else Timeline()
        self.view_args = view_args

    def compose(self) -> ComposeResult:
        yield TimelineView(self.timeline, **self.view_args)

    def on_mount(self) -> None:
        self.query_one(TimelineView).focus()

    @property
    def view(self) -> TimelineView:
        return self.query_one(TimelineView)


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()


def screen_segments(view: TimelineView) -> list[Segment]:
    segments: list[Segment] = []
    for y in range(view.size.height):
        segments.extend(view.render_line(y))
    return segments


async def test_follows_output_only_while_at_the_bottom() -> None:
    ev = Feed()
    app = TimelineApp()
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.view
        feed(view, ev.tools(40))
        await settle(pilot)
        assert view.at_bottom and view.scroll_y == view.max_scroll_y > 0
        assert "echo 39" in view.lines_text[-1]

        await pilot.press("home")  # the reader scrolls up to read
        await pilot.pause()
        assert view.scroll_y == 0
        feed(view, ev.tools(20, start=40))
        await settle(pilot)
        assert view.scroll_y == 0, "new output must not yank a reader who scrolled up"
        assert not view.at_bottom

        await pilot.press("end")  # back to following
        await pilot.pause()
        feed(view, ev.tools(5, start=60))
        await settle(pilot)
        assert view.at_bottom and view.scroll_y == view.max_scroll_y
        rendered = "".join(s.text for s in screen_segments(view))
        assert "echo 64" in rendered


async def test_streaming_text_updates_in_place_then_becomes_the_answer() -> None:
    ev = Feed()
    app = TimelineApp()
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.view
        feed(view, [ev("model.delta", run_id="r", iteration=1, text="Work")])
        await settle(pilot)
        assert view.lines_text == ["┊ Work … streaming"]
        feed(view, [ev("model.delta", run_id="r", iteration=1, text="ing on it")])
        await settle(pilot)
        assert view.lines_text == ["┊ Working on it … streaming"]
        feed(view, [ev("run.completed", run_id="r", answer="Fixed **3** tests.")])
        await settle(pilot)
        lines = [line.rstrip() for line in view.lines_text]
        assert lines[0] == "● answer"
        assert "┃ Fixed 3 tests." in lines  # Markdown rendered: no asterisks
        assert lines[-1] == "■ run completed"
        bold = [s for s in screen_segments(view) if s.text == "3"]
        assert bold and bold[0].style is not None and bold[0].style.bold


async def test_commentary_collapses_to_one_line_and_back() -> None:
    ev = Feed()
    app = TimelineApp()
    async with app.run_test(size=(40, 20)) as pilot:
        view = app.view
        feed(
            view,
            [
                ev("model.delta", run_id="r", iteration=1, text="I will look at the logs and then " * 4),
                ev("model.step", run_id="r", iteration=1, phase="commentary", tool_calls=1),
                ev("tool.started", run_id="r", iteration=1, call_id="a", name="Bash", args_summary="ls"),
            ],
        )
        await settle(pilot)
        expanded = view.lines_text
        assert len(expanded) > 3 and all(line.startswith("│ ") for line in expanded[:-1])
        await pilot.press("c")
        await pilot.pause()
        collapsed = view.lines_text
        assert len(collapsed) == 2
        assert collapsed[0].startswith(f"▸ commentary ({len(expanded) - 1} lines)")
        assert collapsed[1].startswith("◌ Bash  ls  running")
        await pilot.press("c")
        await pilot.pause()
        assert view.lines_text == expanded


async def test_hostile_text_renders_literally() -> None:
    ev = Feed()
    app = TimelineApp()
    hostile = "[bold red]boom[/] \x1b[31mred\x1b[0m \x1b]0;pwned\x07title \u202eevil \x1b]8;;http://x\x07link"
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.view
        feed(
            view,
            [
                ev("run.started", run_id="r", task=hostile),
                ev("model.delta", run_id="r", iteration=1, text=hostile),
                ev("model.step", run_id="r", iteration=1, phase="commentary", tool_calls=1),
                ev("tool.started", run_id="r", call_id="a", name="[red]Bash[/]", args_summary=hostile),
                ev("note.created", note={"note_id": "n", "state": "pending", "text": hostile}),
                ev("run.completed", run_id="r", answer=hostile + "\n\n[click me](http://evil.example)"),
            ],
        )
        await settle(pilot)
        text = "\n".join(view.lines_text)
        assert "[bold red]boom[/]" in text and "[red]Bash[/]" in text
        assert "pwned" not in text and "\u202e" not in text
        segments = screen_segments(view)
        assert not any("\x1b" in s.text or "\x07" in s.text for s in segments)
        assert not any(s.control for s in segments)
        for segment in segments:
            if "boom" in segment.text:
                assert (
                    segment.style is None or segment.style.color is None or segment.style.color.name != "red"
                )
            assert segment.style is None or not segment.style.link, "no clickable links from agent text"


async def test_line_cap_drops_oldest_and_keeps_a_reader_in_place() -> None:
    ev = Feed()
    app = TimelineApp(max_lines=50)
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.view
        feed(view, ev.tools(45))
        await settle(pilot)
        view.scroll_to(y=30, animate=False)
        await pilot.pause()
        reading = view.scroll_y
        top_line = view.lines_text[reading]
        assert reading == 30 and not view.at_bottom
        feed(view, ev.tools(20, start=45))
        await settle(pilot)
        assert view.line_count <= 50
        assert view.lines_text[0] == "… 16 earlier entries dropped"
        assert view.lines_text[-1].startswith("◌ Bash  echo 64")
        # Old lines left from the top: what the reader looked at stays under their eyes.
        assert view.lines_text[view.scroll_y] == top_line


async def test_model_drops_show_as_a_marker() -> None:
    ev = Feed()
    app = TimelineApp(Timeline(max_entries=20))
    async with app.run_test(size=(60, 30)) as pilot:
        view = app.view
        feed(view, ev.tools(50))
        await settle(pilot)
        assert view.lines_text[0] == "… 31 earlier entries dropped"
        assert len(view.lines_text) == 20
        assert view.lines_text[1].startswith("◌ Bash  echo 31")


async def test_resize_rewraps_text() -> None:
    ev = Feed()
    app = TimelineApp()
    async with app.run_test(size=(40, 20)) as pilot:
        view = app.view
        feed(view, [ev("model.delta", run_id="r", iteration=1, text="word " * 30)])
        await settle(pilot)
        narrow = len(view.lines_text)
        await pilot.resize_terminal(120, 20)
        await settle(pilot)
        wide = len(view.lines_text)
        assert narrow > wide >= 1
        assert all(len(line) <= 120 for line in view.lines_text)


async def test_a_long_flood_stays_within_the_line_cap() -> None:
    ev = Feed()
    app = TimelineApp(Timeline(max_entries=3_000), max_lines=500)
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.view
        for batch in range(20):
            events: list[Event] = []
            for i in range(250):
                iteration = batch * 250 + i
                events.append(
                    ev("model.delta", run_id="r", iteration=iteration, text="reading the code " * 8)
                )
                events.append(ev("model.step", run_id="r", iteration=iteration, phase="commentary"))
                events.extend(ev.tools(2, start=iteration * 2))
            feed(view, events)
            assert view.line_count <= 500
        await pilot.pause()
        assert ev.seq == 20_000
        assert view.at_bottom and "echo 9999" in view.lines_text[-1]
        assert view.lines_text[0].startswith("… ") and view.lines_text[0].endswith("earlier entries dropped")
        # Bookkeeping shrinks with the lines: nothing keeps scrolled-off entries alive in the view.
        assert len(view._lines._rendered) == len(view.shown_ids) <= 500


async def test_a_history_that_starts_late_says_how_many_events_were_not_loaded() -> None:
    """A long session opened at its newest events: the first line says the rest exists and where it is,
    and the line cap's own marker joins it instead of replacing it."""
    ev = Feed()
    ev.seq = 94_999  # the feed's first event is seq 95,000
    app = TimelineApp(max_lines=30)
    async with app.run_test(size=(100, 12)) as pilot:
        view = app.view
        feed(view, ev.tools(10))
        await settle(pilot)
        assert app.timeline.events_not_loaded == 94_999
        assert view.lines_text[0] == ("… 94,999 earlier events not loaded; preloop sessions export has all")
        assert view.lines_text[1].startswith("◌ Bash  echo 0")
        feed(view, ev.tools(40, start=10))
        await settle(pilot)
        assert view.lines_text[0].startswith("… 94,999 earlier events not loaded; preloop sessions export")
        assert view.lines_text[0].endswith("· 21 earlier entries dropped")
        assert view.line_count <= 30


async def test_a_history_from_the_first_event_has_no_marker() -> None:
    ev = Feed()
    app = TimelineApp()
    async with app.run_test(size=(100, 12)) as pilot:
        view = app.view
        feed(view, ev.tools(3))
        await settle(pilot)
        assert app.timeline.events_not_loaded == 0
        assert view.lines_text[0].startswith("◌ Bash  echo 0")


async def test_a_following_view_keeps_following_through_a_resize() -> None:
    """Making the terminal smaller (or narrower) is not scrolling up: the newest line stays in view and
    no "following paused" hint appears; a reader who did scroll up stays where they were."""
    ev = Feed()
    app = TimelineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.view
        feed(view, ev.tools(100))
        await settle(pilot)
        assert view.at_bottom and view.following
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        assert view.at_bottom and view.following
        await pilot.resize_terminal(60, 12)  # height only
        await settle(pilot)
        assert view.at_bottom and view.following
        assert "echo 99" in "".join(s.text for s in screen_segments(view))

        await pilot.press("home")
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert view.scroll_y == 0 and not view.following
