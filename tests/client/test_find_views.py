"""Find and views over a real Timeline fed with events: what an operator searching or filtering gets."""

from __future__ import annotations

from typing import Any

from client.entry_words import Reading
from client.events import Event, event_from_dict
from client.find import Finder, FindStatus, find, find_spans, fold, searchable_text
from client.timeline import TextEntry, Timeline, TimelineEntry
from client.views import View, is_problem

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"


class Feed:
    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, type_: str, **fields: Any) -> Event:
        self.seq += 1
        return event_from_dict(
            {"seq": self.seq, "type": type_, "session_id": SID, "at": "2026-03-01T10:00:00Z", **fields}
        )


def incident() -> Timeline:
    ev = Feed()
    timeline = Timeline()
    note = {"note_id": "n1", "state": "pending", "text": "Use the STAGING db"}
    lost = {"note_id": "n2", "state": "pending", "text": "Bump [red]now[/red]"}
    approval = {"id": "a1", "tool_name": "Bash", "summary": "drop table orders", "status": "pending"}
    timeline.apply_many(
        [
            ev("run.started", run_id="r", task="fix the checkout test"),  # 1
            ev("model.delta", run_id="r", iteration=1, text="Reading the checkout test."),  # 2
            ev("model.step", run_id="r", iteration=1, phase="commentary", tool_calls=1),
            ev("tool.started", run_id="r", call_id="c1", name="Read", args_summary="tests/x.py"),  # 3
            ev("tool.completed", run_id="r", call_id="c1", name="Read", status="ok"),
            ev("tool.started", run_id="r", call_id="c2", name="Bash", args_summary="pytest"),  # 4
            ev(
                "tool.completed",
                run_id="r",
                call_id="c2",
                name="Bash",
                status="error",
                result_summary="exit 2",
            ),
            ev("tool.started", run_id="r", call_id="c3", name="Bash", args_summary="rm -rf /"),  # 5
            ev("tool.completed", run_id="r", call_id="c3", name="Bash", status="denied"),
            ev("note.created", note=note),  # 6
            ev("note.delivered", note={**note, "state": "delivered"}),  # 7
            ev("note.created", note=lost),  # 8
            ev(
                "note.undeliverable", note={**lost, "state": "undeliverable", "undeliverable_reason": "ended"}
            ),
            ev("approval.requested", approval=approval),  # 10
            ev(
                "approval.decided",
                approval={**approval, "status": "declined", "approver_comment": "not today"},
            ),
            ev("approval.requested", approval={**approval, "id": "a2"}),  # 12
            ev("approval.decided", approval={**approval, "id": "a2", "status": "approved"}),  # 13
            ev("run.failed", run_id="r", error="context window exceeded"),  # 14
            ev("agent.warning_error", message="quota nearly spent"),  # 15
            ev("agent.heartbeat", message="alive"),  # 16
        ]
    )
    return timeline


def by_id(timeline: Timeline, entry_id: int) -> TimelineEntry:
    entry = timeline.get(entry_id)
    assert entry is not None
    return entry


def test_find_is_case_insensitive_literal_and_ordered() -> None:
    timeline = incident()
    assert find(timeline, "staging").entry_ids == (6, 7)
    assert find(timeline, "CHECKOUT").entry_ids == (1, 2)
    # Untrusted text stays literal: brackets, dots and stars are characters, not markup or a pattern.
    assert find(timeline, "[red]").entry_ids == (8, 9)
    assert find(timeline, "b.*").entry_ids == ()
    assert not find(timeline, "nowhere to be found")
    assert find(timeline, "").entry_ids == ()


def test_find_searches_what_the_operator_reads() -> None:
    timeline = incident()
    assert find(timeline, "exit 2").entry_ids == (4,)  # a tool's error
    assert find(timeline, "rm -rf").entry_ids == (5,)  # its arguments
    assert find(timeline, "not today").entry_ids == (11,)  # the decider's comment, on the decision
    assert find(timeline, "drop table").entry_ids == (10, 11, 12, 13)  # what was asked, and decided
    assert find(timeline, "context window").entry_ids == (14,)  # a run's error
    assert find(timeline, "quota").entry_ids == (15,)  # an unknown event's own words
    assert find(timeline, "ended").entry_ids == (9,)  # why a note was not delivered


def test_a_longer_query_narrows_the_previous_result_and_sees_new_entries() -> None:
    timeline = incident()
    finder = Finder(timeline)
    assert finder.search("b").entry_ids == find(timeline, "b").entry_ids
    everything = len(timeline)
    assert finder.tested == everything
    narrowed = finder.search("ba")
    assert narrowed.entry_ids == find(timeline, "ba").entry_ids
    assert finder.tested == len(find(timeline, "b"))  # only what matched "b" was read again
    # New output between two keystrokes is searched too, though it never matched the shorter query.
    ev = Feed()
    ev.seq = timeline.last_seq
    timeline.apply_many([ev("tool.started", call_id="c9", name="Bash", args_summary="bash deploy.sh")])
    assert finder.search("bas").entry_ids == find(timeline, "bas").entry_ids
    assert timeline.last_seq in [by_id(timeline, i).seq for i in finder.search("bash").entry_ids]
    # A shorter query (backspace) searches everything again.
    assert finder.search("b").entry_ids == find(timeline, "b").entry_ids


def test_an_entry_that_changes_is_searched_again() -> None:
    ev = Feed()
    timeline = Timeline()
    timeline.apply_many([ev("model.delta", run_id="r", iteration=1, text="looking at the ")])
    finder = Finder(timeline)
    assert not finder.search("parser")
    timeline.apply_many([ev("model.delta", run_id="r", iteration=1, text="parser now")])
    assert finder.search("parser").entry_ids == (1,)
    assert finder.search("parser").entry_ids == (1,)  # same query, nothing new: same answer


def test_spans_are_positions_in_the_original_text() -> None:
    assert find_spans("Staging, staging, STAGING", "staging") == [(0, 7), (9, 16), (18, 25)]
    assert find_spans("aaaa", "aa") == [(0, 2), (2, 4)]  # not overlapping
    assert find_spans("İstanbul [red]", "[red]") == [(9, 14)]  # a longer lower case keeps positions
    assert len(fold("İstanbul")) == len("İstanbul")
    assert find_spans("anything", "") == []


def test_status_says_where_the_find_stands() -> None:
    assert str(FindStatus("x", 3, 17)) == "3 / 17"
    assert str(FindStatus("x", 0, 0)) == "no match"
    assert str(FindStatus("x", 0, 4)) == "4 matches"
    assert str(FindStatus()) == ""


def test_problems_are_failures_refusals_declines_and_lost_notes() -> None:
    timeline = incident()
    problems = [entry.id for entry in timeline if is_problem(entry)]
    # failed tool, denied tool, undeliverable note, declined decision, failed run, an error-kind event
    assert problems == [4, 5, 9, 11, 14, 15]
    assert [e.id for e in timeline if View.PROBLEMS.shows(e)] == problems


def test_views_keep_steering_or_tools() -> None:
    timeline = incident()
    assert [e.id for e in timeline if View.STEERING.shows(e)] == [6, 7, 8, 9, 10, 11, 12, 13]
    assert [e.id for e in timeline if View.TOOLS.shows(e)] == [3, 4, 5]
    assert all(View.EVERYTHING.shows(e) for e in timeline)
    assert [View.EVERYTHING.next(), View.TOOLS.next()] == [View.PROBLEMS, View.EVERYTHING]
    assert View.PROBLEMS.label == "problems only"


def test_searchable_text_of_a_decision_carries_its_comment_the_request_does_not() -> None:
    timeline = incident()
    assert "not today" not in searchable_text(by_id(timeline, 10))
    assert "not today" in searchable_text(by_id(timeline, 11))


def test_find_matches_the_state_words_the_operator_reads() -> None:
    # The trial: each of these was on screen and find said "no match".
    ev = Feed()
    timeline = incident()
    ev.seq = timeline.last_seq
    timeline.apply_many(
        [
            ev("tool.started", call_id="c8", name="Read", args_summary="a.py"),
            ev("tool.completed", call_id="c8", name="Read", status="ok", duration_ms=1300),
        ]
    )
    quick = max(e.id for e in timeline)
    assert find(timeline, "note delivered").entry_ids == (7,)
    assert find(timeline, "approval requested").entry_ids == (10, 12)
    assert find(timeline, "run started").entry_ids == (1,)
    assert find(timeline, "denied").entry_ids == (5,)
    assert find(timeline, "ok 1.3s").entry_ids == (quick,)
    assert find(timeline, "approval declined").entry_ids == (11,)
    assert find(timeline, "note undeliverable").entry_ids == (9,)
    assert find(timeline, "run failed").entry_ids == (14,)
    # Every word a rendered line shows (glyphs aside) is found in its entry: one vocabulary for both.
    from widgets.timeline_render import line_plain, render_entry

    for entry in timeline:
        if isinstance(entry, TextEntry):  # model text: searched as written (gutters are not words)
            continue
        for line in render_entry(entry, 400, whole=True):
            for word in line_plain(line).replace("“", " ").replace("”", " ").split():
                if any(ch.isalnum() for ch in word):  # glyphs and separators are not words
                    assert entry.id in find(timeline, word).entry_ids, (entry, word)


def test_find_matches_who_decided_and_who_sent_as_the_line_reads_them() -> None:
    # The trial: "by you" and "no decider recorded" were on screen and find said "no match".
    from widgets.timeline_render import line_plain, render_entry

    timeline = incident()
    reading = Reading(
        by_you=lambda approval: approval.id == "a2",  # this operator approved a2
        colleague=lambda note: "dana" if note.note_id == "n1" else None,  # a colleague sent n1
        deciders_recorded=False,  # a Dendrux app: nobody is named for a1's decline
    )
    assert find(timeline, "by you", reading).entry_ids == (13,)
    assert find(timeline, "no decider recorded", reading).entry_ids == (11,)
    assert find(timeline, "by dana", reading).entry_ids == (6, 7)
    assert find(timeline, "by you").entry_ids == ()  # read by nobody in particular: no "you", no names
    finder = Finder(timeline, reading)
    assert finder.search("by you").entry_ids == (13,)
    for entry_id in (6, 7, 11, 13):  # every word these lines show is found in them
        entry = by_id(timeline, entry_id)
        for line in render_entry(entry, 400, whole=True, reading=reading):
            for word in line_plain(line).replace("“", " ").replace("”", " ").split():
                if any(ch.isalnum() for ch in word):
                    assert entry_id in find(timeline, word, reading).entry_ids, (entry, word)
