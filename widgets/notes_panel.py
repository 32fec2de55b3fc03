"""Every note sent to the attached session, newest first, each with its state badge and times.

One ``OptionList`` option per note (a session has tens of notes, not thousands, so this is cheap), keyed
by ``note_id`` so a state change replaces that note's prompt in place and the highlight stays put. The
panel shows a table it does not own (one home for a note's state: ``client.session``). A note
shows: badge (icon + word, all eight states), when it was created, when it was delivered and through which
channel and turn, when a pending note expires, why an undeliverable one was given up, and its text (made
terminal-safe, built as ``rich.text.Text``, cut to a few lines). Until the session's lists have answered
(:meth:`NotesPanel.set_lists`) an empty panel says the notes are loading, not that none were sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from client.models import Note, NoteState
from client.present import relative_time, until
from client.session import ListsState
from client.textsafe import safe_line, safe_text
from widgets.badges import delivery_route, note_badge

TEXT_LINES = 3
"""Lines of note text shown per note; the rest is cut with an ellipsis."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def note_prompt(note: Note, now: datetime, then: str | None = None, by: str | None = None) -> Group:
    """One note: the badge line (with who sent it when it was a colleague, ``by``), then details and text
    indented (wrapped lines keep the indent), and for a delivered note what the agent did next ("then:
    ..."), when it did something."""
    head = Text()
    head.append_text(note_badge(note.state))
    head.append(f"  sent {relative_time(note.created_at, now)}", style="dim")
    if by:
        head.append(f" by {safe_line(by, 40)}", style="bold")
    text = Text()
    details: list[str] = []
    if note.delivered_at is not None:
        details.append(f"delivered {relative_time(note.delivered_at, now)}")
    route = delivery_route(note)
    if route:
        details.append(route)
    if note.state in (NoteState.PENDING, NoteState.CLAIMED) and note.expires_at is not None:
        details.append(f"expires in {until(note.expires_at, now)}")
    if note.state == NoteState.CANCELLED and note.cancelled_at is not None:
        details.append(f"withdrawn {relative_time(note.cancelled_at, now)}")
    if note.state == NoteState.EXPIRED and note.expired_at is not None:
        details.append(f"expired {relative_time(note.expired_at, now)}")
    if note.undeliverable_reason:
        details.append(f"reason: {safe_line(note.undeliverable_reason, 80)}")
    if details:
        text.append(" · ".join(details) + "\n", style="dim")
    body_lines = safe_text(note.text).splitlines() or [""]
    shown = body_lines[:TEXT_LINES]
    if len(body_lines) > TEXT_LINES:
        shown[-1] = shown[-1] + " …"
    text.append("\n".join(safe_line(line, 200) for line in shown))
    if then:
        text.append("\n↳ then: ", style="bold green")
        text.append(safe_line(then, 200), style="italic")
    return Group(head, Padding(text, (0, 0, 0, 2)))


class NotesPanel(OptionList):
    """Shows a notes table it does not own: ``notes`` (and ``thens``, the "then: ..." lines) are the
    caller's live mappings (``client.session.SessionCore``); :meth:`show` says which notes changed."""

    DEFAULT_CSS = """
    NotesPanel {
        height: 1fr;
        border: round $secondary;
        border-title-color: $text;
    }
    NotesPanel:focus { border: round $accent; }
    """

    @dataclass
    class Counted(Message):
        """The count line (``Notes (3) · 1 waiting``) changed; a narrow layout shows it when the list is
        hidden."""

        panel: NotesPanel
        title: str

    def __init__(
        self,
        notes: Mapping[str, Note] | None = None,
        thens: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], datetime] = _utcnow,
        colleague: Callable[[Note], str | None] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._colleague = colleague
        """The colleague who sent a note, by name (None: this operator, or nobody named)."""
        self._notes: Mapping[str, Note] = notes if notes is not None else {}
        self._thens: Mapping[str, str] = thens if thens is not None else {}
        self._listed: set[str] = set()
        """The note ids that have an option (a new one rebuilds the list, in order)."""
        self._shown_words: dict[str, tuple[str, ...]] = {}
        """Per note, the relative times its prompt shows; a tick redraws only the notes whose words aged."""
        self.lists: ListsState = "loaded"
        """Whether the session's notes are known yet (the attach screen says)."""
        self.border_title = "Notes"

    @property
    def notes(self) -> Mapping[str, Note]:
        """The notes shown, by id (the caller's table, read live)."""
        return self._notes

    @property
    def thens(self) -> Mapping[str, str]:
        """Under each read note, what the agent did next ("then: ..."), by note id."""
        return self._thens

    def on_mount(self) -> None:
        self._show_placeholder()
        self.show(self._notes)
        # "expires in 40s" and "sent 19s ago" age by themselves: check every second, redraw what changed.
        self.set_interval(1.0, self._redraw_aged)

    def set_lists(self, lists: ListsState) -> None:
        """Whether the notes asked for on attach have answered (loading, loaded, failed)."""
        if lists == self.lists:
            return
        self.lists = lists
        if self.is_mounted:
            self._show_placeholder()
            if self._notes:
                self._update_title()

    def _show_placeholder(self) -> None:
        if not self._notes:
            words = {
                "loading": "Loading the notes…",
                "failed": "The notes could not be loaded; new ones still show here.",
            }.get(self.lists, "No notes sent to this session yet.")
            self.set_options([Option(Text(words, style="dim italic"), disabled=True)])
            title = {"loading": "Notes · loading…", "failed": "Notes · not loaded"}.get(self.lists, "Notes")
            if title != self.border_title:
                self.border_title = title
                self.post_message(self.Counted(self, title))

    def show(self, changed: Iterable[str]) -> None:
        """Draw the notes whose state or "then" line changed: a note new to the list rebuilds it (newest
        first) with at most one layout, others are redrawn in place."""
        changed = [note_id for note_id in changed if note_id in self._notes]
        if not changed:
            return
        now = self._clock()
        if any(note_id not in self._listed for note_id in changed):
            highlighted = self.highlighted_note
            ordered = sorted(self._notes.values(), key=_created_key, reverse=True)
            self.set_options([Option(self._prompt(n, now), id=n.note_id) for n in ordered])
            self._listed = {n.note_id for n in ordered}
            if highlighted is not None and self.has_focus:
                # The operator is moving through the list: the cursor stays on their note.
                self.highlighted = self.get_option_index(highlighted.note_id)
            elif self.option_count:
                # Otherwise the newest note (the one just sent) is the one in view and under the cursor.
                self.highlighted = 0
                self.scroll_to(y=0, animate=False)
        else:
            for note_id in changed:
                self.replace_option_prompt(note_id, self._prompt(self._notes[note_id], now))
        self._update_title()

    def _prompt(self, note: Note, now: datetime) -> Group:
        by = self._colleague(note) if self._colleague is not None else None
        return note_prompt(note, now, self._thens.get(note.note_id), by)

    @property
    def highlighted_note(self) -> Note | None:
        """The note the cursor is on (what withdraw acts on)."""
        option = self.highlighted_option
        if option is None or option.id is None:
            return None
        return self._notes.get(option.id)

    @property
    def pending_notes(self) -> list[Note]:
        """Notes that can still be withdrawn, newest first."""
        pending = [n for n in self._notes.values() if n.state == NoteState.PENDING]
        return sorted(pending, key=_created_key, reverse=True)

    def withdraw_choice(self) -> Note | list[Note] | str | None:
        """Which note ``w`` means: the highlighted one while the list has the focus (or why not), else the
        only pending one; several pending notes to choose from; None when none is pending."""
        pending, highlighted = self.pending_notes, self.highlighted_note
        if not pending:
            return None
        if self.has_focus and highlighted is not None:
            if highlighted.state != NoteState.PENDING:
                return f"Only a pending note can be withdrawn; this one is {highlighted.state}."
            return highlighted
        return pending[0] if len(pending) == 1 else pending

    def _redraw_aged(self) -> None:
        now = self._clock()
        for note_id in self._listed:
            note = self._notes.get(note_id)
            if note is None:
                continue
            words = _time_words(note, now)
            if self._shown_words.get(note_id) != words:
                self._shown_words[note_id] = words
                self.replace_option_prompt(note_id, self._prompt(note, now))

    def _update_title(self) -> None:
        notes = self._notes.values()
        waiting = sum(1 for n in notes if n.state in (NoteState.PENDING, NoteState.CLAIMED))
        title = f"Notes ({len(self._notes)})"
        if waiting:
            title += f" · {waiting} waiting"
        self.border_title = title
        self.post_message(self.Counted(self, title))


def _time_words(note: Note, now: datetime) -> tuple[str, ...]:
    return (
        relative_time(note.created_at, now),
        relative_time(note.delivered_at, now),
        until(note.expires_at, now),
        relative_time(note.cancelled_at, now),
        relative_time(note.expired_at, now),
    )


def _created_key(note: Note) -> datetime:
    return note.created_at or datetime.min.replace(tzinfo=UTC)
