"""Where the operator is in a timeline: the view, the entries shown, the highlighted entry, the find (pure).

A :class:`Reader` is the state a timeline's screen keeps about one operator reading one
:class:`client.timeline.Timeline`, with no UI in it (``widgets.timeline_view`` draws it and scrolls to it):

* :attr:`Reader.view` (a :class:`client.views.View`) and :attr:`Reader.shown`, the ids of the entries shown,
  oldest first (the widget lays them out; it drops the oldest when they overflow its line cap);
* the **cursor**: one highlighted entry (:attr:`Reader.cursor`), and whether the operator placed it
  (:attr:`Reader.pinned`, which pauses following). While following it sits on the newest entry; when its
  entry leaves the view it goes to the nearest one shown (:meth:`Reader.place_cursor`). Next / previous
  entry and the problem jumps (:func:`client.views.is_problem`) move among the entries shown;
* the **find** (:mod:`client.find`: literal, case-insensitive) over the entries shown: typing starts from
  where the cursor was (the newest match when following, else the first at or after the cursor), so each
  keystroke searches again from that origin and an emptied query brings the cursor back there; next and
  previous wrap. The current match's entry is shown whole while it is current when the screen says its
  match would otherwise be hidden (folded commentary, a line cut to the width: ``hides_match``), and stays
  so when the find is closed on it (:attr:`Reader.unfolded`). New output updates the count
  (:meth:`Reader.search_again`) without moving the cursor;
* the entry the "new since you last looked" rule sits above (:attr:`Reader.rule_at`): the first entry shown
  from :attr:`Reader.rule_from` on.

Every move returns what the screen must do about it (an entry to bring into sight, entries to draw again),
so the widget stays the drawing and the scrolling.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from client.entry_words import Reading
from client.find import Finder, FindStatus
from client.timeline import Timeline, TimelineEntry
from client.views import View, is_problem

__all__ = ["Move", "Reader", "Span", "scroll_to_show", "scroll_within"]

JUMP_FRACTION = 3
"""A jump (find, a problem, an entry named) puts an entry that was out of sight a third down the window."""


@dataclass(frozen=True, slots=True)
class Span:
    """An entry's lines in the window's rows, ``top`` (its first line) up to ``bottom`` (excluded), beside
    the window: it starts at row ``y`` and is ``height`` rows tall. The geometry of bringing an entry into
    sight, with no UI in it (the widget reads its rows and scrolls to what these say)."""

    top: int
    bottom: int
    y: int
    height: int

    @property
    def in_sight(self) -> bool:
        """Some line of the entry is in the window."""
        return self.top < self.y + self.height and self.bottom > self.y

    @property
    def whole_in_sight(self) -> bool:
        return self.top >= self.y and self.bottom <= self.y + self.height


def scroll_to_show(span: Span, *, first: bool, jump: bool) -> int | None:
    """The window's new top row to bring the entry into sight; None when it is whole in sight already.
    The first entry shows the line above it too (row 0); a jump puts the entry a third down the window, a
    step scrolls the least; an entry taller than the window starts at its first line."""
    if span.whole_in_sight:
        return None
    top, bottom, height = span.top, span.bottom, span.height
    if first:
        return 0
    if jump:
        return top if bottom - top >= height else max(top - height // JUMP_FRACTION, 0)
    if top < span.y or bottom - top >= height:
        return top
    return bottom - height


def scroll_within(span: Span, *, forward: bool) -> int | None:
    """A step inside an entry taller than the window scrolls one line through the rest of it first (the
    window's new top row); None when the step leaves the entry."""
    if forward and span.bottom > span.y + span.height:
        return span.y + 1
    if not forward and span.top < span.y:
        return span.y - 1
    return None


@dataclass(slots=True)
class Move:
    """What a find step asks of the screen: ``target`` is the entry to highlight and bring into sight (None:
    nothing to show), ``pin`` whether that pauses following, ``reflow`` the entries whose folding changed
    (drawn again where they are)."""

    target: int | None = None
    pin: bool = False
    reflow: list[int] = field(default_factory=list)


class Reader:
    """One operator's place in one timeline (see the module docstring)."""

    def __init__(
        self,
        timeline: Timeline,
        *,
        hides_match: Callable[[int, str], bool] | None = None,
        reading: Reading = Reading(),  # noqa: B008 (frozen)
    ) -> None:
        """Read ``timeline`` as ``reading`` says (who "you" are, colleagues' names: find matches the words
        as drawn); ``hides_match(entry_id, query)`` says whether the entry as drawn leaves the query out
        (the screen's to say; without it a match is never unfolded)."""
        self.timeline = timeline
        self.reading = reading
        self.hides_match = hides_match
        self.view = View.EVERYTHING
        self.shown: list[int] = []
        """Ids of the entries shown, ascending."""
        self.first_shown = 1
        """Entries with a lower id are no longer shown (dropped by the model or for the line cap)."""
        self.cursor: int | None = None
        self.pinned = False
        """The operator placed the cursor (moved up, jumped): following is paused."""
        self.unfolded: set[int] = set()
        """Entries shown whole although folded or cut (find opened them)."""
        self.rule_from: int | None = None
        """The first entry new since the operator last looked (None: no rule)."""
        self.rule_at: int | None = None
        """The entry shown that the rule sits above (None: not shown)."""
        self._finder = Finder(timeline, reading)
        self.query = ""
        self.matches: list[int] = []
        self.match_set: set[int] = set()
        self.current: int | None = None
        self._origin: int | None = None
        self._origin_pinned = False
        self._find_unfolded: int | None = None

    # ------------------------------------------------------------------ the entries shown

    def shows(self, entry_id: int) -> bool:
        """Whether the view keeps this entry (False once the model dropped it)."""
        entry = self.timeline.get(entry_id)
        return entry is not None and self.view.shows(entry)

    def passing(self, entry_ids: Iterable[int] | None = None) -> list[int]:
        """Of ``entry_ids`` (all retained entries when None), those from :attr:`first_shown` on that the view
        keeps, ascending."""
        first = self.first_shown
        test = self.view.predicate
        if entry_ids is None:
            return [e.id for e in self.timeline if e.id >= first and (test is None or test(e))]
        return [i for i in entry_ids if i >= first and (test is None or self.shows(i))]

    def set_view(self, view: View) -> None:
        """Another view: entries the old one hid were not dropped, so they may be shown again."""
        self.view = view
        self.first_shown = 1

    def place_rule(self, entry_id: int) -> bool:
        """Whether the rule goes above this entry, now laid out after every shown entry before it."""
        start = self.rule_from
        if start is not None and (self.rule_at == entry_id or (self.rule_at is None and entry_id >= start)):
            self.rule_at = entry_id
            return True
        return False

    def forget(self, entry_id: int) -> None:
        """An entry is no longer shown (dropped): nothing stays unfolded for it; the rule leaves with it."""
        self.unfolded.discard(entry_id)
        if entry_id == self.rule_at:
            self.rule_from = self.rule_at = None

    # ------------------------------------------------------------------ the cursor

    @property
    def cursor_entry(self) -> TimelineEntry | None:
        """The highlighted entry, while the model still holds it."""
        return None if self.cursor is None else self.timeline.get(self.cursor)

    def set_cursor(self, entry_id: int | None, *, pin: bool) -> bool:
        """Highlight ``entry_id`` (``pin``: placed by the operator); True when the highlight moved."""
        self.pinned = pin and entry_id is not None
        if entry_id == self.cursor:
            return False
        self.cursor = entry_id
        return True

    def jump(self, entry_id: int) -> bool:
        """Highlight a shown entry as a jump does: an entry older than the newest pauses following."""
        return self.set_cursor(entry_id, pin=entry_id != self.shown[-1])

    def place_cursor(self, follow: bool) -> bool:
        """After the entries shown changed: the cursor on the newest while following, else on its entry or,
        when that is no longer shown, the nearest one that is. True when it moved."""
        shown = self.shown
        if not shown:
            return self.set_cursor(None, pin=False)
        cursor = self.cursor
        if follow or cursor is None:
            return self.set_cursor(shown[-1], pin=False)
        position = bisect_left(shown, cursor)
        if position < len(shown) and shown[position] == cursor:
            return False
        target = shown[min(position, len(shown) - 1)]
        return self.set_cursor(target, pin=self.pinned and target != shown[-1])

    def neighbour(self, entry_id: int, *, forward: bool) -> int | None:
        """The shown entry after (before) ``entry_id``; None at the end (start)."""
        shown = self.shown
        position = bisect_left(shown, entry_id) + (1 if forward else -1)
        return shown[position] if 0 <= position < len(shown) else None

    def problem(self, *, forward: bool) -> int | None:
        """The next (previous) problem among the entries shown after (before) the cursor, or None."""
        shown = self.shown
        if not shown:
            return None
        cursor = self.cursor if self.cursor is not None else shown[-1]
        if forward:
            candidates: Iterable[int] = shown[bisect_right(shown, cursor) :]
        else:
            candidates = reversed(shown[: bisect_left(shown, cursor)])
        for entry_id in candidates:
            entry = self.timeline.get(entry_id)
            if entry is not None and is_problem(entry):
                return entry_id
        return None

    # ------------------------------------------------------------------ find

    @property
    def find_status(self) -> FindStatus:
        """Where the find stands ("3 / 17"); empty when no find is open."""
        if not self.query:
            return FindStatus()
        current = 0
        if self.current is not None and self.current in self.match_set:
            current = bisect_left(self.matches, self.current) + 1
        return FindStatus(self.query, current, len(self.matches))

    def find(self, query: str) -> Move:
        """Search the shown entries for ``query`` (every keystroke) and go to the match from where typing
        started; no match (or an empty query) goes back there."""
        if not self.query:
            self._origin, self._origin_pinned = self.cursor, self.pinned
        self.query = query
        self._search()
        if not self.matches:  # nothing to show: back where typing started
            move = self._go_to(None)
            origin = self._origin
            if origin is not None and origin in self._shown_set():
                move.target, move.pin = origin, self._origin_pinned
            return move
        origin, shown = self._origin, self.shown
        if origin is None or (not self._origin_pinned and shown and origin == shown[-1]):
            target = self.matches[-1]  # following: the newest match
        else:
            position = bisect_left(self.matches, origin)
            target = self.matches[position] if position < len(self.matches) else self.matches[0]
        return self._go_to(target)

    def find_step(self, *, forward: bool) -> Move:
        """The next (previous) match after the current one (after the cursor when none is), wrapping."""
        matches = self.matches
        if not self.query or not matches:
            return Move()
        anchor = self.current if self.current is not None else self.cursor
        if anchor is None:
            target = matches[0] if forward else matches[-1]
        elif forward:
            position = bisect_right(matches, anchor)
            target = matches[position] if position < len(matches) else matches[0]
        else:
            position = bisect_left(matches, anchor) - 1
            target = matches[position] if position >= 0 else matches[-1]
        return self._go_to(target)

    def end_find(self) -> None:
        """The find closed: the highlights go, the cursor stays on the match (shown whole if find opened
        it), and the next find starts from there."""
        self._find_unfolded = None
        self.query = ""
        self._origin = None
        self._search()

    def search_again(self) -> FindStatus | None:
        """After new output: the same query over the changed model, the cursor unmoved; the new status
        when it changed (else None)."""
        before = self.find_status
        self._search()
        if self.current is not None and self.current not in self.match_set:
            self.current = None
        after = self.find_status
        return after if after != before else None

    def _shown_set(self) -> set[int]:
        return set(self.shown)

    def _search(self) -> None:
        if not self.query:
            self.matches, self.match_set, self.current = [], set(), None
            self._finder.search("")
            return
        shown = self._shown_set()
        self.matches = [i for i in self._finder.search(self.query).entry_ids if i in shown]
        self.match_set = set(self.matches)

    def _go_to(self, entry_id: int | None) -> Move:
        """Make ``entry_id`` the current match: shown whole if its match would be hidden; the entry find
        opened for the previous match folds back."""
        move = Move()
        previous = self._find_unfolded
        if previous is not None and previous != entry_id:
            self.unfolded.discard(previous)
            self._find_unfolded = None
            move.reflow.append(previous)
        self.current = entry_id
        hides = self.hides_match
        if (
            entry_id is not None
            and entry_id not in self.unfolded
            and hides is not None
            and hides(entry_id, self.query)
        ):
            self.unfolded.add(entry_id)
            self._find_unfolded = entry_id
            move.reflow.append(entry_id)
        if entry_id is not None:
            move.target, move.pin = entry_id, entry_id != self.shown[-1]
        return move
