"""The first frame tells the truth (issue 23 §5): until a session's approvals and notes have been read,
the header and the panels say they are loading, never "no approvals pending" (the trial saw that for about
a second while a danger approval waited).

The lists are held back by the backend here: a real server cannot be made slow for one request on demand
(the same reason as ``test_attach_loading.py``). The snapshot is that first frame; its SVG lives in
``snapshots/test_first_frame/``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from client.backends.base import ApprovalPage
from client.errors import ServerUnreachable
from client.models import NoteList
from client.status import Live
from tests.tui import data
from tests.tui.fakes import FakeBackend, frozen_clock
from tests.tui.test_pilot import until
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.keys_line import KeysLine

SIZE = (100, 24)


class HeldLists(FakeBackend):
    """The session row and the stream answer at once; the notes and pending approvals only once ``gate``
    is set (then they answer, or fail with ``lists_fail``)."""

    def __init__(self, *, lists_fail: ServerUnreachable | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = asyncio.Event()
        self.lists_fail = lists_fail

    async def list_notes(self, **kwargs: Any) -> NoteList:
        await self.gate.wait()
        if self.lists_fail is not None:
            raise self.lists_fail
        return await super().list_notes(**kwargs)

    async def list_approvals(self, **kwargs: Any) -> ApprovalPage:
        await self.gate.wait()
        if self.lists_fail is not None:
            raise self.lists_fail
        return await super().list_approvals(**kwargs)


def _app(backend: HeldLists) -> PreloopApp:
    return PreloopApp(backend, start_session_id=data.SID, clock=frozen_clock, refresh_interval=0)


def _backend(**kwargs: Any) -> HeldLists:
    return HeldLists(
        sessions=[data.session()],
        approvals=[data.approval()],
        script=[Live(), *data.streaming_script()],
        **kwargs,
    )


def _shown(app: PreloopApp, backend: HeldLists) -> bool:
    """The stream's events are drawn and the keys line is mounted (the lists still held back)."""
    screen = app.screen
    return (
        isinstance(screen, AttachScreen)
        and backend.script_consumed
        and screen.caught_up
        and not any(keys.checking for keys in screen.query(KeysLine))
    )


def _header(screen: AttachScreen) -> str:
    return str(screen.header.render())


def test_attach_first_frame_while_the_lists_load(snap_compare: Any) -> None:
    """The session and its stream are on screen, its lists not yet: the header says "approvals loading…",
    the approvals panel "loading", the notes panel "Loading the notes…"."""
    backend = _backend()

    async def _first_frame(pilot: Pilot[Any]) -> None:
        async with asyncio.timeout(60):
            while not _shown(pilot.app, backend):  # type: ignore[arg-type]
                await pilot.pause(0.02)
        for field in pilot.app.screen.query("TextArea, Input"):
            if isinstance(field, TextArea | Input):
                field.cursor_blink = False
        await pilot.pause()

    assert snap_compare(_app(backend), run_before=_first_frame, terminal_size=SIZE)


async def test_the_panels_say_loading_until_the_lists_answer() -> None:
    """Before the lists answer nothing says "no approvals pending" or "no notes"; when they answer, the
    pending approval is there and the header counts it."""
    backend = _backend()
    app = _app(backend)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: _shown(app, backend), "the session, its lists held back")
        screen = app.screen
        assert isinstance(screen, AttachScreen)
        assert "approvals loading…" in _header(screen) and "no approvals pending" not in _header(screen)
        assert screen.approvals_panel.display and "loading" in str(screen.approvals_panel.border_title)
        assert "loading" in str(screen.notes_panel.border_title)
        backend.gate.set()
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the pending approval")
        assert "1 pending" in _header(screen) and "loading" not in _header(screen)
        assert "loading" not in str(screen.notes_panel.border_title)


async def test_lists_that_fail_say_not_loaded_rather_than_none() -> None:
    """The lists fail (server unreachable): the header says "approvals not loaded", not that none wait."""
    backend = _backend(lists_fail=ServerUnreachable("connection refused"))
    app = _app(backend)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: _shown(app, backend), "the session, its lists held back")
        screen = app.screen
        assert isinstance(screen, AttachScreen)
        backend.gate.set()
        await until(pilot, lambda: screen.core.lists == "failed", "the lists' failure")
        await pilot.pause()
        assert "approvals not loaded" in _header(screen) and "no approvals pending" not in _header(screen)
        assert "not loaded" in str(screen.approvals_panel.border_title)


async def test_a_burst_of_events_is_painted_in_a_few_frames_not_one_per_event() -> None:
    """300 tool calls arriving at once (a backlog read in one go) are all on screen, drawn a few times at
    most: what the stream changed is painted once per frame, not once per event."""
    from tests.tui.fakes import Script, ago

    ev = Script(data.SID, ago(minutes=5))
    burst = [ev("tool.started", call_id=f"c{i}", name="Bash", args_summary=f"echo {i}") for i in range(300)]
    backend = HeldLists(sessions=[data.session()], script=[Live(), *burst])
    backend.gate.set()
    app = _app(backend)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: _shown(app, backend), "the burst drawn")
        screen = app.screen
        assert isinstance(screen, AttachScreen)
        assert "echo 299" in screen.view.lines_text[-1]
        assert len(screen.timeline) == 300
        assert screen.view.renders <= 12  # (the first event alone, then a frame or a few: never 300)
