"""Events into a timeline view the way the attach screen does it: applied to the model, then the changes
that call returned drawn (``TimelineView.show``)."""

from __future__ import annotations

from collections.abc import Iterable

from client.events import Event
from client.timeline import TimelineChanges
from widgets.timeline_view import TimelineView


def feed(view: TimelineView, events: Iterable[Event]) -> TimelineChanges:
    """Apply ``events`` to the view's timeline and show what they changed; returns the changes."""
    changes = view.timeline.apply_many(events)
    view.show(changes)
    return changes
