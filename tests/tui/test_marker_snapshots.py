"""Snapshots of "new since you last looked" on the attach screen, at 120x32 and 80x24: the rule alone (back
after a glance away: the view opens at the first new entry, following paused) and the digest above it
(back after twenty minutes: tool calls and failures, a decline and its comment, the notes and what the
agent did after reading one, the problems, the agent's latest words). A frozen clock, a scripted backend
and a mark put in memory keep the pictures the same on every run."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from textual.pilot import Pilot

from client.events import Event
from client.marks import Mark, MarkStore
from client.status import Live
from client.timeline import Place
from tests.tui import data
from tests.tui.fakes import NOW, FakeBackend, Script, ago
from tests.tui.test_tui_snapshots import _app, _settle, _wait_quiet
from tests.widgets.memory_host import tool_calls
from tui.screens.attach import AttachScreen

SIZES = [pytest.param((120, 32), id="120x32"), pytest.param((80, 24), id="80x24")]
SID = data.SID


def _early(ev: Script) -> list[Event]:
    """Thirty finished tool calls: what the operator had looked at (the mark is on the last one)."""
    return [ev("run.started", run_id="r1", task="Fix the flaky checkout test"), *tool_calls(ev, 1, 30)]


def _while_away(ev: Script) -> list[Event]:
    """What came after the mark: a note read and acted on, a failing test run, a decline with a comment,
    a note that never reached the agent, an edit, and the run failing."""
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
        ev("note.created", note=note),
        ev("note.delivered", note={**note, "state": "delivered", "delivery_channel": "hook"}),
        ev("model.delta", run_id="r1", iteration=2, text="Switching to the staging database as asked."),
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


def _marked_app(away: timedelta) -> Any:
    """The attach screen on a session last looked at ``away`` ago, at its 30th tool call."""
    ev = Script(SID, ago(minutes=50))
    early = _early(ev)
    later = _while_away(ev)
    last = early[-1]
    marks = MarkStore()
    marks.put(SID, Mark(Place(str(last.seq), last.at, last.seq), NOW - away))
    backend = FakeBackend(sessions=[data.session()], script=[Live(), *early, *later])
    return _app(backend, start_session_id=SID, marks=marks)


async def _shown(pilot: Pilot[Any]) -> None:
    """The script applied, the rule placed and the digest above it recomputed from all of it."""
    await _settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, AttachScreen)
    async with asyncio.timeout(30):
        while not (screen.last_looked.settled and screen.view.reader.rule_at is not None):
            await pilot.pause(0.05)
    await _wait_quiet(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_marker_after_a_glance_away(snap_compare: Any, size: tuple[int, int]) -> None:
    """Back after a minute: the rule "new since you last looked (11:59)" above the note sent after the
    30th tool call, no digest, the view opened there and following paused ("End to follow")."""
    assert snap_compare(_marked_app(timedelta(minutes=1)), run_before=_shown, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_marker_with_the_digest_after_twenty_minutes(snap_compare: Any, size: tuple[int, int]) -> None:
    """Back after twenty minutes: the digest's lines above the rule (away 20 min, 2 tool calls, 1 failed;
    the decline with its comment; the notes, one read and what followed it, one never delivered; the
    failed run; the agent's latest words), then the rule, then the first new entry."""
    assert snap_compare(_marked_app(timedelta(minutes=20)), run_before=_shown, terminal_size=size)
