"""The body of a session's screen: the timeline beside a side column of approvals and notes.

Wide, the side column sits on the right. Narrow (:meth:`SessionBody.set_narrow`), it moves under the
timeline at full width, approvals only, and the notes list is a toggle (:meth:`SessionBody.toggle_notes`)
that takes the timeline's place, with one count line ("✉ Notes (3) · 1 waiting · p shows them") while
hidden. Under the timeline, a line says when following is paused and how much arrived below.
Its keys act wherever the focus is inside it: ``c`` folds the narration (also from the side panels),
``l`` wraps long lines, ``p`` toggles the notes list when narrow. Presentational only: it arranges the
widgets it is given and says what they show.
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
from widgets.notes_panel import NotesPanel
from widgets.timeline_view import TimelineView


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
    ]

    DEFAULT_CSS = """
    SessionBody { height: 1fr; }
    SessionBody #main { width: 1fr; height: 1fr; }
    SessionBody TimelineView { width: 1fr; height: 1fr; }
    SessionBody #follow-hint {
        display: none; height: 1; width: 1fr; padding: 0 1; background: $accent-muted; color: $text;
        text-style: bold;
    }
    SessionBody #follow-hint.-shown { display: block; }
    SessionBody #side { width: 40%; min-width: 30; max-width: 70; height: 1fr; }
    SessionBody #notes-hint { display: none; height: 1; padding: 0 1; color: $text-muted; }
    SessionBody.-narrow { layout: vertical; }
    SessionBody.-narrow #side { width: 1fr; min-width: 0; max-width: 100%; height: auto; max-height: 60%; }
    SessionBody.-narrow #side ApprovalsPanel { max-height: 100%; }
    SessionBody.-narrow #side ApprovalsPanel.-expanded { height: auto; }
    SessionBody.-narrow #side ApprovalsPanel.-expanded > OptionList { height: auto; max-height: 100%; }
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
        self.approvals = approvals
        self.notes = notes
        self._follow_hint = Static("", id="follow-hint")
        self._notes_hint = Static("", id="notes-hint")

    def compose(self) -> ComposeResult:
        with Vertical(id="main"):
            yield self.view
            yield self._follow_hint
        with Vertical(id="side"):
            yield self.approvals
            yield self.notes
            yield self._notes_hint

    def on_mount(self) -> None:
        self._show_notes_count()
        self.watch(self.view, "following", self._show_follow_hint)
        self.watch(self.view, "unseen", self._show_follow_hint)

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``p`` only where the notes list is a toggle (narrow)."""
        return self.has_class("-narrow") if action == "toggle_notes" else True

    @on(NotesPanel.Counted)
    def _show_notes_count(self, event: NotesPanel.Counted | None = None) -> None:
        if event is not None:
            event.stop()
        where = "p: back to the timeline" if self.showing_notes else "p shows them"
        self._notes_hint.update(Text(f"✉ {self.notes.border_title or 'Notes'} · {where}"))

    def _show_follow_hint(self) -> None:
        """Scrolled up to read: say that following is paused, how much arrived below, and how to resume."""
        unseen = self.view.unseen
        words = f"↓ {unseen} new · End to follow" if unseen else "⏸ following paused · End to follow"
        self._follow_hint.update(Text(words))
        self._follow_hint.set_class(not self.view.following, "-shown")
