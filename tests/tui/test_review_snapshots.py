"""Snapshots of the post-incident features: the notes panel's "then:" line under a read note."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from client.events import Event
from client.status import Live
from tests.tui import data
from tests.tui.fakes import Script, ago
from tests.tui.test_tui_snapshots import _attach_app, _settle


def listened_script() -> list[Event]:
    """Two notes: one the agent read and acted on (a tool call, then narration), one still pending."""
    ev = Script(data.SID, ago(minutes=3))
    read = {"note_id": "n1", "text": "Run only the checkout suite.", "runtime_session_id": data.SID}
    waiting = {"note_id": "n2", "text": "Then open a PR.", "runtime_session_id": data.SID}
    return [
        ev("run.started", run_id="r1", task="Fix the flaky checkout test"),
        ev("model.delta", run_id="r1", iteration=1, text="Running the whole suite."),
        ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1),
        ev("tool.started", run_id="r1", call_id="c1", iteration=1, name="Bash", args_summary="pytest"),
        ev("note.created", note={**read, "state": "pending", "created_at": ago(minutes=2).isoformat()}),
        ev("tool.completed", run_id="r1", call_id="c1", name="Bash", status="error", duration_ms=61000),
        ev(
            "note.delivered",
            note={
                **read,
                "state": "delivered",
                "created_at": ago(minutes=2).isoformat(),
                "delivered_at": ago(minutes=1).isoformat(),
                "delivery_channel": "tool_result",
            },
        ),
        ev(
            "tool.started",
            run_id="r1",
            call_id="c2",
            iteration=2,
            name="Bash",
            args_summary="pytest -k checkout",
        ),
        ev("tool.completed", run_id="r1", call_id="c2", name="Bash", status="ok", duration_ms=4200),
        ev("note.created", note={**waiting, "state": "pending", "created_at": ago(seconds=20).isoformat()}),
        ev("model.delta", run_id="r1", iteration=3, text="The checkout suite passes now."),
    ]


def test_attach_then_line_under_a_read_note(snap_compare: Any) -> None:
    """The read note says what the agent did next (the second Bash call); the pending one does not."""
    app = _attach_app([Live(), *listened_script()])
    assert snap_compare(app, run_before=_settle, terminal_size=(120, 30))


def test_switch_list_of_followed_sessions(snap_compare: Any) -> None:
    """Two followed sessions: the one on screen marked, the previous one highlighted (s then Enter goes
    back), each with what needs attention."""
    app = _attach_app([Live(), *data.streaming_script()], approvals=[data.approval()])
    app.backend.sessions = data.sessions()  # type: ignore[attr-defined]
    other = data.sessions()[1].id

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        app.open_session(other)
        await _settle(pilot)
        await pilot.press("escape", "s")
        await _settle(pilot)

    assert snap_compare(app, run_before=run_before)
