"""State badges: an icon *and* a word for every state, so meaning never rests on colour alone.

Colour is added through CSS-independent Rich styles that degrade to plain text under ``NO_COLOR`` (Textual
drops colours then, the icon and the word remain). Pure functions returning ``rich.text.Text`` so the notes
panel, the header and the sessions table share one vocabulary.
"""

from __future__ import annotations

from rich.text import Text

from client.models import Note, NoteState
from client.textsafe import safe_line

NOTE_BADGES: dict[str, tuple[str, str]] = {
    NoteState.PENDING: ("◷", "bold yellow"),
    NoteState.CLAIMED: ("→", "bold cyan"),
    NoteState.DELIVERED: ("✓", "bold green"),
    NoteState.ACKNOWLEDGED: ("✓✓", "bold green"),
    NoteState.CANCELLED: ("⊘", "dim"),
    NoteState.EXPIRED: ("◌", "dim yellow"),
    NoteState.FAILED: ("✗", "bold red"),
    NoteState.UNDELIVERABLE: ("⊗", "bold red"),
}
"""Icon and style per note state; every one of the eight states has its own icon."""

SESSION_BADGES: dict[str, tuple[str, str]] = {
    "live": ("●", "bold green"),
    "idle": ("○", "yellow"),
    "waiting": ("⚑", "bold yellow"),
    "ended": ("■", "dim"),
}


def note_badge(state: str) -> Text:
    """``◷ pending`` etc.; an unknown state (newer server) still shows its word behind a ``?``."""
    icon, style = NOTE_BADGES.get(state, ("?", "bold magenta"))
    return Text(f"{icon} {safe_line(state, 24)}", style=style)


def session_badge(state: str, words: str | None = None) -> Text:
    """``● live`` / ``○ idle`` / ``⚑ waiting`` / ``■ ended`` for the sessions table and the attach header;
    ``words`` replaces the state's own word (``⚑ waiting for approval``)."""
    icon, style = SESSION_BADGES.get(state, ("?", ""))
    return Text(f"{icon} {words or state}", style=style)


def delivery_route(note: Note) -> str:
    """How a note reached the agent, e.g. ``hook (pre_tool_use) · turn 4``; "" when nothing is known.

    Servers record a channel (Preloop: ``hook``; others ``turn``, ``tool_result``...), the event that
    carried it and the turn. Any of the three may be missing. A ``turn`` channel names no more than the
    turn itself, so it is folded into ``turn 4 (turn_start)`` rather than read "turn · turn 4".
    """
    channel = safe_line(note.delivery_channel, 24) if note.delivery_channel else ""
    event = safe_line(note.delivery_event, 32) if note.delivery_event else ""
    turn = f"turn {note.delivered_turn_index}" if note.delivered_turn_index is not None else ""
    if channel == "turn" and turn:
        return f"{turn} ({event})" if event else turn
    route = f"{channel} ({event})" if channel and event and event != channel else channel or event
    return " · ".join(part for part in (route, turn) if part)
