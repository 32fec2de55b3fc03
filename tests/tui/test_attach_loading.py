"""Opening the attach screen: the session row, the panels' lists and the stream are asked for at once.

The history must not wait for the session row (a slow row used to hold the stream back), and a session
the server refuses must be reported once, however the row's and the stream's refusals interleave. The
backend here holds the row back on purpose (a real server cannot be made slow for one request on demand).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # the Footer's keys (no public name)

from client.errors import NotFound
from client.events import Event
from client.models import Session
from client.status import Connecting, Live, Refused, StreamStatus
from tests.conftest import notices
from tests.tui import data
from tests.tui.fakes import FakeBackend, Script, ago
from tests.tui.test_pilot import attach_screen, until
from tui.app import PreloopApp
from widgets.banner import Banner
from widgets.timeline_view import TimelineView

SIZE = (120, 30)


class SlowRowBackend(FakeBackend):
    """The session row answers only when ``row_gate`` is set; the stream answers at once."""

    def __init__(self, *, script: Sequence[Event | StreamStatus], refuse_row: bool = False) -> None:
        super().__init__(sessions=[data.session()], script=script)
        self.row_gate = asyncio.Event()
        self.refuse_row = refuse_row
        self.row_asked = False
        self.refusal_sent = False

    async def get_session(self, session_id: str) -> Session:
        self.row_asked = True
        await self.row_gate.wait()
        if self.refuse_row:
            raise NotFound(404, f"no session {session_id}")
        return await super().get_session(session_id)

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncIterator[Event | StreamStatus]:
        for item in self.script:
            self.refusal_sent = self.refusal_sent or isinstance(item, Refused)
            yield item
        self.script_consumed = True
        if not any(isinstance(item, Refused) for item in self.script):
            await asyncio.Event().wait()


async def test_the_history_shows_before_the_session_row_answers() -> None:
    """A slow session row does not hold the timeline back: the events are on screen first, the header
    fills in when the row comes."""
    ev = Script(data.SID, ago(minutes=3))
    backend = SlowRowBackend(
        script=[Live(), ev("run.started", run_id="r1", task="Fix the flaky checkout test")]
    )
    app = PreloopApp(backend, start_session_id=data.SID, attention=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: backend.row_asked, "the session row asked for")
        screen = attach_screen(app)
        view = screen.query_one(TimelineView)
        await until(pilot, lambda: view.line_count > 0, "the history on screen")
        assert screen.session is None  # the row has not answered yet
        assert "Fix the flaky checkout test" in "\n".join(view.lines_text)
        backend.row_gate.set()
        await until(pilot, lambda: screen.session is not None, "the session row")
        assert screen.header.session is not None


async def test_a_refused_session_is_reported_once_when_the_stream_refuses_first() -> None:
    """The stream's 404 arrives before the row's: one banner (the row's words), no toast, and the note box
    (on screen meanwhile) closed."""
    backend = SlowRowBackend(
        script=[Connecting(1), Refused("session 3f2a9c1e not found", 404)], refuse_row=True
    )
    app = PreloopApp(backend, start_session_id=data.SID, attention=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: backend.refusal_sent, "the stream's refusal")
        await pilot.pause(0.1)
        screen = attach_screen(app)
        assert screen.unavailable is None and not notices(app)  # nothing said before the row answers
        backend.row_gate.set()
        await until(pilot, lambda: screen.unavailable is not None, "the row's refusal")
        banner = screen.query_one(Banner)
        await until(
            pilot, lambda: banner.level == "error" and screen.composer.closed is not None, "the refusal shown"
        )
        assert "no session" in banner.message
        assert "refused the stream" not in banner.message
        assert not notices(app)
        # The note box was on screen with the focus: it closes (keeps the focus, takes what is typed) rather
        # than vanish under the operator's fingers; Escape puts it away.
        assert screen.composer.closed is not None and screen.composer.has_focus
        await pilot.press("escape")
        assert not screen.note_box.display


async def test_the_keys_line_lists_keys_after_the_first_frame() -> None:
    """The keys line is mounted after the first frame and then lists the screen's keys."""
    backend = FakeBackend(sessions=[data.session()], script=[Live()])
    app = PreloopApp(backend, start_session_id=data.SID, attention=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _attached(pilot, app)
        await until(pilot, lambda: bool(screen.query(FooterKey)), "the keys in the footer")
        keys = {(key.key_display, key.description) for key in screen.query_one(Footer).query(FooterKey)}
        assert {("Enter", "send"), ("Esc", "leave")} <= keys  # while typing: Enter sends, Esc leaves


async def _attached(pilot: Any, app: PreloopApp) -> Any:
    await until(pilot, lambda: app.screen.__class__.__name__ == "AttachScreen", "the attach screen")
    return attach_screen(app)


async def test_the_focused_note_box_is_unmistakable_and_n_is_not_offered_while_typing() -> None:
    """Issue 18: the keys line showed ``n Note`` elsewhere, and on attach, where the box already had the
    focus, ``n`` + Enter sent the note "n". While typing, the box says so in its title and the keys line
    says Enter sends and Esc leaves; ``n`` is offered only outside the box, whose title then says how to
    come back."""
    backend = FakeBackend(sessions=[data.session()], script=[Live()])
    app = PreloopApp(backend, start_session_id=data.SID, attention=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _attached(pilot, app)
        await until(pilot, lambda: bool(screen.query(FooterKey)), "the keys in the footer")

        def keys() -> set[tuple[str, str]]:
            return {(key.key_display, key.description) for key in screen.query(FooterKey)}

        assert screen.composer.has_focus and "Typing a note" in str(screen.composer.border_title)
        assert {("Enter", "send"), ("Esc", "leave")} <= keys() and ("n", "Note") not in keys()
        await pilot.press("escape")
        await until(pilot, lambda: ("n", "Note") in keys(), "n offered outside the box")
        assert "n to write" in str(screen.composer.border_title)
        await pilot.press("n")
        await until(pilot, lambda: screen.composer.has_focus, "back in the box")
        assert "Typing a note" in str(screen.composer.border_title) and screen.composer.text == ""
