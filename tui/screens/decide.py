"""The questions asked before an approval is decided, written once for every screen that decides one.

The attach screen and the inbox both approve and decline; what they ask first is the same and lives
here: a risky call asks "are you sure?" naming the session, tool and arguments (``ConfirmScreen``); a
decline asks for an optional comment (``DeclineCommentScreen``). Both dialogs ignore their decision keys
for half a second after they open (``tui.typeahead``). When the approval is settled elsewhere while a
dialog about it is open, :func:`settle_open_dialogs` turns that dialog into a notice instead of letting it
decide something that no longer waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App

from client.models import Approval
from client.present import approval_outcome
from client.textsafe import safe_line
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineAnswer, DeclineCommentScreen
from tui.typeahead import Monotonic
from widgets.approvals_panel import decision_card


def needs_confirmation(approval: Approval, confirm_risks: frozenset[str]) -> bool:
    """Whether approving this call asks "are you sure?" first (its risk level is one of ``confirm_risks``)."""
    return (approval.risk_level or "").strip().lower() in confirm_risks


def ask_approve(
    app: App[Any],
    approval: Approval,
    session: str,
    *,
    confirm_risks: frozenset[str],
    clock: Monotonic | None,
    approve: Callable[[], object],
) -> None:
    """Approve at once (low risk), or after a yes to a question that names what is approved."""
    if not needs_confirmation(approval, confirm_risks):
        approve()
        return
    risk = safe_line(approval.risk_level or "", 12).strip().lower()
    tool = safe_line(approval.tool_name or "tool", 40)

    def _answered(yes: bool | None) -> None:
        if yes:
            approve()

    app.push_screen(
        ConfirmScreen(
            f"Approve this {risk}-risk {tool} call?",
            decision_card(approval, session),
            yes="Approve",
            no="Keep pending",
            subject=approval.id,
            clock=clock,
        ),
        _answered,
    )


def ask_decline(
    app: App[Any],
    approval: Approval,
    session: str,
    *,
    clock: Monotonic | None,
    answered: Callable[[DeclineAnswer], None],
) -> None:
    """Ask for the decline's optional comment; ``answered`` gets what the dialog ended with."""
    app.push_screen(DeclineCommentScreen(approval, session, clock=clock), answered)


def settle_open_dialogs(app: App[Any], approval: Approval) -> bool:
    """An approval stopped waiting (decided elsewhere, expired, cancelled): every open dialog about it
    says so and decides nothing. True when one was open."""
    line = approval_outcome(approval.tool_name or "tool", approval.status, elsewhere=True)
    found = False
    for screen in app.screen_stack:
        if isinstance(screen, ConfirmScreen | DeclineCommentScreen) and screen.subject == approval.id:
            if screen.settled is None:
                screen.settle(line)
            found = True
    return found
