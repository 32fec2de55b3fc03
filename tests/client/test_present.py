"""The pure presentation helpers: what a user reads in the sessions table and the plain attach output."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from client.events import parse_event
from client.ids import is_prefix, is_uuid, short_id
from client.models import Session
from client.present import (
    cell,
    event_line,
    format_duration,
    kind_label,
    normalize_kind,
    parse_duration,
    relative_time,
    session_state,
    session_title,
    unique_titles,
)

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _row(**kw: object) -> Session:
    data: dict[str, object] = {"id": "f7303a36-18c9-406b-825f-6a43b492ec5e"}
    data.update(kw)
    return Session.model_validate(data)


@pytest.mark.parametrize(
    ("ago", "text"),
    [
        (timedelta(seconds=1), "just now"),
        (timedelta(seconds=-30), "just now"),
        (timedelta(seconds=12), "12s ago"),
        (timedelta(minutes=5, seconds=59), "5m ago"),
        (timedelta(hours=3, minutes=2), "3h ago"),
        (timedelta(days=2, hours=23), "2d ago"),
    ],
)
def test_relative_time_reads_like_a_person_would_say_it(ago: timedelta, text: str) -> None:
    assert relative_time(NOW - ago, now=NOW) == text


def test_relative_time_of_nothing_and_of_naive_timestamps() -> None:
    assert relative_time(None, now=NOW) == "-"
    assert relative_time(datetime(2026, 11, 30, 11, 0, 0), now=NOW) == "1h ago"


def test_session_state_live_idle_ended() -> None:
    assert session_state(_row(last_activity_at=NOW - timedelta(seconds=90)), NOW) == "live"
    assert session_state(_row(last_activity_at=NOW - timedelta(minutes=3)), NOW) == "idle"
    assert session_state(_row(started_at=NOW - timedelta(minutes=30)), NOW) == "idle"
    recent_but_ended = _row(last_activity_at=NOW, ended_at=NOW)
    assert session_state(recent_but_ended, NOW) == "ended"


def test_title_falls_back_to_kind_cwd_and_start() -> None:
    row = _row(agent_kind="claude_code", cwd="/home/dev/demo", started_at="2026-11-30T11:36:20.840531")
    assert session_title(row) == "Claude Code in /home/dev/demo started 2026-11-30 11:36"
    assert session_title(_row(title="Fix the login bug", agent_kind="codex")) == "Fix the login bug"
    assert session_title(_row()) == "agent"


def test_titles_are_made_unique_on_a_page_with_the_short_id() -> None:
    a = _row(id="aaaaaaaa-0000-0000-0000-000000000001", title="Same")
    b = _row(id="bbbbbbbb-0000-0000-0000-000000000002", title="Same")
    c = _row(id="cccccccc-0000-0000-0000-000000000003", title="Other")
    assert unique_titles([a, b, c]) == ["Same (aaaaaaaa)", "Same (bbbbbbbb)", "Other"]


def test_untrusted_title_cannot_drive_the_terminal() -> None:
    title = session_title(_row(title="\x1b]0;pwned\x07evil\x1b[2J\nsecond line\u202e"))
    assert "\x1b" not in title and "\n" not in title and "\u202e" not in title
    assert "evil" in title and "second line" in title
    assert "\x1b" not in cell("a\x1b[31mred") and cell(None) == "-"
    assert cell("x" * 50, 10) == "x" * 9 + "…"


@pytest.mark.parametrize("typed", ["Claude Code", "claude-code", "CLAUDE_CODE", " claude  code "])
def test_kind_normalisation(typed: str) -> None:
    assert normalize_kind(typed) == "claude_code"
    assert kind_label(typed) == "Claude Code"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60s", 60), ("30m", 1800), ("2h", 7200), ("7d", 604800), ("1h30m", 5400), ("1w", 604800)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert parse_duration(format_duration(timedelta(seconds=seconds))) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["", "30", "m", "30x", "2h foo", "-5m"])
def test_parse_duration_refuses_with_a_sentence(bad: str) -> None:
    with pytest.raises(ValueError, match=r"30m|unit"):
        parse_duration(bad)


def test_ids() -> None:
    full = "f7303a36-18c9-406b-825f-6a43b492ec5e"
    assert short_id(full) == "f7303a36" and short_id(None) == "-"
    assert is_uuid(full) and not is_uuid("f7303a36")
    assert is_prefix("f730") and not is_prefix("f73") and not is_prefix("xyz1")


def test_event_lines_are_one_safe_line() -> None:
    ev = parse_event(
        '{"seq": 3, "type": "tool.started", "session_id": "s", "at": "2026-11-30T12:00:00Z",'
        ' "call_id": "call-123456789", "name": "bash", "args_summary": "ls\\n\\u001b[2J -la"}'
    )
    kind, text = event_line(ev)
    assert kind == "tool" and text.startswith("bash ls") and "\x1b" not in text and "\n" not in text
    unknown = parse_event(
        '{"seq": 4, "type": "future.thing", "session_id": "s", "at": "2026-11-30T12:00:00Z"}'
    )
    assert event_line(unknown) == ("unknown", "future.thing event")
    said = parse_event(
        '{"seq": 5, "type": "preloop.session_warning", "session_id": "s", "at": "2026-11-30T12:00:00Z",'
        ' "title": "Tool call", "summary": "This token allows no MCP tools\\u001b[31m", "status": "warning"}'
    )
    kind, text = event_line(said)
    assert kind == "unknown" and text.startswith("preloop.session_warning: This token allows no MCP tools")
    assert "\x1b" not in text


def test_a_requested_approval_line_names_its_risk_and_both_commands_with_its_id() -> None:
    requested = parse_event(
        '{"seq": 6, "type": "approval.requested", "session_id": "s", "at": "2026-11-30T12:00:00Z",'
        ' "approval": {"id": "f98ccce3-0000-4000-8000-000000000000", "tool_name": "Bash",'
        ' "summary": "Allow Bash?", "risk_level": "danger"}}'
    )
    assert event_line(requested) == (
        "approval",
        "requested f98ccce3: Allow Bash? [risk danger] (/approve f98ccce3 or /decline f98ccce3)",
    )
