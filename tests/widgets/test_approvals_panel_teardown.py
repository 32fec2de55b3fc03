"""An approvals list that arrives while its screen is being taken apart (q right after attaching: the
widgets go before the workers are cancelled) must not crash the app on its way out."""

from __future__ import annotations

from textual.app import App, ComposeResult

from client.models import Approval
from tests.tui.data import approval
from widgets.approvals_panel import ApprovalsPanel


class PanelApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, Approval] = {}
        """The table the panel shows (a session core's pending approvals, in the app)."""

    def compose(self) -> ComposeResult:
        yield ApprovalsPanel(self.pending, id="approvals")


async def test_a_panel_whose_list_was_removed_still_takes_approvals() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 20)) as pilot:
        panel = app.query_one(ApprovalsPanel)
        await panel.option_list.remove()  # what pruning does first, leaves before their parents
        await pilot.pause()
        waiting = approval()
        app.pending[waiting.id] = waiting
        panel.sync()
        assert panel.count == 1
        del app.pending[waiting.id]  # it left the table
        panel.sync()
        assert panel.count == 0
