"""The pure Dendrux → our-events mapping, on what a real Dendrux 0.4.1 app sent (tests/dendrux/captures)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from client.backends.dendrux.mapping import (
    DendruxMapper,
    note_from_row,
    parse_time,
    raw_event,
    session_from_run,
    session_list,
)
from client.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    EventDecodeError,
    ModelStep,
    NoteEvent,
    RunCompleted,
    SessionEnded,
    ToolCompleted,
    ToolStarted,
    UnknownEvent,
)
from client.timeline import TextEntry, Timeline, ToolEntry, ToolState

CAPTURES = Path(__file__).parent / "captures"


def _load(name: str) -> Any:
    return json.loads((CAPTURES / name).read_text())


def _mapped(prefix: str = "", *, traces: bool = True) -> tuple[DendruxMapper, list[Event]]:
    run = _load(f"{prefix}rest_run.json")
    mapper = DendruxMapper(run_id=run["run_id"], run=run)
    if traces:
        mapper.learn_traces(_load(f"{prefix}rest_traces.json")["items"])
    mapper.learn_notes(_load(f"{prefix}notes.json"))
    events: list[Event] = []
    for item in _load(f"{prefix}rest_events.json")["items"]:
        events += mapper.map(raw_event(item))
    return mapper, events


def test_sse_timestamps_with_offset_and_z_parse_as_utc() -> None:
    assert parse_time("2026-11-30T11:35:49.632363+00:00Z") == datetime(2026, 11, 30, 11, 35, 49, 632363, UTC)
    assert parse_time("2026-11-30T11:35:49.632363Z") == datetime(2026, 11, 30, 11, 35, 49, 632363, UTC)
    assert parse_time("2026-11-30 11:35:50.265617+00:00") == datetime(2026, 11, 30, 11, 35, 50, 265617, UTC)
    assert parse_time("2026-11-30T11:35:49") == datetime(2026, 11, 30, 11, 35, 49, tzinfo=UTC)
    assert parse_time("yesterday") is None


def test_sse_frames_and_rest_items_decode_the_same() -> None:
    frames = [
        line.split("\t", 1)[1].removeprefix("data: ")
        for line in (CAPTURES / "run_stream_raw_full_replay.txt").read_text().splitlines()
        if "\tdata: " in line
    ]
    from_sse = [raw_event(frame) for frame in frames]
    from_rest = [raw_event(item) for item in _load("rest_events.json")["items"]]
    assert [(r.index, r.type, r.at, r.data) for r in from_sse] == [
        (r.index, r.type, r.at, r.data) for r in from_rest
    ]
    assert from_sse[0].index == 0  # Dendrux numbers from 0
    with pytest.raises(EventDecodeError):
        raw_event('{"event_type": "run.started"}')
    with pytest.raises(EventDecodeError):
        raw_event("not json")


def test_commentary_and_final_answer_come_from_the_trace_rows() -> None:
    _, events = _mapped()
    steps = [e for e in events if isinstance(e, ModelStep)]
    assert [(s.iteration, s.phase, s.text) for s in steps] == [
        (1, "commentary", "Let me look up order A-17 first."),
        (2, "commentary", "The order was delivered; I'll issue the $42.50 refund now (noted your message)."),
        (3, "final_answer", "Refund of $42.50 for order A-17 is done. Notes seen: 2."),
    ]
    completed = [e for e in events if isinstance(e, RunCompleted)]
    assert completed[0].answer == "Refund of $42.50 for order A-17 is done. Notes seen: 2."
    assert completed[0].iteration == 3
    assert isinstance(events[-1], SessionEnded) and events[-1].session.ended
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_a_trace_row_not_there_yet_is_asked_for() -> None:
    run = _load("rest_run.json")
    mapper = DendruxMapper(run_id=run["run_id"], run=run)
    llm = raw_event(_load("rest_events.json")["items"][1])
    assert mapper.needs_trace(llm)
    mapper.learn_traces(_load("rest_traces.json")["items"])
    assert not mapper.needs_trace(llm)
    step = next(e for e in mapper.map(llm) if isinstance(e, ModelStep))
    assert step.text == "Let me look up order A-17 first."


def test_a_step_mapped_before_its_trace_row_is_sent_again_with_its_text_once_the_row_is_learnt() -> None:
    """The step goes out empty and owed; its call finished before the row landed, so the late text
    brings the step's text but no start for that call (a start now would show a finished call running)."""
    run = _load("rest_run.json")
    mapper = DendruxMapper(run_id=run["run_id"], run=run)
    items = _load("rest_events.json")["items"]
    early = [e for item in items[:3] for e in mapper.map(raw_event(item))]  # run.started, llm, tool done
    assert [(s.iteration, s.text) for s in early if isinstance(s, ModelStep)] == [(1, "")]
    assert list(mapper.owed) == [1] and mapper.fill() == []
    mapper.learn_traces(_load("rest_traces.json")["items"])
    late = mapper.fill()
    assert [(e.type, getattr(e, "text", None)) for e in late] == [
        ("model.step", "Let me look up order A-17 first.")
    ]
    assert late[0].seq == early[-1].seq + 1 and not mapper.owed and mapper.fill() == []
    timeline = Timeline()
    timeline.apply_many([*early, *late])
    shown = [e for e in timeline if isinstance(e, TextEntry | ToolEntry)]
    assert [(e.text if isinstance(e, TextEntry) else (e.name, e.state)) for e in shown] == [
        "Let me look up order A-17 first.",
        ("lookup_order", ToolState.COMPLETED),
    ]


def test_tools_start_from_the_trace_and_a_declined_call_ends_denied() -> None:
    _, events = _mapped("reject_")
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert [(t.name, t.args) for t in started] == [
        ("lookup_order", {"order_id": "A-17"}),
        ("refund_order", {"order_id": "A-17", "amount_usd": 42.5}),
    ]
    done = [(e.name, e.status) for e in events if isinstance(e, ToolCompleted)]
    assert done == [("lookup_order", "ok"), ("refund_order", "denied")]
    requested = next(e for e in events if isinstance(e, ApprovalRequested))
    decided = next(e for e in events if isinstance(e, ApprovalDecided))
    assert requested.approval.id == decided.approval.id == started[1].call_id
    assert requested.approval.tool_args == {"order_id": "A-17", "amount_usd": 42.5}
    assert decided.approval.status == "declined"
    assert decided.approval.approver_comment == "Operator: refunds over $40 need a manager."
    # the decision comes before the tool's result in our stream, so the result can say "denied"
    assert events.index(decided) < next(
        i for i, e in enumerate(events) if isinstance(e, ToolCompleted) and e.status == "denied"
    )


def test_approved_call_is_approved_then_ok() -> None:
    _, events = _mapped()
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [d.approval.status for d in decided] == ["approved"]
    assert [(e.name, e.status) for e in events if isinstance(e, ToolCompleted)][-1] == ("refund_order", "ok")


def test_notes_delivered_once_with_their_text_even_when_delivered_twice() -> None:
    run = _load("rest_run.json")
    mapper = DendruxMapper(run_id=run["run_id"], run=run)
    mapper.learn_notes(_load("notes.json"))
    delivered = raw_event(_load("rest_events.json")["items"][3])
    first = mapper.map(delivered)
    again = mapper.map(raw_event({**_load("rest_events.json")["items"][3], "sequence_index": 40}))
    assert again == []
    assert isinstance(first[0], NoteEvent) and first[0].type == "note.delivered"
    assert first[0].note.text == "Customer is a VIP, be polite." and first[0].note.delivered_turn_index == 2


def test_unread_notes_become_undeliverable_when_the_run_ends() -> None:
    mapper, _ = _mapped()
    unread = {
        "note_id": "N-late",
        "text": "too late",
        "created_at": "2026-11-30 11:35:57+00:00",
        "delivered_at": None,
    }
    notes = [*_load("notes.json"), unread]
    out = mapper.close_out(notes)
    assert [(e.type, e.note.note_id) for e in out if isinstance(e, NoteEvent)] == [
        ("note.undeliverable", "N-late")
    ]
    assert note_from_row(unread, "r", run_ended=False).state == "pending"
    assert note_from_row(_load("notes.json")[0], "r").state == "delivered"


def test_unknown_dendrux_events_are_shown_not_dropped() -> None:
    mapper = DendruxMapper(run_id="r1")
    out = mapper.map(
        raw_event(
            {
                "sequence_index": 3,
                "iteration_index": 1,
                "event_type": "guardrail.blocked",
                "correlation_id": None,
                "timestamp": "2026-11-30T11:35:49.632363+00:00Z",
                "data": {"message": "PII found in the tool output"},
            }
        )
    )
    assert len(out) == 1 and isinstance(out[0], UnknownEvent)
    assert out[0].type == "dendrux.guardrail.blocked" and out[0].said == "PII found in the tool output"


def test_run_rows_become_sessions() -> None:
    run = _load("rest_run.json")
    session = session_from_run(run)
    assert session.id == run["run_id"] and session.agent_name == "refund_desk" and session.ended
    assert session.title == "Customer says order A-17 arrived broken; refund it."
    page = session_list(
        {
            "items": [run, {**run, "run_id": "r2", "status": "waiting_approval"}],
            "total": 3,
            "limit": 2,
            "offset": 0,
        }
    )
    assert page.has_more and [s.activity_status for s in page.items] == ["success", "waiting_approval"]
    assert page.items[1].pending_approval_count == 1 and not page.items[1].ended


def test_dendrux_ulids_are_ids_and_their_starts_are_short_ids_but_words_are_not() -> None:
    from client.ids import is_prefix, is_ulid

    assert is_ulid("01M8P3TR0QRQVHABBEDAPX4Y8X") and not is_ulid("01M8P3TR0QRQVHABBEDAPX4Y8")
    assert not is_ulid("01M8P3TR0QRQVHABBEDAPX4Y8U")  # U is not Crockford base32
    assert is_prefix("01M8") and is_prefix("01m8p3tr") and is_prefix("01M8P3TR")
    assert not is_prefix("Needs") and not is_prefix("01M")
    assert is_prefix("1a2b3c4d")  # short UUIDs still are
    from client.ids import short_id

    # a ULID's first 10 characters are its millisecond timestamp: runs started together differ after them
    assert short_id("01M8SFCPN5QP9XN11F674EFJPJ") == "01M8SFCPN5QP"
    assert short_id("1a2b3c4d-0000-4000-8000-1234567890ab") == "1a2b3c4d"


def test_every_mapped_event_carries_the_dendrux_sequence_index_it_came_from() -> None:
    """Our seq is this follow's count; the app's own ``sequence_index`` is what a mark of "where you last
    looked" keeps (another follow numbers differently; the app answers ``?after=<index>``)."""
    _, events = _mapped()
    indexes = [item["sequence_index"] for item in _load("rest_events.json")["items"]]
    assert all(e.server_seq is not None for e in events)
    assert {e.server_seq for e in events} <= set(indexes)
    assert [e.server_seq for e in events] == sorted(e.server_seq or 0 for e in events)
    started = [e for e in events if isinstance(e, ToolStarted)]
    llm = [
        i["sequence_index"] for i in _load("rest_events.json")["items"] if i["event_type"] == "llm.completed"
    ]
    assert started[0].server_seq == llm[0]  # a call starts with the model step that made it
