"""The keys line (Textual's ``Footer``) of a screen that must fit every key at 80 columns.

Narrower than :data:`COMPACT_BELOW` it drops its padding and the ``^p palette`` hint (the help lists
Ctrl+P), so every key, ``? Help`` included, fits; wider, it has both again. While events pour in, what
the keys can do changes often: :meth:`KeysLine.keys_changed` checks them again at most every
:data:`CHECK_EVERY` seconds.
"""

from __future__ import annotations

from textual.widgets import Footer

COMPACT_BELOW = 100
CHECK_EVERY = 0.2
"""Key availability is checked again at most this often (the footer is composed anew each time)."""


class KeysLine(Footer):
    """A footer that is compact below :data:`COMPACT_BELOW` columns of terminal."""

    def __init__(self, width: int) -> None:
        narrow = width < COMPACT_BELOW
        super().__init__(compact=narrow, show_command_palette=not narrow)
        self._check_scheduled = False

    def keys_changed(self) -> None:
        """What some key can do changed: check the screen's keys again soon (not once per event)."""
        if self.is_mounted and not self._check_scheduled:  # (mounted later, it checks them then)
            self._check_scheduled = True
            self.set_timer(CHECK_EVERY, self._check_keys)

    @property
    def checking(self) -> bool:
        """A check of the keys is due (the picture may still change)."""
        return self._check_scheduled

    def _check_keys(self) -> None:
        self._check_scheduled = False
        self.screen.refresh_bindings()

    def fit(self, width: int) -> None:
        """The terminal is now ``width`` columns wide."""
        narrow = width < COMPACT_BELOW
        if self.show_command_palette == narrow:
            self.compact, self.show_command_palette = narrow, not narrow
            if self.is_mounted:  # the Footer reads show_command_palette only when composing
                self.refresh(recompose=True)
