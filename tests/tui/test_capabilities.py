"""The attach screen offers only what the backend's server can do (``Backend.capabilities``).

A real local server behind a backend that says it cannot decide approvals nor withdraw notes (as a server
kind without them would): the keys are neither shown nor acted on, while what it can do still works.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from client.backends.base import Capabilities
from client.backends.local import LocalBackend
from client.connection import Connection
from server.harness_client import HarnessSession
from tests.conftest import LiveServer
from tests.tui.test_pilot import SIZE, attached, footer_actions, note_states, until
from tui.app import PreloopApp
from widgets.approvals_panel import ApprovalsPanel


@pytest.fixture
async def agent(live_server: LiveServer) -> AsyncIterator[HarnessSession]:
    async with live_server.harness() as harness:
        session = await harness.start_session(agent_name="builder", cwd="/work/repo", title="Fix the build")
        await session.run_started("Fix the failing test")
        await session.narrate(1, ["Looking at the test first."])
        yield session


class NoDecisionsBackend(LocalBackend):
    capabilities = Capabilities(approvals=False, withdraw_notes=False)


async def test_keys_a_server_cannot_serve_are_not_offered(
    live_server: LiveServer, agent: HarnessSession
) -> None:
    async with NoDecisionsBackend(Connection(live_server.url, live_server.token)) as be:
        app = PreloopApp(be, start_session_id=agent.session_id)
        async with app.run_test(size=SIZE) as pilot:
            screen = await attached(pilot, app)
            await pilot.press(*"a note", "enter")
            await until(pilot, lambda: note_states(screen) == ["pending"], "the pending note")
            panel = screen.query_one(ApprovalsPanel)
            task = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
            await until(pilot, lambda: panel.count == 1, "the approval")
            await pilot.press("escape")
            # key availability is re-checked a few times a second: out of the box the note key shows
            await until(pilot, lambda: "focus_composer" in footer_actions(app), "the footer out of the box")
            offered = footer_actions(app)
            assert "approve" not in offered and "decline" not in offered and "withdraw" not in offered
            assert "focus_composer" in offered  # notes are supported: the note key stays
            await pilot.press("a", "w")
            await pilot.pause(0.3)
            page = await be.list_approvals(session_id=agent.session_id)
            assert [a.status for a in page.items] == ["pending"]
            assert [n.state for n in (await be.list_notes(session_id=agent.session_id)).notes] == ["pending"]
            await agent.end()
            await asyncio.wait_for(task, 30)
