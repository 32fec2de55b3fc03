"""What makes a note's text sendable: one rule for the CLI, the client library and the local server.

A note of only whitespace, or one holding a NUL character (which terminals, C strings and many stores cut
at), is refused before it leaves the operator's machine and again by our server, so a script that bypasses
the CLI cannot queue one for an agent either. The length limit (Preloop's 1..4096 characters) is the
server's to enforce: the CLI shows its 422, as it would a real Preloop's.
"""

from __future__ import annotations

NOTE_MAX_CHARS = 4096
"""Preloop's limit on a note's length, in characters (checked by the server)."""

NOTE_EMPTY = "the note is empty"


def note_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be sent as a note, as a sentence an operator can act on; None if it can."""
    if not text.strip():
        return NOTE_EMPTY
    if "\x00" in text:
        return "the note contains a NUL character (\\0); remove it and send again"
    return None
