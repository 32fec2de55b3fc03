"""The whole of an approval's call, to read before deciding it: the inbox's ``x``.

The inbox's table cuts the arguments to its ARGUMENTS column (with an ellipsis); this modal shows every
argument of the highlighted approval in full, with its session, tool, risk and the agent's summary. It
decides nothing: Escape (or ``x`` again) closes it, and ``a`` / ``d`` in the list decide (a risky call asks
first, naming all of it again).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from client.models import Approval
from widgets.approvals_panel import decision_card


class ArgumentsScreen(ModalScreen[None]):
    """One approval's call in full; closes on Escape or ``x``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,x", "close", "Close", id="arguments.close", tooltip="Back to the list"),
    ]

    DEFAULT_CSS = """
    ArgumentsScreen { align: center middle; }
    ArgumentsScreen > Vertical {
        width: 100; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2;
    }
    ArgumentsScreen VerticalScroll { height: auto; max-height: 1fr; }
    ArgumentsScreen #how { margin-top: 1; color: $text-muted; }
    """

    def __init__(self, approval: Approval, session: str) -> None:
        super().__init__()
        self.approval = approval
        self.session = session
        self.card = decision_card(approval, session, limit=None)
        """What is shown: the session, the tool, its risk, the agent's summary and every argument whole."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("The whole call", style="bold"))
            with VerticalScroll():
                yield Static(self.card, id="card")
            yield Static("Escape closes; a approves and d declines it from the list.", id="how")

    def action_close(self) -> None:
        """Back to the list; nothing is decided here."""
        self.dismiss(None)
