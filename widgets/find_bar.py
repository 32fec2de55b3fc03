"""The find line: a one-line input docked at the bottom of a screen, with the match count beside it.

Presentational: it searches nothing itself. It says what the operator typed and which way they want to go,
as messages the screen turns into calls on the timeline view, and shows the :class:`client.find.FindStatus`
the screen hands back ("3 / 17", "no match"):

=====================  ===========================================  =========================================
key in the find line   message                                      the screen calls
=====================  ===========================================  =========================================
any edit               :class:`FindBar.Changed` (``query``)          ``bar.show_status(view.find(query))``
Enter, ↓               :class:`FindBar.Next`                         ``bar.show_status(view.find_next())``
↑                      :class:`FindBar.Previous`                     ``bar.show_status(view.find_previous())``
Escape                 :class:`FindBar.Closed` (bar already hidden)  ``view.end_find(); view.focus()``
=====================  ===========================================  =========================================

``TimelineView.FindUpdated`` (new output changed the count) goes to ``bar.show_status`` too. Letters typed
here are text, never key commands (``n`` stays the note key of the screen): the bar binds only the four
keys above. :meth:`FindBar.open` shows it with the last query selected and searches it again from the
cursor, so ``/`` then Enter goes on from there and typing replaces it.

**The collector while typing a query.** A session of 5,000 events holds some 100,000 objects the garbage
collector tracks (300,000 after a long follow), and a full collection walks all of them: 60-150 ms, which
a keystroke that happens to trigger one waits for (``benchmarks/bench_find_attach.py``: p95 70-100 ms, max
above 100 ms, against a target of 50 ms). So while the find line has the focus on the screen shown, what
existed when it got the focus is frozen out of the collector (``gc.freeze``, constant time) and handed back
when the focus leaves, the screen is covered or the bar goes (``gc.unfreeze``, constant time): keystrokes
then meet collections of the few objects made since (a few ms). Frozen objects are still freed when
nothing refers to them; only cyclic garbage among them waits for the unfreeze, so what is held back is
bounded by the heap when typing started. The bar freezes only when nothing else in the process is frozen
and unfreezes only what it froze (:data:`FREEZE_WHILE_TYPING` turns it off, for the benchmark).
"""

from __future__ import annotations

import gc
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static

from client.find import FindStatus

FREEZE_WHILE_TYPING = True
"""Freeze what exists out of the garbage collector while a query is typed (see the module docstring)."""


class _TypingFreeze:
    """One ``gc.freeze`` held for one find line at most; never unfreezes what it did not freeze."""

    def __init__(self) -> None:
        self.held = False

    def hold(self) -> None:
        if FREEZE_WHILE_TYPING and not self.held and gc.get_freeze_count() == 0:
            gc.freeze()
            self.held = True

    def renew(self) -> None:
        """A key is being answered: what was made since the last freeze (new output while the line had the
        focus, the previous keys' frames) goes out of the collector's scans too."""
        if self.held:
            gc.freeze()

    def release(self) -> None:
        if self.held:
            self.held = False
            gc.unfreeze()


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
        self._freeze = _TypingFreeze()

    def compose(self) -> ComposeResult:
        yield Static("/", id="find-prompt")
        yield Input(placeholder=self._placeholder, id="find-input", max_length=200, select_on_focus=False)
        yield Static("", id="find-count")

    def on_mount(self) -> None:
        self.app.screen_change_signal.subscribe(self, self._typing_changed)

    def on_unmount(self) -> None:
        self._freeze.release()

    def on_descendant_focus(self) -> None:
        self._typing_changed()

    def on_descendant_blur(self) -> None:
        self._typing_changed()

    def _typing_changed(self, _screen: Screen[object] | None = None) -> None:
        """The focus or the screen shown changed: hold the collector freeze exactly while a query is typed."""
        if self.is_attached and self.input.has_focus and self.screen is self.app.screen:
            self._freeze.hold()
        else:
            self._freeze.release()

    @property
    def typing_freeze(self) -> bool:
        """Whether this find line holds the collector freeze now (tests, benchmarks)."""
        return self._freeze.held

    @property
    def input(self) -> Input:
        """The query's input box."""
        return self.query_one("#find-input", Input)

    @property
    def query_text(self) -> str:
        """The query as typed."""
        return self.input.value

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
        self._freeze.renew()
        self.post_message(self.Next(self))

    def action_previous(self) -> None:
        """↑ in the find line."""
        self._freeze.renew()
        self.post_message(self.Previous(self))

    def action_close(self) -> None:
        """Escape in the find line."""
        self.close()

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._freeze.renew()
        self.post_message(self.Changed(self, event.value))

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._freeze.renew()
        self.post_message(self.Next(self))


__all__ = ["FindBar"]
