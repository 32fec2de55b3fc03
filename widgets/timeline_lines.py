"""The rendered lines of a timeline's shown entries, laid out one block per entry (no widget, no I/O).

:class:`Lines` keeps what ``widgets.timeline_view.TimelineView`` scrolls through, as Textual's ``Log``
keeps its lines: each shown entry (in the order of ``client.reader.Reader.shown``) is a block of rendered
lines (``widgets.timeline_render``), numbered absolutely (``start``: an entry's first line; ``base``: the
number of ``lines[0]``), so that a block changing in place moves only the blocks after it and the
``Strip`` cache (:attr:`Lines.cache`, keyed by absolute number) keeps what did not move. A block is
rendered again only when its entry's revision, the width, or whether it is shown whole changed. At most
``max_lines`` lines are kept: the oldest blocks go first, and a backlog larger than that is never rendered
beyond what fits. The "new since you last looked" rule's lines belong to the block of the entry it sits
above (:attr:`client.reader.Reader.rule_at`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable

from textual.cache import LRUCache
from textual.strip import Strip

from client.find import find_spans
from client.reader import Reader
from client.timeline import TextEntry, TextPhase, TimelineChanges
from client.views import View
from widgets.timeline_render import (
    RenderedLine,
    collapsed_commentary,
    line_plain,
    render_empty_view,
    render_entry,
    render_marker,
)

__all__ = ["Lines"]


class Lines:
    """The shown entries' lines (see the module docstring)."""

    def __init__(self, reader: Reader, *, max_lines: int) -> None:
        self.reader = reader
        self.max_lines = max(max_lines, 10)
        self.lines: list[RenderedLine] = []
        self.base = 0
        """Absolute number of ``lines[0]``."""
        self.start: dict[int, int] = {}
        """Entry id -> absolute number of its first line."""
        self.count: dict[int, int] = {}
        """Entry id -> how many lines its block has."""
        self.width = 0
        self.collapse = False
        """Commentary folded to one line each."""
        self.wrap = False
        """Long tool and approval lines wrapped instead of cut to the width."""
        self.reading = reader.reading
        """Who reads: "by you", a colleague's name, whether the server records deciders (find reads the
        same, through the reader)."""
        self.cache: LRUCache[int, Strip] = LRUCache(1024)
        self.rule_make: Callable[[int], list[RenderedLine]] | None = None
        self._rule_lines: tuple[int, list[RenderedLine]] | None = None
        self._rendered: dict[int, tuple[int, int, bool, list[RenderedLine]]] = {}
        self.appended = 0
        """Blocks the last :meth:`apply` added."""

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def has_marker(self) -> bool:
        """A first line says how many earlier entries are not shown (dropped, or never loaded)."""
        return self.reader.first_shown > 1 or self.reader.timeline.events_not_loaded > 0

    @property
    def view_empty(self) -> bool:
        """A view with nothing in it: one line says so."""
        return not self.reader.shown and self.reader.view is not View.EVERYTHING

    @property
    def total(self) -> int:
        """Lines shown in all: the marker line and the empty-view line included."""
        return len(self.lines) + self.has_marker + self.view_empty

    def marker_line(self) -> RenderedLine:
        timeline = self.reader.timeline
        return render_marker(self.reader.first_shown - 1, self.width, timeline.events_not_loaded)

    def empty_line(self) -> RenderedLine:
        timeline = self.reader.timeline
        return render_empty_view(self.reader.view, len(timeline) - (timeline.dropped_count > 0), self.width)

    def at(self, index: int) -> tuple[RenderedLine | None, int | None]:
        """The line on row ``index`` of the whole and, for an entry's line, its absolute number (the key of
        the ``Strip`` cache); ``(None, None)`` past the end."""
        if index >= self.total:
            return None, None
        if self.has_marker:
            if index == 0:
                return self.marker_line(), None
            index -= 1
        if index >= len(self.lines):
            return self.empty_line(), None
        return self.lines[index], self.base + index

    def plain(self) -> list[str]:
        """The plain text of every line shown (the marker and the empty-view line included)."""
        head = [line_plain(self.marker_line())] if self.has_marker else []
        tail = [line_plain(self.empty_line())] if self.view_empty else []
        return head + [line_plain(line) for line in self.lines] + tail

    def update(self, changes: TimelineChanges | None, width: int, *, full: bool) -> tuple[int, bool] | None:
        """Bring the lines up to date at ``width``: every entry again when ``full`` or the width changed,
        else ``changes`` where they are (None: nothing to do). Returns how many lines left from the top and
        whether everything must be laid out again (the rule lost its entry)."""
        had_marker = self.has_marker
        if full or width != self.width:
            self.width = width
            self.rebuild()
            removed, again = 0, False
        elif changes:
            removed, again = self.apply(changes)
        else:
            return None
        removed += self.enforce_max()
        if had_marker != self.has_marker:
            self.cache.clear()
            removed -= 1  # the marker line took the place of one removed line
        return removed, again

    def hides(self, entry_id: int, query: str) -> bool:
        """Whether the entry as shown is folded (commentary: even when its one line shows the match, the
        operator wants to read it) or leaves the query out (a line cut to the width, a finished tool's
        result, a decision's summary)."""
        entry = self.reader.timeline.get(entry_id)
        if self.collapse and isinstance(entry, TextEntry) and entry.phase is TextPhase.COMMENTARY:
            return True
        return not any(find_spans(line_plain(line), query) for line in self.block(entry_id) or [])

    def forget_rendered(self) -> None:
        """Blocks were rendered another way (wrapped, cut): none is reused."""
        self._rendered.clear()

    def rule_header(self) -> list[RenderedLine]:
        """The rule's lines (the digest, then the rule) at the current width, rendered once per width."""
        make = self.rule_make
        if make is None:
            return []
        cached = self._rule_lines
        if cached is None or cached[0] != self.width:
            cached = (self.width, make(self.width))
            self._rule_lines = cached
        return cached[1]

    def set_rule(self, header: Callable[[int], list[RenderedLine]] | None) -> None:
        """The rule's lines come from ``header(width)`` from now on (None: no rule)."""
        self.rule_make = header
        self._rule_lines = None

    def rule_count(self) -> int:
        """How many lines the rule takes above its entry (0: none shown)."""
        return len(self.rule_header()) if self.reader.rule_at is not None else 0

    def block(self, entry_id: int) -> list[RenderedLine] | None:
        """An entry's lines as shown, re-rendered only when its revision or the width changed."""
        entry = self.reader.timeline.get(entry_id)
        if entry is None:
            return None
        whole = entry_id in self.reader.unfolded
        cached = self._rendered.get(entry_id)
        if (
            cached is not None
            and cached[0] == entry.revision
            and cached[1] == self.width
            and cached[2] == whole
        ):
            lines = cached[3]
        else:
            lines = render_entry(
                entry,
                self.width,
                wrap=self.wrap,
                whole=whole,
                reading=self.reading,
            )
            self._rendered[entry_id] = (entry.revision, self.width, whole, lines)
        if (
            self.collapse
            and not whole
            and isinstance(entry, TextEntry)
            and entry.phase is TextPhase.COMMENTARY
        ):
            head = lines[:1] if entry.dropped_chars else []
            return [*head, collapsed_commentary(entry, self.width, len(lines) - len(head))]
        return lines

    def entry_of_line(self, key: int) -> int | None:
        """The entry an absolute line number belongs to."""
        shown = self.reader.shown
        position = bisect_right(shown, key, key=self.start.__getitem__) - 1
        return shown[position] if position >= 0 else None

    def marks(self, key: int, text: str, *, cursor: bool) -> tuple[bool, list[tuple[int, int]], bool]:
        """What to draw over the line numbered ``key`` (its plain ``text``): whether it is a line of the
        highlighted entry (when ``cursor`` is drawn at all), where the find's query occurs in it, and whether
        its entry is the current match. The rule's own lines are no entry's."""
        reader = self.reader
        carrier = reader.rule_at
        if carrier is not None and 0 <= key - self.start.get(carrier, key + 1) < self.rule_count():
            return False, [], False
        on_cursor = False
        if cursor and reader.cursor is not None:
            start = self.start.get(reader.cursor)
            on_cursor = start is not None and start <= key < start + self.count[reader.cursor]
        entry_id = reader.cursor if on_cursor else None
        spans: list[tuple[int, int]] = []
        if reader.query:
            if entry_id is None:
                entry_id = self.entry_of_line(key)
            if entry_id is not None and entry_id in reader.match_set:
                spans = find_spans(text, reader.query)
        return on_cursor, spans, entry_id is not None and entry_id == reader.current

    def seen_at(self, key: int) -> int | None:
        """The newest entry with a line at or above the absolute line ``key`` (the bottom of a window): the
        rule's own lines are not its entry's; None when only the marker line is there."""
        shown = self.reader.shown
        if not shown or key < self.start[shown[0]]:
            return None
        key = min(key, self.base + len(self.lines) - 1)
        entry = self.entry_of_line(key)
        if entry is not None and entry == self.reader.rule_at and key < self.start[entry] + self.rule_count():
            position = bisect_left(shown, entry) - 1
            return shown[position] if position >= 0 else None
        return entry

    def rebuild(self) -> None:
        """Render every retained entry the view keeps again (width change, a toggle, another view)."""
        reader = self.reader
        self.cache.clear()
        self.base += len(self.lines)  # fresh absolute numbers: no stale cache key can match
        self.lines = []
        reader.shown.clear()
        self.start.clear()
        self.count.clear()
        reader.rule_at = None
        reader.first_shown = max(reader.first_shown, reader.timeline.first_id)
        for stale in [i for i in self._rendered if i < reader.first_shown]:
            del self._rendered[stale]
        ids = reader.passing()
        shown = self._newest_that_fit(ids)
        if shown and len(shown) < len(ids):
            reader.first_shown = max(reader.first_shown, shown[0])
        for entry_id in shown:
            self._append_block(entry_id)

    def apply(self, changes: TimelineChanges) -> tuple[int, bool]:
        """Draw what the model's changes did; returns how many lines left from the top, and whether the
        rule lost the entry it sat above (then everything is laid out again)."""
        reader = self.reader
        removed = self.drop_front(changes.first_id) if changes.first_id > reader.first_shown else 0
        if reader.view.predicate is None:
            updated = [i for i in changes.updated if i in self.start]
        else:  # an entry may start or stop passing the view (a tool call fails, an approval is declined)
            first = reader.first_shown
            updated = [i for i in changes.updated if i in self.start or (i >= first and reader.shows(i))]
        lost_rule = self.resplice(updated) if updated else False
        fresh = [i for i in reader.passing(changes.appended) if i not in self.start]
        shown = self._newest_that_fit(fresh)
        if len(shown) < len(fresh):
            # The new entries alone overflow max_lines (a backlog caught up in one go): everything older
            # would be dropped unseen, so it is dropped now, unrendered.
            removed += self.drop_front(shown[0] if shown else fresh[-1] + 1)
        for entry_id in shown:
            self._append_block(entry_id)
        self.appended = len(shown)
        return removed, lost_rule

    def resplice(self, entry_ids: list[int]) -> bool:
        """Render these entries again where they are (showing or hiding any that started or stopped passing
        the view); the blocks after the first of them keep their lines and only move. True when the entry
        the rule sat above stopped passing the view (the rule goes above the next one shown)."""
        if not entry_ids:
            return False
        reader = self.reader
        order = reader.shown
        rerender = set(entry_ids)
        position = bisect_left(order, min(rerender))
        tail = order[position:]
        stale_from = self.start[tail[0]] if tail else self.base + len(self.lines)
        for key in [k for k in list(self.cache.keys()) if k >= stale_from]:
            self.cache.discard(key)
        cut = stale_from - self.base
        old_tail = self.lines[cut:]
        del self.lines[cut:]
        del order[position:]
        offsets: dict[int, int] = {}
        offset = 0
        for entry_id in tail:
            offsets[entry_id] = offset
            offset += self.count[entry_id]
        for entry_id in sorted(rerender.union(tail)):
            if entry_id in rerender:
                if reader.shows(entry_id):
                    self._append_block(entry_id)
                elif entry_id in offsets:  # it stopped passing the view
                    del self.start[entry_id]
                    del self.count[entry_id]
                continue
            count = self.count[entry_id]  # an unchanged block: its lines reused, only its place moves
            order.append(entry_id)
            self.start[entry_id] = self.base + len(self.lines)
            start = offsets[entry_id]
            self.lines.extend(old_tail[start : start + count])
        if reader.rule_at is not None and reader.rule_at not in self.start:
            reader.rule_at = None
            return True
        return False

    def drop_front(self, keep_from_id: int) -> int:
        """Forget shown entries below ``keep_from_id``; returns how many lines left."""
        reader = self.reader
        removed = drop = 0
        for entry_id in reader.shown:
            if entry_id >= keep_from_id:
                break
            removed += self.count.pop(entry_id)
            del self.start[entry_id]
            self._rendered.pop(entry_id, None)
            if entry_id == reader.rule_at:  # the rule leaves with what it was above
                self.set_rule(None)
            reader.forget(entry_id)
            drop += 1
        if drop:
            del reader.shown[:drop]
            del self.lines[:removed]
            self.base += removed
        reader.first_shown = max(reader.first_shown, keep_from_id)
        return removed

    def enforce_max(self) -> int:
        """Drop the oldest blocks past ``max_lines`` (room kept for the marker line); lines removed."""
        shown = self.reader.shown
        excess = len(self.lines) + 1 - self.max_lines
        if excess <= 0 or len(shown) <= 1:
            return 0
        keep_from = shown[-1]
        dropped_lines = 0
        for entry_id in shown[:-1]:
            if dropped_lines >= excess:
                keep_from = entry_id
                break
            dropped_lines += self.count[entry_id]
        return self.drop_front(keep_from)

    def _append_block(self, entry_id: int) -> None:
        lines = self.block(entry_id)
        if lines is None:
            return
        if self.reader.place_rule(entry_id):
            lines = [*self.rule_header(), *lines]
        self.reader.shown.append(entry_id)
        self.start[entry_id] = self.base + len(self.lines)
        self.count[entry_id] = len(lines)
        self.lines.extend(lines)

    def _newest_that_fit(self, entry_ids: list[int]) -> list[int]:
        """The newest of ``entry_ids`` (ascending) whose lines fit in ``max_lines``, rendered newest first
        so that the older ones, which could never be shown, are never rendered (catching up on 100,000
        events renders the last screenfuls, not every block). Always keeps the newest entry."""
        room = self.max_lines - 1  # - 1: room for the marker line
        used = 0
        for index in range(len(entry_ids) - 1, -1, -1):
            entry_id = entry_ids[index]
            lines = self.block(entry_id)
            used += len(lines) if lines is not None else 0
            if used > room and index < len(entry_ids) - 1:
                self._rendered.pop(entry_id, None)
                return entry_ids[index + 1 :]
        return entry_ids
