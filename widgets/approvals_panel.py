"""Pending approvals of the attached session: tool, summary and what the call will change, with buttons.

Each approval is a card: ``⚑ tool · summary [risk]``, then why it is asked (``client.why``: the agent's
reasoning, the rule that asked, what the server redacted, each span of it standing out), then the call's
preview (``client.preview``: a coloured diff for a file edit, the command for a shell call, else the
arguments), its first lines and "… N more lines (x shows all)"; ``x`` (or the button) asks the screen to
show the whole call (where ``o`` fetches the originals of a redacted call). Agent text
is made terminal-safe and shown as ``rich.text.Text``. The panel shows a table it does not own
(``client.session``'s pending approvals, read live; :meth:`ApprovalsPanel.sync` after it changed). The
panel only *asks* (it posts :class:`ApprovalsPanel.Decide` and :class:`ApprovalsPanel.ShowCall`); the
screen that owns the backend decides, so the panel works against any backend and in tests without one.

Until the session's lists have answered (:meth:`ApprovalsPanel.set_lists`) the panel is shown with one line
saying the pending approvals are loading (or could not be loaded): an empty panel would mean "none".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from client.models import Approval
from client.preview import approval_preview
from client.session import ListsState
from client.textsafe import safe_line
from client.why import REDACTED, redaction, why_rows
from widgets.call_preview import PATH_CELLS, PATH_ROOM, REDACTED_STYLE, preview_text

PANEL_LINES = 6
"""A card in the approvals panel shows this many lines of the call's preview (then how many follow) when
it does not know the terminal's height; else :func:`card_lines`."""
CARD_LINES = 7
"""A decision dialog shows this many lines of the call's preview, one row each (then how many follow):
the "are you sure?" dialog, its buttons included, still fits a 24-row terminal."""

Decision = Literal["approve", "decline"]

PREVIEW_LABELS = {"diff": "Change", "command": "Command", "arguments": "Arguments", "raw": "Arguments"}
"""What a decision card calls the call's preview, by its kind."""

LISTS_WORDS: dict[ListsState, str] = {
    "loading": "Loading the pending approvals…",
    "failed": "The pending approvals could not be loaded; new ones still show here as they come.",
}
"""The panel's one line while the session's pending approvals are not known."""


def card_lines(terminal_height: int) -> int:
    """How many lines of a call's preview a card shows on a terminal this high: the card (its head, these
    lines and the "… N more lines" line) fits the side column of the attach screen, whose approvals panel
    gets about a third of the height at 24 rows, more on a taller terminal."""
    return max(3, min(16, (terminal_height - 4) // 4))


MIN_PREVIEW_LINES = 3
"""However many lines say why a call is asked, a card keeps this many lines of the call itself."""


def why_lines(approval: Approval) -> list[Text]:
    """The lines of a card that say why the call is asked (``client.why``), one row each: the agent's
    reasoning when the head shows the server's summary, the rule that asked, and what the server
    redacted (with how to see the originals: the whole call's ``o``)."""
    out: list[Text] = []
    reasoning = (approval.agent_reasoning or "").strip()
    if reasoning and approval.summary and approval.summary.strip() != reasoning:
        out.append(_labelled("why", safe_line(reasoning, 200)))
    rule = approval.rule_context.get("rule_name") if approval.rule_context else None
    if isinstance(rule, str) and rule.strip():
        out.append(_labelled("rule", safe_line(rule, 80)))
    hidden = redaction(approval)
    if hidden is not None:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("⚿ redacted ", style=REDACTED_STYLE)
        line.append(f" {hidden.words or 'arguments redacted by the server'}")
        line.append(f" · {hidden.hint(pending=approval.pending, key='x then o')}", style="dim")
        out.append(line)
    return out


def _labelled(label: str, words: str) -> Text:
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{label} ", style="dim italic")
    line.append(words)
    return line


def mark_redacted(text: Text) -> Text:
    """``text`` with every span the server redacted (``[REDACTED:type]``) standing out (in place)."""
    text.highlight_regex(REDACTED.pattern, REDACTED_STYLE)
    return text


def approval_prompt(approval: Approval, lines: int = PANEL_LINES, path_cells: int = PATH_CELLS) -> Group:
    """One approval: ``⚑ tool [risk] · summary`` on one row, then why it is asked (:func:`why_lines`), then
    the first lines of its call's preview (and how many more there are), ``lines`` rows in all below the
    head, indented; long rows end in "…" (x shows the whole call)."""
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append("⚑ ", style="bold yellow")
    head.append(safe_line(approval.tool_name or "tool", 40), style="bold")
    if approval.risk_level:
        head.append(f" [risk {safe_line(approval.risk_level, 12)}]", style="bold red")
    summary = approval.summary or approval.agent_reasoning
    if summary:
        head.append(" · ")
        head.append(mark_redacted(Text(safe_line(summary, 160))))
    why = why_lines(approval)
    room = max(MIN_PREVIEW_LINES, lines - len(why))
    body = preview_text(approval_preview(approval), limit=room, hint="x shows all", path_cells=path_cells)
    # One row a line, long ones cut with "…" (x shows them whole): the card keeps the height it says.
    body.no_wrap, body.overflow = True, "ellipsis"
    return Group(
        head, *(Padding(line, (0, 0, 0, 2)) for line in why), Padding(mark_redacted(body), (0, 0, 0, 2))
    )


def call_first_line(approval: Approval, width: int = 100) -> str:
    """The first line of what the call will do, to name it in a question (the preview's own first line,
    ``client.preview``: the command, the file an edit changes and its +/- counts), cut to ``width``."""
    return safe_line(approval_preview(approval).first_line, width)


def call_title(approval: Approval, session: str) -> Text:
    """What a decision dialog decides, named under its question: the tool (and its risk) and the session,
    then the first line of the call (:func:`call_first_line`)."""
    title = Text(style="not bold")
    title.append(safe_line(approval.tool_name or "tool", 40), style="bold yellow")
    if approval.risk_level:
        title.append(f"  risk {safe_line(approval.risk_level, 12)}", style="bold red")
    title.append(" · ", style="dim")
    title.append(safe_line(session or approval.runtime_session_id or "?", 80), style="yellow")
    first = call_first_line(approval)
    if first:
        title.append("\n")
        title.append(first, style="bold yellow")
    return title


def decision_card(
    approval: Approval,
    session: str,
    *,
    limit: int | None = CARD_LINES,
    preview: bool = True,
    named: bool = False,
    trail: Sequence[tuple[str, str]] = (),
) -> Table:
    """What a decision dialog decides, named in full: the session, the tool (and its risk), why it is
    asked (``client.why``: the agent's reasoning, the server's summary, the rule, what was redacted), who
    decided and who looked (``trail``: rows of ``client.present.trail_rows``, when known) and what the
    call will change (its preview: the first ``limit`` lines, then how many more; None: every line;
    ``preview`` False: left out, for a screen that shows it below), so the operator confirms what they
    read, not what they assume. ``named``: the dialog names the tool and the session above it already
    (:func:`call_title`), so the card starts with why."""
    card = Table.grid(padding=(0, 2))
    card.add_column(style="dim", no_wrap=True)
    card.add_column(overflow="fold")
    if not named:
        card.add_row("Session", Text(safe_line(session or approval.runtime_session_id or "?", 80)))
        tool = Text(safe_line(approval.tool_name or "tool", 40), style="bold")
        if approval.risk_level:
            tool.append(f"  risk {safe_line(approval.risk_level, 12)}", style="bold red")
        card.add_row("Tool", tool)
    rows = why_rows(approval)
    for label, words in rows:
        shown = Text(words)
        if label == "Redacted":
            shown.stylize(REDACTED_STYLE, 0, len(words.split(" · ")[0]))
        card.add_row(label, mark_redacted(shown))
    for label, words in trail:
        card.add_row(label, Text(words))
    if preview:
        call = approval_preview(approval)
        room = None if limit is None else max(MIN_PREVIEW_LINES, limit - max(len(rows) - 1, 0) - len(trail))
        body = preview_text(call, limit=room, hint="x in the list shows all")
        if limit is not None:  # one row a line, long ones cut with "…": the dialog keeps its height
            body.no_wrap, body.overflow = True, "ellipsis"
        shown = body if call.line_count else Text("none", style="dim")
        card.add_row(PREVIEW_LABELS[call.kind], shown)
    return card


class ApprovalsPanel(Vertical):
    """A list of pending approvals with buttons; hidden while nothing is pending."""

    DEFAULT_CSS = """
    ApprovalsPanel {
        height: auto;
        max-height: 70%;
        border: round $warning;
        border-title-color: $text;
        border-title-style: bold;
        display: none;
    }
    ApprovalsPanel.-has-pending, ApprovalsPanel.-not-known { display: block; }
    ApprovalsPanel > OptionList { height: auto; max-height: 100%; border: none; padding: 0 0 0 1; }
    ApprovalsPanel > Horizontal { height: 1; dock: bottom; }
    ApprovalsPanel Button {
        min-width: 0; width: 1fr; max-width: 16; height: 1; border: none; margin: 0 1 0 0;
    }
    ApprovalsPanel Static.read-only { height: 1; color: $text-muted; dock: bottom; }
    ApprovalsPanel.-read-only > Horizontal { display: none; }
    ApprovalsPanel > Static.read-only { display: none; }
    ApprovalsPanel.-read-only > Static.read-only { display: block; }
    """

    @dataclass
    class ShowCall(Message):
        """The user asked (by button) to see the whole of the highlighted approval's call."""

        approval: Approval

    @dataclass
    class Decide(Message):
        """The user asked (by button) to approve or decline the highlighted approval."""

        approval: Approval
        decision: Decision

    def __init__(
        self,
        approvals: Mapping[str, Approval] | None = None,
        *,
        read_only: bool = False,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.read_only = read_only
        self.lists: ListsState = "loaded"
        """Whether the session's pending approvals are known yet (the attach screen says)."""
        self._approvals: Mapping[str, Approval] = approvals if approvals is not None else {}
        self._shown: dict[str, Approval] = {}
        """The approvals as last drawn (:meth:`sync`): what the operator sees is what a key decides."""
        self.border_title = "Approvals"
        self.set_class(read_only, "-read-only")
        # Kept by reference: an answer that arrives while the screen is taken apart (its widgets go
        # before its workers are cancelled) still has a list to go to instead of raising NoMatches.
        self._list = OptionList(id="approvals-list")
        self._buttons: Horizontal | None = None
        self._shown_fit = (PANEL_LINES, PATH_CELLS)

    def compose(self) -> ComposeResult:
        yield self._list
        if self._approvals:
            yield self._make_buttons()
        yield Static("read-only: no decisions here", classes="read-only")

    def on_mount(self) -> None:
        if self._approvals or self.lists != "loaded":
            self.sync()

    def set_lists(self, lists: ListsState) -> None:
        """Whether the pending approvals asked for on attach have answered (loading, loaded, failed)."""
        if lists != self.lists:
            self.lists = lists
            if self.is_mounted:
                self.sync()

    def _make_buttons(self) -> Horizontal:
        """The buttons come with the first pending approval: a session with none never pays for them
        (buttons bring the largest stylesheet of the screen, parsed when the first one is mounted)."""
        self._buttons = Horizontal(
            Button("Approve", id="approve", variant="success", compact=True),
            Button("Decline", id="decline", variant="error", compact=True),
            Button("Show all", id="expand", compact=True),
        )
        return self._buttons

    @property
    def approvals(self) -> Mapping[str, Approval]:
        """The pending approvals shown, by id (as drawn at the last :meth:`sync`)."""
        return self._shown

    @property
    def option_list(self) -> OptionList:
        """The list itself, for focus and the highlight (the panel also holds buttons and a hint)."""
        return self._list

    @property
    def selected(self) -> Approval | None:
        """The highlighted pending approval (the first one if nothing is highlighted)."""
        option = self.option_list.highlighted_option
        if option is not None and option.id is not None and option.id in self._shown:
            return self._shown[option.id]
        return next(iter(self._shown.values()), None)

    @property
    def count(self) -> int:
        """How many approvals wait for a decision, as drawn (the header and the key gating show it)."""
        return len(self._shown)

    def sync(self) -> None:
        """The table changed (an approval came, left, or its record was replaced): one rebuild."""
        self._rebuild()

    @property
    def fit(self) -> tuple[int, int]:
        """How many lines of each call's preview the cards show (:func:`card_lines` of the terminal), and
        in how many cells a file's path (what the card's width leaves beside the +/− counts)."""
        if not self.is_attached:
            return PANEL_LINES, PATH_CELLS
        width = self._list.content_size.width
        return card_lines(self.app.size.height), max(width - PATH_ROOM, 16) if width else PATH_CELLS

    def on_resize(self) -> None:
        if self._shown and self._shown_fit != self.fit:
            self._rebuild()

    def show_call(self) -> None:
        """Ask the screen to show the whole of the highlighted approval's call."""
        approval = self.selected
        if approval is not None:
            self.post_message(self.ShowCall(approval))

    def _rebuild(self) -> None:
        options = self.option_list
        current = options.highlighted_option
        current_id = current.id if current is not None else None
        approvals = self._shown = dict(self._approvals)
        lines, cells = self._shown_fit = self.fit
        unknown = LISTS_WORDS.get(self.lists) if not approvals else None
        if unknown is not None:
            options.set_options([Option(Text(unknown, style="dim italic"), disabled=True)])
        else:
            options.set_options(Option(approval_prompt(a, lines, cells), id=a.id) for a in approvals.values())
        if current_id is not None and current_id in approvals:
            options.highlighted = options.get_option_index(current_id)
        elif approvals:
            options.highlighted = 0
        if approvals and self._buttons is None and self.is_mounted and self._list.is_attached:
            self.mount(self._make_buttons())  # docked at the bottom: where in the panel does not matter
        self.set_class(bool(approvals), "-has-pending")
        self.set_class(unknown is not None, "-not-known")
        if approvals:
            self.border_title = f"⚑ Approvals pending ({len(approvals)})"
        else:
            self.border_title = {"loading": "Approvals · loading…", "failed": "Approvals · not loaded"}.get(
                self.lists, "Approvals"
            )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "expand":
            self.show_call()
            return
        approval = self.selected
        if approval is None or self.read_only:
            return
        decision: Decision = "approve" if event.button.id == "approve" else "decline"
        self.post_message(self.Decide(approval, decision))
