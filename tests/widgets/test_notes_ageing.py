"""Relative times in the notes panel keep ageing while the operator watches (not "sent 19s ago" for a
minute): the panel re-checks them every second and redraws the notes whose words changed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from textual.app import App, ComposeResult

from client.models import Note
from widgets.notes_panel import NotesPanel

START = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


class _Host(App[None]):
    def __init__(self, clock: list[datetime]) -> None:
        super().__init__()
        self.now = clock
        self.notes: dict[str, Note] = {}
        """The notes table the panel shows (a session core's, in the app)."""

    def compose(self) -> ComposeResult:
        yield NotesPanel(self.notes, clock=lambda: self.now[0], id="notes")


def _shown(panel: NotesPanel) -> str:
    option = panel.get_option_at_index(0)
    return str(option.prompt.renderables[0]) if hasattr(option.prompt, "renderables") else str(option.prompt)


async def test_sent_times_keep_ageing() -> None:
    clock = [START]
    app = _Host(clock)
    async with app.run_test(size=(60, 12)) as pilot:
        panel = app.query_one(NotesPanel)
        app.notes["n1"] = Note(
            note_id="n1", state="pending", text="hold on", created_at=START - timedelta(seconds=19)
        )
        panel.show(["n1"])
        await pilot.pause()
        assert "sent 19s ago" in _shown(panel)
        clock[0] = START + timedelta(seconds=25)
        async with asyncio.timeout(8):  # a tick is 1 s; the old 15 s redraw misses the second step
            while "sent 44s ago" not in _shown(panel):
                await pilot.pause(0.05)
        clock[0] = START + timedelta(minutes=3)
        async with asyncio.timeout(8):  # a tick is 1 s; the old 15 s redraw misses the second step
            while "sent 3m ago" not in _shown(panel):
                await pilot.pause(0.05)
