"""The timeline column of a session's screen: which view is on, the timeline, the follow hint, the find line.

The pane owns the :class:`~widgets.timeline_view.TimelineView` it is given, the
:class:`~widgets.find_bar.FindBar` docked at its bottom (hidden until ``/``, it is not on screen in the first
frame: it is mounted by :meth:`TimelinePane.ready_find`, which a screen calls once what it opens with is
painted, or else by the first ``/``) and the two one-line hints, and wires them together
(the find line's messages become calls on the view, and the view's status comes back to the line), so a
screen only asks for what the operator pressed:

=======================  ==================================================================================
call                     what the operator gets
=======================  ==================================================================================
:meth:`open_find`        ``/``: the find line, with the last query selected and searched again from the
                         cursor; Enter / ↓ next match, ↑ previous, Escape closes and keeps the position
:meth:`close_find`       Escape with the find line open but the focus elsewhere: closes it the same way
:meth:`cycle_view`       ``f``: everything → problems → steering → tools; the line above the timeline
                         names the view while it is not "everything"
:meth:`jump_problem`     ``]`` / ``[``: the next / previous problem among the entries shown, in any view; a
                         notice says when there is none that way
:meth:`copy_entry`       ``y``: the highlighted entry's text to the clipboard (``App.copy_to_clipboard``:
                         OSC 52, which works over SSH and inside tmux with ``set-clipboard on``;
                         the notice says which, ``client.clipboard``)
=======================  ==================================================================================

:meth:`offers` says which of these can act now (a screen's ``check_action`` asks it, so the keys line offers
a key only where it does something). The pane holds no key bindings itself: the body around it binds the
keys, so they never reach it from the note box, where every key is text. While the find line has the focus
its letters are text too (Textual's ``Input`` takes them, and the keys line leaves them out).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from client.clipboard import Route, clipboard_route, copy_words
from client.textsafe import safe_line
from client.timeline import TimelineEntry
from client.views import View, is_problem
from widgets.find_bar import FindBar
from widgets.notices import Notice, tell
from widgets.timeline_view import TimelineView

PANE_ACTIONS = frozenset(
    {"find", "close_find", "cycle_view", "next_problem", "previous_problem", "copy_entry"}
)
"""The actions a body binds to this pane's methods (see :meth:`TimelinePane.offers`)."""

COPIED_PREVIEW = 48
"""How much of the copied text the notice quotes."""


def copied_notice(text: str, route: Route | None = None) -> Notice:
    """What ``y`` says: how much was copied and how it starts (the text is the entry as shown, already
    terminal-safe; the notice is plain text), and where it went (``client.clipboard``: inside tmux it
    reaches the terminal only with ``set-clipboard on``; the notice says so, and how)."""
    lines = text.count("\n") + 1
    first = safe_line(text.split("\n", 1)[0].strip(), COPIED_PREVIEW)
    size = f"{lines} lines" if lines > 1 else f"{len(text)} characters"
    said, title, arrived = copy_words(f"{size}: {first}", route or clipboard_route())
    return said, title, "information" if arrived else "warning"


class TimelinePane(Vertical):
    """The view line, the timeline, the follow hint and the find line; see the module docstring."""

    DEFAULT_CSS = """
    TimelinePane { width: 1fr; height: 1fr; }
    TimelinePane > TimelineView { width: 1fr; height: 1fr; }
    TimelinePane > #view-line {
        display: none; height: 1; width: 1fr; padding: 0 1; background: $primary-muted; color: $text;
    }
    TimelinePane > #view-line.-shown { display: block; }
    TimelinePane > #follow-hint {
        display: none; height: 1; width: 1fr; padding: 0 1; background: $accent-muted; color: $text;
        text-style: bold;
    }
    TimelinePane > #follow-hint.-shown { display: block; }
    """

    NOTHING_THAT_WAY: ClassVar[dict[bool, str]] = {True: "No later problem", False: "No earlier problem"}

    def __init__(self, view: TimelineView, *, id: str | None = None) -> None:
        """Arrange ``view`` (the pane takes it over: its find and view are driven from here)."""
        super().__init__(id=id)
        self.view = view
        self.find_bar = FindBar(id="find")
        self._view_line = Static("", id="view-line")
        self._follow_hint = Static("", id="follow-hint")
        self._had_cursor = False

    def compose(self) -> ComposeResult:
        yield self._view_line
        yield self.view
        yield self._follow_hint

    async def ready_find(self) -> None:
        """Mount the find line (hidden) if it is not yet: its widgets cost the first frame nothing."""
        if self.find_bar.parent is None:
            await self.mount(self.find_bar)

    def on_mount(self) -> None:
        self.watch(self.view, "view", self._show_view, init=False)
        self.watch(self.view, "following", self._show_follow_hint)
        self.watch(self.view, "unseen", self._show_follow_hint)

    @property
    def finding(self) -> bool:
        """The find line has the focus: what is typed is the query, never a key command."""
        return self.find_bar.is_open and self.find_bar.input.has_focus

    def is_find_input(self, widget: object) -> bool:
        """Whether ``widget`` is the find line's input box (False before the line is mounted)."""
        return self.find_bar.is_mounted and widget is self.find_bar.input

    def offers(self, action: str) -> bool:
        """Whether one of :data:`PANE_ACTIONS` can act now (the timeline is shown; ``y`` needs the
        highlighted entry on screen, which is drawn while the timeline has the focus)."""
        if action == "close_find":
            return self.find_bar.is_open and not self.finding  # in the line, its own Escape closes it
        if action == "copy_entry":
            return self.view.has_focus and self.view.cursor_entry is not None
        return action in PANE_ACTIONS and not self.finding

    async def open_find(self) -> None:
        """``/``: show the find line and type into it (the previous query selected, searched again)."""
        await self.ready_find()
        self.find_bar.open()

    def close_find(self) -> None:
        """Close the find line from outside it (as its Escape does): the highlights go, the cursor stays."""
        self.find_bar.close()

    def cycle_view(self) -> None:
        """``f``: the next view (the line above the timeline names it; find and following work inside)."""
        self.view.view = self.view.view.next()

    def jump_problem(self, *, forward: bool) -> bool:
        """``]`` / ``[``: highlight the next / previous problem and give the timeline the focus so it is
        seen; when there is none that way, say so (and that ``f`` shows more when the view hides some) and
        move nothing."""
        view = self.view
        if view.next_problem() if forward else view.previous_problem():
            view.focus()
            return True
        why = self.NOTHING_THAT_WAY[forward]
        problems = [entry for entry in view.timeline if is_problem(entry)]
        if not problems:
            why = "No problem in this session so far"
        elif not all(view.view.shows(entry) for entry in problems):  # (problems only hides none)
            why += f" in {view.view.label} (f changes the view)"
        tell(self, (f"{why}.", "", "information"))
        return False

    def show_entry(self, entry: TimelineEntry | None, why: str) -> bool:
        """Scroll to ``entry`` (following stops there) and give the timeline the focus; when it is not
        there to show (None, dropped, hidden by the view), say ``why`` instead."""
        if entry is not None and self.view.scroll_to_entry(entry.id):
            self.view.focus()
            return True
        tell(self, (why, "", "information"))
        return False

    def copy_entry(self) -> bool:
        """``y``: the highlighted entry, as read and whole, to the clipboard; a notice says what went."""
        text = self.view.cursor_text()
        if not text:
            tell(self, ("Nothing highlighted to copy.", "", "information"))
            return False
        self.app.copy_to_clipboard(text)
        tell(self, copied_notice(text))
        return True

    def _show_view(self) -> None:
        view = self.view.view
        shown = view is not View.EVERYTHING
        if shown:
            line = Text.assemble(
                ("view: ", "dim"), (view.label, "bold"), (f" · f: {view.next().label}", "dim")
            )
            self._view_line.update(line)
        self._view_line.set_class(shown, "-shown")

    def _show_follow_hint(self) -> None:
        """Scrolled up to read: say that following is paused, how much arrived below, and how to resume."""
        unseen = self.view.unseen
        words = f"↓ {unseen} new · End to follow" if unseen else "⏸ following paused · End to follow"
        self._follow_hint.update(Text(words))
        self._follow_hint.set_class(not self.view.following, "-shown")

    @on(FindBar.Changed)
    def _find_changed(self, event: FindBar.Changed) -> None:
        event.stop()
        self.find_bar.show_status(self.view.go_to(self.view.reader.find(event.query)))

    @on(FindBar.Next)
    def _find_next(self, event: FindBar.Next) -> None:
        event.stop()
        self.find_bar.show_status(self.view.go_to(self.view.reader.find_step(forward=True)))

    @on(FindBar.Previous)
    def _find_previous(self, event: FindBar.Previous) -> None:
        event.stop()
        self.find_bar.show_status(self.view.go_to(self.view.reader.find_step(forward=False)))

    @on(FindBar.Closed)
    def _find_closed(self, event: FindBar.Closed) -> None:
        event.stop()
        self.view.end_find()
        self.view.focus()

    @on(TimelineView.FindUpdated)
    def _find_updated(self, event: TimelineView.FindUpdated) -> None:
        event.stop()
        self.find_bar.show_status(event.status)

    @on(TimelineView.CursorMoved)
    def _cursor_moved(self, event: TimelineView.CursorMoved) -> None:
        # (not stopped: a screen may want to know what is highlighted.) The keys line offers y only with
        # an entry highlighted; following moves the cursor at every frame, so only a change of that counts.
        has_cursor = event.entry_id is not None
        if has_cursor != self._had_cursor:
            self._had_cursor = has_cursor
            self.screen.refresh_bindings()


__all__ = ["PANE_ACTIONS", "TimelinePane", "copied_notice"]
