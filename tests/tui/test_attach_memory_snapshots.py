"""Snapshots of the attach screen's find line and views (issue 19) at 120×32 and 80×24: the same scripted
incident (every kind of entry, each kind of problem) and frozen clock as the other attach snapshots; the
SVGs live in ``snapshots/test_attach_memory_snapshots/``."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from client.status import Live
from tests.tui.test_tui_snapshots import _attach_app, _settle, _wait_quiet
from tests.widgets.memory_host import incident_script

SIZES = [pytest.param((120, 32), id="120x32"), pytest.param((80, 24), id="80x24")]


async def _keys(pilot: Pilot[Any], *keys: str) -> None:
    await _settle(pilot)
    await pilot.press(*keys)
    await _wait_quiet(pilot)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_attach_find_line_open(snap_compare: Any, size: tuple[int, int]) -> None:
    """Commentary folded, ``/`` "staging", ↑ twice: the find line at the bottom of the timeline says
    "3 / 5", the narration holding the current match is open with the match reversed, the other matches
    underlined on a tint, and the keys line offers the find line's keys."""

    async def _run(pilot: Pilot[Any]) -> None:
        await _keys(pilot, "escape", "c", "slash", *"staging", "up", "up")

    assert snap_compare(_attach_app([Live(), *incident_script()]), run_before=_run, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("presses", [1, 2, 3], ids=["problems", "steering", "tools"])
def test_attach_views(snap_compare: Any, size: tuple[int, int], presses: int) -> None:
    """``f`` once, twice, three times: problems only, steering only, tools only, named on the line above
    the timeline (with the view ``f`` goes to next)."""

    async def _run(pilot: Pilot[Any]) -> None:
        await _keys(pilot, "escape", *["f"] * presses)

    assert snap_compare(_attach_app([Live(), *incident_script()]), run_before=_run, terminal_size=size)
