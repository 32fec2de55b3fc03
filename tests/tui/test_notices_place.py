"""Notices (toasts) on the attach screen cover nothing: not the timeline's top rows, not the view label
above it, not the header, the panels, the note box or the keys (issue 23 §6: a notice hid the view label
and the first rows the operator was reading)."""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast

from client.backends.base import Backend
from server.harness_client import HarnessSession
from tests.tui.test_attach_memory import agent, out_of_the_box  # noqa: F401
from tests.tui.test_pilot import until
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen


@pytest.mark.parametrize("size", [(80, 24), (130, 32)], ids=["narrow", "wide"])
async def test_a_notice_covers_neither_the_view_label_nor_the_timeline(
    client: Backend,
    agent: HarnessSession,  # noqa: F811
    size: tuple[int, int],
) -> None:
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await out_of_the_box(pilot, app)
        assert isinstance(screen, AttachScreen)
        await pilot.press("f")  # problems only: the view label shows above the timeline
        label = screen.query_one("#view-line")
        await until(pilot, lambda: label.display and label.region.height == 1, "the view label")
        app.notify("A notice with a few words in it, long enough to wrap on a narrow screen.", title="Hi")
        await until(
            pilot, lambda: bool(screen.query(Toast)) and screen.query_one(Toast).region.area > 0, "a toast"
        )
        await pilot.pause()
        toasts = [toast.region for toast in screen.query(Toast)]
        kept = {
            "the view label": label.region,
            "the timeline": screen.view.region,
            "the header": screen.header.region,
            "the note box": screen.composer.region,
        }
        for name, region in kept.items():
            assert region.area > 0, name
            for toast in toasts:
                assert toast.intersection(region).area == 0, (name, toast, region)
