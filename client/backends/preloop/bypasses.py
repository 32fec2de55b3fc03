"""Preloop's approval bypasses and kill switch as our rules and standing (pure: no I/O).

Preloop 0.17.1 keeps time-boxed *approval bypasses* (``api/endpoints/approval_bypass.py``): a mode
(``auto_approve`` approves without review, ``mute_notifications`` silences alerts and still blocks), a
required duration of 1-480 minutes, optionally one managed agent (else every agent of the user who made
it), a reason, and a count of requests it approved. That is our :class:`client.models.AllowRule` with
scope ``agent`` or ``account``, no tool and no argument pattern, and ``danger`` always set: a bypass
approves every call in its scope whatever its risk. A bypass always applies to the user who made it, so
one seen in ``GET /approval-bypasses/status`` (the caller's own) was set by "you"; the account-wide list
names a colleague only by user id.

The kill switch (``GET /account/kill-switch/status``, readable by every user) is our
:class:`client.models.KillSwitch` as it comes. Captures 130-140 hold the shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from client.backends.wire import as_int, as_str, parse_time
from client.ids import short_id
from client.models import AllowRule, KillSwitch, RuleSpec

__all__ = ["MAX_MINUTES", "bypass_body", "rule_of_bypass", "rules_of_bypasses"]

MAX_MINUTES = 480
"""Preloop's ``MAX_BYPASS_DURATION`` (8 hours)."""


def rule_of_bypass(body: Mapping[str, Any], *, me: str | None = None) -> AllowRule:
    """One bypass as a rule (``me``: this token's user id, to name a bypass of one's own "you")."""
    agent = as_str(body.get("managed_agent_id"))
    by = as_str(body.get("created_by_user_id")) or as_str(body.get("user_id"))
    expires = parse_time(body.get("expires_at"))
    if expires is None:
        raise ValueError("a bypass without expires_at")
    return AllowRule(
        id=str(body["id"]),
        mode="allow" if body.get("mode") == "auto_approve" else "mute",
        scope="agent" if agent else "account",
        agent_id=agent,
        danger=True,
        reason=as_str(body.get("reason")),
        set_by="you" if by is not None and by == me else (f"user {short_id(by)}" if by else None),
        set_by_user_id=by,
        created_at=parse_time(body.get("created_at")),
        expires_at=expires,
        revoked_at=parse_time(body.get("revoked_at")),
        allowed_count=as_int(body.get("auto_approved_count")) or 0,
    )


def rules_of_bypasses(items: Iterable[Any], *, me: str | None = None) -> list[AllowRule]:
    """Every readable bypass of a listing as a rule, the soonest to end first (one that cannot be read
    is left out rather than failing the banner)."""
    rules: list[AllowRule] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        try:
            rules.append(rule_of_bypass(item, me=me))
        except (KeyError, ValueError):
            continue
    return sorted(rules, key=lambda r: r.expires_at)


def bypass_body(spec: RuleSpec) -> dict[str, Any]:
    """``POST /approval-bypasses`` for a rule Preloop can hold (``client.rules.check_spec`` first)."""
    body: dict[str, Any] = {
        "mode": "auto_approve" if spec.mode == "allow" else "mute_notifications",
        "duration_minutes": spec.minutes,
        "created_via": "cli",
    }
    if spec.scope == "agent" and spec.agent_id:
        body["managed_agent_id"] = spec.agent_id
    if spec.reason:
        body["reason"] = spec.reason
    return body


def kill_switch(body: Any) -> KillSwitch | None:
    """The kill switch's status as read (None for an answer that is not one)."""
    if not isinstance(body, Mapping):
        return None
    try:
        return KillSwitch.model_validate(body)
    except ValueError:
        return None
