"""The composer's keys as real terminal bytes: the app runs on a pseudo-terminal, so every key goes
through Textual's escape-sequence parser exactly as a user's terminal would send it (pilot ``press``
skips the parser). The note that reaches the server is the proof of what each key did.
"""

from __future__ import annotations

import asyncio
import os
import pty
import select
import sys
import time
from pathlib import Path

from client.backends import connect
from client.config import Settings
from tests.conftest import LiveServer

PRELOOP = str(Path(sys.executable).parent / "preloop")

KEYS: list[bytes] = [  # the composer has the focus on attach
    b"a",
    b"\x1b[13;2u",  # Shift+Enter, kitty keyboard protocol
    b"b",
    b"\x1b[27;2;13~",  # Shift+Enter, xterm modifyOtherKeys
    b"c",
    b"\n",  # Ctrl+J
    b"d",
    b"\x1b[200~e\nf\x1b[201~",  # bracketed paste of two lines: inserted, not sent
]


class Pty:
    def __init__(self, argv: list[str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.environ.update({"TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"})
            os.execv(PRELOOP, [PRELOOP, *argv])
        self.screen = b""

    def pump(self, seconds: float, until: bytes | None = None, since: int = 0) -> bool:
        """Read output for ``seconds``, or until ``until`` shows in what came after offset ``since``."""
        if until is not None and until in self.screen[since:]:
            return True
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return False
            if not chunk:
                return False
            self.screen += chunk
            if until is not None and until in self.screen[since:]:
                return True
        return until is None

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)
        self.pump(0.15)

    def close(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)


async def test_shift_enter_ctrl_j_and_paste_as_terminal_bytes(live_server: LiveServer) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="keys", title="Terminal keys")
    term = Pty(["sessions", "attach", agent.session_id])
    try:
        assert await asyncio.to_thread(term.pump, 20, b"Terminal keys"), term.screen[-2000:]
        # the note box has the focus (it says so in its title): what is typed from now on is the note's
        assert await asyncio.to_thread(term.pump, 20, b"Typing a note"), term.screen[-2000:]
        for chunk in KEYS:
            await asyncio.to_thread(term.type, chunk)
        async with await connect(Settings(live_server.url, live_server.token, server_kind="local")) as client:
            assert (await client.list_notes(session_id=agent.session_id)).notes == [], "sent before Enter"
            await asyncio.to_thread(term.type, b"\r")  # Enter sends
            texts: list[str] = []
            for _ in range(300):  # up to 30 s: the app may be slow under load; found sooner, done sooner
                texts = [n.text for n in (await client.list_notes(session_id=agent.session_id)).notes]
                if texts:
                    break
                await asyncio.sleep(0.1)
        assert texts == ["a\nb\nc\nde\nf"]
        mark = len(term.screen)
        await asyncio.to_thread(term.type, b"\x1b")  # out of the composer (a lone Escape)
        # Wait for the footer to offer Escape = Sessions (only out of the box): a 'q' read together
        # with the Escape would be Alt+Q, not a detach.
        assert await asyncio.to_thread(term.pump, 20, b"Sessions", mark), term.screen[mark:][-2000:]
        await asyncio.to_thread(term.type, b"q")
        await asyncio.to_thread(term.pump, 5)
    finally:
        code = await asyncio.to_thread(term.close)
    assert code == 0
    assert b"keeps running" in term.screen
