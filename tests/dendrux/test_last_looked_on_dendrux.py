""" "New since you last looked" against a real Dendrux app: the mark the app keeps is the run event's own
``sequence_index`` (not a number this process gave it), so a new app process finds it again; the digest
names the decline made by another client and says that Dendrux keeps its reason, not a comment field."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from client.marks import MarkStore
from client.status import Ended, Live
from tests.conftest import until
from tests.dendrux.conftest import run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.timeline_view import TimelineView

RULE = "── new since you last looked"


def _backend(app: DendruxAppServer) -> DendruxBackend:
    return DendruxBackend(Connection(app.url, app.token, backoff_initial=0.05, backoff_max=0.5))


async def _attached(pilot: Any, app: PreloopApp, words: str) -> TimelineView:
    await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
    screen = app.screen
    assert isinstance(screen, AttachScreen)
    # A run that already finished is live for a moment, then ended: either state means the stream is read
    # (waiting for "live" alone raced that moment on a loaded machine).
    await until(pilot, lambda: isinstance(screen.status, Live | Ended), "the stream to go live")
    view = screen.query_one(TimelineView)
    await until(pilot, lambda: words in "\n".join(view.lines_text), words)
    return view


async def test_a_dendrux_run_comes_back_to_its_mark_after_a_restart(
    dendrux_app: DendruxAppServer, tmp_path: Path
) -> None:
    run_id = await asyncio.to_thread(dendrux_app.start_run, "refund: order A-17 arrived broken; refund it.")
    await asyncio.to_thread(
        wait_for, lambda: run_status(dendrux_app, run_id) == "waiting_approval", what="the approval pause"
    )
    marks = tmp_path / "marks"
    async with _backend(dendrux_app) as backend:
        earlier = PreloopApp(
            backend, start_session_id=run_id, refresh_interval=0, marks=MarkStore(marks),
            clock=lambda: datetime.now(UTC) - timedelta(minutes=20),
        )  # fmt: skip
        async with earlier.run_test(size=(200, 40)) as pilot:
            await _attached(pilot, earlier, "refund_order")
            await pilot.press("ctrl+c")
    mark = MarkStore(marks).get(run_id)
    assert mark is not None and mark.place.number is not None
    assert mark.place.id == str(mark.place.number)  # Dendrux's sequence_index, as the server numbers it

    async with _backend(dendrux_app) as other:  # another operator declines, from another client
        [approval] = (await other.list_approvals(session_id=run_id, status="pending")).items
        await other.decline(approval.id, "Needs a manager.")
    await asyncio.to_thread(
        wait_for, lambda: run_status(dendrux_app, run_id) == "success", what="the resumed run"
    )

    async with _backend(dendrux_app) as backend:
        app = PreloopApp(backend, start_session_id=run_id, refresh_interval=0, marks=MarkStore(marks))
        async with app.run_test(size=(200, 40)) as pilot:
            view = await _attached(pilot, app, "The refund was not approved")
            await until(pilot, lambda: any(line.startswith(RULE) for line in view.lines_text), "the rule")
            lines = view.lines_text
            row = next(i for i, line in enumerate(lines) if line.startswith(RULE))
            assert not any("refund_order" in line and "approval requested" in line for line in lines[row:])
            digest = "\n".join(lines[:row])
            assert "Away 20 min" in digest
            assert "✗ refund_order declined: “Needs a manager.”" in digest  # Dendrux names no decider
            assert "does not record who decided" in digest
            assert "final answer: “The refund was not approved" in digest
            assert not view.following
