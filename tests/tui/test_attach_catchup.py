"""Attaching to a long session: the screen reads only its newest events, says so, and loses nothing that
still matters (a pending approval from long ago, live events after)."""

from __future__ import annotations

import asyncio

import pytest

from client.backends.base import Backend
from client.status import Live, Missed
from tests.conftest import LiveServer
from tests.tui.test_pilot import attach_screen, until
from tui.app import PreloopApp
from tui.screens import attach as attach_module
from tui.screens.attach import AttachScreen
from widgets.approvals_panel import ApprovalsPanel
from widgets.timeline_view import TimelineView


async def test_a_long_session_opens_at_its_newest_events_and_keeps_what_is_pending(
    client: Backend, live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attach_module, "HISTORY_EVENTS", 12)
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="long-runner", title="A long one")
        await agent.run_started("work for a long time")
        asking = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
        for n in range(60):
            await agent.delta(f"step {n} ", n + 1)
        app = PreloopApp(client, start_session_id=agent.session_id)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = attach_screen(app)
            view = screen.query_one(TimelineView)
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
            await until(pilot, lambda: any("step 59" in line for line in view.lines_text), "the newest event")
            last = screen.timeline.last_seq
            assert view.lines_text[0].startswith(f"… {last - 12:,} earlier events not loaded")
            assert not any("step 40" in line for line in view.lines_text)  # older than the tail
            # The approval was asked long before the tail; the panel still has it (REST), and it works.
            panel = screen.query_one(ApprovalsPanel)
            await until(pilot, lambda: panel.count == 1, "the approval asked before the tail")
            # Live events follow, with nothing reported missing.
            await agent.delta("after attach", 99)
            await until(
                pilot, lambda: any("after attach" in line for line in view.lines_text), "a live event"
            )
            assert not isinstance(screen.status, Missed)
            assert screen.timeline.events_not_loaded == last - 12
            asking.cancel()
