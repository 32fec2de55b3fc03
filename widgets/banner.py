"""A one-or-two-line banner for states a user must not miss (server down, reconnecting, ended, refused).

It is a plain ``Static`` whose text is always a ``rich.text.Text`` (never markup), so an error message that
quotes server text cannot style the terminal. Hidden while empty; ``level`` picks the colour class and an
icon so the level is readable without colour.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.widgets import Static

from client.textsafe import safe_text

Level = Literal["info", "warning", "error"]

_ICONS: dict[Level, str] = {"info": "ℹ", "warning": "⚠", "error": "✗"}


class Banner(Static):
    """Shows one message at a time; ``clear()`` hides it."""

    DEFAULT_CSS = """
    Banner {
        height: auto;
        max-height: 3;
        padding: 0 1;
        display: none;
    }
    Banner.-shown { display: block; }
    Banner.-info { background: $primary-muted; color: $text; }
    Banner.-warning { background: $warning-muted; color: $text; }
    Banner.-error { background: $error-muted; color: $text; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes)
        self.message: str = ""
        self.level: Level | None = None

    def show(self, message: str, level: Level = "info", *, hint: str = "") -> None:
        """Display ``message`` (untrusted text allowed) and an optional key hint after it."""
        self.message = message
        self.level = level
        text = Text(f"{_ICONS[level]} ", style="bold")
        text.append(safe_text(message, keep_newlines=False))
        if hint:
            text.append(f"  {hint}", style="bold")
        self.update(text)
        self.remove_class("-info", "-warning", "-error")
        self.add_class(f"-{level}", "-shown")

    def clear(self) -> None:
        """Hide the banner; the state it described is over."""
        self.message = ""
        self.level = None
        self.update("")
        self.remove_class("-info", "-warning", "-error", "-shown")
