"""Every note sent to the attached session, newest first, each with its state badge and times.

One ``OptionList`` option per note (a session has tens of notes, not thousands, so this is cheap), keyed
by ``note_id`` so a state change replaces that note's prompt in place and the highlight stays put. A note
shows: badge (icon + word, all eight states), when it was created, when it was delivered and through which
channel and turn, when a pending note expires, why an undeliverable one was given up, and its text (made
terminal-safe, built as ``rich.text.Text``, cut to a few lines).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from client.models import Note, NoteState
from client.present import relative_time
from client.textsafe import safe_line, safe_text
from widgets.badges import delivery_route, note_badge, until

TEXT_LINES = 3
"""Lines of note text shown per note; the rest is cut with an ellipsis."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def note_prompt(note: Note, now: datetime, then: str | None = None) -> Group:
    """One note: the badge line, then details and text indented (wrapped lines keep the indent), and for a
    delivered note what the agent did next ("then: ..."), when it did something."""
    head = Text()
    head.append_text(note_badge(note.state))
    head.append(f"  sent {relative_time(note.created_at, now)}", style="dim")
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
    """Holds the notes by id; ``upsert`` is the only way in, so events and the initial list agree."""

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

    def __init__(self, *, clock: Callable[[], datetime] = _utcnow, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self.notes: dict[str, Note] = {}
        self.thens: dict[str, str] = {}
        """note_id -> what the agent did first after reading it (one line, raw text)."""
        self._shown_words: dict[str, tuple[str, ...]] = {}
        """Per note, the relative times its prompt shows; a tick redraws only the notes whose words aged."""
        self.border_title = "Notes"

    def on_mount(self) -> None:
        self._show_placeholder()
        # "expires in 40s" and "sent 19s ago" age by themselves: check every second, redraw what changed.
        self.set_interval(1.0, self._redraw_aged)

    def _show_placeholder(self) -> None:
        if not self.notes:
            hint = Text("No notes sent to this session yet.", style="dim italic")
            self.set_options([Option(hint, disabled=True)])

    def upsert_many(self, notes: Iterable[Note]) -> None:
        """Merge a batch (``list_notes`` on attach, or one frame of events) with at most one rebuild."""
        now = self._clock()
        added = False
        replaced: list[Note] = []
        for note in notes:
            known = self.notes.get(note.note_id)
            was_terminal = known is not None and known.note_state is not None and known.note_state.terminal
            if was_terminal and (note.note_state is None or not note.note_state.terminal):
                continue  # a late or replayed event must not move a finished note backwards
            self.notes[note.note_id] = note
            if known is None:
                added = True
            else:
                replaced.append(note)
        if added:
            highlighted = self.highlighted_note
            ordered = sorted(self.notes.values(), key=_created_key, reverse=True)
            self.set_options([Option(self._prompt(n, now), id=n.note_id) for n in ordered])
            if highlighted is not None and self.has_focus:
                # The operator is moving through the list: the cursor stays on their note.
                self.highlighted = self.get_option_index(highlighted.note_id)
            elif self.option_count:
                # Otherwise the newest note (the one just sent) is the one in view and under the cursor.
                self.highlighted = 0
                self.scroll_to(y=0, animate=False)
        else:
            for note in replaced:
                self.replace_option_prompt(note.note_id, self._prompt(note, now))
        if added or replaced:
            self._update_title()

    def set_then(self, note_id: str, line: str) -> None:
        """Show under a delivered note what the agent did next (its first text or tool call after it)."""
        if self.thens.get(note_id) == line:
            return
        self.thens[note_id] = line
        note = self.notes.get(note_id)
        if note is not None:
            self.replace_option_prompt(note_id, self._prompt(note, self._clock()))

    def _prompt(self, note: Note, now: datetime) -> Group:
        return note_prompt(note, now, self.thens.get(note.note_id))

    def upsert(self, note: Note) -> None:
        """Add a new note or replace a known one (newest wins; terminal states never revert)."""
        self.upsert_many([note])

    @property
    def highlighted_note(self) -> Note | None:
        """The note the cursor is on (what withdraw acts on)."""
        option = self.highlighted_option
        if option is None or option.id is None:
            return None
        return self.notes.get(option.id)

    @property
    def pending_notes(self) -> list[Note]:
        """Notes that can still be withdrawn, newest first."""
        pending = [n for n in self.notes.values() if n.state == NoteState.PENDING]
        return sorted(pending, key=_created_key, reverse=True)

    def _redraw_aged(self) -> None:
        now = self._clock()
        for note in self.notes.values():
            words = _time_words(note, now)
            if self._shown_words.get(note.note_id) != words:
                self._shown_words[note.note_id] = words
                self.replace_option_prompt(note.note_id, self._prompt(note, now))

    def _update_title(self) -> None:
        waiting = sum(1 for n in self.notes.values() if n.state in (NoteState.PENDING, NoteState.CLAIMED))
        title = f"Notes ({len(self.notes)})"
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
