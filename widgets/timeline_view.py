"""A line-virtualised view of a :class:`client.timeline.Timeline` (presentational: no network).

Built like Textual's ``Log``: a ``ScrollView`` that keeps rendered lines (not widgets), turns only the
visible ones into ``Strip``s through an LRU cache, caps retained lines at ``max_lines``, batches updates so
the screen repaints at most ~60 times a second however fast events arrive, and follows new output only
while the user is at the bottom (scrolling up to read is never yanked back).

Usage contract (the attach screen)::

    from client.timeline import Timeline
    from widgets.timeline_view import TimelineView

    timeline = Timeline()                               # the pure model; the screen owns it
    view = TimelineView(timeline, max_lines=10_000, id="timeline")
    ...                                                 # compose/mount it
    timeline.apply_many(batch)                          # feed events (from the stream worker)
    view.sync()                                         # cheap: schedules one flush for the next frame
    # or: view.feed(batch)                              # = apply_many + sync

    view.collapse_commentary = True                     # reactive; also key "c" (action toggle_commentary)
    view.at_bottom                                      # following new output?
    view.flush()                                        # render pending changes now (tests, benchmarks)

    timeline.pending_approvals / timeline.notes / timeline.session / timeline.run_status
                                                        # panels read these from the model, not the view

The view pulls changes with ``Timeline.drain_changes()``: it must be the model's only drainer. Entries
update in place (a streaming text grows, a tool call completes); only changed entries are re-rendered.
A width change re-renders the retained entries once; collapsing commentary reuses the rendered blocks.

Keys (focus the view): ``c`` toggle commentary, ``end`` follow output (jump to the bottom), plus the
usual scroll keys.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import reactive, var
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from client.events import Event
from client.timeline import TextEntry, TextPhase, Timeline, TimelineChanges
from widgets.timeline_render import (
    RenderedLine,
    collapsed_commentary,
    line_plain,
    line_to_strip,
    render_entry,
    render_marker,
)

FRAME_SECONDS = 1 / 60
"""Minimum time between two flushes: appends are buffered and painted at most once per frame."""


class TimelineView(ScrollView, can_focus=True):
    """The timeline rendered line by line; see the module docstring for the contract."""

    DEFAULT_CSS = """
    TimelineView {
        background: $surface;
        color: $text;
        overflow-y: scroll;
        overflow-x: hidden;
        &:focus {
            background-tint: $foreground 5%;
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
            "end",
            "follow",
            "Follow",
            show=False,
            id="timeline.follow",
            tooltip="Jump to the newest output and keep following it",
        ),
    ]

    collapse_commentary: reactive[bool] = reactive(False)
    """Show each commentary block as one ``▸ commentary (N lines)`` line."""

    wrap_lines: reactive[bool] = reactive(False)
    """Show long tool / approval lines in full (wrapped) instead of cut to the width with ``…``."""

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
        self._rendered: dict[int, tuple[int, int, list[RenderedLine]]] = {}  # id -> (revision, width, lines)
        self._first_shown = 1  # entries with a lower id are no longer shown
        self._width = 0
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        self._flush_timer: Timer | None = None
        self._last_flush = 0.0
        self._needs_full = True
        self.flushes = 0
        self.set_reactive(TimelineView.collapse_commentary, collapse_commentary)

    # ------------------------------------------------------------------ public API

    def sync(self) -> None:
        """Tell the view the model changed; the repaint happens once per frame, not once per event."""
        if self._flush_timer is not None or not self.is_mounted:
            return
        # (Textual's Timer cannot take a zero delay: a millisecond is "next tick".)
        delay = max(0.001, self._last_flush + FRAME_SECONDS - time.monotonic())
        self._flush_timer = self.set_timer(delay, self._timed_flush, name="timeline-flush")

    def feed(self, events: Iterable[Event]) -> int:
        """Apply a batch of events to the model and schedule a repaint; returns how many were new."""
        applied = self.timeline.apply_many(events)
        self.sync()
        return applied

    @property
    def at_bottom(self) -> bool:
        """True while the view follows new output (the user has not scrolled up)."""
        return self.is_vertical_scroll_end

    @property
    def line_count(self) -> int:
        """Lines currently retained (the marker line included)."""
        return len(self._lines) + self._has_marker

    @property
    def lines_text(self) -> list[str]:
        """Plain text of the retained lines (tests, copying)."""
        head = [line_plain(self._marker_line())] if self._has_marker else []
        return head + [line_plain(line) for line in self._lines]

    def flush(self) -> None:
        """Render pending model changes now (normally called by the per-frame timer)."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._last_flush = time.monotonic()
        width = self.scrollable_content_region.width
        if width <= 0:
            return  # not laid out yet; on_resize will render everything
        follow = self.is_vertical_scroll_end and not self.is_vertical_scrollbar_grabbed
        had_marker = self._has_marker
        if self._needs_full or width != self._width:
            self.timeline.drain_changes()
            self._width = width
            removed = self._rebuild_all()
        else:
            changes = self.timeline.drain_changes()
            if not changes:
                return
            removed = self._apply(changes)
            if not follow:
                self.unseen += len(changes.appended)
        self.flushes += 1
        removed += self._enforce_max_lines()
        if had_marker != self._has_marker:
            self._cache.clear()
            removed -= 1  # the marker line took the place of one removed line
        self.virtual_size = Size(self._width, self.line_count)
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif removed > 0 and self.scroll_y > 0:
            # Keep what the reader is looking at in place when old lines leave from the top.
            self.scroll_to(y=max(self.scroll_y - removed, 0), animate=False, immediate=True)
        self.refresh()

    def scroll_to_entry(self, entry_id: int) -> bool:
        """Bring an entry's first line to the top of the view (a note's "then" jump); False when the entry
        is not shown any more. Scrolling up pauses following, as reading back always does."""
        self.flush()
        start = self._start.get(entry_id)
        if start is None:
            return False
        self.scroll_to(y=start - self._base + self._has_marker, animate=False, immediate=True)
        return True

    def action_toggle_commentary(self) -> None:
        """Narration between tool calls can be long: fold it to one line each, or unfold it."""
        self.collapse_commentary = not self.collapse_commentary

    def action_follow(self) -> None:
        """Jump to the newest output; from there the view keeps following it."""
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    # ------------------------------------------------------------------ Textual hooks

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._update_following()

    def watch_virtual_size(self) -> None:
        self._update_following()

    def _update_following(self) -> None:
        following = self.is_vertical_scroll_end
        self.following = following
        if following:
            self.unseen = 0

    def watch_wrap_lines(self, _value: bool) -> None:
        self._rendered.clear()  # cached blocks were cut (or wrapped) the other way
        self._needs_full = True
        if self.is_mounted:
            self.flush()

    def watch_collapse_commentary(self, _value: bool) -> None:
        self._needs_full = True
        if self.is_mounted:
            self.flush()

    def on_mount(self) -> None:
        self.sync()

    def on_resize(self) -> None:
        # A view that was following keeps following through a resize: a smaller window must not look
        # like the reader scrolled up ("following paused").
        was_following = self.following
        if self.scrollable_content_region.width != self._width:
            self.flush()
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
        key = self._base + index
        strip_or_none = self._cache.get(key)
        if strip_or_none is None:
            strip_or_none = line_to_strip(self._lines[index], self.app.console).apply_style(rich_style)
            self._cache[key] = strip_or_none
        return strip_or_none.crop_extend(scroll_x, scroll_x + width, rich_style)

    # ------------------------------------------------------------------ internals

    @property
    def _has_marker(self) -> bool:
        return self._first_shown > 1 or self.timeline.events_not_loaded > 0

    def _marker_line(self) -> RenderedLine:
        return render_marker(self._first_shown - 1, self._width, self.timeline.events_not_loaded)

    def _render_block(self, entry_id: int) -> list[RenderedLine] | None:
        """An entry's lines, re-rendered only when its revision or the width changed."""
        entry = self.timeline.get(entry_id)
        if entry is None:
            return None
        cached = self._rendered.get(entry_id)
        if cached is not None and cached[0] == entry.revision and cached[1] == self._width:
            lines = cached[2]
        else:
            lines = render_entry(entry, self._width, wrap=self.wrap_lines)
            self._rendered[entry_id] = (entry.revision, self._width, lines)
        if self.collapse_commentary and isinstance(entry, TextEntry) and entry.phase is TextPhase.COMMENTARY:
            head = lines[:1] if entry.dropped_chars else []
            return [*head, collapsed_commentary(entry, self._width, len(lines) - len(head))]
        return lines

    def _rebuild_all(self) -> int:
        """Re-render every retained entry (width change, collapse toggle, first paint)."""
        self._needs_full = False
        old = len(self._lines)
        self._cache.clear()
        self._base += old  # fresh absolute numbers: no stale cache key can match
        self._lines = []
        self._order = []
        self._start.clear()
        self._count.clear()
        first = max(self._first_shown, self.timeline.first_id)
        self._first_shown = first
        for stale in [i for i in self._rendered if i < first]:
            del self._rendered[stale]
        shown = self._newest_that_fit([entry.id for entry in self.timeline if entry.id >= first])
        if shown:
            self._first_shown = max(self._first_shown, shown[0])
        for entry_id in shown:
            self._append_block(entry_id)
        return 0

    def _append_block(self, entry_id: int) -> None:
        lines = self._render_block(entry_id)
        if lines is None:
            return
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
            drop += 1
        if drop:
            del self._order[:drop]
            del self._lines[:removed]
            self._base += removed
        self._first_shown = max(self._first_shown, keep_from_id)
        return removed

    def _apply(self, changes: TimelineChanges) -> int:
        removed = self._drop_front(changes.first_id) if changes.first_id > self._first_shown else 0
        updated = [i for i in changes.updated if i in self._start]
        if updated:
            first = min(updated)
            rerender = set(updated)
            position = self._order.index(first)
            tail = self._order[position:]
            cut = self._start[first] - self._base
            stale_from = self._start[first]
            for key in [k for k in list(self._cache.keys()) if k >= stale_from]:
                self._cache.discard(key)
            old_tail = self._lines[cut:]
            del self._lines[cut:]
            del self._order[position:]
            offset = 0
            for entry_id in tail:
                count = self._count[entry_id]
                if entry_id in rerender:
                    self._append_block(entry_id)
                else:
                    # Unchanged block: reuse its lines, only its position may move.
                    self._order.append(entry_id)
                    self._start[entry_id] = self._base + len(self._lines)
                    self._lines.extend(old_tail[offset : offset + count])
                offset += count
        fresh = [i for i in changes.appended if i >= self._first_shown and i not in self._start]
        shown = self._newest_that_fit(fresh)
        if len(shown) < len(fresh):
            # The new entries alone overflow max_lines (a backlog caught up in one go): everything
            # older would be dropped unseen by _enforce_max_lines, so it is dropped now, unrendered.
            removed += self._drop_front(shown[0] if shown else fresh[-1] + 1)
        for entry_id in shown:
            self._append_block(entry_id)
        return removed

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

    def _timed_flush(self) -> None:
        self._flush_timer = None
        self.flush()


__all__ = ["FRAME_SECONDS", "TimelineView"]
