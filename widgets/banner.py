"""A one-or-two-line banner for states a user must not miss (server down, reconnecting, ended, refused).

It is a plain ``Static`` whose text is always a ``rich.text.Text`` (never markup), so an error message that
quotes server text cannot style the terminal. Hidden while empty; ``level`` picks the colour class and an
icon so the level is readable without colour.

:func:`status_banner` and :func:`status_notice` word a live stream's states for a screen (the banner for
what lasts, a notice for what happened once).
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.notifications import SeverityLevel
from textual.widgets import Static

from client.status import Live, LoginNeeded, Missed, Reconnecting, Refused, Skipped, StreamStatus
from client.stream_words import lost_sentence
from client.textsafe import safe_line, safe_text

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

    def session_ended(self, reason: str | None) -> None:
        """The session ended (``reason`` when the server gave one): the transcript stays, no more notes."""
        why = f" ({safe_line(reason, 80)})" if reason else ""
        self.show(f"Session ended{why}. The transcript stays; notes can no longer be sent.", "info")

    def show_status(self, status: StreamStatus, *, lasting: bool = False) -> None:
        """A live stream's state: shown while it needs attention (:func:`status_banner`); live again clears
        the banner, unless ``lasting``: what it says outlives the connection (the session ended)."""
        line = status_banner(status)
        if line is not None:
            self.show(*line)
        elif isinstance(status, Live) and not lasting:
            self.clear()

    def clear(self) -> None:
        """Hide the banner; the state it described is over."""
        self.message = ""
        self.level = None
        self.update("")
        self.remove_class("-info", "-warning", "-error", "-shown")


def status_banner(status: StreamStatus) -> tuple[str, Level] | None:
    """The banner line for a stream state that needs attention while it lasts (None: nothing to show)."""
    if isinstance(status, LoginNeeded):  # everything stays (box, draft, timeline) and resumes
        return status.reason, "warning"
    if isinstance(status, Reconnecting):  # the header counts down; the banner says what follows
        return lost_sentence(status), "warning"
    if isinstance(status, Refused):
        code = f" ({status.status})" if status.status else ""
        return f"The server refused the stream{code}: {status.reason}", "error"
    return None


def status_notice(status: StreamStatus) -> tuple[str, str, SeverityLevel] | None:
    """A one-off notice (message, title, severity) for a stream event worth a toast, or None."""
    if isinstance(status, Refused):
        return safe_line(status.reason, 300), "Stream refused", "error"
    if isinstance(status, Missed):
        return f"{status.count} event(s) could not be recovered after reconnecting.", "", "warning"
    if isinstance(status, Skipped):
        why = safe_line(status.reason, 120)
        return f"Skipped an unreadable event ({why}); {status.total} so far.", "", "warning"
    return None
