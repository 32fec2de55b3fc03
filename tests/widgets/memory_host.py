"""A small host app for the timeline's cursor, find and views, wired the way a screen wires them.

``/`` opens the find line, ``f`` cycles the views (the header line names the current one), ``]`` / ``[``
jump to the next / previous problem; the find line's messages go to the view and its status comes back.
Used by the widget pilot tests and the snapshot tests (the attach screen is being rewritten meanwhile), and
by ``benchmarks/bench_find.py`` in the same shape.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Static

from client.events import Event
from client.timeline import Timeline
from client.views import View
from tests.tui.fakes import Script, ago
from widgets.find_bar import FindBar
from widgets.timeline_view import TimelineView

SID = "3f2a9c1e-7b4d-4e8a-9c2f-0d1e2f3a4b5c"


class MemoryHost(App[None]):
    """Header line (the view), the timeline, the find line."""

    CSS = """
    #view-line { height: 1; background: $primary-background; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "open_find", "Find"),
        Binding("f", "cycle_view", "View"),
        Binding("right_square_bracket", "next_problem", "Next problem"),
        Binding("left_square_bracket", "previous_problem", "Previous problem"),
    ]

    def __init__(self, timeline: Timeline | None = None, **view_args: Any) -> None:
        super().__init__()
        self.timeline = timeline if timeline is not None else Timeline()
        self.view_args = view_args
        self.copied: list[str] = []
        self.cursor_moves = 0

    def compose(self) -> ComposeResult:
        yield Static(id="view-line")
        yield TimelineView(self.timeline, id="timeline", **self.view_args)
        yield FindBar(id="find")

    def on_mount(self) -> None:
        self.view.focus()
        self._show_view()

    @property
    def view(self) -> TimelineView:
        return self.query_one(TimelineView)

    @property
    def bar(self) -> FindBar:
        return self.query_one(FindBar)

    def _show_view(self) -> None:
        self.query_one("#view-line", Static).update(Text(f"view: {self.view.view.label}"))

    def action_open_find(self) -> None:
        self.bar.open()

    def action_cycle_view(self) -> None:
        self.view.view = self.view.view.next()
        self._show_view()

    def action_next_problem(self) -> None:
        if not self.view.next_problem():
            self.notify("No later problem.", markup=False)

    def action_previous_problem(self) -> None:
        if not self.view.previous_problem():
            self.notify("No earlier problem.", markup=False)

    @on(FindBar.Changed)
    def _find_changed(self, event: FindBar.Changed) -> None:
        self.bar.show_status(self.view.go_to(self.view.reader.find(event.query)))

    @on(FindBar.Next)
    def _find_next(self) -> None:
        self.bar.show_status(self.view.go_to(self.view.reader.find_step(forward=True)))

    @on(FindBar.Previous)
    def _find_previous(self) -> None:
        self.bar.show_status(self.view.go_to(self.view.reader.find_step(forward=False)))

    @on(FindBar.Closed)
    def _find_closed(self) -> None:
        self.view.end_find()
        self.view.focus()

    @on(TimelineView.FindUpdated)
    def _find_updated(self, event: TimelineView.FindUpdated) -> None:
        self.bar.show_status(event.status)

    @on(TimelineView.CursorMoved)
    def _cursor_moved(self) -> None:
        self.cursor_moves += 1


async def settle(pilot: Pilot[Any]) -> None:
    """Let the screen repaint what was shown."""
    await pilot.pause(0.05)
    app = pilot.app
    assert isinstance(app, MemoryHost)
    await pilot.pause()


def incident_script() -> list[Event]:
    """A short session with every kind of entry and each kind of problem (deterministic times)."""
    ev = Script(SID, ago(minutes=10))
    note = {
        "note_id": "n1",
        "state": "pending",
        "text": "Use the staging DB, not prod.",
        "runtime_session_id": SID,
    }
    lost = {
        "note_id": "n2",
        "state": "pending",
        "text": "Bump the version [red]now[/red].",
        "runtime_session_id": SID,
    }
    approval = {
        "id": "ap-1",
        "tool_name": "Bash",
        "summary": "Drop the orders table on staging",
        "status": "pending",
        "runtime_session_id": SID,
    }
    return [
        ev("run.started", run_id="r1", task="Fix the flaky checkout test"),
        ev(
            "model.delta",
            run_id="r1",
            iteration=1,
            text="Let me look at the failing checkout test first. " * 3,
        ),
        ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1),
        ev(
            "tool.started",
            run_id="r1",
            call_id="c1",
            iteration=1,
            name="Read",
            args_summary="tests/test_checkout.py",
        ),
        ev("tool.completed", run_id="r1", call_id="c1", name="Read", status="ok", duration_ms=42),
        ev("note.created", note=note),
        ev("note.delivered", note={**note, "state": "delivered", "delivery_channel": "hook"}),
        ev(
            "model.delta",
            run_id="r1",
            iteration=2,
            text="The test depends on wall-clock time; the staging database has a stale fixture. "
            "I will pin the clock and reload the fixture before running the suite again.",
        ),
        ev("model.step", run_id="r1", iteration=2, phase="commentary", tool_calls=1),
        ev(
            "tool.started",
            run_id="r1",
            call_id="c2",
            iteration=2,
            name="Bash",
            args_summary="pytest -k checkout",
        ),
        ev(
            "tool.completed",
            run_id="r1",
            call_id="c2",
            name="Bash",
            status="error",
            duration_ms=8120,
            result_summary="exit 1: 2 failed, 14 passed",
        ),
        ev("approval.requested", approval=approval),
        ev(
            "approval.decided",
            approval={**approval, "status": "declined", "approver_comment": "Not on a Friday."},
        ),
        ev("note.created", note=lost),
        ev(
            "note.undeliverable",
            note={**lost, "state": "undeliverable", "undeliverable_reason": "session ended before delivery"},
        ),
        ev(
            "tool.started",
            run_id="r1",
            call_id="c3",
            iteration=2,
            name="Edit",
            args_summary="tests/conftest.py",
        ),
        ev("tool.completed", run_id="r1", call_id="c3", name="Edit", status="ok", duration_ms=310),
        ev("run.failed", run_id="r1", error="model refused to continue: context window exceeded"),
    ]


def tool_calls(ev: Script, start: int, count: int) -> list[Event]:
    """``count`` finished tool calls named make step-N (a long, plain timeline)."""
    out: list[Event] = []
    for i in range(start, start + count):
        call = f"k{i}"
        out.append(ev("tool.started", run_id="r1", call_id=call, name="Bash", args_summary=f"make step-{i}"))
        out.append(ev("tool.completed", run_id="r1", call_id=call, name="Bash", status="ok", duration_ms=40))
    return out


__all__ = ["SID", "MemoryHost", "View", "incident_script", "settle", "tool_calls"]
