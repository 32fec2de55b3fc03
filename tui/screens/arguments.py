"""The whole of an approval's call, to read before deciding it: ``x`` in the inbox and on the attach screen.

The cards show the first lines of a call's preview (``client.preview``: a diff, a command, the
arguments) and say how many follow; this modal shows all of them, with the call's session, tool, risk and
the agent's summary above. Its lines are drawn as they scroll into view (``widgets.call_preview``), so a
10,000-line ``Write`` opens at once. It decides nothing: Escape (or ``x`` again) closes it, and ``a`` /
``d`` on the screen below decide (a risky call asks first, naming it again).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from client.models import Approval
from client.preview import approval_preview
from widgets.approvals_panel import decision_card
from widgets.call_preview import CallPreviewView


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
    ArgumentsScreen #card { height: auto; margin-bottom: 1; }
    ArgumentsScreen CallPreviewView { height: auto; max-height: 1fr; }
    ArgumentsScreen #how { margin-top: 1; color: $text-muted; }
    """

    def __init__(self, approval: Approval, session: str, *, where: str | None = "from the list") -> None:
        super().__init__()
        self.approval = approval
        self.session = session
        self.where = where
        """Where the call is decided, said below it (None: read-only, nowhere)."""
        self.card = decision_card(approval, session, preview=False)
        """The call named: its session, tool, risk and the agent's summary (its lines are below)."""
        self.preview = approval_preview(approval)
        """What the call will change, every line of it (the view draws those on screen)."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("The whole call", style="bold"))
            yield Static(self.card, id="card")
            yield CallPreviewView(self.preview, id="call")
            lines = f"{self.preview.line_count:,} line{'s' if self.preview.line_count != 1 else ''}"
            decide = f"a approves and d declines it {self.where}" if self.where else "nothing is decided here"
            yield Static(Text(f"{lines}. Escape closes; {decide}."), id="how")

    def on_mount(self) -> None:
        self.query_one(CallPreviewView).focus()

    def action_close(self) -> None:
        """Back to the list; nothing is decided here."""
        self.dismiss(None)
