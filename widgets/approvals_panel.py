"""Pending approvals of the attached session: tool, summary and arguments, with approve/decline buttons.

The arguments are untrusted agent output: they are JSON-encoded, made terminal-safe and shown as
``rich.text.Text``; collapsed to a couple of lines by default, expandable (``x`` or the button) to show the
whole value up to a cap. The panel shows a table it does not own (``client.session``'s pending approvals,
read live; :meth:`ApprovalsPanel.sync` after it changed). The panel only *asks* (it posts
:class:`ApprovalsPanel.Decide`); the screen that owns the backend decides, so the panel works against any
backend and in tests without one.

Until the session's lists have answered (:meth:`ApprovalsPanel.set_lists`) the panel is shown with one line
saying the pending approvals are loading (or could not be loaded): an empty panel would mean "none".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
from client.session import ListsState
from client.textsafe import safe_line, safe_text

COLLAPSED_ARG_LINES = 2
EXPANDED_ARG_LINES = 40

Decision = Literal["approve", "decline"]

LISTS_WORDS: dict[ListsState, str] = {
    "loading": "Loading the pending approvals…",
    "failed": "The pending approvals could not be loaded; new ones still show here as they come.",
}
"""The panel's one line while the session's pending approvals are not known."""


def visible_args(args: dict[str, object] | None) -> dict[str, object]:
    """The arguments an operator judges: keys starting with ``_`` are the server's bookkeeping
    (``_preloop_source``), not what the tool will do, so they are left out."""
    return {k: v for k, v in (args or {}).items() if not str(k).startswith("_")}


def args_text(args: dict[str, object]) -> str:
    """Tool arguments as readable, terminal-safe JSON (non-JSON values fall back to ``repr``)."""
    try:
        raw = json.dumps(args, indent=2, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        raw = repr(args)
    return safe_text(raw)


def approval_prompt(approval: Approval, *, expanded: bool = False) -> Group:
    """One approval: ``⚑ tool · summary [risk]``, then its arguments indented (collapsed or in full)."""
    head = Text()
    head.append("⚑ ", style="bold yellow")
    head.append(safe_line(approval.tool_name or "tool", 40), style="bold")
    summary = approval.summary or approval.agent_reasoning
    if summary:
        head.append(" · ")
        head.append(safe_line(summary, 160))
    if approval.risk_level:
        head.append(f" [risk {safe_line(approval.risk_level, 12)}]", style="bold red")
    body = Text(style="dim")
    shown_args = visible_args(approval.tool_args)
    if shown_args:
        lines = args_text(shown_args).splitlines()
        if not expanded:
            flat = safe_line(" ".join(line.strip() for line in lines))
            body.append(flat[:160] + ("…" if len(flat) > 160 else ""))
            if len(flat) > 160:
                body.append("  (x: expand)", style="italic")
        else:
            body.append("\n".join(safe_line(line, 400) for line in lines[:EXPANDED_ARG_LINES]))
            if len(lines) > EXPANDED_ARG_LINES:
                body.append(f"\n… {len(lines) - EXPANDED_ARG_LINES} more lines", style="italic")
    return Group(head, Padding(body, (0, 0, 0, 2)))


def call_first_line(approval: Approval, width: int = 100) -> str:
    """The first line of what the call does, to name it in a question: a lone argument's value (a
    command, a path), else the first argument as ``key: value``; cut to ``width`` with "…" (one home
    for it: swap this function to name calls better)."""
    shown = list(visible_args(approval.tool_args).items())
    if not shown:
        return ""
    key, value = shown[0]
    text = _arg_value(value) if len(shown) == 1 else f"{key}: {_arg_value(value)}"
    lines = text.strip().splitlines() or [""]
    line = safe_line(lines[0], width)
    more = len(lines) > 1 or len(shown) > 1
    return line + (" …" if more and not line.endswith("…") else "")


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


CARD_ARGS = 12
"""A decision dialog shows this many arguments (then says how many more there are)."""


def _arg_value(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def decision_card(
    approval: Approval, session: str, *, limit: int | None = CARD_ARGS, named: bool = False
) -> Table:
    """What a decision dialog decides, named in full: the session, the tool (and its risk), the agent's
    summary and every argument (one per line, long ones wrapped; the first ``limit`` of them, None: all,
    each whole), so the operator confirms what they read, not what they assume. ``named``: the dialog
    names the tool and the session above it already (:func:`call_title`), so the card starts with why."""
    card = Table.grid(padding=(0, 2))
    card.add_column(style="dim", no_wrap=True)
    card.add_column(overflow="fold")
    if not named:
        card.add_row("Session", Text(safe_line(session or approval.runtime_session_id or "?", 80)))
        tool = Text(safe_line(approval.tool_name or "tool", 40), style="bold")
        if approval.risk_level:
            tool.append(f"  risk {safe_line(approval.risk_level, 12)}", style="bold red")
        card.add_row("Tool", tool)
    summary = approval.summary or approval.agent_reasoning
    if summary:
        card.add_row("Why", Text(safe_line(summary, 300)))
    shown_args = list(visible_args(approval.tool_args).items())
    if not shown_args:
        card.add_row("Arguments", Text("none", style="dim"))
    for n, (key, value) in enumerate(shown_args[:limit]):
        line = Text(safe_line(str(key), 40), style="bold")
        line.append(": ")
        line.append(safe_line(_arg_value(value), 1200 if limit is not None else None))
        card.add_row("Arguments" if n == 0 else "", line)
    if limit is not None and len(shown_args) > limit:
        more = len(shown_args) - limit
        card.add_row("", Text(f"… {more} more arguments (x in the list shows them all)", style="dim"))
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
    ApprovalsPanel > OptionList { height: auto; max-height: 8; border: none; padding: 0 0 0 1; }
    ApprovalsPanel.-expanded { height: 70%; }
    ApprovalsPanel.-expanded > OptionList { height: 1fr; max-height: 100%; }
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
        self.expanded: set[str] = set()
        self.border_title = "Approvals"
        self.set_class(read_only, "-read-only")
        # Kept by reference: an answer that arrives while the screen is taken apart (its widgets go
        # before its workers are cancelled) still has a list to go to instead of raising NoMatches.
        self._list = OptionList(id="approvals-list")
        self._buttons: Horizontal | None = None

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
            Button("Args", id="expand", compact=True),
        )
        return self._buttons

    @property
    def approvals(self) -> Mapping[str, Approval]:
        """The pending approvals shown, by id (the caller's table, read live)."""
        return self._approvals

    @property
    def option_list(self) -> OptionList:
        """The list itself, for focus and the highlight (the panel also holds buttons and a hint)."""
        return self._list

    @property
    def selected(self) -> Approval | None:
        """The highlighted pending approval (the first one if nothing is highlighted)."""
        option = self.option_list.highlighted_option
        if option is not None and option.id is not None and option.id in self._approvals:
            return self._approvals[option.id]
        return next(iter(self._approvals.values()), None)

    @property
    def count(self) -> int:
        """How many approvals wait for a decision (the header and the key gating show it)."""
        return len(self._approvals)

    def sync(self) -> None:
        """The table changed (an approval came, left, or its record was replaced): one rebuild."""
        self.expanded &= set(self._approvals)
        self._rebuild()

    def toggle_expanded(self) -> None:
        """Show all arguments of the highlighted approval, or collapse them again."""
        approval = self.selected
        if approval is None:
            return
        if approval.id in self.expanded:
            self.expanded.discard(approval.id)
        else:
            self.expanded.add(approval.id)
        self.option_list.replace_option_prompt(
            approval.id, approval_prompt(approval, expanded=approval.id in self.expanded)
        )
        # Expanded arguments get the room of the side column (the panel is capped at 70% of it).
        self.set_class(bool(self.expanded), "-expanded")

    def _rebuild(self) -> None:
        options = self.option_list
        current = options.highlighted_option
        current_id = current.id if current is not None else None
        approvals = self._approvals
        unknown = LISTS_WORDS.get(self.lists) if not approvals else None
        if unknown is not None:
            options.set_options([Option(Text(unknown, style="dim italic"), disabled=True)])
        else:
            options.set_options(
                Option(approval_prompt(a, expanded=a.id in self.expanded), id=a.id)
                for a in approvals.values()
            )
        if current_id is not None and current_id in approvals:
            options.highlighted = options.get_option_index(current_id)
        elif approvals:
            options.highlighted = 0
        if approvals and self._buttons is None and self.is_mounted and self._list.is_attached:
            self.mount(self._make_buttons())  # docked at the bottom: where in the panel does not matter
        self.set_class(bool(approvals), "-has-pending")
        self.set_class(unknown is not None, "-not-known")
        self.set_class(bool(self.expanded), "-expanded")
        if approvals:
            self.border_title = f"⚑ Approvals pending ({len(approvals)})"
        else:
            self.border_title = {"loading": "Approvals · loading…", "failed": "Approvals · not loaded"}.get(
                self.lists, "Approvals"
            )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "expand":
            self.toggle_expanded()
            return
        approval = self.selected
        if approval is None or self.read_only:
            return
        decision: Decision = "approve" if event.button.id == "approve" else "decline"
        self.post_message(self.Decide(approval, decision))
