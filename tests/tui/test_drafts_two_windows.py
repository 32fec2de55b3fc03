"""Two windows on one session (issue 23 section 4): a real app on a pseudo-terminal and one driven by the
pilot, on one state dir, type at the same time; neither loses its draft, and a re-attach offers both,
the other window's under a line that names it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal

from textual.widgets import DataTable, Static

from client.backends.base import Backend
from client.drafts import DraftStore
from client.paths import state_dir
from server.harness_client import HarnessSession
from tests.tui import test_pilot
from tests.tui.test_attach_process import _wait_for
from tests.tui.test_pilot import SIZE, attached, until
from tests.tui.test_terminal_keys import Pty
from tui.app import PreloopApp
from tui.screens.sessions import SessionsScreen

agent = test_pilot.agent

THERE = "MARKER1 from the terminal window"
HERE = "MARKER2 typed in the pilot window"


async def test_two_app_windows_typing_at_once_both_drafts_are_offered_on_reattach(
    client: Backend, agent: HarnessSession
) -> None:
    drafts = state_dir() / "drafts"  # where the app on the terminal keeps its drafts too
    sid = agent.session_id
    term = Pty(["sessions", "attach", sid])
    try:
        assert await asyncio.to_thread(term.pump, 30, b"Fix the build"), term.screen[-2000:]
        app = PreloopApp(client, refresh_interval=0, drafts=DraftStore(drafts))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
            table = app.screen.query_one("#sessions-table", DataTable)
            await until(pilot, lambda: table.row_count == 1, "the session row")
            await pilot.press("enter")
            screen = await attached(pilot, app)
            # Turn about, as two people (or one person with two windows) would: each window's keys write
            # its draft at every keystroke.
            for there, here in ((THERE[:16], HERE[:17]), (THERE[16:], HERE[17:])):
                await asyncio.to_thread(term.type, there.encode())
                await pilot.press(*here)

            def both_on_disk() -> bool:
                return sorted(d.text for d in DraftStore(drafts).saved(sid)) == [THERE, HERE]

            assert await asyncio.to_thread(_wait_for, both_on_disk), DraftStore(drafts).saved(sid)
            await pilot.press("escape")
            await pilot.press("q")  # detach: this window's screen goes, its draft stays
            await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "back on the list")
            await pilot.press("enter")
            again = await attached(pilot, app)
            assert again is not screen
            lines = again.composer.text.splitlines()
            assert lines == [HERE, lines[1], THERE], lines
            assert re.fullmatch(
                rf"── draft left in another window \(pid {term.pid} on this machine, "
                r"(\d\d \w{3} )?\d\d:\d\d\) ──",
                lines[1],
            ), lines[1]
            said = str(again.note_box.query_one("#send-error", Static).render())
            assert said == "⚠ Another window's draft is below the ── line: send only what you mean to."
        os.kill(term.pid, signal.SIGTERM)  # the terminal window closes too, its draft kept
        assert await asyncio.to_thread(term.pump, 30, b"keeps running"), term.screen[-2000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(term.pid, signal.SIGKILL)  # (only when the test failed before it closed)
        await asyncio.to_thread(term.close)

    fresh = PreloopApp(client, start_session_id=sid, drafts=DraftStore(drafts))
    async with fresh.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, fresh)
        text = screen.composer.text
        assert HERE in text and THERE in text and text.count("── draft left in another window") == 2
        assert (await client.list_notes(session_id=sid)).notes == []  # nothing was sent
