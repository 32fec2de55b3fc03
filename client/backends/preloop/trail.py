"""Who decided a Preloop approval and who looked at it, from its history (pure: no I/O).

Preloop 0.17.1 names the decider nowhere but in ``GET /approval-requests/{id}/history``: an array, in time
order, of ``{id, event_type, detail, comment, actor_id, actor_email, timestamp}`` (``actor_email`` is the
person's email, else their user name; null for the system or an approval link). Read in its source
(``services/approval_service.py``), the entries that matter here are:

=====================================  ==============================================================
``event_type`` (``detail``)            what it says
=====================================  ==============================================================
``viewed``                             the actor opened the approval (once per person; reading an
                                       approval's detail, ``GET /approval-requests/{id}``, is a view)
``vote_received`` ("Approved by <user  a person's vote, with their comment; ``(n/m)`` counts approvals
id> (1/2) via console", "Declined by   toward the quorum; "(token-based)" is a vote through an
<user id> (1 decline(s))")             approval link, by nobody named
``approval_complete`` ("Approval       the outcome: a quorum met or lost (the last vote decided), or
request approved (quorum 1/1 met)",    "Auto-approved by AI (<model>): <reason>", "Auto-approved
"Auto-approved by AI (...)")           without review: <reason>" (a bypass), "Auto-approved: <reason>"
``escalation_triggered``               nobody answered in time: the deadline was extended once (the
                                       row's ``expires_at`` is the new one)
=====================================  ==============================================================

:func:`apply_history` puts what they say on the approval (``decider``, ``votes``, ``viewed_by``,
``escalated_at``), leaving the row's own fields as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from client.backends.wire import as_str, parse_time
from client.models import Approval, ApprovalDecider, ApprovalVotes

__all__ = ["apply_history"]

_QUORUM = re.compile(r"\((\d+)/(\d+)\)")
_CHANNEL = re.compile(r" via (\w+)\s*$")
_AI = re.compile(r"^Auto-approved by AI \(([^)]*)\)")


def _who(entry: Mapping[str, Any]) -> str | None:
    return as_str(entry.get("actor_email")) or as_str(entry.get("actor_id"))


def apply_history(approval: Approval, entries: Iterable[Any]) -> Approval:
    """The approval with what its history says about who decided and who looked."""
    viewers: list[str] = []
    approvals = declines = 0
    required = 0
    last_vote: Mapping[str, Any] | None = None
    decider: ApprovalDecider | None = None
    escalated = approval.escalated_at
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        kind = as_str(entry.get("event_type"))
        detail = as_str(entry.get("detail")) or ""
        at = parse_time(entry.get("timestamp"))
        if kind == "viewed":
            who = _who(entry)
            if who and who not in viewers:
                viewers.append(who)
        elif kind == "vote_received":
            last_vote = entry
            if detail.startswith("Declined") or detail.startswith("Decline vote"):
                declines += 1
            else:
                approvals += 1
            quorum = _QUORUM.search(detail)
            if quorum is not None:
                approvals, required = int(quorum.group(1)), int(quorum.group(2))
        elif kind == "escalation_triggered":
            escalated = at or escalated
        elif kind == "approval_complete":
            decider = _complete(detail, at, last_vote)
    votes = None
    if required > 1 or approvals + declines > 1:
        votes = ApprovalVotes(approvals=approvals, declines=declines, required=max(required, 1))
    # Votes a pushed frame already counted (``client.backends.preloop.unified``) stay when the history
    # says nothing more.
    update: dict[str, Any] = {
        "viewed_by": viewers,
        "votes": votes if votes is not None else approval.votes,
        "escalated_at": escalated,
    }
    if decider is not None and not approval.pending:
        update["decider"] = decider
    return approval.model_copy(update=update)


def _complete(detail: str, at: Any, last_vote: Mapping[str, Any] | None) -> ApprovalDecider | None:
    """Who or what an ``approval_complete`` entry says decided: the last person who voted, an AI, a rule."""
    ai = _AI.match(detail)
    if ai is not None:
        return ApprovalDecider(kind="ai", name=ai.group(1) or None, at=at)
    if detail.startswith("Auto-approved"):
        reason = detail.split(":", 1)[1].strip() if ":" in detail else None
        return ApprovalDecider(kind="rule", name=reason or "a standing rule", at=at)
    if last_vote is None:
        return None
    vote_detail = as_str(last_vote.get("detail")) or ""
    channel = _CHANNEL.search(vote_detail)
    return ApprovalDecider(
        kind="person",
        name=as_str(last_vote.get("actor_email")),
        user_id=as_str(last_vote.get("actor_id")),
        at=parse_time(last_vote.get("timestamp")) or at,
        channel=channel.group(1)
        if channel is not None
        else ("link" if "token-based" in vote_detail else None),
    )
