"""The ``?`` help lists every key of the attach screen's timeline: the body's (find, views, problem jumps,
copy), the timeline's own (cursor, pages, following) and the find line's. A key bound there and missing
from the help is a key the operator cannot learn."""

from __future__ import annotations

import re

import pytest
from textual.binding import Binding
from textual.widget import Widget

from tui.screens.help import SECTIONS
from widgets.find_bar import FindBar
from widgets.session_body import SessionBody
from widgets.timeline_view import TimelineView

SHOWN = {
    "slash": "/",
    "right_square_bracket": "]",
    "left_square_bracket": "[",
    "up": "↑",
    "down": "↓",
    "escape": "Escape",
    "enter": "Enter",
    "end": "End",
    "home": "Home",
    "pageup": "PageUp",
    "pagedown": "PageDown",
}


def help_keys() -> set[str]:
    """Every key the help's attach and everywhere sections name ("PageUp / PageDown" → two)."""
    keys: set[str] = set()
    for title, rows in SECTIONS:
        if title in ("Attached session", "Everywhere"):
            for key, _ in rows:
                keys.update(part for part in re.split(r",\s*|\s+/\s+|\s+or\s+|\s+", key) if part)
    return keys


def bound(widget: type[Widget]) -> set[str]:
    """The keys bound on ``widget``, as the help writes them."""
    bindings = [b for b in widget.BINDINGS if isinstance(b, Binding)]
    return {SHOWN.get(key, key) for b in bindings for key in b.key.split(",")}


@pytest.mark.parametrize("widget", [SessionBody, TimelineView, FindBar], ids=lambda w: w.__name__)
def test_the_help_names_every_timeline_key(widget: type[Widget]) -> None:
    """Each key bound there is named in the help (the message says which is not)."""
    assert bound(widget) <= help_keys(), bound(widget) - help_keys()
