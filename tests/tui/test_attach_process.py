"""The attach screen as a real process on a pseudo-terminal: what survives a crash, and what a signal
leaves behind on the terminal. Keys and pastes go through Textual's parser as a user's terminal sends them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

from client.backends import connect
from client.config import Settings
from client.drafts import DraftStore
from client.paths import state_dir
from tests.conftest import LiveServer
from tests.tui.test_terminal_keys import Pty

DRAFT = ("Do not deploy until the canary is green. " * 110)[:4190] + " ZQXJ-END."  # 4,200 characters


def _wait_for(condition: object, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.05)
    return False


async def test_a_draft_survives_a_killed_process(live_server: LiveServer) -> None:
    """Paste a 4,200-character draft, type three more keys at a person's pace (80 ms apart), kill -9 the
    app 0.1 s after the last one shows (no chance to clean up), start it again: the note box holds all of
    it, and nothing was sent. Saved every 0.5 s, the last keys typed before the kill were lost."""
    assert len(DRAFT) == 4200
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="crash", title="Crash test")
    drafts = state_dir() / "drafts"
    term = Pty(["sessions", "attach", agent.session_id])
    try:
        assert await asyncio.to_thread(term.pump, 30, b"Crash test"), term.screen[-2000:]
        assert await asyncio.to_thread(term.pump, 30, b"Typing a note"), term.screen[-2000:]  # box focused
        await asyncio.to_thread(term.type, b"\x1b[200~" + DRAFT.encode() + b"\x1b[201~")

        def saved() -> bool:
            return DraftStore(drafts).get(agent.session_id) == DRAFT

        assert await asyncio.to_thread(_wait_for, saved), "the draft was never written to the state dir"
        mark = len(term.screen)
        for key in b"ok!":
            os.write(term.fd, bytes([key]))
            await asyncio.to_thread(term.pump, 0.08)
        assert await asyncio.to_thread(term.pump, 10, b"ok!", mark), term.screen[mark:][-2000:]
        await asyncio.to_thread(term.pump, 0.1)
        os.kill(term.pid, signal.SIGKILL)
    finally:
        await asyncio.to_thread(term.close)
    assert DraftStore(drafts).get(agent.session_id) == DRAFT + "ok!"
    again = Pty(["sessions", "attach", agent.session_id])
    try:
        assert await asyncio.to_thread(again.pump, 30, b"ZQXJ-END.ok!"), again.screen[-3000:]
        os.kill(again.pid, signal.SIGKILL)
    finally:
        await asyncio.to_thread(again.close)
    assert DraftStore(drafts).get(agent.session_id) == DRAFT + "ok!"
    async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as client:
        assert (await client.list_notes(session_id=agent.session_id)).notes == []


LEAVE_ALT_SCREEN = b"\x1b[?1049l"


async def _signal_restores_the_terminal(live_server: LiveServer, signum: int) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="signals", title="Signal test")
    term = Pty(["sessions", "attach", agent.session_id])
    try:
        assert await asyncio.to_thread(term.pump, 30, b"Signal test"), term.screen[-2000:]
        assert await asyncio.to_thread(term.pump, 30, b"Typing a note"), term.screen[-2000:]  # box focused
        typed = len(term.screen)
        await asyncio.to_thread(term.type, b"half a note")
        # in the note box on screen, so read by the app before the signal comes
        assert await asyncio.to_thread(term.pump, 30, b"half a note", typed), term.screen[typed:][-2000:]
        mark = len(term.screen)
        os.kill(term.pid, signum)
        await asyncio.to_thread(term.pump, 30, b"keeps running", mark)
    finally:
        code = await asyncio.to_thread(term.close)
    after = term.screen[mark:]
    assert LEAVE_ALT_SCREEN in after, after[-2000:]  # back on the shell's own screen, like htop/lazygit
    assert b"\x1b[?1000l" in after or b"\x1b[?1003l" in after  # mouse reporting switched off again
    assert code == 128 + signum
    assert DraftStore(state_dir() / "drafts").get(agent.session_id) == "half a note"


async def test_sigterm_leaves_the_alternate_screen(live_server: LiveServer) -> None:
    """kill PID: the app restores the terminal and says the session keeps running (exit code 143)."""
    await _signal_restores_the_terminal(live_server, signal.SIGTERM)


async def test_sighup_leaves_the_alternate_screen(live_server: LiveServer) -> None:
    """A hang-up (a closed tmux pane or SSH session): the same clean exit (exit code 129)."""
    await _signal_restores_the_terminal(live_server, signal.SIGHUP)
