"""Ask for an optional comment before declining an approval (the agent sees it as the reason).

The dialog names what it decides (under its question: tool, session, the first line of the call; then
the session, tool and arguments in full) and, like every dialog that decides an approval, ignores Enter
and its Decline button for half a second after it opens (``tui.typeahead``). It never declines on an
Enter that ends typing begun before the operator could read it: typing that began less than half a
second after the dialog appeared (``tui.keypace.KeyPace.run_began``: a burst that started before it
opened is such typing), or a comment whose first letter came that soon. That Enter says to press Enter
again, and the next one declines.

Given the calls of a marked set (``many``: :class:`widgets.batch_view.ManyCalls`) instead of one approval,
the same dialog declines them all with the one comment: it names how many, which tools and sessions, the
highest risk and every risky call (a list that scrolls), and guards its Enter the same way.

The approval can be settled elsewhere while the operator is still typing (another operator, expiry, the
session ending). The dialog then stops being a decision: it says what happened, keeps the focus (so the
rest of what is being typed still lands in the box, never on the screen below as key commands), and when
closed hands the typed words back as :class:`KeptComment`, which the owner puts into the session's note
box as a draft, so they can still be sent as a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from client.models import Approval
from tui.keypace import pace_of
from tui.typeahead import Monotonic, TypeAheadGuard
from widgets.approvals_panel import call_title, decision_card
from widgets.batch_view import ManyCalls


@dataclass(frozen=True, slots=True)
class KeptComment:
    """The approval was settled elsewhere while the comment was typed: the words, to keep as a note."""

    text: str
    """What the operator typed (not empty)."""
    line: str
    """What happened to the approval, for the line that tells the operator."""


DeclineAnswer = str | KeptComment | None
"""The comment to decline with ("" for none), the words of a comment that decides nothing any more, or
None: cancelled, nothing declined."""


class DeclineCommentScreen(ModalScreen[DeclineAnswer]):
    """Dismisses with the comment ("" for none) on Enter or the Decline button, or None on Escape or
    Cancel (nothing is declined). The buttons are there for mouse users, who started with a click."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="decline.cancel", tooltip="Keep the approval pending")
    ]

    DEFAULT_CSS = """
    DeclineCommentScreen { align: center middle; }
    DeclineCommentScreen > Vertical {
        width: 76; max-width: 95%; height: auto; max-height: 90%;
        border: thick $error; background: $surface; padding: 1 2;
    }
    DeclineCommentScreen Static { margin-bottom: 1; }
    DeclineCommentScreen #detail-scroll { height: auto; max-height: 40vh; margin-bottom: 1; }
    DeclineCommentScreen #detail-scroll > Static { margin-bottom: 0; }
    DeclineCommentScreen #too-soon { display: none; color: $text-muted; }
    DeclineCommentScreen #too-soon.-shown { display: block; }
    DeclineCommentScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    DeclineCommentScreen Button { margin-left: 2; }
    DeclineCommentScreen.-settled > Vertical { border: thick $primary; }
    DeclineCommentScreen.-settled #decline { display: none; }
    """

    def __init__(
        self,
        approval: Approval | None,
        session: str = "",
        *,
        clock: Monotonic | None = None,
        many: ManyCalls | None = None,
    ) -> None:
        super().__init__()
        if approval is None and many is None:
            raise ValueError("a decline dialog is about an approval or a set of them")
        self.approval = approval
        self.many = many
        """The calls of a marked set, declined together (then ``approval`` is None)."""
        self.session = session
        self.subject = approval.id if approval is not None else None
        self.guard = TypeAheadGuard(clock)
        self.settled: str | None = None
        self._begun_unread = False
        """The comment's first letter came less than half a second after the dialog appeared."""
        self._typed = False

    def compose(self) -> ComposeResult:
        with Vertical():
            if self.many is not None:
                count = self.many.count
                question = Text(f"Decline these {count} calls?\n", style="bold")
                question.append_text(self.many.title())
                yield Static(question, id="question")
                with VerticalScroll(id="detail-scroll"):
                    yield Static(self.many.card(), id="detail")
                how = (
                    f"One optional comment, given with each of the {count}. Enter declines all, Esc cancels."
                )
                label = f"Decline {count} (Enter)"
            else:
                assert self.approval is not None
                question = Text("Decline this call?\n", style="bold")
                question.append_text(call_title(self.approval, self.session))
                yield Static(question, id="question")
                yield Static(decision_card(self.approval, self.session, named=True), id="detail")
                how = "Optional comment for the agent. Enter declines, Escape cancels."
                label = "Decline (Enter)"
            yield Static(Text(how, style="dim"), id="how")
            yield Input(placeholder="why not? (optional)", max_length=2000, id="comment")
            yield Static("", id="too-soon")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button(label, id="decline", variant="error", compact=True)

    def on_mount(self) -> None:
        self.guard.arm()
        self.query_one(Input).focus()
        self.watch(self.app, "app_focus", self._app_focus_changed, init=False)

    def _app_focus_changed(self, focused: bool) -> None:
        if focused:
            self.guard.arm()

    def settle(self, line: str) -> None:
        """The approval was decided elsewhere or expired: nothing to decline any more. The box keeps the
        focus and the words typed; closing it hands them back as a :class:`KeptComment`."""
        self.settled = line
        self.add_class("-settled")
        self.query_one("#question", Static).update(Text(f"Not declined: {line}", style="bold"))
        self.query_one("#how", Static).update(
            Text(
                "Your comment is kept as a draft note for this session. Enter or Escape closes.", style="dim"
            )
        )
        self.query_one("#cancel", Button).label = "Close (Esc)"

    def _comment(self) -> str:
        return self.query_one(Input).value.strip()

    def _close_settled(self) -> None:
        text = self._comment()
        self.dismiss(KeptComment(text, self.settled or "") if text else None)

    def _decline(self) -> None:
        if self.settled is not None:
            self._close_settled()
            return
        pace = pace_of(self.app)
        began = pace.run_began() if pace is not None else None
        if not self.guard.ready(began) or self._begun_unread:
            self._begun_unread = False
            line = self.query_one("#too-soon", Static)
            line.update(
                Text("Press Enter again to decline: this was typed as the dialog opened. Read it first.")
            )
            line.add_class("-shown")
            return
        self.dismiss(self._comment())

    def on_input_changed(self, event: Input.Changed) -> None:
        """The comment's first letter: typed before the dialog could be read, or after."""
        event.stop()
        if not self._typed and event.value:
            self._typed = True
            self._begun_unread = not self.guard.ready()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._decline()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "decline":
            self._decline()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        """Leave the approval pending (or, once it was settled elsewhere, keep the words as a note)."""
        if self.settled is not None:
            self._close_settled()
            return
        self.dismiss(None)
