"""The body of a session's screen: the timeline beside a side column of approvals and notes.

Wide, the side column sits on the right. Narrow (:meth:`SessionBody.set_narrow`), it moves under the
timeline at full width, approvals only, and the notes list is a toggle (:meth:`SessionBody.toggle_notes`)
that takes the timeline's place, with one count line ("✉ Notes (3) · 1 waiting · p shows them") while
hidden. The timeline sits in a :class:`~widgets.timeline_pane.TimelinePane` (the view's name above it, the
follow hint and the find line under it), which does what the timeline's keys ask.

Its keys act wherever the focus is inside it (the timeline, the find line, the side panels) and never from
the note box, which is not inside it: ``c`` folds the narration (also from the side panels), ``l`` wraps
long lines, ``p`` toggles the notes list when narrow; ``/`` finds, ``f`` cycles the views, ``]`` / ``[``
jump to the next / previous problem, ``y`` copies the highlighted entry (while the timeline has the focus)
and Escape closes an open find line whose input no longer has the focus. Presentational only: it arranges
the widgets it is given and says what they show.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from widgets.approvals_panel import ApprovalsPanel
from widgets.keys_line import COMPACT_BELOW
from widgets.notes_panel import NotesPanel
from widgets.timeline_pane import PANE_ACTIONS, TimelinePane
from widgets.timeline_view import TimelineView

SPARE_KEYS_LINE = 80
"""From this many columns it lists ``/ Find`` and ``f View`` while no approval (``a`` / ``d``) is listed."""


class SessionBody(Horizontal):
    """The timeline (``view``) and the side column (``approvals``, ``notes``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "toggle_commentary", "Commentary", id="attach.commentary", tooltip="Collapse narration"),
        Binding(
            "p",
            "toggle_notes",
            "Notes",
            show=False,
            id="attach.notes",
            tooltip="Narrow: the notes or the timeline",
        ),
        Binding("l", "toggle_wrap", "Wrap", show=False, id="attach.wrap", tooltip="Wrap long tool lines"),
        # / and f are listed in the keys line where it has room for them (see _keys_line_has_room); where it
        # has not, their hidden twins act the same.
        Binding(
            "slash", "find(True)", "Find", key_display="/", id="attach.find", tooltip="Find in the timeline"
        ),
        Binding("slash", "find", "Find", show=False, id="attach.find_unlisted"),
        Binding(
            "f", "cycle_view(True)", "View", id="attach.view", tooltip="Everything/problems/steering/tools"
        ),
        Binding("f", "cycle_view", "View", show=False, id="attach.view_unlisted"),
        Binding("right_square_bracket", "next_problem", "Next problem", show=False, id="attach.next_problem"),
        Binding(
            "left_square_bracket",
            "previous_problem",
            "Previous problem",
            show=False,
            id="attach.prev_problem",
        ),
        Binding(
            "y", "copy_entry", "Copy", show=False, id="attach.copy", tooltip="Copy the highlighted entry"
        ),
        Binding("escape", "close_find", "Close find", show=False, id="attach.close_find"),
    ]

    DEFAULT_CSS = """
    SessionBody { height: 1fr; }
    SessionBody #side { width: 40%; min-width: 30; max-width: 70; height: 1fr; }
    SessionBody #notes-hint { display: none; height: 1; padding: 0 1; color: $text-muted; }
    SessionBody.-narrow { layout: vertical; }
    SessionBody.-narrow #side { width: 1fr; min-width: 0; max-width: 100%; height: auto; max-height: 60%; }
    SessionBody.-narrow #side ApprovalsPanel { max-height: 100%; }
    SessionBody.-narrow #notes { display: none; }
    SessionBody.-narrow #notes-hint { display: block; }
    SessionBody.-narrow.-show-notes #main { display: none; }
    SessionBody.-narrow.-show-notes #side { height: 1fr; max-height: 100%; }
    SessionBody.-narrow.-show-notes #notes { display: block; }
    """

    def __init__(
        self, view: TimelineView, approvals: ApprovalsPanel, notes: NotesPanel, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.view = view
        self.pane = TimelinePane(view, id="main")
        self.approvals = approvals
        self.notes = notes
        self._notes_hint = Static("", id="notes-hint")
        self._had_room = True

    def compose(self) -> ComposeResult:
        yield self.pane
        with Vertical(id="side"):
            yield self.approvals
            yield self.notes
            yield self._notes_hint

    def on_mount(self) -> None:
        self._show_notes_count()

    def on_resize(self) -> None:
        room = self._keys_line_has_room()
        if room != self._had_room:  # (a new approval count re-checks the keys by itself)
            self._had_room = room
            self.screen.refresh_bindings()

    @property
    def showing_notes(self) -> bool:
        """Narrow, with the notes list in the timeline's place."""
        return self.has_class("-show-notes")

    def set_narrow(self, narrow: bool) -> bool:
        """Stack the side column under the timeline (or back beside it); True when that changed."""
        if narrow == self.has_class("-narrow"):
            return False
        self.set_class(narrow, "-narrow")
        if not narrow:
            self.remove_class("-show-notes")
        return True

    def action_toggle_notes(self) -> None:
        """Narrow: the notes list takes the timeline's place, or gives it back, and the focus with it (left
        on the hidden timeline, after a dialog it would land in the note box)."""
        self.toggle_class("-show-notes")
        (self.notes if self.showing_notes else self.view).focus()
        self._show_notes_count()
        self.screen.refresh_bindings()

    def action_toggle_wrap(self) -> None:
        """Long tool and approval lines are cut to the width; wrap them in full, or cut them again."""
        self.view.wrap_lines = not self.view.wrap_lines

    def action_toggle_commentary(self) -> None:
        """``c`` from the side panels too (the timeline answers ``c`` itself when it has the focus)."""
        self.view.action_toggle_commentary()

    async def action_find(self, listed: bool = False) -> None:
        """``/``: the find line under the timeline."""
        await self.pane.open_find()

    def action_close_find(self) -> None:
        """Escape while the find line is open but not being typed into."""
        self.pane.close_find()

    def action_cycle_view(self, listed: bool = False) -> None:
        """``f``: everything, problems only, steering only, tools only."""
        self.pane.cycle_view()

    def action_next_problem(self) -> None:
        """``]``: the next problem below the highlighted entry."""
        self.pane.jump_problem(forward=True)

    def action_previous_problem(self) -> None:
        """``[``: the previous problem above it."""
        self.pane.jump_problem(forward=False)

    def action_copy_entry(self) -> None:
        """``y``: the highlighted entry to the clipboard."""
        self.pane.copy_entry()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``p`` only where the notes list is a toggle (narrow); the timeline's keys only while it is shown
        and where they act (:meth:`TimelinePane.offers`)."""
        if action == "toggle_notes":
            return self.has_class("-narrow")
        if action in PANE_ACTIONS:
            if action in ("find", "cycle_view") and bool(parameters) != self._keys_line_has_room():
                return False  # the listed one where the keys line has room, else its unlisted twin
            return not self.showing_notes and self.pane.offers(action)
        return True

    def _keys_line_has_room(self) -> bool:
        """Whether the keys line can list ``/ Find`` and ``f View`` and still show ``? Help`` at its end:
        from :data:`~widgets.keys_line.COMPACT_BELOW` columns, and from :data:`SPARE_KEYS_LINE` while no
        approval's keys (``a`` / ``d``, offered while one waits and the panel may decide) are in it."""
        width = self.app.size.width
        if width >= COMPACT_BELOW:
            return True
        deciding = self.approvals.count > 0 and not self.approvals.read_only
        return width >= SPARE_KEYS_LINE and not deciding

    @on(NotesPanel.Counted)
    def _show_notes_count(self, event: NotesPanel.Counted | None = None) -> None:
        if event is not None:
            event.stop()
        where = "p: back to the timeline" if self.showing_notes else "p shows them"
        # One line across the column whatever it says: no layout of the screen (when the lists answer
        # during a catch-up, a layout and a repaint of its own, for a line hidden in the wide layout).
        self._notes_hint.update(Text(f"✉ {self.notes.border_title or 'Notes'} · {where}"), layout=False)
