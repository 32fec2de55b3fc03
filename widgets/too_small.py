"""Instead of a crushed layout: one notice that says how much room a screen needs.

A screen yields a :class:`TooSmall` and calls :meth:`TooSmall.fit` with the terminal's size. Below the
minimum the screen gets the ``-too-small`` class (its stylesheet then hides everything but the notice)
and loses its focus, so keys reach the screen's bindings (``q`` still detaches) rather than a hidden
widget that would swallow them; large enough again, the focus comes back where it was.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static


class TooSmall(Static):
    """The notice; ``what`` names the view ("the session view"), ``then`` what can still be done."""

    def __init__(self, minimum: tuple[int, int], what: str, then: str, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.minimum = minimum
        self._what = what
        self._then = then
        self._focus_before: Widget | None = None

    def fit(self, width: int, height: int) -> bool:
        """The terminal is ``width`` × ``height``: show the notice (or the layout again); True when small."""
        min_width, min_height = self.minimum
        small = width < min_width or height < min_height
        screen = self.screen
        if small:
            self.update(
                Text(
                    f"Terminal too small ({width}×{height}): {self._what} needs at least "
                    f"{min_width}×{min_height}. Enlarge the window; {self._then}."
                )
            )
        if small and not screen.has_class("-too-small"):
            self._focus_before = screen.focused
            screen.set_focus(None)
        elif not small and screen.has_class("-too-small"):
            if self._focus_before is not None and self._focus_before.is_attached:
                screen.set_focus(self._focus_before)
            self._focus_before = None
        screen.set_class(small, "-too-small")
        return small
