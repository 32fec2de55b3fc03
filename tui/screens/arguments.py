"""The whole of an approval's call, to read before deciding it: ``x`` in the inbox and on the attach screen.

The cards show the first lines of a call's preview (``client.preview``: a diff, a command, the
arguments) and say how many follow; this modal shows all of them, with the call's session, tool, risk,
why it is asked (``client.why``: the agent's reasoning, the server's summary, the rule, what the server
redacted) and, once read, who decided it and who has looked at it (``Backend.approval_trail``: Preloop
names them only in the approval's history; opening this view is a look, which Preloop records). ``o``
fetches the call's arguments from before the server redacted them (``Backend.original_args``: Preloop keeps
them while the approval is pending, when its rule says so) and shows them in place of the redacted ones,
saying so. Its lines are drawn as they scroll into view (``widgets.call_preview``), so a 10,000-line
``Write`` opens at once. It decides nothing: Escape (or ``x`` again) closes it, and ``a`` / ``d`` on the
screen below decide (a risky call asks first, naming it again).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from client.errors import ClientError
from client.models import Approval
from client.present import trail_rows
from client.preview import approval_preview
from client.steering import Steering
from client.why import redaction
from widgets.approvals_panel import decision_card
from widgets.call_preview import CallPreviewView

Look = Callable[[Approval], Awaitable[Approval]]
"""Reads the approval as the server has it now, with who decided and who looked."""
Originals = Callable[[str], Awaitable[dict[str, Any]]]
"""Fetches an approval's arguments from before the server redacted them."""


class ArgumentsScreen(ModalScreen[None]):
    """One approval's call in full; closes on Escape or ``x``; ``o`` shows a redacted call's originals."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,x", "close", "Close", id="arguments.close", tooltip="Back to the list"),
        Binding(
            "o",
            "originals",
            "Originals",
            id="arguments.originals",
            tooltip="Fetch the arguments from before the server redacted them (kept until decided)",
        ),
    ]

    DEFAULT_CSS = """
    ArgumentsScreen { align: center middle; }
    ArgumentsScreen > Vertical {
        width: 100; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2;
    }
    ArgumentsScreen #card { height: auto; margin-bottom: 1; }
    ArgumentsScreen #originals { height: auto; display: none; color: $warning; }
    ArgumentsScreen.-originals #originals { display: block; }
    ArgumentsScreen CallPreviewView { height: auto; max-height: 1fr; }
    ArgumentsScreen #how { margin-top: 1; color: $text-muted; }
    """

    def __init__(
        self,
        approval: Approval,
        session: str,
        *,
        where: str | None = "from the list",
        look: Look | None = None,
        originals: Originals | None = None,
        by_you: Callable[[Approval], bool] | None = None,
        names_decider: bool = True,
    ) -> None:
        super().__init__()
        self.approval = approval
        self.session = session
        self.where = where
        """Where the call is decided, said below it (None: read-only, nowhere)."""
        self._look = look
        self._originals = originals
        self._by_you = by_you
        self._names_decider = names_decider
        self.card = self._card()
        """The call named: its session, tool, risk, why it is asked, who decided (its lines are below)."""
        self.preview = approval_preview(approval)
        """What the call will change, every line of it (the view draws those on screen)."""
        self.showing_originals = False

    def _card(self) -> Any:
        you = self._by_you(self.approval) if self._by_you is not None else False
        trail = trail_rows(self.approval, you=you, names_decider=self._names_decider)
        return decision_card(self.approval, self.session, preview=False, trail=trail)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("The whole call", style="bold"))
            yield Static(self.card, id="card")
            yield Static("", id="originals")
            yield CallPreviewView(self.preview, id="call")
            yield Static(self._how(), id="how")

    def _how(self, said: str | None = None) -> Text:
        lines = f"{self.preview.line_count:,} line{'s' if self.preview.line_count != 1 else ''}"
        decide = f"a approves and d declines it {self.where}" if self.where else "nothing is decided here"
        how = Text(f"{lines}. Escape closes; {decide}.")
        if self.check_action("originals", ()) and not self.showing_originals:
            how.append(" o shows the arguments from before the server redacted them.")
        if said:
            how.append("\n")
            how.append(said, style="bold")
        return how

    def on_mount(self) -> None:
        self.query_one(CallPreviewView).focus()
        if self._look is not None:
            self.look()

    @work(group="look", exclusive=True)
    async def look(self) -> None:
        """Read the approval as the server has it now, with who decided and who looked (a failure keeps
        what the card shows)."""
        assert self._look is not None
        try:
            fresh = await self._look(self.approval)
        except ClientError:
            return
        if fresh.id != self.approval.id:
            return
        self.approval = fresh
        self.card = self._card()
        self.query_one("#card", Static).update(self.card)
        self.query_one("#how", Static).update(self._how())
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``o`` only for a call the server redacted and keeps the originals of, while it is pending."""
        if action == "originals":
            hidden = redaction(self.approval)
            kept = hidden is not None and hidden.originals_kept and self.approval.pending
            return True if kept and self._originals is not None and not self.showing_originals else None
        return True

    @work(group="originals", exclusive=True)
    async def action_originals(self) -> None:
        """Fetch the call's arguments from before the server redacted them and show them instead, saying
        so; the server's sentence when it has none (decided meanwhile, or never kept)."""
        assert self._originals is not None
        how = self.query_one("#how", Static)
        try:
            args = await self._originals(self.approval.id)
        except ClientError as exc:
            how.update(self._how(f"No originals: {exc}"))
            return
        self.showing_originals = True
        self.preview = approval_preview(self.approval.model_copy(update={"tool_args": args}))
        old = self.query_one(CallPreviewView)
        view = CallPreviewView(self.preview, id="call")
        await old.remove()
        await self.query_one(Vertical).mount(view, after=self.query_one("#originals"))
        view.focus()
        self.query_one("#originals", Static).update(
            Text("Original arguments, before the server redacted them (kept only until it is decided):")
        )
        self.add_class("-originals")
        how.update(self._how())
        self.refresh_bindings()

    def action_close(self) -> None:
        """Back to the list; nothing is decided here."""
        self.dismiss(None)


def whole_call(approval: Approval, session: str, steering: Steering, *, where: str | None) -> ArgumentsScreen:
    """The whole-call view of ``approval`` as the inbox and the attach screen open it: reading it is a look
    (the approval is read again, with its trail), ``o`` asks the same server for the originals, and "you"
    is the operator of this app (``steering.decisions``)."""
    backend = steering.backend

    async def look(shown: Approval) -> Approval:
        return await backend.approval_trail(await backend.get_approval(shown.id))

    can = backend.capabilities
    return ArgumentsScreen(
        approval,
        session,
        where=where,
        look=look,
        originals=backend.original_args if can.original_args else None,
        by_you=steering.decisions.by_you,
        names_decider=can.names_decider,
    )
