"""The questions asked before a note is withdrawn, and which pending note, when several still wait.

``w`` on the attach screen withdraws the one pending note after a yes/no question (:func:`ask_withdraw`);
with several pending it would be a guess which one the operator means, so this modal lists them (newest
first, the newest highlighted) and withdraws the one picked. Picking is the confirmation; Escape keeps
every note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from client.models import Note
from client.textsafe import safe_line
from tui.screens.confirm import ConfirmScreen
from tui.typeahead import Monotonic
from widgets.notes_panel import note_prompt


def ask_withdraw(
    app: App[Any],
    choice: Note | list[Note],
    now: datetime,
    *,
    clock: Monotonic | None,
    withdraw: Callable[[Note], object],
) -> None:
    """Ask before withdrawing: "Withdraw this note?" for one note, the picker for several."""

    def _answered(note: Note | None) -> None:
        if note is not None:
            withdraw(note)

    if isinstance(choice, list):
        app.push_screen(WithdrawPickScreen(choice, now), _answered)
        return
    preview = safe_line(choice.text, 160)
    ask = ConfirmScreen("Withdraw this note?", preview, yes="Withdraw", no="Keep", clock=clock)
    app.push_screen(ask, lambda yes: _answered(choice if yes else None))


class WithdrawPickScreen(ModalScreen[Note | None]):
    """Dismisses with the picked note (Enter or a click) or None (Escape, ``n``): nothing is withdrawn."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "cancel", "Keep all", id="withdraw_pick.cancel", tooltip="Withdraw nothing"),
    ]

    DEFAULT_CSS = """
    WithdrawPickScreen { align: center middle; }
    WithdrawPickScreen > Vertical {
        width: 72; max-width: 95%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    WithdrawPickScreen Static { margin: 1 0; }
    WithdrawPickScreen OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, notes: Sequence[Note], now: datetime) -> None:
        super().__init__()
        self.notes = list(notes)
        self._now = now

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Withdraw which note?"
            yield Static(
                Text(
                    f"{len(self.notes)} notes are still pending. Enter withdraws the highlighted one; "
                    "Escape keeps them all.",
                )
            )
            yield OptionList(*(Option(note_prompt(n, self._now), id=n.note_id) for n in self.notes))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        picked = next((n for n in self.notes if n.note_id == event.option.id), None)
        self.dismiss(picked)

    def action_cancel(self) -> None:
        """Keep every note pending."""
        self.dismiss(None)
