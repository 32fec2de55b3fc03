"""How a note's delivery reads (notes panel and timeline): the channel, event and turn Preloop records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from client.models import Note
from client.timeline import NoteEntry
from widgets.badges import NOTE_BADGES, delivery_route, note_badge
from widgets.notes_panel import note_prompt
from widgets.timeline_render import NOTE_LOOK, line_plain, render_entry

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def delivered(**fields: object) -> Note:
    return Note(
        note_id="n", state="delivered", text="stop", delivered_at=NOW - timedelta(seconds=5), **fields
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"delivery_channel": "hook", "delivery_event": "pre_tool_use", "delivered_turn_index": 4},
            "hook (pre_tool_use) · turn 4",
        ),
        ({"delivery_channel": "hook"}, "hook"),
        ({"delivery_event": "pre_tool_use"}, "pre_tool_use"),
        ({"delivered_turn_index": 0}, "turn 0"),
        # A "turn" channel says no more than the turn: never "turn · turn 6".
        (
            {"delivery_channel": "turn", "delivery_event": "turn_start", "delivered_turn_index": 6},
            "turn 6 (turn_start)",
        ),
        ({"delivery_channel": "turn", "delivered_turn_index": 6}, "turn 6"),
        ({"delivery_channel": "turn"}, "turn"),
        ({"delivery_channel": "tool_result", "delivered_turn_index": 7}, "tool_result · turn 7"),
        ({}, ""),
    ],
)
def test_delivery_route_reads_well_for_any_channel(fields: dict[str, object], expected: str) -> None:
    assert delivery_route(delivered(**fields)) == expected


def test_delivery_route_is_terminal_safe() -> None:
    route = delivery_route(delivered(delivery_channel="\x1b]0;evil\x07hook", delivery_event="[b]x[/b]"))
    assert "\x1b" not in route and "\x07" not in route
    assert "[b]x[/b]" in route  # shown literally (a plain str, rendered as Text)


def _panel_text(note: Note) -> str:
    console = Console(width=80, no_color=True, record=True)
    console.print(note_prompt(note, NOW))
    return console.export_text()


def test_notes_panel_says_when_and_how_a_note_was_delivered() -> None:
    note = delivered(delivery_channel="hook", delivery_event="pre_tool_use", delivered_turn_index=4)
    text = _panel_text(note)
    assert "delivered 5s ago · hook (pre_tool_use) · turn 4" in text
    assert "via" not in text


def test_notes_panel_with_nothing_known_about_delivery() -> None:
    text = _panel_text(Note(note_id="n", state="delivered", text="stop"))
    assert "✓ delivered" in text and "turn" not in text and "·" not in text.split("\n", 1)[1]


def test_timeline_note_line_names_the_route() -> None:
    note = delivered(delivery_channel="hook", delivery_event="pre_tool_use", delivered_turn_index=4)
    (line,) = render_entry(NoteEntry(1, 1, NOW, note=note, state="delivered"), 100)
    assert line_plain(line).rstrip() == "✉ note delivered ✓  “stop”  hook (pre_tool_use) · turn 4"


def test_timeline_and_panel_share_note_glyphs() -> None:
    assert {state: icon for state, (icon, _) in NOTE_LOOK.items()} == {
        state: icon for state, (icon, _) in NOTE_BADGES.items()
    }


def test_an_unknown_note_state_shows_its_word_but_cannot_drive_the_terminal() -> None:
    """A newer (or hostile) server's state word is shown, but its escapes and bidi controls are not."""
    plain = note_badge("\x1b]0;pwned\x07queued\u202e").plain
    assert plain.startswith("? ") and "queued" in plain
    assert "\x1b" not in plain and "\x07" not in plain and "\u202e" not in plain
