"""The timeline model: constructed event sequences in, the entries an operator would see out."""

from __future__ import annotations

from typing import Any

import pytest

from client.events import Event, event_from_dict
from client.models import NoteState
from client.timeline import (
    ApprovalEntry,
    DroppedEntry,
    NoteEntry,
    RunEntry,
    RunStatus,
    SessionEntry,
    TextEntry,
    TextPhase,
    Timeline,
    TimelineChanges,
    ToolEntry,
    ToolState,
    UnknownEntry,
)

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"


class Feed:
    """Builds events with increasing seq, as the server would number them."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, type_: str, *, at: str = "2026-03-01T10:00:00Z", **fields: Any) -> Event:
        self.seq += 1
        return event_from_dict({"seq": self.seq, "type": type_, "session_id": SID, "at": at, **fields})


def session_row(**extra: Any) -> dict[str, Any]:
    return {"id": SID, "title": "fix tests", **extra}


def note(note_id: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"note_id": note_id, "state": state, "text": "please stop", **extra}


def approval(approval_id: str, status: str = "pending", **extra: Any) -> dict[str, Any]:
    return {"id": approval_id, "tool_name": "Bash", "summary": "rm -rf build", "status": status, **extra}


def texts(timeline: Timeline) -> list[TextEntry]:
    return [e for e in timeline if isinstance(e, TextEntry)]


def test_deltas_stream_then_step_marks_commentary() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("run.started", run_id="r1", task="fix"))
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="Let me "))
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="look."))
    [text] = texts(timeline)
    assert (text.phase, text.text) == (TextPhase.STREAMING, "Let me look.")
    timeline.apply(ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1))
    assert (text.phase, text.text) == (TextPhase.COMMENTARY, "Let me look.")


def test_final_answer_is_the_runs_answer_not_the_deltas() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("run.started", run_id="r1"))
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="Done, mostl"))
    timeline.apply(ev("model.step", run_id="r1", iteration=1, phase="final_answer"))
    [text] = texts(timeline)
    assert text.phase is TextPhase.FINAL
    timeline.apply(ev("run.completed", run_id="r1", answer="Done: 3 tests fixed."))
    [text] = texts(timeline)  # updated in place, not a second answer
    assert (text.phase, text.text) == (TextPhase.FINAL, "Done: 3 tests fixed.")
    assert timeline.final_answer == "Done: 3 tests fixed."
    assert timeline.run_status is RunStatus.COMPLETED


def test_run_completed_without_a_step_finalises_the_streaming_text() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("model.delta", run_id="r1", iteration=4, text="partial answ"))
    timeline.apply(ev("run.completed", run_id="r1", answer="The whole answer."))
    [text] = texts(timeline)
    assert (text.phase, text.text) == (TextPhase.FINAL, "The whole answer.")


def test_answer_after_commentary_gets_its_own_entry() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="I'll run the tests."))
    timeline.apply(ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1))
    timeline.apply(ev("run.completed", run_id="r1", answer="All green."))
    narration, answer = texts(timeline)
    assert (narration.phase, narration.text) == (TextPhase.COMMENTARY, "I'll run the tests.")
    assert (answer.phase, answer.text) == (TextPhase.FINAL, "All green.")


def test_step_text_wins_over_deltas_and_late_deltas_are_ignored() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="Checkin"))
    timeline.apply(ev("model.step", run_id="r1", iteration=1, phase="commentary", text="Checking the logs."))
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text=" late chunk"))
    [text] = texts(timeline)
    assert text.text == "Checking the logs."


def test_interleaved_tool_calls_and_iterations() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply_many(
        [
            ev("run.started", run_id="r1"),
            ev("model.delta", run_id="r1", iteration=1, text="Running two tools."),
            # The tool starts before the step event: the text is already known to be narration.
            ev("tool.started", run_id="r1", call_id="a", iteration=1, name="Bash", args_summary="ls"),
            ev("tool.started", run_id="r1", call_id="b", iteration=1, name="Read", args_summary="x.py"),
            ev("tool.completed", run_id="r1", call_id="b", name="Read", status="error", duration_ms=12),
            ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=2),
            ev(
                "tool.completed",
                run_id="r1",
                call_id="a",
                name="Bash",
                status="ok",
                at="2026-03-01T10:00:02.500Z",
            ),
            ev("model.delta", run_id="r1", iteration=2, text="Both done."),
        ]
    )
    kinds = [type(e).__name__ for e in timeline]
    assert kinds == ["RunEntry", "TextEntry", "ToolEntry", "ToolEntry", "TextEntry"]
    first, second = texts(timeline)
    assert first.phase is TextPhase.COMMENTARY
    assert second.phase is TextPhase.STREAMING
    tool_a, tool_b = [e for e in timeline if isinstance(e, ToolEntry)]
    assert (tool_a.state, tool_a.duration_ms) == (ToolState.COMPLETED, 2500)  # from timestamps
    assert (tool_b.state, tool_b.duration_ms) == (ToolState.FAILED, 12)


def test_denied_tool_and_completion_without_start() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("tool.started", call_id="a", name="Bash", args={"command": "rm -rf /"}))
    timeline.apply(ev("tool.completed", call_id="a", name="Bash", status="denied"))
    timeline.apply(ev("tool.completed", call_id="zz", name="Write", status="ok", duration_ms=5))
    denied, orphan = list(timeline)
    assert isinstance(denied, ToolEntry) and denied.state is ToolState.DENIED
    assert "rm -rf /" in denied.args_summary  # args summarised when no summary was sent
    assert isinstance(orphan, ToolEntry) and (orphan.name, orphan.state) == ("Write", ToolState.COMPLETED)


@pytest.mark.parametrize(
    ("stop", "status"),
    [
        ({"type_": "run.failed", "run_id": "r1", "error": "model overloaded"}, RunStatus.FAILED),
        ({"type_": "run.cancelled", "run_id": "r1", "reason": "operator"}, RunStatus.CANCELLED),
        ({"type_": "session.ended", "session": session_row(ended_at="2026-03-01T10:05:00Z")}, None),
    ],
)
def test_run_cut_off_mid_step_leaves_text_interrupted(stop: dict[str, Any], status: RunStatus | None) -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("run.started", run_id="r1"))
    timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="I was about to"))
    timeline.apply(ev(**stop))
    [text] = texts(timeline)
    assert (text.phase, text.text) == (TextPhase.INTERRUPTED, "I was about to")
    last = list(timeline)[-1]
    if status is None:
        assert isinstance(last, SessionEntry) and last.ended
        assert timeline.session is not None and timeline.session.ended
        assert timeline.run_status is RunStatus.CANCELLED
    else:
        assert isinstance(last, RunEntry) and last.status is status
        assert timeline.run_status is status


def test_unknown_event_is_an_entry_not_an_exception() -> None:
    ev, timeline = Feed(), Timeline()
    assert timeline.apply(ev("agent.mood", mood="[red]angry[/]"))
    [entry] = list(timeline)
    assert isinstance(entry, UnknownEntry)
    assert entry.event_type == "agent.mood"
    assert "[red]angry[/]" in entry.summary
    assert timeline.unknown_events == 1


def test_unknown_event_shows_its_own_words_when_it_has_some() -> None:
    """A Preloop session warning is an event type we do not model, but its summary is worth reading."""
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("preloop.session_warning", summary="This token allows no MCP tools.", status="warning"))
    timeline.apply(ev("agent.mood", mood="calm", level=3))
    warning, mood = list(timeline)
    assert isinstance(warning, UnknownEntry) and warning.summary == "This token allows no MCP tools."
    assert isinstance(mood, UnknownEntry) and mood.summary == '{"mood": "calm", "level": 3}'


def test_duplicate_seq_is_ignored() -> None:
    ev, timeline = Feed(), Timeline()
    delta = ev("model.delta", run_id="r1", iteration=1, text="once ")
    assert timeline.apply(delta)
    assert not timeline.apply(delta)
    assert timeline.apply_many([delta, ev("model.delta", run_id="r1", iteration=1, text="only")]).applied == 1
    [text] = texts(timeline)
    assert text.text == "once only"
    assert timeline.duplicates == 2


def test_notes_through_all_eight_states() -> None:
    ev, timeline = Feed(), Timeline()
    path = [
        ("note.created", "pending"),
        ("note.claimed", "claimed"),
        ("note.delivered", "delivered"),
        ("note.acknowledged", "acknowledged"),
    ]
    for i, (kind, state) in enumerate(path):
        timeline.apply(ev(kind, at=f"2026-03-01T10:00:0{i}Z", note=note("n1", state)))
    for kind, state in [
        ("note.cancelled", "cancelled"),
        ("note.expired", "expired"),
        ("note.failed", "failed"),
        ("note.undeliverable", "undeliverable"),
    ]:
        timeline.apply(ev("note.created", note=note(f"n-{state}", "pending")))
        timeline.apply(ev(kind, note=note(f"n-{state}", state, undeliverable_reason="session_ended")))
    record = timeline.notes["n1"]
    assert record.state == "acknowledged"
    assert list(record.state_times) == ["pending", "claimed", "delivered", "acknowledged"]
    assert record.state_times["delivered"].second == 2
    seen = {r.state for r in timeline.notes.values()} | set(record.state_times)
    assert seen == {s.value for s in NoteState}
    # Every change is also a timeline entry at the point it happened.
    note_entries = [e for e in timeline if isinstance(e, NoteEntry)]
    assert [e.state for e in note_entries[:4]] == ["pending", "claimed", "delivered", "acknowledged"]
    assert len(note_entries) == 12


def test_approvals_requested_then_decided() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("approval.requested", approval=approval("a1")))
    timeline.apply(ev("approval.requested", approval=approval("a2")))
    assert [a.id for a in timeline.pending_approvals] == ["a1", "a2"]
    timeline.apply(ev("approval.decided", approval=approval("a1", "declined", approver_comment="no")))
    assert [a.id for a in timeline.pending_approvals] == ["a2"]
    request, _, decision = [e for e in timeline if isinstance(e, ApprovalEntry)]
    assert (request.decided, request.status) == (False, "declined")  # the request line learns the outcome
    assert (decision.decided, decision.status) == (True, "declined")
    assert decision.approval is not None and decision.approval.approver_comment == "no"


def test_session_row_follows_session_events() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("session.started", session=session_row()))
    timeline.apply(ev("session.updated", session=session_row(title="renamed", tool_call_count=3)))
    assert timeline.session is not None and timeline.session.title == "renamed"
    assert len(timeline) == 1  # updates change the row, not the timeline


def test_each_call_returns_its_appends_then_in_place_updates() -> None:
    ev, timeline = Feed(), Timeline()
    changes = timeline.apply_many(
        [
            ev("model.delta", run_id="r1", iteration=1, text="a"),
            ev("model.delta", run_id="r1", iteration=1, text="b"),
        ]
    )
    assert changes.appended == (1,) and changes.updated == () and changes.applied == 2
    revision = timeline.revision
    again = timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="c"))
    assert again.updated == (1,) and again.appended == ()
    tool = timeline.apply(ev("tool.started", call_id="t", name="Bash", iteration=1, run_id="r1"))
    assert tool.updated == (1,) and tool.appended == (2,)  # the text became commentary
    joined = TimelineChanges.join([again, tool])
    assert joined.updated == (1,) and joined.appended == (2,) and joined.applied == 2
    assert timeline.revision > revision
    entry = timeline.get(1)
    assert entry is not None and entry.revision > revision


def test_cap_drops_oldest_entries_with_a_marker() -> None:
    ev, timeline = Feed(), Timeline(max_entries=10)
    for i in range(25):
        timeline.apply(ev("tool.started", call_id=f"c{i}", name="Bash", args_summary=f"echo {i}"))
    entries = list(timeline)
    assert len(entries) == 10
    marker = entries[0]
    assert isinstance(marker, DroppedEntry) and marker.count == 16
    assert next(e.args_summary for e in entries[1:] if isinstance(e, ToolEntry)) == "echo 16"
    more = [ev("tool.started", call_id=f"d{i}", name="Bash", args_summary=f"echo {i}") for i in range(5)]
    changes = timeline.apply_many(more)
    assert changes.first_id == 22 and changes.dropped == 5
    assert changes.appended == (26, 27, 28, 29, 30)
    # A completion for a dropped call still shows up.
    timeline.apply(ev("tool.completed", call_id="c0", name="Bash", status="ok"))
    assert isinstance(list(timeline)[-1], ToolEntry)


def test_char_cap_keeps_the_tail_of_one_huge_text() -> None:
    ev, timeline = Feed(), Timeline(max_chars=1_000)
    for _ in range(50):
        timeline.apply(ev("model.delta", run_id="r1", iteration=1, text="x" * 99 + "\n"))
    [text] = texts(timeline)
    assert text.chars <= 1_000 and text.dropped_chars == 5_000 - text.chars
    assert timeline.retained_chars <= 1_000


def test_100k_events_stay_under_the_caps() -> None:
    ev, timeline = Feed(), Timeline(max_entries=2_000, max_chars=200_000)
    batch: list[Event] = []
    for i in range(25_000):
        batch.append(ev("model.delta", run_id="r", iteration=i, text="thinking about it " * 3))
        batch.append(
            ev("tool.started", run_id="r", iteration=i, call_id=f"c{i}", name="Bash", args_summary="ls")
        )
        batch.append(ev("tool.completed", run_id="r", call_id=f"c{i}", name="Bash", duration_ms=3))
        batch.append(ev("model.step", run_id="r", iteration=i, phase="commentary", tool_calls=1))
    assert timeline.apply_many(batch).applied == 100_000
    assert len(timeline) <= 2_000
    assert timeline.retained_chars <= 200_000
    assert timeline.dropped_count == 50_000 - (len(timeline) - 1)
    # Internal indexes shrink with the entries (nothing keeps dropped entries alive).
    assert max(len(timeline._texts), len(timeline._tools), len(timeline._by_id)) <= 2_000
    assert not timeline._appended and not timeline._updated  # the call's changes went back to the caller
    last = list(timeline)[-1]
    assert isinstance(last, ToolEntry) and last.state is ToolState.COMPLETED


def test_each_entry_remembers_the_server_identity_and_time_of_the_last_event_it_applied() -> None:
    """A mark of where the operator last looked is kept by the server's own identity and time (our seq;
    a mapped server's own id or number), not by the entry id this process gave it."""
    feed = Feed()
    timeline = Timeline()
    timeline.apply(feed("tool.started", at="2026-03-01T10:00:00Z", call_id="c1", name="Bash"))
    timeline.apply(feed("model.delta", at="2026-03-01T10:00:01Z", iteration=1, text="thinking"))
    timeline.apply(feed("tool.completed", at="2026-03-01T10:00:02Z", call_id="c1", name="Bash"))
    tool, text = list(timeline)
    assert tool.first_place is not None and tool.place is not None and text.place is not None
    assert (tool.first_place.id, tool.first_place.number) == ("1", 1)
    assert (tool.place.id, tool.place.number, tool.place.at.second) == ("3", 3, 2)
    assert (text.place.id, text.place.at.second) == ("2", 1)
    assert timeline.last_place is not None and timeline.last_place.id == "3"

    def mapped_event(seq: int, second: int, **fields: Any) -> Event:
        at = f"2026-03-01T10:00:0{second}Z"
        return event_from_dict({"seq": seq, "session_id": SID, "at": at, **fields})

    mapped = Timeline()
    mapped.apply(mapped_event(1, 0, type="tool.started", call_id="c", name="Read", server_id="tool:5c1d"))
    mapped.apply_many(
        [
            mapped_event(2, 1, type="model.delta", iteration=1, text="a", server_seq=7),
            mapped_event(3, 2, type="model.delta", iteration=1, text="b", server_seq=9),
        ]
    )
    named, numbered = list(mapped)
    assert named.place is not None and (named.place.id, named.place.number) == ("tool:5c1d", None)
    assert numbered.first_place is not None and numbered.first_place.number == 7
    assert numbered.place is not None and (numbered.place.id, numbered.place.number) == ("9", 9)


def test_our_servers_events_keep_their_wire_shape_without_the_identity_fields() -> None:
    """The identity fields are ours to add for mapped servers; our own server's events (where the seq is
    the identity) are serialised exactly as before, and a client that does not know them reads them."""
    from client.events import event_to_json

    event = Feed()("tool.started", call_id="c1", name="Bash")
    assert "server_id" not in event_to_json(event) and "server_seq" not in event_to_json(event)
    stamped = event.model_copy(update={"server_seq": 4})
    assert '"server_seq":4' in event_to_json(stamped)
