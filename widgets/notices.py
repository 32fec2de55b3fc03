"""The notice (toast) that tells an operator what came of steering, worded once for every screen.

``client.steering`` returns outcomes; a screen shows the one notice :func:`steering_notice` words for it
(message, title, severity). A note that was not sent has no notice: the line above the note box says it,
where the text still is.
"""

from __future__ import annotations

from textual.notifications import SeverityLevel
from textual.widget import Widget

from client.models import Approval
from client.present import approval_outcome
from client.steering import (
    AlreadySettled,
    Decided,
    DecisionFailed,
    Sent,
    SteeringOutcome,
    TooLate,
    WithdrawFailed,
    Withdrawn,
)
from client.textsafe import safe_line

Notice = tuple[str, str, SeverityLevel]
"""A notice's message, title and severity."""


def steering_notice(outcome: SteeringOutcome, approval: Approval | None = None) -> Notice | None:
    """What to say about ``outcome`` (``approval``: the one a decision was about, for its tool's name)."""
    name = (approval.tool_name if approval is not None else None) or "tool"
    tool = safe_line(name, 40)
    if isinstance(outcome, Decided):
        return (
            f"{'Approved' if outcome.verb == 'approve' else 'Declined'}: {tool}",
            "Approval decided",
            "information",
        )
    if isinstance(outcome, AlreadySettled):
        said = approval_outcome(outcome.approval, elsewhere=True, you=outcome.by_you)
        return said, "Approval no longer pending", "warning"
    if isinstance(outcome, DecisionFailed):
        return str(outcome.error), f"Could not {outcome.verb} {tool}", "error"
    if isinstance(outcome, Sent):
        return "Note sent; the agent reads it at its next tool or model call.", "Note queued", "information"
    if isinstance(outcome, Withdrawn):
        return "Note withdrawn; the agent will not see it.", "Withdrawn", "information"
    if isinstance(outcome, TooLate) and outcome.note.state == "cancelled":  # what was asked holds
        return "The note was already withdrawn; the agent will not see it.", "Withdrawn", "information"
    if isinstance(outcome, TooLate):
        state = safe_line(outcome.note.state, 20)
        return (
            f"Too late: the note was already {state}, so it was not withdrawn.",
            "Note not withdrawn",
            "warning",
        )
    if isinstance(outcome, WithdrawFailed):
        return str(outcome.error), "Note not withdrawn", "error"
    return None


def nothing_to_withdraw(can_withdraw: bool) -> Notice:
    """What ``w`` says with nothing it can withdraw (rather than doing nothing): nothing is pending, or
    this server cannot withdraw a note at all."""
    if can_withdraw:
        return "Nothing pending to withdraw.", "", "information"
    said = "This server cannot withdraw a note once it is sent: it stays until the agent reads it"
    return f"{said} or the session ends.", "", "information"


def tell(node: Widget, notice: Notice | None) -> None:
    """Show a notice (as plain text: it may quote an agent's words), if there is one."""
    if notice is not None:
        message, title, severity = notice
        node.notify(message, title=title, severity=severity, markup=False)
