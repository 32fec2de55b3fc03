"""Snapshots of the timeline's entry cursor, find highlights and views, in a small host app (a header line
naming the view, the timeline, the find line) at 120x32 and 80x24."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from tests.conftest import until
from tests.tui.fakes import Script, ago
from tests.widgets.feed import feed
from tests.widgets.memory_host import SID, MemoryHost, incident_script, settle, tool_calls

SIZES = [pytest.param((120, 32), id="120x32"), pytest.param((80, 24), id="80x24")]


def _host(collapse: bool = False) -> MemoryHost:
    app = MemoryHost(collapse_commentary=collapse)
    app.call_after_refresh(lambda: feed(app.view, incident_script()))
    return app


async def _keys(pilot: Pilot[Any], *keys: str) -> None:
    app = pilot.app
    assert isinstance(app, MemoryHost)
    await until(pilot, lambda: len(app.timeline) > 0, "the script fed (after the first frame)")
    await settle(pilot)
    await pilot.press(*keys)
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_timeline_cursor(snap_compare: Any, size: tuple[int, int]) -> None:
    """k three times from the newest entry: the note sent line is highlighted (▌, bold, tinted bar)."""

    async def _run(pilot: Pilot[Any]) -> None:
        await _keys(pilot, "k", "k", "k")

    assert snap_compare(_host(), run_before=_run, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_timeline_find_highlights(snap_compare: Any, size: tuple[int, int]) -> None:
    """ "staging" with commentary folded, stepped back to the match inside the folded narration: that
    entry is open, its match reversed, the others underlined on a tint, "3 / 5" in the find line."""

    async def _run(pilot: Pilot[Any]) -> None:
        await _keys(pilot, "slash", *"staging", "up", "up")

    assert snap_compare(_host(collapse=True), run_before=_run, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("presses", [1, 2, 3], ids=["problems", "steering", "tools"])
def test_timeline_views(snap_compare: Any, size: tuple[int, int], presses: int) -> None:
    """f once, twice, three times: problems only, steering only, tools only (named in the header)."""

    async def _run(pilot: Pilot[Any]) -> None:
        await _keys(pilot, *["f"] * presses)

    assert snap_compare(_host(), run_before=_run, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_timeline_empty_view(snap_compare: Any, size: tuple[int, int]) -> None:
    """Problems only on a session where nothing went wrong: one line says so."""
    app = MemoryHost()
    app.call_after_refresh(lambda: feed(app.view, tool_calls(Script(SID, ago(minutes=5)), 0, 12)))

    async def _run(pilot: Pilot[Any]) -> None:
        await _keys(pilot, "f")

    assert snap_compare(app, run_before=_run, terminal_size=size)
