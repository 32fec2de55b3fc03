"""Find in a timeline: the words an entry shows the operator, and where a query occurs (pure: no UI, no I/O).

What is searched (:func:`searchable_text`) is what the operator reads, not the wire data: model text
(commentary, streaming text, final answers), a tool call's name, arguments, state and duration ("ok 1.3s")
and result or error, a note's state ("note delivered"), text and why it could not be delivered, an
approval's state ("approval requested"), tool, summary and the decider's comment, a run's state ("run
started") and task or error, the session's start or end and why, and an unknown event's type and words:
the words of :mod:`client.entry_words`, which the timeline widget draws too. Only the glyphs are left out.

Matching is literal and case-insensitive: the query is a plain substring, never a pattern, so untrusted
text and odd queries (``[red]``, ``.*``, ``\\``) mean only their characters. Both sides are lowered one
character at a time (:func:`fold`), which keeps every position, so :func:`find_spans` can say where in a
line a match is and the widget can highlight it (the widget searches its rendered lines with the same
function: one definition of "matches").

:class:`Finder` is the incremental form the find line uses on every keystroke. It keeps each entry's folded
text until the entry changes (by its ``revision``), and when the new query extends the previous one
("pa" → "par") it re-tests only the entries that matched before or changed since: a longer query can only
narrow a result. :func:`find` is the one-shot form.
"""

from __future__ import annotations

from dataclasses import dataclass

from client.entry_words import Reading, entry_words
from client.timeline import Timeline, TimelineEntry

__all__ = ["FindResult", "FindStatus", "Finder", "find", "find_spans", "fold", "searchable_text"]


def fold(text: str) -> str:
    """Lower-case ``text`` without changing its length (a character whose lower case is longer, like
    "İ", stays as it is), so that positions in the folded text are positions in the original."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def searchable_text(entry: TimelineEntry, reading: Reading = Reading()) -> str:  # noqa: B008 (frozen)
    """What the operator reads in this entry, as one string (parts on separate lines, so that a query
    never matches across two parts): :func:`client.entry_words.entry_words`, the words the screen shows
    to ``reading``'s reader ("by you", "by dana")."""
    return "\n".join(entry_words(entry, reading))


def find_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Where ``query`` occurs in ``text``: ``(start, end)`` character offsets, in order, not overlapping;
    case-insensitive and literal (see the module docstring). An empty query occurs nowhere."""
    needle = fold(query)
    if not needle:
        return []
    haystack = fold(text)
    spans: list[tuple[int, int]] = []
    size = len(needle)
    start = haystack.find(needle)
    while start >= 0:
        spans.append((start, start + size))
        start = haystack.find(needle, start + size)
    return spans


@dataclass(frozen=True, slots=True)
class FindResult:
    """The entries whose searchable text contains ``query``, in timeline order (ids ascending)."""

    query: str
    entry_ids: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.entry_ids)

    def __bool__(self) -> bool:
        return bool(self.entry_ids)


@dataclass(frozen=True, slots=True)
class FindStatus:
    """Where a find stands, for the find line: the current match (1-based, 0 when none is current) of
    ``total``; ``str()`` is what the line shows ("3 / 17", "17 matches", "no match")."""

    query: str = ""
    current: int = 0
    total: int = 0

    def __str__(self) -> str:
        if not self.query:
            return ""
        if not self.total:
            return "no match"
        if not self.current:
            return f"{self.total} match" if self.total == 1 else f"{self.total} matches"
        return f"{self.current} / {self.total}"


class Finder:
    """Incremental find over one timeline: call :meth:`search` with each new query (or the same query
    again after the timeline changed); see the module docstring for what it re-tests."""

    def __init__(self, timeline: Timeline, reading: Reading = Reading()) -> None:  # noqa: B008 (frozen)
        """Search ``timeline`` as ``reading``'s reader sees it; the finder reads it, never changes it."""
        self.timeline = timeline
        self.reading = reading
        self._folded: dict[int, tuple[int, str]] = {}  # entry id -> (revision, folded searchable text)
        self._needle = ""
        self._matched: set[int] = set()
        self._seen_revision = -1  # the model revision the last search saw
        self.tested = 0
        """Entries whose text the last search tested (the rest were decided without reading them)."""

    def search(self, query: str) -> FindResult:
        """The entries matching ``query`` now; reuses the previous search when it can (module docstring)."""
        needle = fold(query)
        if not needle:
            self._needle = ""
            self._matched = set()
            self.tested = 0
            return FindResult(query)
        previous = self._needle
        same = needle == previous
        narrower = bool(previous) and not same and needle.startswith(previous)
        seen = self._seen_revision
        was = self._matched
        folded = self._folded
        matched: list[int] = []
        tested = 0
        for entry in self.timeline:
            entry_id = entry.id
            revision = entry.revision
            if revision <= seen:
                if same:
                    if entry_id in was:
                        matched.append(entry_id)
                    continue
                if narrower and entry_id not in was:
                    continue
            cached = folded.get(entry_id)
            if cached is None or cached[0] != revision:
                text = fold(searchable_text(entry, self.reading))
                folded[entry_id] = (revision, text)
            else:
                text = cached[1]
            tested += 1
            if needle in text:
                matched.append(entry_id)
        if len(folded) > 2 * len(self.timeline) + 64:  # entries the model dropped: forget their text
            for stale in [i for i in folded if self.timeline.get(i) is None]:
                del folded[stale]
        self._needle = needle
        self._matched = set(matched)
        self._seen_revision = self.timeline.revision
        self.tested = tested
        return FindResult(query, tuple(matched))

    def matches(self, entry: TimelineEntry, query: str) -> bool:
        """Whether one entry matches ``query`` (uses the cached text when it is current)."""
        needle = fold(query)
        if not needle:
            return False
        cached = self._folded.get(entry.id)
        if cached is not None and cached[0] == entry.revision:
            return needle in cached[1]
        return needle in fold(searchable_text(entry, self.reading))


def find(timeline: Timeline, query: str, reading: Reading = Reading()) -> FindResult:  # noqa: B008 (frozen)
    """The entries of ``timeline`` whose searchable text contains ``query`` (one-shot: see Finder)."""
    return Finder(timeline, reading).search(query)
