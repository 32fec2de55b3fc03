"""A line-virtualised view of a :class:`client.timeline.Timeline` (presentational: no network).

Built like Textual's ``Log``: a ``ScrollView`` that keeps rendered lines (not widgets), turns only the
visible ones into ``Strip``s through an LRU cache, caps retained lines at ``max_lines``, and follows new
output only while the user is at the bottom (scrolling up to read is never yanked back). It draws what it
is told changed, when it is told (:meth:`TimelineView.show`); how often that is (once per frame) is the
screen's.

Usage contract (the attach screen)::

    from client.timeline import Timeline
    from client.views import View
    from widgets.timeline_view import TimelineView

    timeline = Timeline()                               # the pure model; the screen owns it
    view = TimelineView(timeline, max_lines=10_000, id="timeline")
    ...                                                 # compose/mount it
    view.show(timeline.apply_many(batch))               # what the events changed, drawn now

    view.collapse_commentary = True                     # reactive; also key "c" (action toggle_commentary)
    view.view = View.PROBLEMS                           # reactive: only the entries a view keeps
    view.at_bottom / view.following                     # following new output?

    view.cursor_entry / view.cursor_id                  # the highlighted entry (CursorMoved when it moves)
    view.move_cursor_to(entry_id)                       # jumps (False when the entry is not shown)
    view.cursor_text()                                  # the highlighted entry, plain, for the clipboard
    view.next_problem() / view.previous_problem()       # False when there is none that way
    view.find(query) -> FindStatus                      # on every keystroke of the find line
    view.find_next() / view.find_previous()             # wrap around; FindStatus for the line
    view.end_find()                                     # closed: highlights go, the position stays

    timeline.pending_approvals / timeline.notes / timeline.session / timeline.run_status
                                                        # panels read these from the model, not the view

Entries update in place (a streaming text grows, a tool call completes); only the entries the changes
name are re-rendered.
A width change re-renders the retained entries once; collapsing commentary reuses the rendered blocks.

**The entry cursor.** One entry is highlighted (by id): every line of it starts with ``▌`` and is bold on a
tinted bar, so it is seen without colour too; it is drawn while the view has the focus or a find is open.
``up``/``k`` and ``down``/``j`` move it one entry, except inside an entry taller than the window, which
they scroll through line by line first; ``PageUp``/``PageDown`` scroll a page and bring the cursor along
only when it left the window; ``Home``/``g`` go to the first entry; ``End``/``G`` to the newest and follow.
A click highlights the entry under the mouse. While following, the cursor sits on the newest entry and
moves with new output; moving it up (or any jump to an older entry) pauses following, ``End`` resumes,
and so does scrolling back to the end with the mouse wheel when the cursor was not moved by hand.
When the cursor's entry leaves the view (dropped, or hidden by a view) it goes to the nearest shown one.

**Views** (``view``, a :class:`client.views.View`) keep only the entries their predicate passes; an entry
that starts or stops passing (a tool call that fails) appears or goes in place. A view with nothing in it
shows one line saying so. Following, the cursor, find and the problem jumps all work inside a view.

**Find** searches the entries shown (:mod:`client.find`: literal, case-insensitive) and moves the cursor to
the current match. Typing starts from where the cursor was (the newest match when following, else the
first at or after the cursor), so each keystroke re-searches from that origin and an emptied query brings
the cursor back. Matches are highlighted in the lines (underlined on a tint), the current match's entry in
reverse; a folded commentary or a line cut to the width that holds the current match is shown in full while
it is current (and stays so when the find line is closed on it). New output updates the count
(``FindUpdated``) without moving the cursor.

Keys (focus the view): ``c`` toggle commentary, ``end`` follow output (jump to the bottom), plus the
cursor keys above.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive, var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from client.find import Finder, FindStatus, find_spans
from client.timeline import TextEntry, TextPhase, Timeline, TimelineChanges, TimelineEntry
from client.views import View, is_problem
from widgets.timeline_render import (
    RenderedLine,
    collapsed_commentary,
    copy_text,
    cursor_strip,
    highlight_strip,
    line_plain,
    line_to_strip,
    render_empty_view,
    render_entry,
    render_marker,
)

_JUMP_FRACTION = 3
"""A jump (find, problem, move_cursor_to) puts an entry that was out of sight a third down the window."""


class TimelineView(ScrollView, can_focus=True):
    """The timeline rendered line by line; see the module docstring for the contract."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline-view--cursor",
        "timeline-view--cursor-mark",
        "timeline-view--match",
        "timeline-view--current-match",
    }

    DEFAULT_CSS = """
    TimelineView {
        background: $surface;
        color: $text;
        overflow-y: scroll;
        overflow-x: hidden;
        &:focus {
            background-tint: $foreground 5%;
        }
        & > .timeline-view--cursor {
            background: $primary 30%;
            text-style: bold;
        }
        & > .timeline-view--cursor-mark {
            color: $accent;
            text-style: bold;
        }
        & > .timeline-view--match {
            background: $warning 35%;
            text-style: underline;
        }
        & > .timeline-view--current-match {
            text-style: reverse bold;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c",
            "toggle_commentary",
            "Commentary",
            id="timeline.toggle_commentary",
            tooltip="Collapse or expand the agent's narration between tool calls",
        ),
        Binding(
            "end,G",
            "follow",
            "Follow",
            show=False,
            id="timeline.follow",
            tooltip="Jump to the newest output and keep following it",
        ),
        Binding("up,k", "cursor_up", "Up", show=False, id="timeline.cursor_up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="timeline.cursor_down"),
        Binding("home,g", "cursor_first", "First", show=False, id="timeline.cursor_first"),
        Binding("pageup", "page_up", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="timeline.page_down"),
    ]

    class CursorMoved(Message):
        """The highlighted entry changed (keys, a click, a jump, find, or following new output)."""

        def __init__(self, timeline_view: TimelineView, entry_id: int | None) -> None:
            """``entry_id`` is None when the view shows no entry."""
            super().__init__()
            self.timeline_view = timeline_view
            self.entry_id = entry_id

        @property
        def control(self) -> TimelineView:
            """The view, so ``@on(TimelineView.CursorMoved, "#timeline")`` works."""
            return self.timeline_view

        @property
        def entry(self) -> TimelineEntry | None:
            """The highlighted entry, while the model still holds it."""
            return None if self.entry_id is None else self.timeline_view.timeline.get(self.entry_id)

    class FindUpdated(Message):
        """New output changed the find's count (or the current match left): the find line shows it."""

        def __init__(self, timeline_view: TimelineView, status: FindStatus) -> None:
            """``status`` is what :meth:`TimelineView.find` would return now."""
            super().__init__()
            self.timeline_view = timeline_view
            self.status = status

        @property
        def control(self) -> TimelineView:
            """The view the find runs in."""
            return self.timeline_view

    collapse_commentary: reactive[bool] = reactive(False)
    """Show each commentary block as one ``▸ commentary (N lines)`` line."""

    wrap_lines: reactive[bool] = reactive(False)
    """Show long tool / approval lines in full (wrapped) instead of cut to the width with ``…``."""

    view: reactive[View] = reactive(View.EVERYTHING)
    """Which entries are shown (:class:`client.views.View`); the others stay in the model."""

    following: var[bool] = var(True)
    """True while the view sticks to the newest output; False once the reader scrolled up (paused)."""

    unseen: var[int] = var(0)
    """Entries that arrived below the visible part while following was paused (the "↓ N new" hint)."""

    def __init__(
        self,
        timeline: Timeline,
        *,
        max_lines: int = 10_000,
        collapse_commentary: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """Show ``timeline``; at most ``max_lines`` rendered lines are kept (oldest entries go first)."""
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.timeline = timeline
        self.max_lines = max(max_lines, 10)
        self._lines: list[RenderedLine] = []
        self._base = 0  # absolute line number of self._lines[0]
        self._order: list[int] = []  # entry ids shown, ascending
        self._start: dict[int, int] = {}  # entry id -> absolute line number of its first line
        self._count: dict[int, int] = {}  # entry id -> number of lines
        # id -> (revision, width, shown whole, lines)
        self._rendered: dict[int, tuple[int, int, bool, list[RenderedLine]]] = {}
        self._first_shown = 1  # entries with a lower id are no longer shown
        self._width = 0
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        self._needs_full = True
        self._appended_shown = 0
        self.renders = 0
        """How many times the lines were brought up to date (a benchmark counts frames with it)."""
        # The cursor: the highlighted entry, and whether the reader placed it (which pauses following).
        self._cursor: int | None = None
        self._pinned = False
        # Entries shown whole although folded or cut (find opened them).
        self._unfolded: set[int] = set()
        # Find: the query, the shown entries matching it, the current one, where typing started.
        self._finder = Finder(timeline)
        self._query = ""
        self._matches: list[int] = []
        self._match_set: set[int] = set()
        self._current: int | None = None
        self._origin: int | None = None
        self._origin_pinned = False
        self._find_unfolded: int | None = None
        # "New since you last looked": entries from ``_rule_from`` on are new; the rule (and the digest,
        # ``_rule_make(width)``'s lines) sits above ``_rule_at``, the first of them shown.
        self._rule_from: int | None = None
        self._rule_at: int | None = None
        self._rule_make: Callable[[int], list[RenderedLine]] | None = None
        self._rule_lines: tuple[int, list[RenderedLine]] | None = None
        self.set_reactive(TimelineView.collapse_commentary, collapse_commentary)

    # ------------------------------------------------------------------ public API

    def show(self, changes: TimelineChanges) -> None:
        """Draw what applying events to the model changed (what ``Timeline.apply_many`` returned; the
        changes of several calls joined by ``TimelineChanges.join``), now: the caller paints at most once
        per frame."""
        self._update_lines(changes)

    @property
    def at_bottom(self) -> bool:
        """True while the view follows new output (the user has not scrolled up)."""
        return self.is_vertical_scroll_end

    @property
    def line_count(self) -> int:
        """Lines currently retained (the marker line and the empty-view line included)."""
        return len(self._lines) + self._has_marker + self._view_empty

    @property
    def lines_text(self) -> list[str]:
        """Plain text of the retained lines (tests, copying)."""
        head = [line_plain(self._marker_line())] if self._has_marker else []
        tail = [line_plain(self._empty_line())] if self._view_empty else []
        return head + [line_plain(line) for line in self._lines] + tail

    @property
    def shown_ids(self) -> list[int]:
        """Ids of the entries shown (in this view, within the line cap), oldest first."""
        return list(self._order)

    @property
    def cursor_id(self) -> int | None:
        """The highlighted entry's id; None when the view shows no entry."""
        return self._cursor

    @property
    def cursor_entry(self) -> TimelineEntry | None:
        """The highlighted entry: what copy, the problem jumps and find start from."""
        return None if self._cursor is None else self.timeline.get(self._cursor)

    def cursor_text(self) -> str:
        """The highlighted entry as the operator reads it, plain and whole ("" when there is none): what
        ``y`` puts on the clipboard."""
        entry = self.cursor_entry
        return "" if entry is None else copy_text(entry)

    def move_cursor_to(self, entry_id: int) -> bool:
        """Highlight this entry and bring it into sight (a jump); False when it is not shown (dropped, or
        hidden by the view). An entry older than the newest pauses following."""
        self._update_lines()
        if entry_id not in self._start:
            return False
        self._set_cursor(entry_id, pin=entry_id != self._order[-1])
        self._scroll_to_cursor(jump=True)
        return True

    def next_problem(self) -> bool:
        """Highlight the next problem (:func:`client.views.is_problem`) after the cursor among the entries
        shown; False (nothing moves) when there is none below."""
        return self._jump_problem(forward=True)

    def previous_problem(self) -> bool:
        """Highlight the previous problem before the cursor; False when there is none above."""
        return self._jump_problem(forward=False)

    @property
    def find_status(self) -> FindStatus:
        """Where the find stands ("3 / 17"); empty when no find is open."""
        if not self._query:
            return FindStatus()
        current = 0
        if self._current is not None and self._current in self._match_set:
            current = bisect_left(self._matches, self._current) + 1
        return FindStatus(self._query, current, len(self._matches))

    def find(self, query: str) -> FindStatus:
        """Search the shown entries for ``query`` (every keystroke of the find line) and highlight the
        match from where typing started; an empty query brings the cursor back there."""
        self._update_lines()
        if not self._query:
            self._origin = self._cursor
            self._origin_pinned = self._pinned
        self._query = query
        if not query:
            self._clear_matches()
        else:
            self._search()
        if not self._matches:  # nothing to show: back where typing started
            self._go_to_match(None)
            if self._origin is not None and self._origin in self._start:
                self._set_cursor(self._origin, pin=self._origin_pinned)
                self._scroll_to_cursor(jump=True)
            return self.find_status
        origin = self._origin
        if origin is None or (not self._origin_pinned and self._order and origin == self._order[-1]):
            target = self._matches[-1]  # following: the newest match
        else:
            position = bisect_left(self._matches, origin)
            target = self._matches[position] if position < len(self._matches) else self._matches[0]
        self._go_to_match(target)
        return self.find_status

    def find_next(self) -> FindStatus:
        """The next match after the current one (after the cursor when none is current), wrapping."""
        return self._step_match(forward=True)

    def find_previous(self) -> FindStatus:
        """The previous match, wrapping."""
        return self._step_match(forward=False)

    def end_find(self) -> None:
        """The find line closed: highlights go, the cursor stays on the match (shown whole if find
        opened it), and the next find starts from there."""
        self._find_unfolded = None
        self._query = ""
        self._origin = None
        self._clear_matches()
        self.refresh()

    def _update_lines(self, changes: TimelineChanges | None = None) -> None:
        """Bring the lines up to date: ``changes`` drawn where they are, or (None, a width change, a
        toggle) every retained entry rendered again when that is due."""
        width = self.scrollable_content_region.width
        if width <= 0:
            self._needs_full = True
            return  # not laid out yet; on_resize will render everything
        follow = self._follows()
        had_marker = self._has_marker
        if self._needs_full or width != self._width:
            self._width = width
            removed = self._rebuild_all()
        elif changes:
            removed = self._apply(changes)
            if not follow:
                self.unseen += self._appended_shown
        else:
            return
        self.renders += 1
        removed += self._enforce_max_lines()
        if had_marker != self._has_marker:
            self._cache.clear()
            removed -= 1  # the marker line took the place of one removed line
        self.virtual_size = Size(self._width, self.line_count)
        self._place_cursor(follow)
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif removed > 0 and self.scroll_y > 0:
            # Keep what the reader is looking at in place when old lines leave from the top.
            self.scroll_to(y=max(self.scroll_y - removed, 0), animate=False, immediate=True)
        if self._query:
            self._refresh_find()
        self.refresh()
        if self._needs_full:  # an entry the rule sat above left the view: it moves, once this is drawn
            self.call_later(self._update_lines)

    def scroll_to_entry(self, entry_id: int) -> bool:
        """Bring an entry's first line to the top of the view and highlight it (a note's "then" jump);
        False when the entry is not shown any more. Scrolling up pauses following, as reading back does."""
        self._update_lines()
        start = self._start.get(entry_id)
        if start is None:
            return False
        self._set_cursor(entry_id, pin=entry_id != self._order[-1])
        self.scroll_to(y=self._row(entry_id), animate=False, immediate=True)
        return True

    def set_since_rule(
        self, entry_id: int | None, header: Callable[[int], list[RenderedLine]] | None = None
    ) -> None:
        """Show "new since you last looked" above ``entry_id`` (above the first entry from it on that the
        view shows): ``header(width)`` gives the lines (the digest, then the rule line). None removes it.
        The lines belong to that entry's block (they move with it, are dropped with it) but are never part
        of the entry: the cursor bar, find and copy leave them out."""
        self._rule_from = entry_id
        self._rule_make = header if entry_id is not None else None
        self._rule_lines = None
        self._rule_at = None
        self._needs_full = True
        if self.is_mounted:
            self._update_lines()

    def update_since_rule(self) -> None:
        """The rule's lines changed (the digest above it is kept current): drawn again where they are,
        the rest of the window left as it is."""
        self._rule_lines = None
        carrier = self._rule_at
        if carrier is None or not self.is_mounted:
            return
        self._update_lines()
        if carrier in self._start:
            self._resplice([carrier])
            self.virtual_size = Size(self._width, self.line_count)
            self.refresh()

    @property
    def since_rule_entry(self) -> int | None:
        """The entry the "new since you last looked" rule sits above (None: no rule shown)."""
        return self._rule_at

    @property
    def since_rule_from(self) -> int | None:
        """The first entry that is new since the operator last looked (None: no rule)."""
        return self._rule_from

    def open_at_rule(self) -> bool:
        """Bring the rule near the top of the window, the cursor on the first new entry, following paused
        (the operator reads on from where they left); False when there is no rule shown."""
        self._update_lines()
        entry = self._rule_at
        if entry is None or entry not in self._start:
            return False
        self._set_cursor(entry, pin=True)
        top = 0 if entry == self._order[0] else max(self._row(entry) - 1, 0)  # one line of what came before
        self.scroll_to(y=top, animate=False, immediate=True)
        self._update_following()
        return True

    @property
    def newest_visible_id(self) -> int | None:
        """The newest entry with a line in the window (what the operator has seen; the rule's own lines are
        not the entry's); None when the window shows no entry."""
        if not self._order or self.scrollable_content_region.height <= 0:
            return None
        key = self._base + int(self.scroll_y) + self._height - 1 - self._has_marker
        if key < self._start[self._order[0]]:
            return None  # only the marker line is in the window
        key = min(key, self._base + len(self._lines) - 1)
        entry = self._entry_of_line(key)
        if entry is not None and entry == self._rule_at and key < self._start[entry] + self._rule_count():
            position = bisect_left(self._order, entry) - 1
            return self._order[position] if position >= 0 else None
        return entry

    def action_toggle_commentary(self) -> None:
        """Narration between tool calls can be long: fold it to one line each, or unfold it."""
        self.collapse_commentary = not self.collapse_commentary

    def action_follow(self) -> None:
        """Jump to the newest output; from there the view keeps following it (the cursor on the newest)."""
        self._pinned = False
        if self._order:
            self._set_cursor(self._order[-1], pin=False)
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self._update_following()

    def action_cursor_down(self) -> None:
        """Next entry; inside an entry taller than the window, first scroll through the rest of it."""
        order = self._order
        if not order:
            self.scroll_down(animate=False)
            return
        cursor = self._cursor
        if cursor is None or cursor not in self._start or not self._visible(cursor):
            target = self._entry_at_row(int(self.scroll_y))  # start from what is on screen
        else:
            if self._row(cursor) + self._count[cursor] > self.scroll_y + self._height:
                self.scroll_to(y=self.scroll_y + 1, animate=False, immediate=True)
                return
            position = bisect_left(order, cursor)
            if position + 1 >= len(order):
                if not self.is_vertical_scroll_end:
                    self.scroll_end(animate=False, immediate=True, x_axis=False)
                return
            target = order[position + 1]
        if target is None:
            return
        self._set_cursor(target, pin=target != order[-1])
        self._scroll_to_cursor()

    def action_cursor_up(self) -> None:
        """Previous entry; inside an entry taller than the window, first scroll back through it. Moving up
        pauses following."""
        order = self._order
        if not order:
            self.scroll_up(animate=False)
            return
        cursor = self._cursor
        if cursor is None or cursor not in self._start or not self._visible(cursor):
            target = self._entry_at_row(int(self.scroll_y) + self._height - 1)
        else:
            if self._row(cursor) < self.scroll_y:
                self.scroll_to(y=self.scroll_y - 1, animate=False, immediate=True)
                return
            position = bisect_left(order, cursor)
            if position == 0:
                self.scroll_home(animate=False, immediate=True, x_axis=False)  # the marker line
                return
            target = order[position - 1]
        if target is None:
            return
        self._set_cursor(target, pin=target != order[-1])
        self._scroll_to_cursor()

    def action_cursor_first(self) -> None:
        """The oldest entry shown (following pauses)."""
        if self._order:
            first = self._order[0]
            self._set_cursor(first, pin=first != self._order[-1])
        self.scroll_home(animate=False, immediate=True, x_axis=False)
        self._update_following()

    def action_page_down(self) -> None:
        """A page down; the cursor comes along only if it left the window (at the end: the newest)."""
        self.scroll_to(y=self.scroll_y + self._height, animate=False, immediate=True)
        if self.is_vertical_scroll_end and self._order:
            self._set_cursor(self._order[-1], pin=False)
        elif self._cursor is None or not self._visible(self._cursor):
            self._set_cursor(self._entry_at_row(int(self.scroll_y)), pin=False)
        self._update_following()

    def action_page_up(self) -> None:
        """A page up: reading back pauses following as scrolling does; the cursor comes along only if it
        left the window (and does not keep following from being resumed by scrolling to the end)."""
        self.scroll_to(y=self.scroll_y - self._height, animate=False, immediate=True)
        if self._cursor is None or not self._visible(self._cursor):
            self._set_cursor(self._entry_at_row(int(self.scroll_y) + self._height - 1), pin=False)
        self._update_following()

    # ------------------------------------------------------------------ Textual hooks

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._update_following()

    def watch_virtual_size(self) -> None:
        self._update_following()

    def _update_following(self) -> None:
        following = self.is_vertical_scroll_end and not self._pinned
        self.following = following
        if following:
            self.unseen = 0
            if self._order and self._cursor != self._order[-1]:
                self._set_cursor(self._order[-1], pin=False)

    def watch_wrap_lines(self, _value: bool) -> None:
        self._rendered.clear()  # cached blocks were cut (or wrapped) the other way
        self._unfolded.clear()
        self._needs_full = True
        if self.is_mounted:
            self._update_lines()

    def watch_collapse_commentary(self, _value: bool) -> None:
        self._unfolded.clear()  # folding again folds what find had opened
        self._needs_full = True
        if self.is_mounted:
            self._update_lines()

    def watch_view(self, _value: View) -> None:
        self._needs_full = True
        self._first_shown = 1  # entries hidden by the old view were not dropped: show them again
        if self.is_mounted:
            self._update_lines()
            if self._cursor is not None and not self._follows():
                self._scroll_to_cursor(jump=True)

    def on_mount(self) -> None:
        self._update_lines()

    def on_focus(self) -> None:
        self.refresh()  # the cursor is drawn while the view has the focus

    def on_blur(self) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        target = self._entry_at_row(int(self.scroll_y) + offset.y)
        if target is not None:
            self._set_cursor(target, pin=target != self._order[-1])
            self._update_following()

    def on_resize(self) -> None:
        # A view that was following keeps following through a resize: a smaller window must not look
        # like the reader scrolled up ("following paused").
        was_following = self.following
        if self.scrollable_content_region.width != self._width:
            self._update_lines()
        if was_following:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        rich_style = self.rich_style
        if index >= self.line_count:
            return Strip.blank(width, rich_style)
        if self._has_marker:
            if index == 0:
                strip = line_to_strip(self._marker_line(), self.app.console)
                return strip.apply_style(rich_style).crop_extend(scroll_x, scroll_x + width, rich_style)
            index -= 1
        if index >= len(self._lines):  # the empty-view line
            strip = line_to_strip(self._empty_line(), self.app.console)
            return strip.apply_style(rich_style).crop_extend(scroll_x, scroll_x + width, rich_style)
        key = self._base + index
        strip_or_none = self._cache.get(key)
        if strip_or_none is None:
            strip_or_none = line_to_strip(self._lines[index], self.app.console).apply_style(rich_style)
            self._cache[key] = strip_or_none
        strip = strip_or_none
        if self._query or (self._cursor is not None and self._cursor_shown()):
            strip = self._decorate(strip, key, width, rich_style)
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style)

    # ------------------------------------------------------------------ internals: drawing

    @property
    def _has_marker(self) -> bool:
        return self._first_shown > 1 or self.timeline.events_not_loaded > 0

    @property
    def _view_empty(self) -> bool:
        return not self._order and self.view is not View.EVERYTHING

    @property
    def _height(self) -> int:
        return max(self.scrollable_content_region.height, 1)

    def _marker_line(self) -> RenderedLine:
        return render_marker(self._first_shown - 1, self._width, self.timeline.events_not_loaded)

    def _empty_line(self) -> RenderedLine:
        hidden = len(self.timeline) - (self.timeline.dropped_count > 0)
        return render_empty_view(self.view, hidden, self._width)

    def _cursor_shown(self) -> bool:
        return self.has_focus or bool(self._query)

    def _decorate(self, strip: Strip, key: int, width: int, rich_style: Style) -> Strip:
        """The cursor bar and find highlights over one cached line (only visible lines get here)."""
        carrier = self._rule_at
        if carrier is not None and 0 <= key - self._start.get(carrier, key + 1) < self._rule_count():
            return strip  # the rule and the digest are not the entry's lines
        on_cursor = False
        cursor = self._cursor
        if cursor is not None and self._cursor_shown():
            start = self._start.get(cursor)
            on_cursor = start is not None and start <= key < start + self._count[cursor]
        spans: list[tuple[int, int]] = []
        entry_id = cursor if on_cursor else None
        if self._query:
            if entry_id is None:
                entry_id = self._entry_of_line(key)
            if entry_id is not None and entry_id in self._match_set:
                spans = find_spans(strip.text, self._query)
        if on_cursor:
            bar = self._component_style("timeline-view--cursor")
            mark = self._component_style("timeline-view--cursor-mark")
            strip = cursor_strip(strip, width, rich_style + mark, bar, rich_style + bar)
        if spans:
            name = "timeline-view--current-match" if entry_id == self._current else "timeline-view--match"
            strip = highlight_strip(strip, spans, self._component_style(name), shift=1 if on_cursor else 0)
        return strip

    def _component_style(self, name: str) -> Style:
        """A component's own attributes (bold, reverse, underline; its colour when it sets one) with its
        background blended over the view's, to be laid over a line's styles."""
        partial = self.get_component_rich_style(name, partial=True)
        if partial.bgcolor is None:
            return partial
        return partial + Style(bgcolor=self.get_component_rich_style(name).bgcolor)

    def _entry_of_line(self, key: int) -> int | None:
        """The entry an absolute line number belongs to."""
        position = bisect_right(self._order, key, key=self._start.__getitem__) - 1
        return self._order[position] if position >= 0 else None

    # ------------------------------------------------------------------ internals: the cursor

    def _row(self, entry_id: int) -> int:
        """The window row (scroll position) of an entry's first line."""
        return self._start[entry_id] - self._base + self._has_marker

    def _visible(self, entry_id: int) -> bool:
        if entry_id not in self._start:
            return False
        top = self._row(entry_id)
        return top < self.scroll_y + self._height and top + self._count[entry_id] > self.scroll_y

    def _entry_at_row(self, row: int) -> int | None:
        """The shown entry on this window row (clamped to the first and last)."""
        if not self._order:
            return None
        key = self._base + row - self._has_marker
        key = min(max(key, self._start[self._order[0]]), self._base + len(self._lines) - 1)
        return self._entry_of_line(key)

    def _follows(self) -> bool:
        """Whether new output should move the window and the cursor to the end."""
        return self.is_vertical_scroll_end and not self.is_vertical_scrollbar_grabbed and not self._pinned

    def _set_cursor(self, entry_id: int | None, *, pin: bool) -> None:
        self._pinned = pin and entry_id is not None
        if entry_id == self._cursor:
            return
        self._cursor = entry_id
        self.post_message(self.CursorMoved(self, entry_id))
        self.refresh()

    def _place_cursor(self, follow: bool) -> None:
        """After the lines changed: the cursor on the newest entry while following, else on its entry or,
        when that is no longer shown, the nearest one that is."""
        order = self._order
        if not order:
            self._set_cursor(None, pin=False)
            return
        cursor = self._cursor
        if follow or cursor is None:
            self._set_cursor(order[-1], pin=False)
        elif cursor not in self._start:
            position = bisect_left(order, cursor)
            target = order[min(position, len(order) - 1)]
            self._set_cursor(target, pin=self._pinned and target != order[-1])

    def _scroll_to_cursor(self, *, jump: bool = False) -> None:
        """Bring the cursor's entry into sight: the least scroll for a step, a third down for a jump."""
        cursor = self._cursor
        if cursor is None or cursor not in self._start:
            return
        top = self._row(cursor)
        bottom = top + self._count[cursor]
        height = self._height
        y = int(self.scroll_y)
        if top >= y and bottom <= y + height:
            self._update_following()
            return
        if cursor == self._order[0]:
            target = 0  # the first entry: the marker line above it too
        elif jump:
            target = top if bottom - top >= height else max(top - height // _JUMP_FRACTION, 0)
        elif top < y or bottom - top >= height:
            target = top
        else:
            target = bottom - height
        self.scroll_to(y=target, animate=False, immediate=True)
        self._update_following()

    def _jump_problem(self, *, forward: bool) -> bool:
        self._update_lines()
        order = self._order
        if not order:
            return False
        cursor = self._cursor if self._cursor is not None else order[-1]
        if forward:
            candidates: Iterable[int] = order[bisect_right(order, cursor) :]
        else:
            candidates = reversed(order[: bisect_left(order, cursor)])
        for entry_id in candidates:
            entry = self.timeline.get(entry_id)
            if entry is not None and is_problem(entry):
                self._set_cursor(entry_id, pin=entry_id != order[-1])
                self._scroll_to_cursor(jump=True)
                return True
        return False

    # ------------------------------------------------------------------ internals: find

    def _search(self) -> None:
        result = self._finder.search(self._query)
        start = self._start
        self._matches = [i for i in result.entry_ids if i in start]
        self._match_set = set(self._matches)

    def _clear_matches(self) -> None:
        self._matches = []
        self._match_set = set()
        self._current = None
        self._finder.search("")

    def _step_match(self, *, forward: bool) -> FindStatus:
        self._update_lines()
        matches = self._matches
        if not self._query or not matches:
            return self.find_status
        anchor = self._current if self._current is not None else self._cursor
        if anchor is None:
            target = matches[0] if forward else matches[-1]
        elif forward:
            position = bisect_right(matches, anchor)
            target = matches[position] if position < len(matches) else matches[0]
        else:
            position = bisect_left(matches, anchor) - 1
            target = matches[position] if position >= 0 else matches[-1]
        self._go_to_match(target)
        return self.find_status

    def _go_to_match(self, entry_id: int | None) -> None:
        """Make ``entry_id`` the current match: shown whole if it was folded or cut, highlighted, in sight.
        The entry find opened for the previous match folds back."""
        previous = self._find_unfolded
        reflow: list[int] = []
        if previous is not None and previous != entry_id:
            self._unfolded.discard(previous)
            self._find_unfolded = None
            reflow.append(previous)
        self._current = entry_id
        if entry_id is not None and entry_id not in self._unfolded and self._hides_match(entry_id):
            self._unfolded.add(entry_id)
            self._find_unfolded = entry_id
            reflow.append(entry_id)
        if reflow:
            self._resplice([i for i in reflow if i in self._start])
            self.virtual_size = Size(self._width, self.line_count)
        if entry_id is not None:
            self._set_cursor(entry_id, pin=entry_id != self._order[-1])
            self._scroll_to_cursor(jump=True)
        self.refresh()

    def _hides_match(self, entry_id: int) -> bool:
        """Whether the entry as shown is folded (commentary: even when its one line shows the match, the
        operator wants to read it) or leaves the query out (a line cut to the width, a finished tool's
        result, a decision's summary)."""
        entry = self.timeline.get(entry_id)
        if self.collapse_commentary and isinstance(entry, TextEntry) and entry.phase is TextPhase.COMMENTARY:
            return True
        lines = self._render_block(entry_id) or []
        return not any(find_spans(line_plain(line), self._query) for line in lines)

    def _refresh_find(self) -> None:
        """After new output: the same query over the changed model; the cursor does not move."""
        before = self.find_status
        self._search()
        if self._current is not None and self._current not in self._match_set:
            self._current = None
        after = self.find_status
        if after != before:
            self.post_message(self.FindUpdated(self, after))

    # ------------------------------------------------------------------ internals: lines

    def _shows(self, entry_id: int) -> bool:
        entry = self.timeline.get(entry_id)
        return entry is not None and self.view.shows(entry)

    def _rule_header(self) -> list[RenderedLine]:
        """The rule's lines (the digest, then the rule) at the current width, rendered once per width."""
        make = self._rule_make
        if make is None:
            return []
        cached = self._rule_lines
        if cached is None or cached[0] != self._width:
            cached = (self._width, make(self._width))
            self._rule_lines = cached
        return cached[1]

    def _rule_count(self) -> int:
        """How many lines the rule takes above its entry (0: none shown)."""
        return len(self._rule_header()) if self._rule_at is not None else 0

    def _render_block(self, entry_id: int) -> list[RenderedLine] | None:
        """An entry's lines, re-rendered only when its revision or the width changed."""
        entry = self.timeline.get(entry_id)
        if entry is None:
            return None
        whole = entry_id in self._unfolded
        cached = self._rendered.get(entry_id)
        if (
            cached is not None
            and cached[0] == entry.revision
            and cached[1] == self._width
            and cached[2] == whole
        ):
            lines = cached[3]
        else:
            lines = render_entry(entry, self._width, wrap=self.wrap_lines, whole=whole)
            self._rendered[entry_id] = (entry.revision, self._width, whole, lines)
        if (
            self.collapse_commentary
            and not whole
            and isinstance(entry, TextEntry)
            and entry.phase is TextPhase.COMMENTARY
        ):
            head = lines[:1] if entry.dropped_chars else []
            return [*head, collapsed_commentary(entry, self._width, len(lines) - len(head))]
        return lines

    def _rebuild_all(self) -> int:
        """Re-render every retained entry (width change, collapse toggle, view change, first paint)."""
        self._needs_full = False
        old = len(self._lines)
        self._cache.clear()
        self._base += old  # fresh absolute numbers: no stale cache key can match
        self._lines = []
        self._order = []
        self._start.clear()
        self._count.clear()
        self._rule_at = None
        first = max(self._first_shown, self.timeline.first_id)
        self._first_shown = first
        for stale in [i for i in self._rendered if i < first]:
            del self._rendered[stale]
        test = self.view.predicate
        ids = [entry.id for entry in self.timeline if entry.id >= first and (test is None or test(entry))]
        shown = self._newest_that_fit(ids)
        if shown and len(shown) < len(ids):
            self._first_shown = max(self._first_shown, shown[0])
        for entry_id in shown:
            self._append_block(entry_id)
        return 0

    def _append_block(self, entry_id: int) -> None:
        lines = self._render_block(entry_id)
        if lines is None:
            return
        start = self._rule_from
        if start is not None and (self._rule_at == entry_id or (self._rule_at is None and entry_id >= start)):
            self._rule_at = entry_id
            lines = [*self._rule_header(), *lines]
        self._order.append(entry_id)
        self._start[entry_id] = self._base + len(self._lines)
        self._count[entry_id] = len(lines)
        self._lines.extend(lines)

    def _drop_front(self, keep_from_id: int) -> int:
        """Forget shown entries below ``keep_from_id``; returns how many lines left."""
        removed = 0
        drop = 0
        for entry_id in self._order:
            if entry_id >= keep_from_id:
                break
            removed += self._count.pop(entry_id)
            del self._start[entry_id]
            self._rendered.pop(entry_id, None)
            self._unfolded.discard(entry_id)
            if entry_id == self._rule_at:  # the rule leaves with what it was above
                self._rule_from = self._rule_at = self._rule_make = None
            drop += 1
        if drop:
            del self._order[:drop]
            del self._lines[:removed]
            self._base += removed
        self._first_shown = max(self._first_shown, keep_from_id)
        return removed

    def _apply(self, changes: TimelineChanges) -> int:
        removed = self._drop_front(changes.first_id) if changes.first_id > self._first_shown else 0
        if self.view is View.EVERYTHING:
            updated = [i for i in changes.updated if i in self._start]
        else:  # an entry may start or stop passing the view (a tool call fails, an approval is declined)
            first = self._first_shown
            updated = [i for i in changes.updated if i in self._start or (i >= first and self._shows(i))]
        if updated:
            self._resplice(updated)
        test = self.view.predicate
        fresh = [
            i
            for i in changes.appended
            if i >= self._first_shown and i not in self._start and (test is None or self._shows(i))
        ]
        shown = self._newest_that_fit(fresh)
        if len(shown) < len(fresh):
            # The new entries alone overflow max_lines (a backlog caught up in one go): everything
            # older would be dropped unseen by _enforce_max_lines, so it is dropped now, unrendered.
            removed += self._drop_front(shown[0] if shown else fresh[-1] + 1)
        for entry_id in shown:
            self._append_block(entry_id)
        self._appended_shown = len(shown)
        return removed

    def _resplice(self, entry_ids: list[int]) -> None:
        """Re-render these entries where they are (showing or hiding any that started or stopped passing
        the view); the blocks after the first of them keep their lines and only move."""
        if not entry_ids:
            return
        rerender = set(entry_ids)
        first = min(rerender)
        position = bisect_left(self._order, first)
        tail = self._order[position:]
        stale_from = self._start[tail[0]] if tail else self._base + len(self._lines)
        for key in [k for k in list(self._cache.keys()) if k >= stale_from]:
            self._cache.discard(key)
        cut = stale_from - self._base
        old_tail = self._lines[cut:]
        del self._lines[cut:]
        del self._order[position:]
        offsets: dict[int, int] = {}
        offset = 0
        for entry_id in tail:
            offsets[entry_id] = offset
            offset += self._count[entry_id]
        for entry_id in sorted(rerender.union(tail)):
            if entry_id in rerender:
                if self._shows(entry_id):
                    self._append_block(entry_id)
                elif entry_id in offsets:  # it stopped passing the view
                    del self._start[entry_id]
                    del self._count[entry_id]
                continue
            # Unchanged block: reuse its lines, only its position may move.
            count = self._count[entry_id]
            self._order.append(entry_id)
            self._start[entry_id] = self._base + len(self._lines)
            start = offsets[entry_id]
            self._lines.extend(old_tail[start : start + count])
        if self._rule_at is not None and self._rule_at not in self._start:
            # The entry the rule sat above stopped passing the view: the next flush puts it above the
            # next one shown.
            self._rule_at = None
            self._needs_full = True

    def _newest_that_fit(self, entry_ids: list[int]) -> list[int]:
        """The newest of ``entry_ids`` (ascending) whose lines fit in ``max_lines``, rendered newest first
        so that the older ones, which could never be shown, are never rendered (catching up on 100,000
        events renders the last screenfuls, not every block). Always keeps the newest entry."""
        room = self.max_lines - 1  # - 1: room for the marker line
        used = 0
        for index in range(len(entry_ids) - 1, -1, -1):
            entry_id = entry_ids[index]
            lines = self._render_block(entry_id)
            used += len(lines) if lines is not None else 0
            if used > room and index < len(entry_ids) - 1:
                self._rendered.pop(entry_id, None)
                return entry_ids[index + 1 :]
        return entry_ids

    def _enforce_max_lines(self) -> int:
        excess = len(self._lines) + 1 - self.max_lines  # + 1: room for the marker line
        if excess <= 0 or len(self._order) <= 1:
            return 0
        keep_from = self._order[-1]
        dropped_lines = 0
        for entry_id in self._order[:-1]:
            if dropped_lines >= excess:
                keep_from = entry_id
                break
            dropped_lines += self._count[entry_id]
        return self._drop_front(keep_from)


__all__ = ["TimelineView"]
