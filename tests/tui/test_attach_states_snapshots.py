"""Snapshots of the attach screen's operator states (issue 10) at 80×24 and 60×20: paused following,
narrow layouts, risky approvals, restored drafts. Same deterministic fake backend and frozen clock as
``test_tui_snapshots.py``; the SVGs live in ``snapshots/test_attach_states_snapshots/``."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from client.drafts import DraftStore
from client.events import Event
from client.status import Live
from tests.tui import data
from tests.tui.fakes import Script, ago
from tests.tui.test_tui_snapshots import _attach_app, _settle, _wait_quiet
from tui.screens.attach import AttachScreen

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((60, 20), id="60x20")]


def _tool_calls(ev: Script, start: int, count: int) -> list[Event]:
    out: list[Event] = []
    for i in range(start, start + count):
        call = f"c{i}"
        out.append(ev("tool.started", run_id="r1", call_id=call, name="Bash", args_summary=f"make step-{i}"))
        out.append(ev("tool.completed", run_id="r1", call_id=call, name="Bash", status="ok", duration_ms=40))
    return out


@pytest.mark.parametrize("size", SIZES)
def test_attach_following_paused_with_new_events(snap_compare: Any, size: tuple[int, int]) -> None:
    """Scrolled up (PageUp) while three more tool calls arrive: "↓ 3 new · End to follow" under the
    timeline, which stays where the reader put it."""
    ev = Script(data.SID, ago(minutes=5))
    first = [ev("run.started", run_id="r1", task="Build every step"), *_tool_calls(ev, 1, 30)]
    later = _tool_calls(ev, 31, 3)

    async def _scroll_up_then_more(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "pageup")
        await _wait_quiet(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, AttachScreen)
        change = screen.core.apply_events(later)  # as the stream does, the frame drawn at once
        assert change.timeline is not None
        screen.view.show(change.timeline)
        await _wait_quiet(pilot)

    app = _attach_app([Live(), *first])
    assert snap_compare(app, run_before=_scroll_up_then_more, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_attach_risky_approval_asks_first(snap_compare: Any, size: tuple[int, int]) -> None:
    """a on a high-risk approval: the question names the risk and the call; Keep pending is the default."""

    async def _approve(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "a")
        await _wait_quiet(pilot)

    app = _attach_app(
        [Live(), *data.streaming_script()],
        approvals=[data.approval(tool_args={"command": "rm -rf dist/", "cwd": "/srv/repos/payments"})],
    )
    assert snap_compare(app, run_before=_approve, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_attach_narrow_stacks_the_side_panel(snap_compare: Any, size: tuple[int, int]) -> None:
    """Below 90 columns the approvals go under the timeline at full width (buttons read in full) and the
    notes shrink to a count line that says p shows them."""
    app = _attach_app(
        [Live(), *data.streaming_script()], approvals=[data.approval()], notes=data.notes_all_states()[:3]
    )
    assert snap_compare(app, run_before=_settle, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_attach_narrow_notes_toggled(snap_compare: Any, size: tuple[int, int]) -> None:
    """p: the notes list takes the timeline's place; the count line says p goes back."""

    async def _notes(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "p")
        await _wait_quiet(pilot)

    app = _attach_app([Live(), *data.streaming_script()], notes=data.notes_all_states()[:3])
    assert snap_compare(app, run_before=_notes, terminal_size=size)


def test_attach_too_small(snap_compare: Any) -> None:
    """40×12: one notice with the size it needs and how to leave, not a six-column timeline."""
    app = _attach_app([Live(), *data.streaming_script()], approvals=[data.approval()])
    assert snap_compare(app, run_before=_settle, terminal_size=(40, 12))


@pytest.mark.parametrize("size", SIZES)
def test_attach_long_tool_lines_wrapped(snap_compare: Any, size: tuple[int, int]) -> None:
    """l: a tool line cut with … is shown in full, wrapped behind an indent."""
    ev = Script(data.SID, ago(minutes=2))
    long_args = "kubectl rollout restart deployment/payments-api --namespace production-eu-west-1"
    script = [
        ev("run.started", run_id="r1", task="Restart the API"),
        ev("tool.started", run_id="r1", call_id="k1", name="Bash", args_summary=long_args),
        ev("tool.completed", run_id="r1", call_id="k1", name="Bash", status="ok", duration_ms=1200),
    ]

    async def _wrap(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "l")
        await _wait_quiet(pilot)
        await pilot.pause()

    app = _attach_app([Live(), *script])
    assert snap_compare(app, run_before=_wrap, terminal_size=size)


def test_attach_drafts_from_two_windows(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 section 4: re-attached, the box holds this window's draft, then the one another window
    (pid 4242 on laptop) left, under a line naming it; the line above the box says to keep what is meant
    to be sent."""
    monkeypatch.setenv("TZ", "UTC")  # the marker says when the other draft was saved, in local time
    time.tzset()
    try:
        other = tmp_path / data.SID / "laptop-4242-a1b2c3.json"
        other.parent.mkdir()
        draft = {
            "format": 1,
            "host": "laptop",
            "pid": 4242,
            "text": "Hold the deploy: canary red.",
            "offered": [],
        }
        other.write_text(json.dumps(draft), encoding="utf-8")
        saved = datetime(2026, 11, 30, 11, 58, tzinfo=UTC).timestamp()
        os.utime(other, (saved, saved))
        drafts = DraftStore(tmp_path)
        drafts.put(data.SID, "Run the migration on staging first.")
        app = _attach_app([Live(), *data.streaming_script()], drafts=drafts)
        assert snap_compare(app, run_before=_settle, terminal_size=(80, 24))
    finally:
        monkeypatch.undo()
        time.tzset()
