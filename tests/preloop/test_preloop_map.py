"""The pure Preloop → event mapping, checked against the recorded websocket frames and activity lists."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from client.backends.preloop.feed import PreloopTiming, is_session_id, websocket_url
from client.backends.preloop.mapping import (
    Draft,
    PreloopMapper,
    approval_decided_draft,
    approval_requested_draft,
    args_summary,
    from_activity,
    from_envelope,
    note_draft,
    parse_time,
    replay_drafts,
    tool_status,
)
from client.events import (
    ModelDelta,
    ModelStep,
    NoteEvent,
    SessionEnded,
    SessionStarted,
    ToolCompleted,
    ToolStarted,
    UnknownEvent,
)
from client.models import ActivityList, Approval, Session
from client.streaming.policy import BACKOFF_INITIAL, BACKOFF_MAX, backoff_delay
from tests.fake_preloop import MAIN_SESSION, load_capture
from tests.fake_preloop.app import CAPTURES

SID = MAIN_SESSION


def _frames() -> list[dict[str, Any]]:
    data = json.loads((CAPTURES / "ws_session_main.json").read_text())
    return [m["data"] for m in data["messages"] if m["direction"] == "received" and m["phase"] != "connect"]


def _activity(name: str) -> ActivityList:
    return ActivityList.model_validate(load_capture(name)["body"])


def _admit_all(drafts: list[Draft | None]) -> list[Any]:
    seq = PreloopMapper(SID)
    events: list[Any] = []
    for draft in drafts:
        if draft is not None:
            events.extend(seq.map(draft))
    return events


def test_recorded_tool_call_frame_becomes_started_and_completed_with_status_and_duration() -> None:
    frame = _frames()[0]  # Bash, allowed, 15 ms
    events = _admit_all([from_envelope(SID, frame)])
    assert [type(e) for e in events] == [ToolStarted, ToolCompleted]
    started, completed = events
    assert started.name == completed.name == "Bash"
    assert started.call_id == completed.call_id == "32db7190-807c-4841-be89-80f7b5fb5b0f"
    assert completed.status == "ok"
    assert completed.duration_ms == 15
    assert started.args_summary == "command (8 chars)"
    assert [e.seq for e in events] == [1, 2]


def test_approved_and_declined_tool_calls_keep_their_outcome() -> None:
    frames = _frames()
    approved = next(f for f in frames if f["payload"].get("status") == "approved")
    declined = next(f for f in frames if f["payload"].get("status") == "declined")
    events = _admit_all([from_envelope(SID, approved), from_envelope(SID, declined)])
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(c.status, c.duration_ms, c.result_summary) for c in completed] == [
        ("ok", 4097, "ok, go ahead"),
        ("denied", 2049, "no, keep the build dir"),
    ]


def test_operator_note_frame_becomes_note_delivered() -> None:
    frame = next(f for f in _frames() if f["payload"].get("activity_type") == "agent_control_message")
    (event,) = _admit_all([from_envelope(SID, frame)])
    assert isinstance(event, NoteEvent)
    assert event.type == "note.delivered"
    assert event.note.note_id == "1c6c6763f25f4fcc"
    assert event.note.state == "delivered"
    assert event.note.text == "Please run the unit tests before committing."
    assert event.note.author is not None and event.note.author.display == "Alice Operator"
    assert event.note.delivery_channel == "hook"


def test_session_end_frame_carries_the_row_and_audit_noise_is_dropped() -> None:
    frames = _frames()
    ended, audit, agent = frames[-3:]
    assert from_envelope(SID, audit) is None
    assert from_envelope(SID, agent) is None
    (event,) = _admit_all([from_envelope(SID, ended)])
    assert isinstance(event, SessionEnded)
    assert event.session.ended_at == datetime(2026, 11, 30, 11, 37, 4, 668018, tzinfo=UTC)


def test_whole_recorded_conversation_maps_in_order() -> None:
    events = _admit_all([from_envelope(SID, f) for f in _frames()])
    kinds = [e.type for e in events]
    assert kinds == [
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
        "note.delivered",
        "note.delivered",
        "note.delivered",
        "tool.started",
        "tool.completed",
        "note.delivered",
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
        "session.ended",
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_activity_replay_is_oldest_first_and_ends_with_the_end() -> None:
    session = Session(id=SID, started_at=datetime(2026, 11, 30, 11, 36, 20, tzinfo=UTC))
    events = _admit_all(
        list(replay_drafts(SID, _activity("116_runtime_session_activity_final").items, session))
    )
    assert isinstance(events[0], SessionStarted)
    assert isinstance(events[1], UnknownEvent) and events[1].type == "preloop.session_warning"
    assert isinstance(events[-1], SessionEnded)
    times = [e.at for e in events]
    assert times == sorted(times)
    assert sum(1 for e in events if isinstance(e, ToolCompleted)) == 5
    assert sum(1 for e in events if isinstance(e, NoteEvent)) == 4


def test_replayed_and_live_copies_of_the_same_fact_are_shown_once() -> None:
    """The activity list and the socket both carry tool calls and note deliveries: keys match."""
    seq = PreloopMapper(SID)
    replayed = [
        e
        for d in replay_drafts(SID, _activity("116_runtime_session_activity_final").items)
        for e in seq.map(d)
    ]
    live = [e for f in _frames() if (d := from_envelope(SID, f)) is not None for e in seq.map(d)]
    assert live == []
    assert seq.last_seq == len(replayed)


def test_live_then_replay_also_dedupes() -> None:
    seq = PreloopMapper(SID)
    live = [e for f in _frames()[:2] if (d := from_envelope(SID, f)) is not None for e in seq.map(d)]
    replayed = [
        e for d in replay_drafts(SID, _activity("018_runtime_session_activity").items) for e in seq.map(d)
    ]
    assert len(live) == 4
    assert [e.type for e in replayed] == ["session.started", "preloop.session_warning"]
    assert [e.seq for e in replayed] == [5, 6]


def test_frames_of_another_session_are_ignored() -> None:
    frame = _frames()[0]
    assert from_envelope("00000000-0000-0000-0000-000000000001", frame) is None


def test_model_call_words_are_commentary_when_it_called_tools_else_final_answer() -> None:
    seq = PreloopMapper(SID)

    def envelope(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": kind,
            "timestamp": "2026-11-30T11:36:30Z",
            "payload": payload,
            "runtime_session_id": SID,
        }

    started = envelope("model_gateway_request_started", {"api_usage_id": "u1"})
    first = envelope(
        "model_gateway_call",
        {
            "api_usage_id": "u1",
            "conversation_preview": [
                {"source": "request", "role": "user", "text": "the prompt, not the model's words"},
                {
                    "source": "response",
                    "role": "assistant",
                    "text": "I will run the tests.",
                    "tool_calls": [{}],
                },
            ],
        },
    )
    second = envelope(
        "model_gateway_call",
        {
            "api_usage_id": "u2",
            "conversation_preview": [{"source": "response", "content": [{"text": "All green."}]}],
        },
    )
    out = [e for env in (started, first, second) if (d := from_envelope(SID, env)) for e in seq.map(d)]
    assert [type(e) for e in out] == [ModelDelta, ModelStep, ModelDelta, ModelStep]
    delta1, step1, delta2, step2 = out
    assert delta1.text == "I will run the tests."
    assert (step1.phase, step1.iteration, step1.tool_calls) == ("commentary", 1, 1)
    assert delta2.text == "All green."
    assert (step2.phase, step2.iteration) == ("final_answer", 2)


def test_naive_preloop_times_are_utc() -> None:
    assert parse_time("2026-11-30T11:36:20.840531") == datetime(2026, 11, 30, 11, 36, 20, 840531, tzinfo=UTC)
    assert parse_time("2026-11-30T11:36:30.539136Z") == datetime(2026, 11, 30, 11, 36, 30, 539136, tzinfo=UTC)
    assert parse_time("2026-11-30T12:36:30+01:00") == datetime(2026, 11, 30, 11, 36, 30, tzinfo=UTC)
    assert parse_time("not a time") is None
    approval = Approval.model_validate(load_capture("070_approvals_list_pending_for_session")["body"][0])
    assert approval.requested_at == datetime(2026, 11, 30, 11, 36, 51, 943277, tzinfo=UTC)


def test_polled_notes_name_their_state_and_pending_is_created() -> None:
    from client.models import Note

    pending = Note.model_validate(load_capture("027_note_create_to_deliver")["body"])
    cancelled = Note.model_validate(load_capture("038_note_cancel_pending")["body"])
    undeliverable = Note.model_validate(load_capture("111_note_get_undeliverable")["body"])
    first = note_draft(SID, pending, first_seen=True)
    assert first is not None and first.bodies[0]["type"] == "note.created"
    later = note_draft(SID, cancelled, first_seen=False)
    assert later is not None and later.bodies[0]["type"] == "note.cancelled"
    gone = note_draft(SID, undeliverable, first_seen=False)
    assert gone is not None and gone.bodies[0]["type"] == "note.undeliverable"
    assert note_draft(SID, pending.model_copy(update={"state": "bogus"}), first_seen=False) is None


def test_approval_drafts_carry_the_full_approval() -> None:
    pending = Approval.model_validate(load_capture("070_approvals_list_pending_for_session")["body"][0])
    approved = Approval.model_validate(load_capture("074_approval_approve")["body"])
    events = _admit_all([approval_requested_draft(SID, pending), approval_decided_draft(SID, approved)])
    assert [e.type for e in events] == ["approval.requested", "approval.decided"]
    assert events[1].approval.status == "approved"
    assert events[1].approval.approver_comment == "ok, go ahead"


@pytest.mark.parametrize(
    ("status", "decision", "expected"),
    [
        ("allowed", "allow", "ok"),
        ("approved", None, "ok"),
        ("declined", "deny", "denied"),
        ("error", None, "error"),
    ],
)
def test_tool_status(status: str, decision: str | None, expected: str) -> None:
    assert tool_status(status, decision) == expected


def test_args_summary_says_sizes_not_values() -> None:
    assert args_summary({"file_path": 22, "limit": 3}) == "file_path (22 chars), limit (3 chars)"
    assert args_summary(None) == ""


def test_a_session_warning_activity_is_kept_as_unknown() -> None:
    items = _activity("018_runtime_session_activity").items
    warning = next(i for i in items if i.activity_type == "session_warning")
    draft = from_activity(SID, warning)
    assert draft is not None
    (event,) = PreloopMapper(SID).map(draft)
    assert isinstance(event, UnknownEvent)
    assert "no MCP tools" in event.raw["summary"]


def test_websocket_url_follows_the_http_scheme() -> None:
    assert (
        websocket_url("http://127.0.0.1:8000", SID) == f"ws://127.0.0.1:8000/api/v1/ws/runtime-sessions/{SID}"
    )
    assert websocket_url("https://preloop.example/", SID).startswith("wss://preloop.example/api/v1/ws/")
    assert websocket_url("https://preloop.example/api/v1", SID).startswith("wss://preloop.example/api/v1/ws/")


def test_session_id_must_be_a_uuid() -> None:
    assert is_session_id(SID)
    assert not is_session_id("not-a-uuid")
    assert not is_session_id("f7303a36")


def test_backoff_grows_from_half_a_second_to_its_cap_with_jitter() -> None:
    """The Preloop follower uses the shared backoff (client.streaming.policy) and its defaults: a server
    that comes back is followed again within the cap, 2.5 s."""
    timing = PreloopTiming()
    assert (timing.backoff_initial, timing.backoff_max) == (BACKOFF_INITIAL, BACKOFF_MAX) == (0.5, 2.5)

    def delay(attempt: int) -> float:
        return backoff_delay(attempt, initial=timing.backoff_initial, maximum=timing.backoff_max)

    assert 0.5 <= delay(1) <= 1.0
    assert 1.0 <= delay(2) <= 2.0
    assert all(1.25 <= delay(n) <= 2.5 for n in (3, 10, 20))


def test_every_mapped_event_carries_the_preloop_fact_it_came_from() -> None:
    """Two follows number Preloop's activity alike only by chance; the fact's key (the activity item's id
    for a tool call) is the same in both, and is what a mark of where the operator last looked keeps."""
    items = _activity("116_runtime_session_activity_final").items
    first = _admit_all(list(replay_drafts(SID, items)))
    again = _admit_all(list(replay_drafts(SID, items[:-1])))  # a follow that met one fact fewer
    assert all(e.server_id for e in first)
    tools = [e for e in first if isinstance(e, ToolStarted)]
    assert tools and all(e.server_id == f"tool:{e.call_id}" for e in tools)
    by_id = {e.server_id: e.seq for e in first if isinstance(e, ToolCompleted)}
    moved = {e.server_id: e.seq for e in again if isinstance(e, ToolCompleted)}
    assert set(moved) <= set(by_id) and any(by_id[k] != moved[k] for k in moved)
