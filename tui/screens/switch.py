"""Quick switch: the sessions followed in this app, most recent first; Enter shows one.

The previous session (the one ``b`` would jump back to) is highlighted when the list opens, so ``s``
then Enter goes back too. Each row: short id, agent, title, and what needs attention (pending approvals,
notes waiting, ended).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from client.textsafe import safe_line


@dataclass(frozen=True, slots=True)
class SwitchRow:
    """One followed session as the list shows it (all text made safe by the caller or here)."""

    session_id: str
    short: str
    agent: str
    title: str
    state: str
    """live, idle or ended (the header's words)."""
    pending_approvals: int = 0
    waiting_notes: int = 0
    current: bool = False


def row_prompt(row: SwitchRow) -> Text:
    """``a1b2c3d4  builder  · 1 approval pending  Fix the build`` (the current one marked ``●``)."""
    text = Text(no_wrap=True, overflow="ellipsis")  # one line per session, however long the title
    text.append("● " if row.current else "  ", style="bold")
    text.append(row.short, style="bold")
    text.append(f"  {safe_line(row.agent, 24)}", style="cyan")
    extras: list[tuple[str, str]] = []
    if row.pending_approvals:
        plural = "s" if row.pending_approvals != 1 else ""
        extras.append((f"{row.pending_approvals} approval{plural} pending", "bold yellow"))
    if row.waiting_notes:
        extras.append((f"{row.waiting_notes} note{'s' if row.waiting_notes != 1 else ''} waiting", "yellow"))
    if row.state == "ended":
        extras.append(("ended", "dim"))
    for words, style in extras:
        text.append("  · ", style="dim")
        text.append(words, style=style)
    # The title goes last: a narrow terminal cuts it, never what needs attention.
    text.append(f"  {safe_line(row.title, 60)}")
    return text


class SwitchScreen(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None (Escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,s", "cancel", "Stay", id="switch.cancel", tooltip="Stay on this session"),
    ]

    DEFAULT_CSS = """
    SwitchScreen { align: center middle; }
    SwitchScreen > Vertical {
        width: 100; max-width: 95%; height: auto; max-height: 80%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    SwitchScreen #switch-title { margin-bottom: 1; }
    SwitchScreen OptionList {
        height: auto; max-height: 16; border: none; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, rows: list[SwitchRow], *, highlight: int = 0) -> None:
        super().__init__()
        self.rows = rows
        self.highlight = highlight

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                Text.assemble(
                    ("Followed sessions", "bold"), ("  Enter shows one · Escape stays · b jumps back", "dim")
                ),
                id="switch-title",
            )
            yield OptionList(*[Option(row_prompt(r), id=r.session_id) for r in self.rows], id="switch-list")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.rows:
            options.highlighted = min(max(self.highlight, 0), len(self.rows) - 1)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Close without switching."""
        self.dismiss(None)
