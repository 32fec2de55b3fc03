"""The note composer: a ``TextArea`` where Enter sends and Shift+Enter / Ctrl+J insert a line break.

Key names as Textual reports them (see ``shared/notes/textual-facts.md``): plain Enter is ``enter``;
Shift+Enter is ``shift+enter`` under the kitty keyboard protocol or ``shift+\\r`` from xterm-style
terminals; Ctrl+J is ``ctrl+j`` everywhere, including tmux, which passes no Shift+Enter through. The Enter
family is handled in :meth:`Composer._on_key` with ``stop`` + ``prevent_default`` so ``TextArea`` never
inserts its own newline for a plain Enter; every other key is left to ``TextArea``. A bracketed paste of
multi-line text arrives as one ``Paste`` event and is inserted, never sent.

The composer does not send anything itself: it posts :class:`Composer.Submitted` and the screen that owns
the backend decides. The text stays in the box until the screen calls :meth:`Composer.accept` (sent), so a
failed send loses nothing.

The box never lets typed text become key commands. It is never made read-only (a read-only ``TextArea``
passes letter keys on to the screen's bindings, where ``a`` approves): while a note is on its way
(:attr:`Composer.sending`) the operator may go on typing, and only the sent text is taken out when the
server confirms; once nothing can be sent any more (:meth:`Composer.close`: the session ended or was
refused) the box keeps the focus and the draft, takes what is still typed, and says so in its title until
the operator leaves it with Escape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

MAX_NOTE_CHARS = 4096
"""The server refuses longer notes (Preloop's limit); the counter turns red past it."""

SEND_KEYS = frozenset({"enter"})
NEWLINE_KEYS = frozenset({"shift+enter", "shift+\r", "ctrl+j"})

HINT = "Enter send · Shift+Enter/Ctrl+J newline"
TITLE = "Note to the agent"
PLACEHOLDER = "Write a note… notes are read at the agent's next tool or model call"


class Composer(TextArea):
    """A multi-line note editor with send-on-Enter and a live ``n/4096`` counter in its border."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Send", id="composer.send", tooltip="Send the note (same as Enter)"),
    ]

    DEFAULT_CSS = """
    Composer {
        height: auto;
        min-height: 3;
        max-height: 8;
        border: round $secondary;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
    }
    Composer:focus { border: round $accent; }
    Composer.-too-long { border: round $error; border-subtitle-color: $error; }
    Composer.-closed, Composer.-closed:focus { border: round $warning; border-title-color: $warning; }
    """

    @dataclass
    class Submitted(Message):
        """The user asked to send ``text`` (already known to be non-blank and within the limit)."""

        composer: Composer
        text: str

    @dataclass
    class Refused(Message):
        """The user tried to send but the text cannot be sent (blank, or too long); ``reason`` says why."""

        composer: Composer
        reason: str

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(
            "",
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            placeholder=PLACEHOLDER,
            id=id,
            classes=classes,
        )
        self.border_title = TITLE
        self.sending = False
        """A note from this box is on its way: Enter does not send it twice."""
        self.closed: str | None = None
        """Why nothing can be sent from this box any more (the session ended); None while it can."""
        self._update_counter()

    @property
    def char_count(self) -> int:
        """Characters as the server counts them (Python ``len``)."""
        return len(self.text)

    async def _on_key(self, event: events.Key) -> None:
        if not self.read_only and event.key in SEND_KEYS:
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        if not self.read_only and event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        await super()._on_key(event)

    def close(self, reason: str) -> None:
        """Nothing can be sent from here any more (``reason`` says why, e.g. "session ended"): the box keeps
        its text and whatever is still typed, and its title says so until the operator leaves it."""
        self.closed = reason
        self.placeholder = ""
        self.add_class("-closed")
        self._update_counter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Ctrl+S is not offered once nothing can be sent (Enter then says why)."""
        if action == "submit":
            return self.closed is None
        return super().check_action(action, parameters)

    def action_submit(self) -> None:
        """Ask the owner to send the current text, unless there is nothing sendable."""
        if self.read_only or self.sending:
            return
        if self.closed is not None:
            self.post_message(self.Refused(self, f"Not sent: {self.closed}; your draft is kept."))
            return
        text = self.text
        if not text.strip():
            self.post_message(self.Refused(self, "Nothing to send: the note is empty."))
            return
        if len(text) > MAX_NOTE_CHARS:
            self.post_message(
                self.Refused(self, f"Too long: {len(text)}/{MAX_NOTE_CHARS} characters; shorten it to send.")
            )
            return
        self.post_message(self.Submitted(self, text))

    def start_sending(self) -> None:
        """A note from this box left for the server: Enter waits for its answer; typing goes on."""
        self.sending = True
        self._update_counter()

    def done_sending(self) -> None:
        """The server answered (either way): Enter sends again."""
        self.sending = False
        self._update_counter()

    def accept(self, sent: str | None = None) -> None:
        """The note was sent: take its text out of the box, keeping what was typed while it was on its way
        (``sent`` is the text that left; without it the box is emptied)."""
        text = self.text
        if sent is None or text == sent:
            self.clear()
            return
        if not text.startswith(sent):
            return  # edited inside the sent part meanwhile: keep it all, the operator decides
        rest = text[len(sent) :].lstrip("\n")
        self.load_text(rest)
        self.move_cursor(self.document.end)

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        self._update_counter()

    def _update_counter(self) -> None:
        count = self.char_count
        self.set_class(count > MAX_NOTE_CHARS, "-too-long")
        if self.closed is not None:
            kept = "your draft is kept" if self.text.strip() else "notes can no longer be sent"
            self.border_title = f"{self.closed} — {kept}; Esc to leave"
            self.border_subtitle = f"not sent · {count}/{MAX_NOTE_CHARS}"
        elif self.sending:
            self.border_subtitle = f"sending… · {count}/{MAX_NOTE_CHARS}"
        else:
            self.border_subtitle = f"{HINT} · {count}/{MAX_NOTE_CHARS}"
