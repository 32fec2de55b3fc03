"""The note composer: a ``TextArea`` where Enter sends and Shift+Enter / Ctrl+J insert a line break.

Key names as Textual reports them (see ``shared/notes/textual-facts.md``): plain Enter is ``enter``;
Shift+Enter is ``shift+enter`` under the kitty keyboard protocol or ``shift+\\r`` from xterm-style
terminals; Ctrl+J is ``ctrl+j`` everywhere, including tmux, which passes no Shift+Enter through. The Enter
family is handled in :meth:`Composer._on_key` with ``stop`` + ``prevent_default`` so ``TextArea`` never
inserts its own newline for a plain Enter; every other key is left to ``TextArea``. A bracketed paste of
multi-line text arrives as one ``Paste`` event and is inserted, never sent.

With a draft store the box keeps its text per session (``draft_key``): restored when it mounts, written
on every edit and flushed to the disk shortly after and on leaving (``client.drafts``). Drafts other
windows left for the session come back in the box too, each under a marker line, and the line above the
box says so (:class:`Composer.DraftsMerged`) until the text is edited.

The composer does not send anything itself: it posts :class:`Composer.Submitted` and the screen that owns
the session sends it (``client.steering``), telling the box when it left (:meth:`NoteBox.sending`) and what
the server answered (:meth:`NoteBox.answered`). The text stays in the box until it was sent, so a failed
send loses nothing.

While the box has the focus it says so unmistakably (a heavy border, its title "✎ Typing a note…", the
keys line "Enter send · Esc leave"): a letter typed there is text, never a key; without the focus its
title says how to come back (``n``).

The box never lets typed text become key commands. It is never made read-only (a read-only ``TextArea``
passes letter keys on to the screen's bindings, where ``a`` approves): while a note is on its way
(:attr:`Composer.sending`) the operator may go on typing, and only the sent text is taken out when the
server confirms; once nothing can be sent any more (:meth:`Composer.close`: the session ended or was
refused) the box keeps the focus and the draft, takes what is still typed, and says so in its title until
the operator leaves it with Escape.

Typing that landed where no text box had the focus is given to the box (:meth:`Composer.type_in`, by the
app's key pace, ``tui.keypace``) and :meth:`NoteBox.hint` says so on one line above it ("Typing goes to
the note box — Enter sends"); the line goes when the note is sent or the box loses the focus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static, TextArea

from client.drafts import DraftStore
from client.errors import AuthError, ClientError, TransportError
from client.notetext import NOTE_MAX_CHARS
from client.steering import OutcomeUnknown, SendOutcome, Sent
from client.textsafe import safe_line

MAX_NOTE_CHARS = NOTE_MAX_CHARS
"""The server refuses longer notes (Preloop's limit, ``client.notetext``); the counter turns red past it."""

DRAFT_SAVE_DELAY = 0.5
"""The box is written to its draft store on every edit (a killed app loses nothing); this long after an
edit (at most twice a second while typing), and at once on leaving, it is also flushed to the disk (see
client.drafts)."""

SEND_KEYS = frozenset({"enter"})
NEWLINE_KEYS = frozenset({"shift+enter", "shift+\r", "ctrl+j"})

HINT = "Enter send · Shift+Enter/Ctrl+J newline"
TITLE = "Note to the agent · n to write"
"""The box's title while it does not have the focus (letters act as keys then)."""
TYPING_TITLE = "✎ Typing a note to the agent: every key is text"
"""The box's title while it has the focus: whatever is typed goes into the note, never to a key."""
PLACEHOLDER = "Write a note… notes are read at the agent's next tool or model call"
TYPING_GOES = "Typing goes to the note box — Enter sends"
"""The line above the box when typing that reached no text box was given to it."""
ENTER_KEPT = "Not sent: that Enter came with typing begun before the box could be read. Read it — Enter sends"
"""The line above the box when an Enter that ended such typing was not taken."""


class Composer(TextArea):
    """A multi-line note editor with send-on-Enter and a live ``n/4096`` counter in its border."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Enter is handled in _on_key (it never reaches a binding); listed so the keys line says it.
        Binding("enter", "submit", "send", key_display="Enter", id="composer.enter", tooltip="Send the note"),
        Binding(
            "ctrl+s", "submit", "Send", show=False, id="composer.send", tooltip="Send the note (as Enter)"
        ),
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
    Composer:focus { border: thick $accent; border-title-style: bold; background: $boost; }
    Composer.-too-long { border: round $error; border-subtitle-color: $error; }
    Composer.-closed, Composer.-closed:focus { border: round $warning; border-title-color: $warning; }
    """

    @dataclass
    class Submitted(Message):
        """The user asked to send ``text`` (already known to be non-blank and within the limit)."""

        composer: Composer
        text: str

    @dataclass
    class DraftsMerged(Message):
        """The restored draft holds ``count`` drafts other windows left, each under a marker line."""

        composer: Composer
        count: int

    @dataclass
    class Refused(Message):
        """The user tried to send but the text cannot be sent (blank, or too long); ``reason`` says why."""

        composer: Composer
        reason: str

    def __init__(
        self,
        *,
        drafts: DraftStore | None = None,
        draft_key: str = "",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
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
        self._drafts = drafts
        self._draft_key = draft_key
        self._draft_timer: Timer | None = None
        self._typing = False
        self._update_counter()

    def on_mount(self) -> None:
        """The draft left for this box (an earlier attach, a crashed run) comes back, cursor at its end."""
        if self._drafts is None or self.text:
            return
        draft = self._drafts.get(self._draft_key)
        if draft:
            self.load_text(draft)
            self.move_cursor(self.document.end)
            merged = self._drafts.merged(self._draft_key)
            if merged:
                self.post_message(self.DraftsMerged(self, merged))

    def on_unmount(self) -> None:
        """Leaving: the draft is flushed to the disk."""
        self.save_draft()

    def save_draft(self) -> None:
        """Keep what is in the box, flushed to the disk (re-attach, restart and crash all find it)."""
        if self._draft_timer is not None:
            self._draft_timer.stop()
            self._draft_timer = None
        if self._drafts is not None:
            self._drafts.put(self._draft_key, self.text, durable=True)

    def type_in(self, text: str) -> None:
        """Keys typed where no text box had the focus, given to the box: at the end of the draft, as
        typed (the operator reads them there before anything is sent)."""
        self.move_cursor(self.document.end)
        self.insert(text)

    def keep(self, text: str) -> None:
        """Add ``text`` to the draft (words that can still be sent as a note), the cursor at the end."""
        current = self.text.rstrip("\n")
        self.load_text(f"{current}\n{text}" if current else text)
        self.move_cursor(self.document.end)
        self.save_draft()

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

    def on_focus(self) -> None:
        """Typing now goes here: the title says so."""
        self._typing = True  # (``has_focus`` follows only after this handler)
        self._update_counter()

    def on_blur(self) -> None:
        """Letters act as keys again: the title says how to come back."""
        self._typing = False
        self._update_counter()

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
        if self._drafts is not None:
            self._drafts.put(self._draft_key, self.text)  # every keystroke: a kill loses none
            if self._draft_timer is None:
                self._draft_timer = self.set_timer(DRAFT_SAVE_DELAY, self.save_draft)

    def _update_counter(self) -> None:
        count = self.char_count
        self.set_class(count > MAX_NOTE_CHARS, "-too-long")
        if self.closed is not None:
            kept = "your draft is kept" if self.text.strip() else "notes can no longer be sent"
            self.border_title = f"{self.closed} — {kept}; Esc to leave"
            self.border_subtitle = f"not sent · {count}/{MAX_NOTE_CHARS}"
            return
        self.border_title = TYPING_TITLE if self._typing else TITLE
        if self.sending:
            self.border_subtitle = f"sending… · {count}/{MAX_NOTE_CHARS}"
        else:
            self.border_subtitle = f"{HINT} · {count}/{MAX_NOTE_CHARS}"


class NoteBox(Vertical):
    """The composer with the line above it that says why a note was not sent (one place only: a toast
    would cover it). The line stays while it is true: a refusal of the text ("empty", "too long") until the
    text is edited; a server's reason until the next attempt, or until it stops being true (the connection
    is back: :meth:`connection_back`; the session ended: :meth:`clear`)."""

    DEFAULT_CSS = """
    NoteBox { height: auto; }
    NoteBox #send-error { display: none; height: auto; padding: 0 1; color: $error; }
    NoteBox #send-error.-shown { display: block; }
    NoteBox #send-error.-heads-up { color: $warning; }
    NoteBox #typing-hint { display: none; height: auto; padding: 0 1; color: $warning; text-style: bold; }
    NoteBox #typing-hint.-shown { display: block; }
    """

    def __init__(self, *, drafts: DraftStore | None, draft_key: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.composer = Composer(drafts=drafts, draft_key=draft_key, id="composer")
        self.line = Static("", id="send-error")
        self.typing_hint = Static("", id="typing-hint")
        """Where typed keys went ("Typing goes to the note box — Enter sends"), while it matters."""
        self.failure: ClientError | None = None
        """The server's reason the line reports (None: nothing, or a refusal of the text itself)."""
        self._said_over = ""

    def compose(self) -> ComposeResult:
        yield self.line
        yield self.typing_hint
        yield self.composer

    def hint(self, words: str) -> None:
        """Say on the line above the box where the typing went ("" hides it)."""
        self.typing_hint.update(Text(f"⌨ {words}" if words else ""))
        self.typing_hint.set_class(bool(words), "-shown")

    def on_descendant_blur(self) -> None:
        """The box lost the focus: where typing goes is no longer news."""
        self.hint("")

    def say(self, reason: str, failure: ClientError | None = None, *, heads_up: bool = False) -> None:
        """Show ``reason`` on the line ("" hides it); ``failure`` when a server's answer is the reason;
        ``heads_up`` for something to look at before sending, not a failure (⚠, in the warning colour)."""
        self.failure = failure
        self._said_over = self.composer.text
        self.line.update(Text(f"{'⚠' if heads_up else '✗'} {safe_line(reason, 300)}"))
        self.line.set_class(heads_up, "-heads-up")
        self.line.set_class(bool(reason), "-shown")

    def clear(self) -> None:
        """The line is no longer true (sent, or nothing can be sent any more and the box says so)."""
        self.say("")

    def connection_back(self) -> None:
        """The stream is live again: "not sent: unreachable" or "token refused" is no longer why."""
        if isinstance(self.failure, TransportError | AuthError):
            self.clear()

    def keep(self, text: str, why: str) -> None:
        """Words typed for something that no longer waits go into the box as a draft, shown and focused."""
        self.display = True
        self.composer.keep(text)
        self.composer.focus()
        self.say(f"{why} Your comment is in the note box: Enter sends it as a note.")

    def sending(self) -> None:
        """A note from this box left for the server (the screen sends it, ``client.steering``): Enter waits
        for the answer; typing goes on meanwhile."""
        self.composer.start_sending()  # never read-only meanwhile: that passes letters on to the keys

    def answered(self, text: str, outcome: SendOutcome | None) -> None:
        """The server's answer to ``text``: a note sent leaves the box (what was typed after it stays), one
        not sent stays with the reason on the line above it. None: no answer came (the screen went away)."""
        composer = self.composer
        composer.done_sending()
        if outcome is None:
            return
        if isinstance(outcome, Sent):
            composer.accept(text)
            composer.save_draft()  # the draft is gone with the note it became
            self.clear()
            self.hint("")
        else:
            said = "Maybe sent" if isinstance(outcome, OutcomeUnknown) else "Not sent"
            self.say(f"{said}, your text is kept: {outcome.error}", outcome.error)
            self.app.bell()

    def session_over(self, reason: str) -> bool:
        """Nothing can be sent any more (``reason``: "Session ended"). A box being typed into (or about to
        be: the focus may still be on its way) is never taken away from under the operator's fingers: it
        closes (keeps the focus, the draft and what is still typed) until Escape. Any other box goes. True
        when it went."""
        composer = self.composer
        focused = self.screen.focused
        if composer.closed is None and composer.can_focus and focused in (None, composer):
            composer.close(reason)
            if focused is None:
                composer.focus()
            return False
        if composer.closed is not None and composer.has_focus:
            return False  # stays until Escape
        self.display = False
        return True

    def leave(self) -> None:
        """Escape from the box: a closed one goes now (the operator has seen it is closed), draft saved."""
        if self.composer.closed is not None:
            self.composer.save_draft()
            self.display = False

    @on(Composer.DraftsMerged)
    def _drafts_merged(self, event: Composer.DraftsMerged) -> None:
        event.stop()
        if event.count == 1:
            said = "Another window's draft is below the ── line: send only what you mean to."
        else:
            said = f"{event.count} other windows' drafts are below ── lines: send only what you mean to."
        self.say(said, heads_up=True)

    @on(Composer.Refused)
    def _refused(self, event: Composer.Refused) -> None:
        event.stop()
        self.say(event.reason)

    @on(Composer.Changed)
    def _edited(self) -> None:
        # "Too long" / "empty" described the text as it was: once it is edited they are stale.
        if self.failure is None and self.composer.text != self._said_over:
            self.clear()
