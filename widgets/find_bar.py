"""The find line: a one-line input docked at the bottom of a screen, with the match count beside it.

Presentational: it searches nothing itself. It says what the operator typed and which way they want to go,
as messages the pane beside the timeline (``widgets.timeline_pane``) turns into steps of the find
(``client.reader.Reader``, drawn by ``TimelineView.go_to``), and shows the :class:`client.find.FindStatus`
handed back ("3 / 17", "no match"):

=====================  ===========================================  =======================================
key in the find line   message                                      the pane calls (``view.go_to(...)`` of)
=====================  ===========================================  =======================================
any edit               :class:`FindBar.Changed` (``query``)          ``view.reader.find(query)``
Enter, ↓               :class:`FindBar.Next`                         ``view.reader.find_step(forward=True)``
↑                      :class:`FindBar.Previous`                     ``view.reader.find_step(forward=False)``
Escape                 :class:`FindBar.Closed` (bar already hidden)  ``view.end_find(); view.focus()``
=====================  ===========================================  =======================================

``TimelineView.FindUpdated`` (new output changed the count) goes to ``bar.show_status`` too. Letters typed
here are text, never key commands (``n`` stays the note key of the screen): the bar binds only the four
keys above. :meth:`FindBar.open` shows it with the last query selected and searches it again from the
cursor, so ``/`` then Enter goes on from there and typing replaces it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from client.find import FindStatus


class FindBar(Horizontal):
    """``/ [query      ] 3 / 17``: hidden until :meth:`open`; see the module docstring for the wiring."""

    DEFAULT_CSS = """
    FindBar {
        dock: bottom;
        height: 1;
        display: none;
        background: $panel;
        &.-open { display: block; }
        & > #find-prompt { width: 2; color: $accent; text-style: bold; }
        & > Input {
            width: 1fr;
            height: 1;
            border: none;
            padding: 0;
            background: $panel;
            &:focus { border: none; background-tint: $foreground 5%; }
        }
        & > #find-count { width: 15; padding: 0 1; text-align: right; color: $text-muted; }
        & > #find-count.-none { color: $text-error; text-style: bold; }
    }
    """

    # Shown in the keys line while the find line has the focus (its letters are text: no letter key is).
    # ↑ / ↓ are priority keys: the input's own (inherited scrolling) bindings would hide them from the line.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "next", "next", key_display="Enter/↓", priority=True, id="find.next"),
        Binding("up", "previous", "previous", key_display="↑", priority=True, id="find.previous"),
        Binding("escape", "close", "close find", key_display="Esc", id="find.close"),
    ]

    class Changed(Message):
        """The query changed (every keystroke): search again."""

        def __init__(self, bar: FindBar, query: str) -> None:
            """``query`` is the whole text of the find line."""
            super().__init__()
            self.bar = bar
            self.query = query

        @property
        def control(self) -> FindBar:
            """The find line."""
            return self.bar

    class Next(Message):
        """Enter or ↓: the next match."""

        def __init__(self, bar: FindBar) -> None:
            """From the find line ``bar``."""
            super().__init__()
            self.bar = bar

        @property
        def control(self) -> FindBar:
            """The find line."""
            return self.bar

    class Previous(Message):
        """↑: the previous match."""

        def __init__(self, bar: FindBar) -> None:
            """From the find line ``bar``."""
            super().__init__()
            self.bar = bar

        @property
        def control(self) -> FindBar:
            """The find line."""
            return self.bar

    class Closed(Message):
        """Escape: the find line is hidden; the position it reached stays."""

        def __init__(self, bar: FindBar, query: str) -> None:
            """``query`` is what was searched last (kept for the next :meth:`FindBar.open`)."""
            super().__init__()
            self.bar = bar
            self.query = query

        @property
        def control(self) -> FindBar:
            """The find line."""
            return self.bar

    def __init__(
        self,
        *,
        placeholder: str = "find · Enter/↓ next · ↑ previous · Esc close",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """A hidden find line; ``placeholder`` is what the empty input says."""
        super().__init__(name=name, id=id, classes=classes)
        self._placeholder = placeholder
        self._status = FindStatus()

    def compose(self) -> ComposeResult:
        yield Static("/", id="find-prompt")
        yield Input(placeholder=self._placeholder, id="find-input", max_length=200, select_on_focus=False)
        yield Static("", id="find-count")

    @property
    def input(self) -> Input:
        """The query's input box."""
        return self.query_one("#find-input", Input)

    @property
    def is_open(self) -> bool:
        """Shown (between :meth:`open` and Escape / :meth:`close`)."""
        return self.has_class("-open")

    @property
    def status(self) -> FindStatus:
        """What the count shows."""
        return self._status

    def open(self) -> None:
        """Show the line and take the focus. The previous query stays, selected (typing replaces it), and
        is searched again (:class:`FindBar.Changed`) from where the cursor is now."""
        self.add_class("-open")
        box = self.input
        box.focus()
        if box.value:
            box.select_all()
            self.post_message(self.Changed(self, box.value))

    def close(self) -> None:
        """Hide the line (the query is kept for the next open) and say so with :class:`FindBar.Closed`."""
        if not self.is_open:
            return
        self.remove_class("-open")
        self.post_message(self.Closed(self, self.input.value))

    def show_status(self, status: FindStatus) -> None:
        """Show where the find stands: "3 / 17", "17 matches", "no match", or nothing for no query."""
        self._status = status
        count = self.query_one("#find-count", Static)
        count.update(Text(str(status)), layout=False)  # a fixed width: no layout pass per keystroke
        count.set_class(bool(status.query) and not status.total, "-none")

    def action_next(self) -> None:
        """↓ in the find line."""
        self.post_message(self.Next(self))

    def action_previous(self) -> None:
        """↑ in the find line."""
        self.post_message(self.Previous(self))

    def action_close(self) -> None:
        """Escape in the find line."""
        self.close()

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self, event.value))

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Next(self))


__all__ = ["FindBar"]
