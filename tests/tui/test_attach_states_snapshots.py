"""Snapshots of the attach screen's operator states (issue 10) at 80×24 and 60×20: paused following,
narrow layouts, risky approvals, restored drafts. Same deterministic fake backend and frozen clock as
``test_tui_snapshots.py``; the SVGs live in ``snapshots/test_attach_states_snapshots/``."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

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
        screen.view.feed(later)
        screen.view.flush()
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
