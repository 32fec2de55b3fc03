"""Where the operator last looked: kept in files that survive a restart, found again in a new timeline by
the server's identity and time (never by this process's entry ids), and moved only forward."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from client.events import Event, event_from_dict
from client.marks import Looking, Mark, MarkStore, find_return, new_since, seen_place
from client.timeline import Place, Timeline

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def event(seq: int, second: int, type_: str = "model.delta", **fields: Any) -> Event:
    """An event at ``T0 + second``; a text chunk of its own step unless told otherwise."""
    body: dict[str, Any] = {"iteration": seq, "text": f"step {seq}"} if type_ == "model.delta" else {}
    at = (T0 + timedelta(seconds=second)).isoformat()
    return event_from_dict({"seq": seq, "type": type_, "session_id": SID, "at": at, **body, **fields})


def test_a_mark_survives_a_new_store_and_a_damaged_file_is_no_mark(tmp_path: Path) -> None:
    folder = tmp_path / "marks"
    mark = Mark(Place("42", T0, 42), T0 + timedelta(minutes=5))
    MarkStore(folder).put(SID, mark, durable=True)
    assert MarkStore(folder).get(SID) == mark  # a new process reads what the last one wrote
    assert oct((folder / f"{SID}.json").stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in folder.iterdir()] == [f"{SID}.json"]  # no temporary file left behind
    (folder / f"{SID}.json").write_text('{"id": "42", "at": "not a time"')
    assert MarkStore(folder).get(SID) is None
    assert MarkStore(folder).get("../escape") is None


def test_a_disk_that_refuses_the_mark_does_not_stop_the_operator(tmp_path: Path) -> None:
    folder = tmp_path / "marks"
    folder.write_text("a file where the folder should be")  # every write fails
    store = MarkStore(folder)
    mark = Mark(Place("7", T0, 7), T0)
    store.put(SID, mark, durable=True)  # never raises
    assert store.get(SID) == mark  # kept in memory for this run


def test_the_rule_goes_above_the_first_entry_made_after_the_mark() -> None:
    timeline = Timeline()
    timeline.apply_many([event(n, n) for n in range(1, 11)])
    mark = Mark(Place("6", T0 + timedelta(seconds=6), 6), T0)
    back = find_return(timeline, mark)
    entry = timeline.get(back.entry_id or -1)
    assert entry is not None and entry.seq == 7 and back.new == 4 and not back.earlier_than_loaded
    assert new_since(timeline, mark) == 4
    nothing = find_return(timeline, Mark(Place("10", T0 + timedelta(seconds=10), 10), T0))
    assert nothing.entry_id is None and nothing.new == 0


def test_a_mark_older_than_the_loaded_tail_puts_the_rule_on_top_and_counts_what_lies_between() -> None:
    timeline = Timeline()
    timeline.apply_many([event(n, n) for n in range(901, 911)])  # a tail: 900 events were not loaded
    back = find_return(timeline, Mark(Place("120", T0, 120), T0))
    assert back.earlier_than_loaded and back.between == 780 and back.entry_id == timeline.first_id
    assert back.new == 10  # the entries held below the rule; the rule says the 780 between (issue 23)
    # Where the server does not number its events (Preloop: only time orders them), it cannot say.
    named = Timeline(max_entries=4)
    named.apply_many([event(n, n, server_id=f"tool:{n}") for n in range(1, 11)])
    assert named.dropped_count > 0
    far = find_return(named, Mark(Place("tool:0", T0 - timedelta(hours=1)), T0))
    assert far.earlier_than_loaded and far.between is None


def test_preloop_places_are_found_again_by_time_in_a_follow_that_numbered_them_differently() -> None:
    first = Timeline()
    first.apply_many([event(n, n * 10, server_id=f"tool:{n}") for n in range(1, 6)])
    third = first.get(3)
    assert third is not None and third.place is not None
    mark = Mark(third.place, T0)
    again = Timeline()  # another process: one fact fewer at the start, every local seq moved by one
    again.apply_many([event(n - 1, n * 10, server_id=f"tool:{n}") for n in range(2, 6)])
    back = find_return(again, mark)
    entry = again.get(back.entry_id or -1)
    assert entry is not None and entry.origin == "tool:4"


def test_what_arrived_while_the_operator_watched_gets_no_rule() -> None:
    timeline = Timeline()
    timeline.apply_many([event(n, n) for n in range(1, 4)])
    mark = Mark(Place("3", T0 + timedelta(seconds=3), 3), T0)
    visit = T0 + timedelta(seconds=4)
    timeline.apply(event(4, 60))  # a minute after the visit began: live, seen as it came
    assert find_return(timeline, mark, before=visit).entry_id is None
    backlog = Timeline()
    backlog.apply_many([event(n, n) for n in range(1, 5)])
    assert find_return(backlog, mark, before=visit).entry_id == 4


def test_what_was_seen_stops_before_an_entry_that_began_below_the_window() -> None:
    timeline = Timeline()
    timeline.apply(event(1, 1, "tool.started", call_id="c1", name="Bash"))
    timeline.apply(event(2, 2))  # the next entry begins while the tool still runs
    timeline.apply(event(3, 3, "tool.completed", call_id="c1", name="Bash"))
    seen = seen_place(timeline, 1)  # the tool call is the newest entry on screen
    assert seen is not None and seen.number == 1  # not 3: entry 2 (begun at 2) was not on screen
    last = seen_place(timeline, 2)
    assert last is not None and last.number == 2


def test_the_newest_entry_seen_covers_the_events_after_it_that_changed_nothing_shown() -> None:
    timeline = Timeline()
    timeline.apply(event(1, 1))
    timeline.apply(event(2, 2))
    timeline.apply(event(3, 3, "session.updated", session={"id": SID}))  # counters: no entry shows it
    seen = seen_place(timeline, 2)
    assert seen is not None and seen.number == 3
    mark = Mark(seen, T0)
    assert new_since(timeline, mark) == 0  # looked at to the end: nothing new on the list
    timeline.apply(event(4, 4, "tool.started", call_id="c1", name="Bash"))
    assert new_since(timeline, mark) == 1


def test_a_mark_moves_only_forward_and_is_written_when_due(tmp_path: Path) -> None:
    now = [T0]
    ticks = [0.0]
    store = MarkStore(tmp_path / "marks")
    looking = Looking(store, SID, clock=lambda: now[0], monotonic=lambda: ticks[0])
    assert looking.saw(Place("5", T0, 5))
    assert MarkStore(tmp_path / "marks").get(SID) is None  # not yet written
    ticks[0] = 1.5
    looking.tick()
    assert MarkStore(tmp_path / "marks").get(SID) == Mark(Place("5", T0, 5), T0)
    now[0] = T0 + timedelta(minutes=3)
    assert not looking.saw(Place("2", T0, 2))  # scrolled back up to read: the mark stays
    assert looking.mark == Mark(Place("5", T0, 5), now[0])  # but the operator was looking until now
    looking.save()  # the terminal lost the focus
    assert MarkStore(tmp_path / "marks").get(SID) == Mark(Place("5", T0, 5), now[0])


def test_new_counts_entries_as_the_timeline_shows_them_not_events() -> None:
    """The list's "+N", the inbox's "N new" and the entries below the timeline's rule are one count: a
    reply streamed in twenty chunks is one new entry, not twenty."""
    timeline = Timeline()
    timeline.apply(event(1, 1, "tool.started", call_id="c1", name="Read"))
    mark = Mark(Place("1", T0 + timedelta(seconds=1), 1), T0)
    chunks = [event(n, n, iteration=9, text=f"word {n} ") for n in range(2, 22)]  # one streamed step
    timeline.apply_many([*chunks, event(22, 22, "tool.started", call_id="c2", name="Bash")])
    back = find_return(timeline, mark)
    below = [entry for entry in timeline if back.entry_id is not None and entry.id >= back.entry_id]
    assert new_since(timeline, mark) == back.new == len(below) == 2


def test_after_a_restart_a_session_looked_at_before_says_whether_something_is_new() -> None:
    """Not followed yet in this process (no timeline): the mark on disk and the list's row still tell
    whether anything happened since the operator looked; the count comes once it is followed."""
    from client.marks import news_of
    from client.models import Session

    mark = Mark(Place("6", T0 + timedelta(seconds=6), 6), T0 + timedelta(seconds=10))
    quiet = Session(id=SID, last_activity_at=T0 + timedelta(seconds=6))
    busy = Session(id=SID, last_activity_at=T0 + timedelta(minutes=3))
    assert news_of(quiet, mark=mark).has_news and not news_of(quiet, mark=mark).changed
    assert news_of(busy, mark=mark).has_news and news_of(busy, mark=mark).changed
    assert news_of(busy, mark=mark).new is None  # how many: unknown until followed
    assert not news_of(busy).has_news  # never looked at here: nothing to say
