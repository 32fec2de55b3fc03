"""The ``?`` screen: every key of the app in one place, and what a note is for."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Sessions",
        [
            ("Enter", "attach to the highlighted session"),
            ("j / k, g / G", "next / previous session, first / last (arrows, Home, End too)"),
            ("/", "filter by id, agent or title (Escape clears)"),
            ("a", "only sessions active in the last 10 minutes / all"),
            ("r", "refresh now (also after the server was down)"),
            ("q", "quit"),
        ],
    ),
    (
        "Attached session",
        [
            ("(typing)", "goes into the note box, which has the focus when you attach (its title says so)"),
            ("", "typed anywhere else in a burst, it goes there too: typing is never a command"),
            (
                "Enter",
                "send the note in the composer (typing begun before the box could be read: press again)",
            ),
            ("Shift+Enter, Ctrl+J", "new line in the note (inside tmux only Ctrl+J)"),
            ("Ctrl+S", "send the note"),
            ("a / d", "approve / decline the highlighted approval (d asks for a comment); also by mouse"),
            ("", "a high/danger-risk call asks first (PRELOOP_CONFIRM_RISK sets the levels)"),
            ("A", "allow (or mute) calls like the highlighted one for a while: a time-boxed rule"),
            ("x", "expand or collapse the approval's arguments"),
            ("w", "withdraw a pending note (asks which when several are pending)"),
            ("c", "collapse or show the agent's commentary"),
            ("l", "wrap long tool and approval lines in full, or cut them to the width again"),
            ("p", "below 90 columns: the notes list instead of the timeline, and back"),
            ("↑ ↓, j / k", "timeline: highlight the previous / next entry (▌); going up pauses following"),
            ("PageUp / PageDown", "a page back / forward; back pauses following (↓ N new: what arrived)"),
            ("Home / g", "the oldest entry shown (following pauses)"),
            ("End / G", "jump to the newest output and follow it again (outside the note box)"),
            ("/", "find in the timeline (the line at its bottom says 3 / 17; a folded match unfolds)"),
            ("Enter / ↓, ↑, Escape", "in the find line: next / previous match, close it (the place is kept)"),
            ("f", "view: everything → problems only → steering only → tools only (named above it)"),
            ("] / [", "next / previous problem: failed call, error, decline, expired, undeliverable"),
            ("y", "copy the highlighted entry (OSC 52: over SSH too; tmux needs set-clipboard on)"),
            ("Tab", "move between composer, notes and approvals"),
            ("Escape", "leave the note box (keys a, d, w… act outside it); again: back to the list"),
            ("q", "detach: the session keeps running"),
            ("t", "did it listen? jump to what the agent did after reading the highlighted note"),
            ("e", "export the session as Markdown for a post-incident review (the notice says where)"),
            ("s", "switch between the sessions you follow (each kept as you left it; q stops following)"),
            ("b", "back to the session you were on before"),
        ],
    ),
    (
        "Everywhere",
        [
            ("letters", "a letter command acts on its own, 0.3 s after the key; moving keys act at once"),
            ("? or F1", "this help (F1 also while typing a note)"),
            ("i or F2", "inbox: every session's approvals and undelivered notes (a / d / Enter there)"),
            ("", "typing in the inbox is kept in the draft of the session you came from"),
            ("", "x in the inbox: the highlighted call's whole arguments (its column is cut to fit)"),
            ("", "A in the inbox: a rule for calls like the highlighted one (as on the card)"),
            ("", "space in the inbox marks a row (M: all): a / d then decide the marked ones together"),
            ("R", "the allow rules that hold (the banner on every screen names them): x / X end them"),
            ("Ctrl+P", "command palette"),
            ("Ctrl+C, Ctrl+Q", "quit, drafts kept (Ctrl+C with text selected copies it first)"),
        ],
    ),
]


def help_renderable() -> Table:
    """The key table (a Rich table of plain ``Text``, no markup)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for title, rows in SECTIONS:
        table.add_row(Text(title, style="bold underline"), Text(""))
        for key, what in rows:
            table.add_row(Text(key), Text(what))
        table.add_row(Text(""), Text(""))
    table.add_row(
        Text("Notes"),
        Text(
            "A note waits on the server until the agent's next tool or model call picks it up; its badge "
            "goes ◷ pending, then → claimed, ✓ delivered, ✓✓ acknowledged (or ⊘ cancelled, ◌ expired, "
            "✗ failed, ⊗ undeliverable)."
        ),
    )
    return table


class HelpScreen(ModalScreen[None]):
    """Closes on Escape, ``?`` or ``q``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close", id="help.close", tooltip="Close help")
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "Help · Escape closes"
            yield Static(help_renderable())

    def action_close(self) -> None:
        """Back to where the user was."""
        self.dismiss(None)
