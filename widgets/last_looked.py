""" "New since you last looked" for one session's timeline: where the operator left, shown on coming back.

:class:`LastLooked` drives a :class:`widgets.timeline_view.TimelineView` for the attach screen, which only
calls it at four moments (the screen wires, this decides):

* :meth:`LastLooked.visit` when the session comes on screen (attach, a restart, switching back to a
  followed session): the mark as it is then (``client.marks``: the place last looked at, and when) is
  this visit's starting point;
* :meth:`LastLooked.changed` after events, notes or approvals changed: as soon as the timeline holds an
  entry made after the mark (and before the visit began: what arrives while the operator watches is seen
  as it comes), the rule "── new since you last looked (14:02) ──" goes above it and the view opens there,
  following paused (the rule near the top; a view the operator had scrolled up to read stays where
  they left it, the rule below). Back after at least ``client.marks.AWAY_FOR_DIGEST``, the
  digest's three to six lines (``client.digest``) sit above the rule, kept up to date at most once a
  second. If nothing is new, nothing is shown and the view follows the end as usual;
* :meth:`LastLooked.tick`, about once a second: while the terminal has the focus (Textual's
  ``App.app_focus``) and the screen is shown, the newest entry in the window is what was looked at, and the
  mark moves there (only forward), written to its file when due;
* :meth:`LastLooked.leave` when the terminal loses the focus or the operator leaves: the mark is written
  now, flushed to the disk.

:meth:`LastLooked.start` (the screen calls it once mounted) does the timing itself, so the screen's only
other call is :meth:`LastLooked.changed`: it begins the first visit, ticks once a second on the view,
watches the app's focus (Textual's ``App.app_focus``, set by the terminal's focus in/out reports) and the
app's screen changes (``App.screen_change_signal``). Leaving for another screen (the list, the inbox,
another session) leaves the session; a dialog over it does not (it is not looked at meanwhile either);
coming back to it is a new visit. Losing the terminal's focus writes the mark; getting it back after at
least ``client.marks.AWAY_FOR_DIGEST`` is also a new visit (what came meanwhile gets the rule and the
digest), a shorter glance away is not (what came meanwhile is seen at the next tick).

A mark older than everything the timeline holds puts the rule at the top with how many events lie
between (where the server numbers its events) or "earlier than the loaded part", and the digest says it
covers only the loaded part.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from textual.screen import ModalScreen, Screen

from client.backends.base import Capabilities
from client.digest import Since, digest_lines, session_digest
from client.marks import AWAY_FOR_DIGEST, LIVE_SKEW, Looking, Mark, MarkStore, find_return, seen_place
from client.session import SessionCore
from widgets.timeline_render import RenderedLine, render_digest_line, render_since_rule
from widgets.timeline_view import TimelineView

__all__ = ["DIGEST_EVERY", "TICK", "LastLooked"]

DIGEST_EVERY = 1.0
"""Seconds between two recomputations of the digest shown above the rule (events keep arriving)."""

TICK = 1.0
"""Seconds between two looks at what is on screen (:meth:`LastLooked.tick`)."""


class LastLooked:
    """The mark and the rule of one session's attach screen (see the module docstring)."""

    def __init__(
        self,
        view: TimelineView,
        core: SessionCore,
        marks: MarkStore,
        *,
        clock: Callable[[], datetime],
        can: Capabilities | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.view = view
        self.core = core
        self.looking = Looking(marks, core.session_id, clock=clock, monotonic=monotonic)
        self._clock = clock
        self._monotonic = monotonic
        self._comment_kept = can.approve_comment if can is not None else True
        """Whether the server keeps an approval's comment (the digest says so where it keeps none)."""
        self.mark: Mark | None = None
        """Where the operator had last looked when this visit began (the rule's place)."""
        self._began: datetime | None = None
        self._placed = True
        self._digest: list[str] = []
        self._digest_due: float | None = None
        self._rule: tuple[str, bool, int | None] = ("", False, None)
        self._away = False
        """The operator left this session for another screen (the next time it is shown is a visit)."""
        self._blurred_at: datetime | None = None
        self._open = True
        self._opened_at: float | None = None
        self._reopens_due = 0  # the view is opened at the rule again once laid out (see ``relaid``)
        """The scroll the view was opened at the rule with, while the operator has not moved it since: the
        rest of a backlog arriving after the first new entry opens it there again (the rule near the top)."""
        """Open the view at the rule (it was following the end when the visit began; one the operator had
        scrolled up to read stays where they left it: quick switch keeps every session's scroll)."""

    @property
    def digest(self) -> list[str]:
        """The digest lines shown above the rule (empty: none shown)."""
        return list(self._digest)

    @property
    def settled(self) -> bool:
        """No recomputation of the digest is waiting (what is shown is what the session holds now), and
        no opening at the rule waits for the view to be laid out."""
        return self._digest_due is None and not self.placing

    @property
    def placing(self) -> bool:
        """The view waits to be laid out before it is opened at the rule again (see :meth:`relaid`)."""
        return self._reopens_due > 0

    def start(self) -> None:
        """The screen is mounted: the first visit begins, and from now on the mark keeps itself (ticks,
        the app's focus, screen changes: see the module docstring)."""
        view, app = self.view, self.view.app
        self.visit()
        view.set_interval(TICK, self._tick)
        view.watch(app, "app_focus", self._app_focus, init=False)
        app.screen_change_signal.subscribe(view, self._screen_changed)

    @property
    def shown(self) -> bool:
        """The session's screen is the one on top (no dialog over it)."""
        return self.view.is_attached and self.view.screen.is_current

    def _tick(self) -> None:
        self.tick(looking=self.view.app.app_focus and self.shown)

    def _app_focus(self, focused: bool) -> None:
        if not focused:
            self._blurred_at = self._clock()
            if self.shown:
                self.leave(saw=True)  # on screen until now, with the focus
            return
        blurred, self._blurred_at = self._blurred_at, None
        if blurred is not None and self.shown and self._clock() - blurred >= AWAY_FOR_DIGEST:
            self.visit()  # back at the terminal after a while: what came meanwhile is new

    def _screen_changed(self, screen: Screen[object]) -> None:
        mine = self.view.screen if self.view.is_attached else None
        if screen is mine:
            if self._away:
                self._away = False
                self.visit()
        elif not isinstance(screen, ModalScreen) and not self._away:
            self._away = True
            self.leave(saw=self.view.app.app_focus)

    def visit(self) -> None:
        """The session came on screen: the rule of the last visit goes, this one's is looked for."""
        self.looking.save(durable=False)
        self.mark = self.looking.mark
        self._began = self._clock()
        self._open = self.view.following
        self._placed = self.mark is None  # never looked at here: nothing to come back to
        self._opened_at = None
        self._digest = []
        self._digest_due = None
        if self.view.reader.rule_from is not None:
            self.view.set_since_rule(None)
        self.changed()

    def changed(self) -> None:
        """Events, notes or approvals changed: place the rule once there is something new to put it above;
        keep the digest above it current (at most once every :data:`DIGEST_EVERY` seconds)."""
        if not self._placed:
            self._place()
            return
        if self._opened_at is not None:
            self._open_again()
        if self._digest and self._digest_due is None:
            self._digest_due = self._monotonic() + DIGEST_EVERY

    def tick(self, *, looking: bool) -> None:
        """About once a second. ``looking``: the terminal has the focus and this screen is shown, so the
        newest entry in the window has been seen; the mark follows it and is written when due."""
        due = self._digest_due
        if due is not None and self._monotonic() >= due:
            self._digest_due = None
            self._show_digest()
        if looking:
            self._saw_window()
        self.looking.tick()

    def leave(self, *, saw: bool = False) -> None:
        """The focus went elsewhere, or the operator left the session: write the mark now, to the disk.
        ``saw``: what is in the window was on screen, with the focus, until now (it counts as seen)."""
        if saw:
            self._saw_window()
        self.looking.save(durable=True)

    # ------------------------------------------------------------------ internals

    def _saw_window(self) -> None:
        """The newest entry in the window has been seen: the mark moves there (only forward)."""
        entry = self.view.newest_visible_id
        self.looking.saw(seen_place(self.core.timeline, entry) if entry is not None else None)

    def _place(self) -> None:
        mark, began, timeline = self.mark, self._began, self.core.timeline
        if mark is None or began is None:
            self._placed = True
            return
        back = find_return(timeline, mark, before=began)
        if back.entry_id is None:
            last = timeline.last_place
            if last is not None and last.at > began + LIVE_SKEW:
                self._placed = True  # what comes now is watched as it comes: no rule this visit
            return
        self._placed = True
        looked = mark.looked_at.astimezone().strftime("%H:%M")
        self._rule = (looked, back.earlier_than_loaded, back.between)
        if self._clock() - mark.looked_at >= AWAY_FOR_DIGEST:
            self._digest = self._digest_lines(back.earlier_than_loaded)
        self.view.set_since_rule(back.entry_id, self._header)
        if self._open and self.view.open_at_rule():
            self._opened_at = self.view.scroll_y
            # Once laid out again (the "following paused" line under the timeline takes a line of it),
            # once more: the same place whether the backlog came in one batch or several.
            self.relaid()

    def relaid(self) -> None:
        """The view's window is being laid out anew (the "following paused" line, the screen's keys line
        mounted under it): once it is, a view opened at the rule and not moved since opens there again, as
        near the top as the new height allows. Each call waits for its own refresh: a second change of the
        window (the keys line mounted while the reopen for "following paused" still waits) is laid out after
        the first, and a reopen after the first alone left the view one line short of the end."""
        if self._opened_at is not None:
            self._reopens_due += 1
            self.view.call_after_refresh(self._reopen)

    def _reopen(self) -> None:
        self._reopens_due -= 1
        if self._opened_at is not None and self.view.is_attached:
            self._open_again()

    def _open_again(self) -> None:
        view = self.view
        cursor = view.cursor_entry
        if view.scroll_y != self._opened_at or cursor is None or cursor.id != view.reader.rule_at:
            self._opened_at = None  # the operator moved: the view stays where they put it
        elif view.open_at_rule():
            self._opened_at = view.scroll_y

    def _digest_lines(self, partial: bool) -> list[str]:
        mark = self.mark
        if mark is None:
            return []
        digest = session_digest(
            self.core,
            Since.mark(mark.place, mark.looked_at),
            self._clock(),
            comment_kept=self._comment_kept,
            partial="from the loaded part only" if partial else None,
        )
        return digest_lines(digest)

    def _show_digest(self) -> None:
        lines = self._digest_lines(self._rule[1])
        if lines != self._digest and self.view.reader.rule_at is not None:
            self._digest = lines
            self.view.update_since_rule()

    def _header(self, width: int) -> list[RenderedLine]:
        looked, earlier, between = self._rule
        lines: list[RenderedLine] = [render_digest_line(line, width) for line in self._digest]
        lines.append(render_since_rule(looked, width, earlier_than_loaded=earlier, between=between))
        return lines
