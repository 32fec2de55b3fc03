"""Where the operator is in a timeline (``client.reader``), without a screen: the cursor, the problem jumps
and the find, over a real timeline model."""

from __future__ import annotations

from typing import Any

from client.events import Event, event_from_dict
from client.reader import Reader, Span, scroll_to_show, scroll_within
from client.timeline import Timeline
from client.views import View

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"


class Feed:
    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, type_: str, **fields: Any) -> Event:
        self.seq += 1
        return event_from_dict(
            {"seq": self.seq, "type": type_, "session_id": SID, "at": "2026-03-01T10:00:00Z", **fields}
        )


def reading(*args: str, hides: set[int] | None = None) -> tuple[Timeline, Reader, Feed]:
    """A timeline with one tool call per argument summary, all shown, the cursor following."""
    ev, timeline = Feed(), Timeline()
    timeline.apply_many(
        [ev("tool.started", call_id=f"c{n}", name="Bash", args_summary=a) for n, a in enumerate(args)]
    )
    reader = Reader(timeline, hides_match=(lambda entry_id, _query: entry_id in hides) if hides else None)
    reader.shown[:] = reader.passing()
    reader.place_cursor(follow=True)
    return timeline, reader, ev


def test_following_puts_the_cursor_on_the_newest_and_a_dropped_cursor_goes_to_the_nearest() -> None:
    _, reader, _ = reading("ls", "make", "make test", "deploy")
    assert reader.cursor == 4 and not reader.pinned
    assert reader.jump(2) and reader.pinned  # older than the newest: following pauses
    reader.shown[:] = [1, 3, 4]  # entry 2 left the view
    assert reader.place_cursor(follow=False) and reader.cursor == 3 and reader.pinned
    reader.shown[:] = [1]
    assert reader.place_cursor(follow=False) and reader.cursor == 1 and not reader.pinned  # the newest now
    assert reader.neighbour(1, forward=True) is None and reader.neighbour(1, forward=False) is None


def test_problem_jumps_move_among_the_shown_entries_from_the_cursor() -> None:
    timeline, reader, ev = reading("ls", "make", "make test")
    timeline.apply_many(
        [
            ev("tool.completed", call_id="c0", name="Bash", status="error"),
            ev("tool.completed", call_id="c2", name="Bash", status="denied"),
        ]
    )
    reader.set_cursor(2, pin=True)
    assert reader.problem(forward=True) == 3 and reader.problem(forward=False) == 1
    reader.set_cursor(3, pin=True)
    assert reader.problem(forward=True) is None
    reader.set_view(View.PROBLEMS)
    assert reader.passing() == [1, 3]


def test_typing_a_query_starts_from_the_cursor_and_an_empty_one_goes_back_there() -> None:
    _, reader, _ = reading("make build", "ls", "make test", "make deploy")
    move = reader.find("make")  # following: the newest match
    assert move.target == 4 and str(reader.find_status) == "3 / 3"
    reader.set_cursor(2, pin=True)
    reader.end_find()
    assert reader.find("make").target == 3  # pinned: the first match at or after the cursor
    assert reader.find("make t").target == 3 and str(reader.find_status) == "1 / 1"
    back = reader.find("")
    assert back.target == 2 and back.pin and str(reader.find_status) == ""


def test_next_and_previous_wrap_and_new_output_updates_the_count_without_moving() -> None:
    timeline, reader, ev = reading("make build", "ls", "make test")
    reader.find("make")
    assert reader.find_step(forward=True).target == 1  # after the newest: wraps to the first
    assert reader.find_step(forward=False).target == 3
    timeline.apply(ev("tool.started", call_id="c9", name="Bash", args_summary="make clean"))
    reader.shown.append(4)
    assert str(reader.search_again()) == "2 / 3" and reader.current == 3
    assert reader.search_again() is None  # nothing changed since


def test_a_match_the_screen_hides_is_opened_while_current_and_folds_back_after() -> None:
    _, reader, _ = reading("make build", "ls", "make test", hides={1, 3})
    move = reader.find("make")
    assert move.target == 3 and move.reflow == [3] and reader.unfolded == {3}
    move = reader.find_step(forward=True)
    assert move.target == 1 and move.reflow == [3, 1] and reader.unfolded == {1}
    reader.end_find()
    assert reader.unfolded == {1} and reader.cursor == 3  # (the screen moves the cursor, not the reader)


# ------------------------------------------------------------------ bringing an entry into sight


def test_a_step_scrolls_the_least_and_a_jump_puts_the_entry_a_third_down() -> None:
    # A 12-row window at rows 10-21; an entry on rows 24-26 (just under it).
    below = Span(top=24, bottom=27, y=10, height=12)
    assert scroll_to_show(below, first=False, jump=False) == 15  # its last line on the window's last row
    assert scroll_to_show(below, first=False, jump=True) == 20  # a third (4 rows) down the window
    above = Span(top=3, bottom=5, y=10, height=12)
    assert scroll_to_show(above, first=False, jump=False) == 3  # its first line on the first row
    assert scroll_to_show(above, first=True, jump=True) == 0  # the first entry: the line above it too


def test_an_entry_in_sight_does_not_move_the_window_and_a_tall_one_starts_at_its_top() -> None:
    assert scroll_to_show(Span(top=12, bottom=15, y=10, height=12), first=False, jump=True) is None
    tall = Span(top=30, bottom=60, y=10, height=12)
    assert scroll_to_show(tall, first=False, jump=False) == 30
    assert scroll_to_show(tall, first=False, jump=True) == 30
    assert Span(top=5, bottom=11, y=10, height=12).in_sight  # one line showing
    assert not Span(top=5, bottom=10, y=10, height=12).in_sight


def test_a_step_inside_an_entry_taller_than_the_window_scrolls_one_line_through_it() -> None:
    tall = Span(top=8, bottom=40, y=10, height=12)  # begins above the window and ends below it
    assert scroll_within(tall, forward=True) == 11
    assert scroll_within(tall, forward=False) == 9
    at_its_end = Span(top=8, bottom=22, y=10, height=12)
    assert scroll_within(at_its_end, forward=True) is None  # the step goes on to the next entry
    assert scroll_within(Span(top=10, bottom=40, y=10, height=12), forward=False) is None
