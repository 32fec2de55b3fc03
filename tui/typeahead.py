"""The type-ahead guard: a decision key typed too soon after a screen or dialog came up is not taken.

An operator types fast and without looking. When something changes under their fingers (a dialog opens,
the inbox comes up, the note box goes away) the next letters were meant for what was there before, not
for what is there now. Browsers guard their security dialogs the same way: buttons ignore input for a
moment after the dialog appears. Every screen or dialog that can decide an approval owns one
:class:`TypeAheadGuard`, arms it when it opens or gets the focus, and asks :meth:`TypeAheadGuard.ready`
before it acts on a decision key (``a``, ``d``, ``y``, Enter in the decline box, a button).

The clock is injectable (``time.monotonic`` by default) so tests type at a person's pace on a fake clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["GUARD_SECONDS", "Monotonic", "TypeAheadGuard"]

GUARD_SECONDS = 0.5
"""How long decision keys are ignored after a screen or dialog opens or gets the focus."""

Monotonic = Callable[[], float]
"""A clock in seconds that only moves forward (``time.monotonic`` outside tests)."""


class TypeAheadGuard:
    """Remembers when its screen last opened or got the focus and says whether a decision may be taken."""

    def __init__(self, clock: Monotonic | None = None, seconds: float | None = None) -> None:
        self._clock: Monotonic = clock or time.monotonic
        self.seconds = GUARD_SECONDS if seconds is None else seconds
        self._armed_at = self._clock()
        self._told = False

    def arm(self) -> None:
        """The screen just opened or got the focus: decision keys wait ``seconds`` from now."""
        self._armed_at = self._clock()
        self._told = False

    def ready(self) -> bool:
        """Whether a decision key pressed now was meant for this screen (typed after it came up)."""
        return self._clock() - self._armed_at >= self.seconds

    def tell_once(self) -> bool:
        """True for the first key ignored since the last :meth:`arm`: say why once, not per key."""
        if self._told:
            return False
        self._told = True
        return True
