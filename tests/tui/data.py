"""Deterministic rows, notes, approvals and event scripts for the TUI snapshot tests (time frozen at NOW)."""

from __future__ import annotations

from client.events import Event
from client.models import Approval, Note, Session
from tests.tui.fakes import NOW, Script, ago

SID = "3f2a9c1e-7b4d-4e8a-9c2f-0d1e2f3a4b5c"
HOSTILE = "[bold red]pwned[/] \x1b]0;evil title\x07\x1b[2J\u202eesrever\u202c [link=http://x]click[/link]"


def sessions() -> list[Session]:
    return [
        Session(
            id=SID,
            agent_name="claude-code@build-7",
            agent_kind="claude_code",
            title="Fix flaky checkout test",
            started_at=ago(minutes=42),
            last_activity_at=ago(seconds=20),
            tool_call_count=37,
            total_requests=12,
            pending_approval_count=1,
        ),
        Session(
            id="8b1c2d3e-0000-4000-8000-000000000002",
            agent_name="codex-nightly",
            agent_kind="codex",
            cwd="/srv/repos/payments",
            started_at=ago(hours=3),
            last_activity_at=ago(minutes=14),
            tool_call_count=120,
            total_requests=44,
            pending_approval_count=0,
        ),
        Session(
            id="c0ffee00-0000-4000-8000-000000000003",
            agent_name="gemini-triage",
            agent_kind="gemini_cli",
            title="Triage incident INC-2291",
            started_at=ago(days=1, hours=2),
            last_activity_at=ago(days=1),
            ended_at=ago(days=1),
            tool_call_count=8,
            total_requests=5,
            pending_approval_count=0,
        ),
    ]


def session(**update: object) -> Session:
    return sessions()[0].model_copy(update=update)


def notes_all_states() -> list[Note]:
    base = {"runtime_session_id": SID}
    return [
        Note(
            note_id="n1",
            state="pending",
            text="Please stop touching the lockfile.",
            created_at=ago(seconds=30),
            expires_at=ago(minutes=-9),
            **base,
        ),
        Note(
            note_id="n2",
            state="claimed",
            text="Use the staging DB, not prod.",
            created_at=ago(minutes=2),
            claimed_at=ago(minutes=1),
            expires_at=ago(minutes=-8),
            **base,
        ),
        Note(
            note_id="n3",
            state="delivered",
            text="Run only the checkout suite.",
            created_at=ago(minutes=4),
            delivered_at=ago(minutes=3),
            delivery_channel="hook",
            delivery_event="pre_tool_use",
            delivered_turn_index=7,
            **base,
        ),
        Note(
            note_id="n4",
            state="acknowledged",
            text="Skip the e2e tests\nthey are broken on main.",
            created_at=ago(minutes=6),
            delivered_at=ago(minutes=5),
            delivery_channel="model_call",
            delivered_turn_index=5,
            **base,
        ),
        Note(
            note_id="n5",
            state="cancelled",
            text="Never mind.",
            created_at=ago(minutes=8),
            cancelled_at=ago(minutes=7),
            **base,
        ),
        Note(
            note_id="n6",
            state="expired",
            text="Check the CI logs.",
            created_at=ago(minutes=20),
            expired_at=ago(minutes=10),
            **base,
        ),
        Note(note_id="n7", state="failed", text="Rebase on main.", created_at=ago(minutes=25), **base),
        Note(
            note_id="n8",
            state="undeliverable",
            text="Bump the version.",
            created_at=ago(minutes=30),
            undeliverable_at=ago(minutes=29),
            undeliverable_reason="session ended before delivery",
            **base,
        ),
    ]


def approval(**update: object) -> Approval:
    a = Approval(
        id="ap-1",
        tool_name="Bash",
        summary="Run database migration on staging",
        tool_args={"command": "alembic upgrade head", "cwd": "/srv/repos/payments", "timeout": 600},
        status="pending",
        requested_at=ago(seconds=15),
        runtime_session_id=SID,
        risk_level="high",
    )
    return a.model_copy(update=update)


def streaming_script() -> list[Event]:
    """A run with narration, two tool calls, and text still streaming."""
    ev = Script(SID, ago(minutes=1))
    return [
        ev("run.started", run_id="r1", task="Fix the flaky checkout test"),
        ev("model.delta", run_id="r1", iteration=1, text="Let me look at the failing test first. "),
        ev("model.delta", run_id="r1", iteration=1, text="I'll read the test file."),
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
        ev("model.delta", run_id="r1", iteration=2, text="The test depends on wall-clock time. "),
        ev("model.step", run_id="r1", iteration=2, phase="commentary", tool_calls=1),
        ev(
            "tool.started",
            run_id="r1",
            call_id="c2",
            iteration=2,
            name="Bash",
            args_summary="pytest -k checkout",
        ),
        ev("tool.completed", run_id="r1", call_id="c2", name="Bash", status="error", duration_ms=8120),
        ev("model.delta", run_id="r1", iteration=3, text="I will freeze the clock in the fixture and "),
    ]


def final_script() -> list[Event]:
    ev = Script(SID, ago(minutes=1))
    return [
        ev("run.started", run_id="r1", task="Fix the flaky checkout test"),
        ev("model.delta", run_id="r1", iteration=1, text="Reading the test."),
        ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1),
        ev(
            "tool.started",
            run_id="r1",
            call_id="c1",
            iteration=1,
            name="Edit",
            args_summary="tests/conftest.py",
        ),
        ev("tool.completed", run_id="r1", call_id="c1", name="Edit", status="ok", duration_ms=310),
        ev("model.delta", run_id="r1", iteration=2, text="Done."),
        ev("model.step", run_id="r1", iteration=2, phase="final_answer"),
        ev(
            "run.completed",
            run_id="r1",
            iteration=2,
            answer="## Fixed\n\nThe test froze **time** wrongly. I pinned the clock in `conftest.py`.\n\n"
            "- 1 file changed\n- checkout suite green",
        ),
    ]


def hostile_script() -> list[Event]:
    ev = Script(SID, ago(minutes=1))
    return [
        ev("run.started", run_id="r1", task=HOSTILE),
        ev("model.delta", run_id="r1", iteration=1, text=HOSTILE),
        ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1),
        ev("tool.started", run_id="r1", call_id="c1", iteration=1, name="[red]Bash[/]", args_summary=HOSTILE),
        ev("tool.completed", run_id="r1", call_id="c1", name="[red]Bash[/]", status="ok", duration_ms=5),
    ]


__all__ = ["HOSTILE", "NOW", "SID"]
