"""A line-virtualised view of a :class:`client.timeline.Timeline` (presentational: no network).

Built like Textual's ``Log``: a ``ScrollView`` over rendered lines (``widgets.timeline_lines``: one block per
shown entry, at most ``max_lines``), turning only the visible ones into ``Strip``s through an LRU cache, and
following new output only while the operator is at the bottom (scrolling up to read is never yanked back).
It draws what it is told changed, when it is told (:meth:`TimelineView.show`: the screen paints once per
frame). Where the operator is (the view, the highlighted entry, the find) is a pure model beside it,
``client.reader.Reader`` (:attr:`TimelineView.reader`); the find line drives it from the pane
(``widgets.timeline_pane``) and the view draws each step (:meth:`TimelineView.go_to`).

Usage: ``view.show(timeline.apply_many(batch))`` draws what events changed; ``collapse_commentary``,
``wrap_lines`` and ``view`` (a :class:`client.views.View`) are reactive; ``following`` / ``unseen`` say
whether it follows new output; ``cursor_entry``, ``move_cursor_to``, ``next_problem`` move the highlight
(``CursorMoved``); ``view.go_to(view.reader.find(query))`` draws a find step (``FindUpdated`` when new
output changes the count).

**The entry cursor.** The highlighted entry's lines start with ``▌`` and are bold on a tinted bar (seen
without colour too), drawn while the view has the focus or a find is open. ``up``/``k`` and ``down``/``j``
move it one entry, except inside an entry taller than the window, which they scroll through first;
``PageUp``/``PageDown`` scroll a page and bring the cursor along only when it left the window; ``Home``/``g``
go to the first entry; ``End``/``G`` to the newest and follow. A click highlights the entry under the mouse.
While following, the cursor sits on the newest entry; moving it up (or a jump to an older entry) pauses
following, ``End`` resumes, and so does scrolling back to the end when the cursor was not moved by hand.

**Views** keep only the entries their predicate passes; an entry that starts or stops passing appears or
goes in place, and a view with nothing in it shows one line saying so. **Find** matches are highlighted in
the lines (underlined on a tint), the current match's entry in reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive, var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from client.entry_words import Reading
from client.find import FindStatus
from client.reader import Move, Reader, Span, scroll_to_show, scroll_within
from client.timeline import Timeline, TimelineChanges, TimelineEntry
from client.views import View
from widgets.timeline_lines import Lines
from widgets.timeline_render import RenderedLine, copy_text, cursor_strip, highlight_strip, line_to_strip


class TimelineView(ScrollView, can_focus=True):
    """The timeline rendered line by line; see the module docstring for the contract."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        f"timeline-view--{part}" for part in ("cursor", "cursor-mark", "match", "current-match")
    }

    DEFAULT_CSS = """
    TimelineView {
        background: $surface; color: $text; overflow-y: scroll; overflow-x: hidden;
        &:focus { background-tint: $foreground 5%; }
        & > .timeline-view--cursor { background: $primary 30%; text-style: bold; }
        & > .timeline-view--cursor-mark { color: $accent; text-style: bold; }
        & > .timeline-view--match { background: $warning 35%; text-style: underline; }
        & > .timeline-view--current-match { text-style: reverse bold; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c", "toggle_commentary", "Commentary", id="timeline.toggle_commentary",
            tooltip="Collapse or expand the agent's narration between tool calls",
        ),
        Binding(
            "end,G", "follow", "Follow", show=False, id="timeline.follow",
            tooltip="Jump to the newest output and keep following it",
        ),
        Binding("up,k", "cursor_up", "Up", show=False, id="timeline.cursor_up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="timeline.cursor_down"),
        Binding("home,g", "cursor_first", "First", show=False, id="timeline.cursor_first"),
        Binding("pageup", "page_up", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="timeline.page_down"),
    ]  # fmt: skip

    class CursorMoved(Message):
        """The highlighted entry changed (keys, a click, a jump, find, or following new output); ``entry_id``
        is None when the view shows no entry."""

        def __init__(self, timeline_view: TimelineView, entry_id: int | None) -> None:
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
        """New output changed the find's count (or the current match left): the find line shows ``status``."""

        def __init__(self, timeline_view: TimelineView, status: FindStatus) -> None:
            super().__init__()
            self.timeline_view = timeline_view
            self.status = status

        @property
        def control(self) -> TimelineView:
            """The view the find runs in."""
            return self.timeline_view

    class Resized(Message):
        """The view's window changed size (a line mounted or shown above or under it, the terminal resized):
        whoever placed the view (``LastLooked``, at the rule) places it again, as the new size allows."""

        def __init__(self, timeline_view: TimelineView) -> None:
            super().__init__()
            self.timeline_view = timeline_view

        @property
        def control(self) -> TimelineView:
            """The view that was resized."""
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
        reading: Reading = Reading(),  # noqa: B008 (frozen)
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """Show ``timeline``; at most ``max_lines`` rendered lines are kept (oldest entries go first).
        ``reading`` says who reads (``client.entry_words.Reading``): the approvals this operator decided
        read "by you", a colleague's notes name them, a server that keeps no decider is said so; the lines
        are drawn and found with the same words."""
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.timeline = timeline
        self.reader = Reader(timeline, reading=reading)
        """Where the operator is: the entries shown, the highlighted entry, the find."""
        self._lines = Lines(self.reader, max_lines=max_lines)
        self.reader.hides_match = self._lines.hides
        self._lines.collapse = collapse_commentary
        self._needs_full = True
        self.renders = 0
        """How many times the lines were brought up to date (a benchmark counts frames with it)."""
        self.set_reactive(TimelineView.collapse_commentary, collapse_commentary)

    # ------------------------------------------------------------------ what it shows

    def show(self, changes: TimelineChanges) -> None:
        """Draw what applying events to the model changed (what ``Timeline.apply_many`` returned; the
        changes of several calls joined by ``TimelineChanges.join``), now."""
        self._update_lines(changes)

    @property
    def at_bottom(self) -> bool:
        """True while the view follows new output (the user has not scrolled up)."""
        return self.is_vertical_scroll_end

    @property
    def line_count(self) -> int:
        """Lines currently retained (the marker line and the empty-view line included)."""
        return self._lines.total

    @property
    def lines_text(self) -> list[str]:
        """Plain text of the retained lines (tests, copying)."""
        return self._lines.plain()

    @property
    def shown_ids(self) -> list[int]:
        """Ids of the entries shown (in this view, within the line cap), oldest first."""
        return list(self.reader.shown)

    @property
    def cursor_id(self) -> int | None:
        """The highlighted entry's id; None when the view shows no entry."""
        return self.reader.cursor

    @property
    def cursor_entry(self) -> TimelineEntry | None:
        """The highlighted entry: what copy, the problem jumps and find start from."""
        return self.reader.cursor_entry

    def cursor_text(self) -> str:
        """The highlighted entry as read, plain and whole ("" when none): what ``y`` copies."""
        return "" if (entry := self.cursor_entry) is None else copy_text(entry)

    # ------------------------------------------------------------------ jumps

    def move_cursor_to(self, entry_id: int) -> bool:
        """Highlight this entry and bring it into sight (a jump); False when it is not shown (dropped, or
        hidden by the view). An entry older than the newest pauses following."""
        self._update_lines()
        if entry_id not in self._lines.start:
            return False
        self._jump(entry_id)
        return True

    def next_problem(self) -> bool:
        """Highlight the next problem (:func:`client.views.is_problem`) after the cursor among the entries
        shown; False (nothing moves) when there is none below."""
        return self._jump_problem(forward=True)

    def previous_problem(self) -> bool:
        """Highlight the previous problem before the cursor; False when there is none above."""
        return self._jump_problem(forward=False)

    def go_to(self, move: Move) -> FindStatus:
        """Draw a find step (``Reader.find`` / ``find_step``): entries find opened or folded back drawn
        again, the match highlighted and in sight; returns where the find stands."""
        self._redraw(move.reflow)
        if move.target is not None and move.target in self._lines.start:
            self._set_cursor(move.target, pin=move.pin)
            self._scroll_to_cursor(jump=True)
        self.refresh()
        return self.reader.find_status

    def end_find(self) -> None:
        """The find line closed: highlights go, the cursor stays on the match."""
        self.reader.end_find()
        self.refresh()

    def scroll_to_entry(self, entry_id: int) -> bool:
        """Bring an entry's first line to the top of the view and highlight it (a note's "then" jump);
        False when the entry is not shown any more. Scrolling up pauses following, as reading back does."""
        self._update_lines()
        if entry_id not in self._lines.start:
            return False
        self._set_cursor(entry_id, pin=entry_id != self.reader.shown[-1])
        self.scroll_to(y=self._row(entry_id), animate=False, immediate=True)
        return True

    # ------------------------------------------------------------------ "new since you last looked"

    def set_since_rule(
        self, entry_id: int | None, header: Callable[[int], list[RenderedLine]] | None = None
    ) -> None:
        """Show "new since you last looked" above ``entry_id`` (above the first entry from it on that the
        view shows): ``header(width)`` gives the lines (the digest, then the rule line). None removes it.
        The lines belong to that entry's block (they move with it, are dropped with it) but are never part
        of the entry: the cursor bar, find and copy leave them out."""
        self.reader.rule_from = entry_id
        self.reader.rule_at = None
        self._lines.set_rule(header if entry_id is not None else None)
        self._needs_full = True
        if self.is_mounted:
            self._update_lines()

    def update_since_rule(self) -> None:
        """The rule's lines changed (the digest above it is kept current): drawn again where they are,
        the rest of the window left as it is."""
        lines = self._lines
        lines.set_rule(lines.rule_make)
        carrier = self.reader.rule_at
        if carrier is None or not self.is_mounted:
            return
        self._update_lines()
        self._redraw([carrier])

    def open_at_rule(self) -> bool:
        """Bring the rule near the top of the window, the cursor on the first new entry, following paused
        (the operator reads on from where they left); False when there is no rule shown."""
        self._update_lines()
        entry = self.reader.rule_at
        if entry is None or entry not in self._lines.start:
            return False
        self._set_cursor(entry, pin=True)
        top = 0 if entry == self.reader.shown[0] else max(self._row(entry) - 1, 0)  # one line before it
        self.scroll_to(y=top, animate=False, immediate=True)
        self._update_following()
        return True

    @property
    def newest_visible_id(self) -> int | None:
        """The newest entry with a line in the window (what the operator has seen; the rule's own lines are
        not the entry's); None when the window shows no entry."""
        if self.scrollable_content_region.height <= 0:
            return None
        lines = self._lines
        return lines.seen_at(lines.base + int(self.scroll_y) + self._height - 1 - lines.has_marker)

    # ------------------------------------------------------------------ actions

    def action_toggle_commentary(self) -> None:
        """Narration between tool calls can be long: fold it to one line each, or unfold it."""
        self.collapse_commentary = not self.collapse_commentary

    def action_follow(self) -> None:
        """Jump to the newest output; from there the view keeps following it (the cursor on the newest)."""
        self.reader.pinned = False
        if self.reader.shown:
            self._set_cursor(self.reader.shown[-1], pin=False)
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self._update_following()

    def action_cursor_down(self) -> None:
        """Next entry; inside an entry taller than the window, first scroll through the rest of it."""
        self._step(forward=True)

    def action_cursor_up(self) -> None:
        """Previous entry; inside an entry taller than the window, first scroll back through it. Moving up
        pauses following."""
        self._step(forward=False)

    def action_cursor_first(self) -> None:
        """The oldest entry shown (following pauses)."""
        shown = self.reader.shown
        if shown:
            self._set_cursor(shown[0], pin=shown[0] != shown[-1])
        self.scroll_home(animate=False, immediate=True, x_axis=False)
        self._update_following()

    def action_page_down(self) -> None:
        """A page down; the cursor comes along only if it left the window (at the end: the newest)."""
        self._page(forward=True)

    def action_page_up(self) -> None:
        """A page up: reading back pauses following as scrolling does; the cursor comes along only if it
        left the window (and does not keep following from being resumed by scrolling to the end)."""
        self._page(forward=False)

    # ------------------------------------------------------------------ Textual hooks

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._update_following()

    def watch_virtual_size(self) -> None:
        self._update_following()

    def watch_wrap_lines(self, value: bool) -> None:
        self._lines.wrap = value
        self._lines.forget_rendered()  # cached blocks were cut (or wrapped) the other way
        self._full_again()

    def watch_collapse_commentary(self, value: bool) -> None:
        self._lines.collapse = value
        self._full_again()

    def watch_view(self, value: View) -> None:
        self.reader.set_view(value)  # entries hidden by the old view were not dropped: shown again
        self._needs_full = True
        if self.is_mounted:
            self._update_lines()
            if self.reader.cursor is not None and not self._follows():
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
            self._set_cursor(target, pin=target != self.reader.shown[-1])
            self._update_following()

    def on_resize(self) -> None:
        # A view that was following keeps following through a resize: a smaller window must not look
        # like the reader scrolled up ("following paused").
        was_following = self.following
        if self.scrollable_content_region.width != self._lines.width:
            self._update_lines()
        if was_following:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.post_message(self.Resized(self))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width, rich_style, lines = self.scrollable_content_region.width, self.rich_style, self._lines
        line, key = lines.at(scroll_y + y)
        if line is None:
            return Strip.blank(width, rich_style)
        strip = lines.cache.get(key) if key is not None else None
        if strip is None:
            strip = line_to_strip(line, self.app.console).apply_style(rich_style)
            if key is not None:
                lines.cache[key] = strip
        reader = self.reader
        if key is not None and (reader.query or (reader.cursor is not None and self.has_focus)):
            strip = self._decorate(strip, key, width, rich_style)
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style)

    # ------------------------------------------------------------------ internals: drawing

    def _update_lines(self, changes: TimelineChanges | None = None) -> None:
        """Bring the lines up to date: ``changes`` drawn where they are, or (None) everything again when a
        width change or a toggle made that due."""
        width = self.scrollable_content_region.width
        if width <= 0:
            self._needs_full = True
            return  # not laid out yet; on_resize will render everything
        follow = self._follows()
        self._lines.appended = 0
        done = self._lines.update(changes, width, full=self._needs_full)
        if done is None:
            return
        removed, self._needs_full = done
        if not follow:
            self.unseen += self._lines.appended
        self.renders += 1
        self.virtual_size = Size(width, self.line_count)
        if self.reader.place_cursor(follow):
            self._cursor_moved()
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif removed > 0 and self.scroll_y > 0:
            # Keep what the reader is looking at in place when old lines leave from the top.
            self.scroll_to(y=max(self.scroll_y - removed, 0), animate=False, immediate=True)
        if self.reader.query and (status := self.reader.search_again()) is not None:
            self.post_message(self.FindUpdated(self, status))
        self.refresh()
        if self._needs_full:  # the entry the rule sat above left the view: it moves, once this is drawn
            self.call_later(self._update_lines)

    def _redraw(self, entry_ids: list[int]) -> None:
        """These entries drawn again where they are (their folding or the rule above them changed)."""
        lines = self._lines
        if shown := [i for i in entry_ids if i in lines.start]:
            lines.resplice(shown)
            self.virtual_size = Size(lines.width, self.line_count)
            self.refresh()

    def _full_again(self) -> None:
        self.reader.unfolded.clear()  # folding again folds what find had opened
        self._needs_full = True
        if self.is_mounted:
            self._update_lines()

    @property
    def _height(self) -> int:
        return max(self.scrollable_content_region.height, 1)

    def _decorate(self, strip: Strip, key: int, width: int, rich_style: Style) -> Strip:
        """The cursor bar and find highlights over one cached line (only visible lines get here)."""
        cursor = self.has_focus or bool(self.reader.query)  # the bar is drawn while focused or finding
        on_cursor, spans, current = self._lines.marks(key, strip.text, cursor=cursor)
        if on_cursor:
            bar = self._component_style("timeline-view--cursor")
            mark = self._component_style("timeline-view--cursor-mark")
            strip = cursor_strip(strip, width, rich_style + mark, bar, rich_style + bar)
        if spans:
            name = "timeline-view--current-match" if current else "timeline-view--match"
            strip = highlight_strip(strip, spans, self._component_style(name), shift=1 if on_cursor else 0)
        return strip

    def _component_style(self, name: str) -> Style:
        """A component's own attributes (bold, reverse, underline; its colour when it sets one) with its
        background blended over the view's, to be laid over a line's styles."""
        partial = self.get_component_rich_style(name, partial=True)
        if partial.bgcolor is None:
            return partial
        return partial + Style(bgcolor=self.get_component_rich_style(name).bgcolor)

    # ------------------------------------------------------------------ internals: the cursor

    def _row(self, entry_id: int) -> int:
        """The window row (scroll position) of an entry's first line."""
        return self._lines.start[entry_id] - self._lines.base + self._lines.has_marker

    def _span(self, entry_id: int) -> Span:
        """Where an entry's lines are beside the window (it must be shown)."""
        top = self._row(entry_id)
        return Span(top, top + self._lines.count[entry_id], int(self.scroll_y), self._height)

    def _visible(self, entry_id: int) -> bool:
        return entry_id in self._lines.start and self._span(entry_id).in_sight

    def _entry_at_row(self, row: int) -> int | None:
        """The shown entry on this window row (clamped to the first and last)."""
        shown, lines = self.reader.shown, self._lines
        if not shown:
            return None
        key = lines.base + row - lines.has_marker
        key = min(max(key, lines.start[shown[0]]), lines.base + len(lines) - 1)
        return lines.entry_of_line(key)

    def _follows(self) -> bool:
        """Whether new output should move the window and the cursor to the end."""
        return (
            self.is_vertical_scroll_end and not self.is_vertical_scrollbar_grabbed and not self.reader.pinned
        )

    def _set_cursor(self, entry_id: int | None, *, pin: bool) -> None:
        if self.reader.set_cursor(entry_id, pin=pin):
            self._cursor_moved()

    def _cursor_moved(self) -> None:
        self.post_message(self.CursorMoved(self, self.reader.cursor))
        self.refresh()

    def _jump(self, entry_id: int) -> None:
        if self.reader.jump(entry_id):
            self._cursor_moved()
        self._scroll_to_cursor(jump=True)

    def _jump_problem(self, *, forward: bool) -> bool:
        self._update_lines()
        if (target := self.reader.problem(forward=forward)) is not None:
            self._jump(target)
        return target is not None

    def _page(self, *, forward: bool) -> None:
        height, cursor, shown = self._height, self.reader.cursor, self.reader.shown
        self.scroll_to(y=self.scroll_y + (height if forward else -height), animate=False, immediate=True)
        if forward and self.is_vertical_scroll_end and shown:
            self._set_cursor(shown[-1], pin=False)
        elif cursor is None or not self._visible(cursor):
            row = int(self.scroll_y) + (0 if forward else height - 1)
            self._set_cursor(self._entry_at_row(row), pin=False)
        self._update_following()

    def _step(self, *, forward: bool) -> None:
        """One entry down (up); inside an entry taller than the window, a line of it first."""
        shown, cursor = self.reader.shown, self.reader.cursor
        if not shown:
            (self.scroll_down if forward else self.scroll_up)(animate=False)
            return
        target: int | None
        if cursor is None or not self._visible(cursor):  # start from what is on screen
            target = self._entry_at_row(int(self.scroll_y) + (0 if forward else self._height - 1))
        else:
            if (y := scroll_within(self._span(cursor), forward=forward)) is not None:
                self.scroll_to(y=y, animate=False, immediate=True)
                return
            target = self.reader.neighbour(cursor, forward=forward)
            if target is None:
                if forward and not self.is_vertical_scroll_end:
                    self.scroll_end(animate=False, immediate=True, x_axis=False)
                elif not forward:
                    self.scroll_home(animate=False, immediate=True, x_axis=False)  # the marker line
                return
        if target is not None:
            self._set_cursor(target, pin=target != shown[-1])
            self._scroll_to_cursor()

    def _scroll_to_cursor(self, *, jump: bool = False) -> None:
        """Bring the cursor's entry into sight: the least scroll for a step, a third down for a jump."""
        cursor = self.reader.cursor
        if cursor is None or cursor not in self._lines.start:
            return
        target = scroll_to_show(self._span(cursor), first=cursor == self.reader.shown[0], jump=jump)
        if target is not None:  # (the first entry: the marker line above it too)
            self.scroll_to(y=target, animate=False, immediate=True)
        self._update_following()

    def _update_following(self) -> None:
        self.following = following = self.is_vertical_scroll_end and not self.reader.pinned
        if following:
            self.unseen = 0
            if (shown := self.reader.shown) and self.reader.cursor != shown[-1]:
                self._set_cursor(shown[-1], pin=False)


__all__ = ["TimelineView"]
