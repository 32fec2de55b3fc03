"""A yes/no question as a modal (approve a risky call, withdraw a note: anything that cannot be undone).

A question that decides something ignores ``y`` (and its button) for half a second after it opens or the
terminal gets the focus back (``tui.typeahead``, counted to when the key was pressed): a ``y`` typed for
the note box or for the screen below must not answer a question the operator has not read. ``y`` runs
only when pressed alone (``tui.keypace``: in a burst of typing it is a letter, and the typing goes to the
note box). Letters the question does not take, typed into it, say the operator is typing, not reading:
the next ``y`` after them is not taken either (it says to press ``y`` again). A question about a call
names it under the question (``named``: tool, session, the first line of its arguments). A question
about an approval can be *settled* while it is open (approved elsewhere, expired): it then says so, keeps
the focus so the next keys do nothing, and any key closes it without deciding.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.keypace import pace_of
from tui.typeahead import Monotonic, TypeAheadGuard


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only on an explicit yes (``y`` or the button); Escape and ``n`` say no.

    ``subject`` names what the answer decides (an approval id) so the owner can :meth:`settle` it when
    the thing is decided elsewhere while the question is open."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Confirm"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no", tooltip="Cancel, change nothing"),
    ]

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 72; max-width: 95%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmScreen Static { margin-bottom: 1; }
    ConfirmScreen #detail-scroll { height: auto; max-height: 45vh; margin-bottom: 1; }
    ConfirmScreen #detail-scroll > Static { margin-bottom: 0; }
    ConfirmScreen #too-soon { display: none; color: $text-muted; }
    ConfirmScreen #too-soon.-shown { display: block; }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    ConfirmScreen.-settled > Vertical { border: thick $primary; }
    ConfirmScreen.-settled #yes { display: none; }
    """

    def __init__(
        self,
        question: str,
        detail: str | RenderableType = "",
        *,
        yes: str = "Yes",
        no: str = "No",
        subject: str | None = None,
        clock: Monotonic | None = None,
        named: Text | None = None,
        scroll_detail: bool = False,
    ) -> None:
        super().__init__()
        self.scroll_detail = scroll_detail
        """The detail may be long (a list of calls): it scrolls, and the buttons stay in view."""
        self.question = question
        self.named = named
        """What the answer decides, in a line or two under the question (a call: tool, session, command)."""
        self.detail = detail
        self.yes_label = yes
        self.no_label = no
        self.subject = subject
        self.guard = TypeAheadGuard(clock)
        self.settled: str | None = None
        """Set when the subject was decided elsewhere while the question was open: nothing to answer."""
        self._typed_at = False
        """Letters the question does not take were typed into it: the next yes is not taken."""

    def compose(self) -> ComposeResult:
        with Vertical():
            question = Text(self.question, style="bold")
            if self.named is not None:
                question.append("\n")
                question.append_text(self.named)
            yield Static(question, id="question")
            if self.detail:
                detail = Text(self.detail) if isinstance(self.detail, str) else self.detail
                if self.scroll_detail:
                    with VerticalScroll(id="detail-scroll"):
                        yield Static(detail, id="detail")
                else:
                    yield Static(detail, id="detail")
            yield Static("", id="too-soon")
            with Horizontal():
                yield Button(f"{self.no_label} (n)", id="no")
                yield Button(f"{self.yes_label} (y)", id="yes", variant="warning")

    def on_mount(self) -> None:
        self.guard.arm()
        self.query_one("#no", Button).focus()
        # The terminal window got the focus back: what is typed next may have been meant for another window.
        self.watch(self.app, "app_focus", self._app_focus_changed, init=False)

    def _app_focus_changed(self, focused: bool) -> None:
        if focused:
            self.guard.arm()

    def settle(self, line: str) -> None:
        """The subject was decided elsewhere: say so; ``y`` no longer decides anything, any key closes."""
        self.settled = line
        self.add_class("-settled")
        self.query_one("#question", Static).update(Text(line, style="bold"))
        self.query_one("#no", Button).label = "Close (Esc)"
        self.query_one("#no", Button).focus()

    def on_key(self, event: events.Key) -> None:
        """A letter the question does not take (not y, not n): the operator is typing, not reading."""
        if event.is_printable and event.key not in ("y", "n"):
            self._typed_at = True

    def action_answer(self, answer: bool) -> None:
        """Close with the user's answer (a yes typed too soon after opening, or after letters typed into
        the question, is not taken)."""
        if self.settled is not None:
            self.dismiss(False)
            return
        if answer:
            pace = pace_of(self.app)
            if not self.guard.ready(pace.pressed_at() if pace is not None else None):
                self._typed_at = False
                self._not_taken("this question had only just opened")
                return
            if self._typed_at:
                self._typed_at = False
                self._not_taken("letters were typed into this question")
                return
        self.dismiss(answer)

    def _not_taken(self, why: str) -> None:
        line = self.query_one("#too-soon", Static)
        line.update(Text(f"Press {self.yes_label.lower()} again: {why}."))
        line.add_class("-shown")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id == "yes")
