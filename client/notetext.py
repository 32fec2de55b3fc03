"""What makes a note's text sendable: one rule for the CLI, the client library and the local server.

A note of only whitespace, one holding a NUL character (which terminals, C strings and many stores cut
at), or one longer than Preloop's limit (4096 characters) is refused before it leaves the operator's
machine, naming what to do (``notes send`` exits 2, a ``--plain`` line is not sent and printed back, the
TUI's note box counts as you type), and again by our server, so a script that bypasses the CLI cannot
queue one for an agent either. One limit for every server kind: a Dendrux app's steer router takes up to
32 KiB of UTF-8, which 4096 characters never exceed.
"""

from __future__ import annotations

from client.errors import UsageError

NOTE_MAX_CHARS = 4096
"""Preloop's limit on a note's length, in characters (as Python's ``len`` counts them, as the server does)."""

NOTE_EMPTY = "the note is empty"


def note_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be sent as a note, as a sentence an operator can act on; None if it can."""
    if not text.strip():
        return NOTE_EMPTY
    if "\x00" in text:
        return "the note contains a NUL character (\\0); remove it and send again"
    if len(text) > NOTE_MAX_CHARS:
        return (
            f"the note is {len(text):,} characters long and the limit is {NOTE_MAX_CHARS:,}: shorten it, "
            "or send it as several notes"
        )
    return None


def require_sendable(text: str) -> None:
    """Refuse (``UsageError``, before any request) a note :func:`note_text_problem` finds fault with:
    every backend's ``send_note`` starts here, whatever front end called it."""
    problem = note_text_problem(text)
    if problem is not None:
        raise UsageError(f"{problem}: type something to send" if problem == NOTE_EMPTY else problem)
