"""Ctrl+C quits the app from every screen and dialog, as operators expect from a terminal program: drafts
kept, nothing decided, no session stopped; with text selected it copies instead (pilot tests against the
real local control plane over loopback; the pseudo-terminal tests in tests/cli/test_tui_launch.py press
the real key)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Input
from textual.widgets.text_area import Selection

from client.backends.base import Backend
from client.drafts import DraftStore
from server.harness_client import HarnessSession
from tests.conftest import LiveServer, said
from tests.tui.test_pilot import SIZE, attached, until
from tui.app import PreloopApp
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.inbox import InboxScreen
from tui.screens.sessions import SessionsScreen


@pytest.fixture
async def agent(live_server: LiveServer) -> AsyncIterator[HarnessSession]:
    async with live_server.harness() as harness:
        session = await harness.start_session(agent_name="builder", cwd="/work/repo", title="Fix the build")
        await session.run_started("Fix the failing test")
        await session.narrate(1, ["Looking at the test first."])
        yield session


async def test_ctrl_c_quits_from_the_sessions_list(client: Backend, agent: HarnessSession) -> None:
    app = PreloopApp(client)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "Ctrl+C to quit")
    assert app.return_code == 130  # Ctrl+C: the README's exit status for an interrupt
    assert app.return_value is None  # nothing was followed: nothing to tell


async def test_ctrl_c_with_text_selected_in_the_note_box_copies_then_quits_keeping_the_draft(
    client: Backend, agent: HarnessSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first Ctrl+C copies the selected words and lets go of the selection (the draft untouched); the
    second quits, the draft on disk and the shell told the session keeps running (outside tmux)."""
    monkeypatch.delenv("TMUX", raising=False)
    drafts = tmp_path / "drafts"
    app = PreloopApp(client, start_session_id=agent.session_id, drafts=DraftStore(drafts))
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        composer = screen.composer
        await pilot.press(*"deploy after the canary")
        composer.selection = Selection((0, 17), (0, 23))  # "canary", as shift+arrows or the mouse select
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        assert app.clipboard == "canary"
        assert composer.text == "deploy after the canary" and composer.selected_text == ""
        assert any("Copied 6 characters" in m for m in said(app))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "the second Ctrl+C to quit")
    assert app.return_code == 130  # Ctrl+C: the README's exit status for an interrupt
    assert app.return_value == f"Detached from {agent.session_id[:8]}; the session keeps running."
    assert DraftStore(drafts).get(agent.session_id) == "deploy after the canary"


async def test_ctrl_c_in_the_decline_dialog_quits_and_decides_nothing(
    client: Backend, agent: HarnessSession, tmp_path: Path
) -> None:
    """A modal dialog stops the app's ordinary bindings: Ctrl+C still quits from it, the approval stays
    pending and the note box's draft under the dialog is kept."""
    drafts = tmp_path / "drafts"
    app = PreloopApp(client, start_session_id=agent.session_id, drafts=DraftStore(drafts))
    waiting = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf build"}, ask=True))
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await attached(pilot, app)
            await until(pilot, lambda: len(screen.core.pending) == 1, "the approval")
            await pilot.press(*"half a note", "escape", "d")
            await until(pilot, lambda: isinstance(app.screen, DeclineCommentScreen), "the decline dialog")
            await pilot.press(*"too risky")
            assert app.screen.query_one(Input).value == "too risky"
            await pilot.press("ctrl+c")
            await until(pilot, lambda: not app.is_running, "Ctrl+C to quit from the dialog")
        assert app.return_code == 130  # Ctrl+C: the README's exit status for an interrupt
        assert DraftStore(drafts).get(agent.session_id) == "half a note"
        assert not waiting.done()  # the agent still waits: nothing was declined
        pending = await client.list_approvals(session_id=agent.session_id, status="pending")
        assert [a.tool_name for a in pending.items] == ["Bash"]
    finally:
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting


async def test_ctrl_c_in_the_inbox_quits(client: Backend, agent: HarnessSession) -> None:
    app = PreloopApp(client)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "Ctrl+C to quit from the inbox")
    assert app.return_code == 130  # Ctrl+C: the README's exit status for an interrupt
