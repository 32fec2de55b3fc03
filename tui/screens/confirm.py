"""A yes/no question as a modal (withdraw a note, and anything else that cannot be undone)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only on an explicit yes (``y`` or the button); Escape and ``n`` say no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Confirm"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no", tooltip="Cancel, change nothing"),
    ]

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 60; max-width: 90%; height: auto;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmScreen Static { margin-bottom: 1; }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """

    def __init__(self, question: str, detail: str = "", *, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes_label = yes
        self.no_label = no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question, style="bold"), id="question")
            if self.detail:
                yield Static(Text(self.detail), id="detail")
            with Horizontal():
                yield Button(f"{self.no_label} (n)", id="no")
                yield Button(f"{self.yes_label} (y)", id="yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        """Close with the user's answer."""
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")
