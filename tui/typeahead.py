"""The type-ahead guard: a decision key typed too soon after a screen or dialog came up is not taken.

An operator types fast and without looking. When something changes under their fingers (a dialog opens,
the inbox comes up, the note box goes away) the next letters were meant for what was there before, not
for what is there now. Browsers guard their security dialogs the same way: buttons ignore input for a
moment after the dialog appears. Every screen or dialog that can decide an approval owns one
:class:`TypeAheadGuard`, arms it when it opens or gets the focus, and asks :meth:`TypeAheadGuard.ready`
before it acts on a decision key (``a``, ``d``, ``y``, Enter in the decline box, a button). The attach
screen's note box owns one too: Enter sends only typing that began after the box could be read.

The guard measures from when the key was *pressed* (``ready(at)``): a letter command waits for a short
quiet window before it runs (``tui.keypace``), and that wait does not count as time the operator had to
read the screen.

The clock is injectable so tests type at a person's pace on a fake clock. The app passes its one clock
(``PreloopApp.monotonic``) to every guard and to the key-pace tracker; without one they read
:data:`DEFAULT_CLOCK` (``time.monotonic``; the tests swap it, see ``tests/conftest.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["DEFAULT_CLOCK", "GUARD_SECONDS", "Monotonic", "TypeAheadGuard", "default_clock"]

GUARD_SECONDS = 0.5
"""How long decision keys are ignored after a screen or dialog opens or gets the focus."""

Monotonic = Callable[[], float]
"""A clock in seconds that only moves forward (``time.monotonic`` outside tests)."""

DEFAULT_CLOCK: Monotonic = time.monotonic
"""The clock of guards and of the key pace when none is given (read when they are made)."""


def default_clock() -> Monotonic:
    """:data:`DEFAULT_CLOCK` as it is now (a test may have swapped it)."""
    return DEFAULT_CLOCK


class TypeAheadGuard:
    """Remembers when its screen last opened or got the focus and says whether a decision may be taken."""

    def __init__(self, clock: Monotonic | None = None, seconds: float | None = None) -> None:
        self._clock: Monotonic = clock or default_clock()
        self.seconds = GUARD_SECONDS if seconds is None else seconds
        self.armed_at = self._clock()
        """When the screen last opened or got the focus (on the guard's clock)."""
        self._told = False

    def arm(self) -> None:
        """The screen just opened or got the focus: decision keys wait ``seconds`` from now."""
        self.armed_at = self._clock()
        self._told = False

    def ready(self, at: float | None = None) -> bool:
        """Whether a decision key pressed at ``at`` (default: now) was meant for this screen: pressed at
        least ``seconds`` after it came up."""
        pressed = self._clock() if at is None else at
        return pressed - self.armed_at >= self.seconds

    def tell_once(self) -> bool:
        """True for the first key ignored since the last :meth:`arm`: say why once, not per key."""
        if self._told:
            return False
        self._told = True
        return True
