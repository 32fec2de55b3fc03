"""The sessions the operator follows in this app, most recent first: what quick switch moves between.

Pure ordering (no Textual): the app keeps one live attach screen per followed session next to it, so a
session switched away from keeps following its stream, and keeps its scroll position, folded commentary
and note draft exactly as they were. ``limit`` bounds how many are followed at once; the least recently
shown one is let go first (its draft stays in the draft store).
"""

from __future__ import annotations

FOLLOW_LIMIT = 6
"""At most this many sessions are followed (each holds a live stream and its timeline)."""


class Following:
    """Session ids, most recently shown first."""

    def __init__(self, limit: int = FOLLOW_LIMIT) -> None:
        """``limit`` >= 1: how many sessions stay followed."""
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self._order: list[str] = []

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._order

    def __len__(self) -> int:
        return len(self._order)

    @property
    def recent(self) -> list[str]:
        """Most recently shown first (the switch list's order)."""
        return list(self._order)

    def touch(self, session_id: str) -> list[str]:
        """``session_id`` is on screen now: it moves to the front. Returns the ids let go to stay within
        ``limit`` (the caller closes their screens)."""
        if session_id in self._order:
            self._order.remove(session_id)
        self._order.insert(0, session_id)
        dropped = self._order[self.limit :]
        del self._order[self.limit :]
        return dropped

    def forget(self, session_id: str) -> None:
        """Stop following (detached with ``q``)."""
        if session_id in self._order:
            self._order.remove(session_id)

    def previous(self, current: str | None) -> str | None:
        """The session to jump back to: the most recent one that is not ``current``."""
        return next((sid for sid in self._order if sid != current), None)
