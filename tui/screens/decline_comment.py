"""Ask for an optional comment before declining an approval (the agent sees it as the reason)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from client.models import Approval
from client.textsafe import safe_line


class DeclineCommentScreen(ModalScreen[str | None]):
    """Dismisses with the comment ("" for none) on Enter or the Decline button, or None on Escape or
    Cancel (nothing is declined). The buttons are there for mouse users, who started with a click."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="decline.cancel", tooltip="Keep the approval pending")
    ]

    DEFAULT_CSS = """
    DeclineCommentScreen { align: center middle; }
    DeclineCommentScreen > Vertical {
        width: 70; max-width: 95%; height: auto;
        border: thick $error; background: $surface; padding: 1 2;
    }
    DeclineCommentScreen Static { margin-bottom: 1; }
    DeclineCommentScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    DeclineCommentScreen Button { margin-left: 2; }
    """

    def __init__(self, approval: Approval) -> None:
        super().__init__()
        self.approval = approval

    def compose(self) -> ComposeResult:
        title = Text("Decline ", style="bold")
        title.append(safe_line(self.approval.tool_name or "tool", 40), style="bold")
        if self.approval.summary:
            title.append(" · ")
            title.append(safe_line(self.approval.summary, 120))
        with Vertical():
            yield Static(title)
            yield Static(Text("Optional comment for the agent. Enter declines, Escape cancels.", style="dim"))
            yield Input(placeholder="why not? (optional)", max_length=2000, id="comment")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button("Decline (Enter)", id="decline", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "decline":
            self.dismiss(self.query_one(Input).value.strip())
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        """Leave the approval pending."""
        self.dismiss(None)
