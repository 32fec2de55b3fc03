""" "New since you last looked" against the fake Preloop 0.17.1: Preloop numbers no event, so the mark the
app keeps is the fact's own key and time, and a new app process (its own replay, its own sequence) still
finds it: the tool calls made while the app was closed come under the rule, with the digest above it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from client.backends import connect
from client.config import Settings
from client.marks import MarkStore
from client.status import Live
from tests.conftest import until
from tests.fake_preloop import MAIN_SESSION, TOKEN, FakePreloop
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.timeline_view import TimelineView

RULE = "── new since you last looked"


async def _attached(pilot: Any, app: PreloopApp) -> TimelineView:
    await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
    screen = app.screen
    assert isinstance(screen, AttachScreen)
    await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
    view = screen.query_one(TimelineView)
    await until(pilot, lambda: len(view.lines_text) > 3, "the replayed activity")
    return view


async def test_a_preloop_session_comes_back_to_its_mark_after_a_restart(
    base_url: str, fake: FakePreloop, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    async with await connect(Settings(base_url, TOKEN)) as client:
        earlier = PreloopApp(
            client, start_session_id=MAIN_SESSION, refresh_interval=0, marks=MarkStore(marks),
            clock=lambda: datetime.now(UTC) - timedelta(minutes=20),
        )  # fmt: skip
        async with earlier.run_test(size=(200, 40)) as pilot:
            await _attached(pilot, earlier)
            await pilot.press("ctrl+c")
    mark = MarkStore(marks).get(MAIN_SESSION)
    assert mark is not None and mark.place.number is None  # Preloop numbers nothing: the fact's key and time

    fake.tool_call("Grep", summary="3 matches in shop/", push=False)  # while the app was closed
    fake.tool_call("Edit", summary="shop/cart.py", push=False)

    async with await connect(Settings(base_url, TOKEN)) as client:
        app = PreloopApp(client, start_session_id=MAIN_SESSION, refresh_interval=0, marks=MarkStore(marks))
        async with app.run_test(size=(200, 40)) as pilot:
            view = await _attached(pilot, app)
            await until(pilot, lambda: any(line.startswith(RULE) for line in view.lines_text), "the rule")
            lines = view.lines_text
            row = next(i for i, line in enumerate(lines) if line.startswith(RULE))
            assert "Grep" in lines[row + 1] and any("Edit" in line for line in lines[row + 1 :])
            assert not any("Grep" in line for line in lines[:row])
            away = next(line for line in lines[:row] if line.startswith("  Away 20 min"))
            assert "2 tool calls, none failed" in away
            assert not view.following
