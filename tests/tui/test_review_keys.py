"""Post-incident keys on the real local server: "did it listen?" (the notes panel's "then:" line and
``t`` to jump there) and ``e`` to export the session."""

from __future__ import annotations

import asyncio
from pathlib import Path

from client.backends.base import Backend
from client.paths import exports_dir
from server.harness_client import HarnessSession
from tests.conftest import said
from tests.tui import test_pilot
from tests.tui.test_pilot import SIZE, attached, until
from tui.app import PreloopApp
from widgets.notes_panel import NotesPanel
from widgets.timeline_view import TimelineView

agent = test_pilot.agent


async def test_a_read_note_shows_what_the_agent_did_next_and_t_jumps_there(
    client: Backend, agent: HarnessSession
) -> None:
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        panel = screen.query_one(NotesPanel)
        view = screen.query_one(TimelineView)
        await pilot.press(*"run the tests first", "enter")
        await until(pilot, lambda: len(panel.notes) == 1, "the note in the panel")
        [note_id] = panel.notes
        await pilot.press("escape", "t")  # read by nobody yet: t says so, nothing moves
        await until(pilot, lambda: "has not read it" in _notices(app), "the not-read notice")
        await agent.claim_notes()
        await until(pilot, lambda: screen.timeline.notes[note_id].state == "delivered", "delivery")
        await pilot.press("t")
        await until(pilot, lambda: "has not done anything since" in _notices(app), "the nothing-yet notice")
        assert note_id not in panel.thens
        # The agent's answer to the note; then a lot more output, so the jump has somewhere to go.
        call = await agent.tool_started("Bash", {"command": "pytest -x"}, iteration=2)
        await agent.tool_completed(call, "Bash", duration_ms=900)
        for i in range(3, 40):
            await agent.narrate(i, [f"Step {i} of the plan."])
        await until(pilot, lambda: panel.thens.get(note_id) == "tool Bash: command=pytest -x", "then line")
        await until(pilot, lambda: any("Step 39" in line for line in view.lines_text), "the later output")
        assert view.at_bottom
        await pilot.press("t")
        await until(pilot, lambda: not view.at_bottom, "the jump up to the tool call")
        top = view.lines_text[int(view.scroll_y)]
        assert "Bash" in top and "pytest -x" in top
        await pilot.press("end")
        await until(pilot, lambda: view.at_bottom, "following again after End")


def _notices(app: PreloopApp) -> str:
    return " ".join(said(app))


async def test_e_exports_the_session_as_markdown(client: Backend, agent: HarnessSession) -> None:
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        await attached(pilot, app)
        await pilot.press("escape", "e")
        await until(pilot, lambda: "Saved to" in _notices(app), "the export notice")
        [written] = list(exports_dir().glob(f"{agent.session_id[:8]}-*.md"))
        assert f"Saved to {written}" in _notices(app)
        md = await asyncio.to_thread(Path(written).read_text)
        assert md.startswith("# Session Fix the build\n")
        assert "Commentary" in md and "Looking at the test first." in md
