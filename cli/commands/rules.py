"""``preloop approvals allow | rules | rules revoke``: time-boxed allow rules from a shell.

``allow`` makes one (``client.rules``: the scope, an argument pattern, a required and bounded duration,
``--mute``) and prints its id and when it ends; ``rules`` lists those that hold (``--json``); ``rules
revoke ID`` or ``--all`` ends them. What the server cannot hold (a Dendrux app keeps no rules; a Preloop
bypass has no session, tool or pattern) is refused before any rule is asked for, with a sentence saying
what it can do (exit 2), as is a pattern that does not parse or a duration of 0 or past the server's
maximum; what the server refuses (a 403 without the permission) is exit 1 with the server's sentence.

A rule that would allow danger-risk calls takes a second confirmation: ``--danger``. On our server a rule
without it leaves danger-risk calls asking; a Preloop bypass approves every call in its scope, so an
``allow`` bypass always needs it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime

from cli.commands.common import (
    check_uuid,
    connect,
    print_json,
    render_table,
    terminal_width,
    usage,
)
from cli.exits import EXIT_OK
from client.backends.base import Backend
from client.ids import resolve_id, resolve_session, short_id
from client.models import AllowRule, RuleScope
from client.present import cell, format_duration, rule_scope_words
from client.rules import (
    RULE_MAX_MINUTES,
    RuleSpec,
    banner_line,
    check_pattern,
    check_spec,
    rule_minutes,
)


def _scope(args: argparse.Namespace) -> RuleScope:
    chosen = [
        flag
        for flag, given in (("--session", args.session), ("--agent", args.agent), ("--account", args.account))
        if given
    ]
    if len(chosen) != 1:
        raise usage(
            "say what the rule covers: --session ID (with --tool), --agent ID or --account"
            if not chosen
            else f"{' and '.join(chosen)} contradict each other: keep one of them"
        )
    return "session" if args.session else "agent" if args.agent else "account"


async def allow(args: argparse.Namespace) -> int:
    """Make a rule: matching calls are decided for the operator (or, ``--mute``, ring no more) until it
    ends."""
    scope = _scope(args)
    if scope == "session" and not args.tool:
        raise usage("a rule for one session names its tool: --tool NAME (e.g. --tool Bash)")
    if args.match is not None:
        check_pattern(args.match)
        if not args.tool:
            raise usage("an argument pattern belongs to one tool: name it (--tool NAME)")
    minutes = rule_minutes(args.duration, RULE_MAX_MINUTES)
    agent = check_uuid(args.agent, "--agent")
    async with connect(args) as backend:
        rules = backend.capabilities.rules
        if rules is not None:  # the server's own maximum, before anything is asked of it
            rule_minutes(args.duration, rules.max_minutes)
        spec = RuleSpec(
            mode="mute" if args.mute else "allow",
            minutes=minutes,
            scope=scope,
            session_id=args.session,  # as typed: resolved below, once the server can hold the rule
            agent_id=agent,
            tool_name=args.tool,
            pattern=args.match,
            danger=args.danger,
            reason=args.reason,
        )
        check_spec(spec, backend.capabilities, backend.server_kind)
        if scope == "session":
            spec = replace(spec, session_id=await resolve_session(backend, args.session))
        rule = await backend.create_rule(spec)
    if args.json:
        print_json(rule.model_dump(mode="json"))
        return EXIT_OK
    now = datetime.now(UTC)
    left = format_duration(rule.expires_at - now)
    print(f"Rule {cell(rule.id)} made: {banner_line(rule, now)} ({left} left).")
    if rule.mode == "allow" and not rule.danger:
        print("Danger-risk calls still ask (a rule covers them only with --danger).")
    print(f"End it sooner: preloop approvals rules revoke {short_id(rule.id)}")
    return EXIT_OK


async def list_rules(args: argparse.Namespace) -> int:
    """The rules that hold now, the soonest to end first."""
    async with connect(args) as backend:
        _refuse_without_rules(backend)
        rules = await backend.list_rules()
    if args.json:
        print_json({"total": len(rules), "items": [r.model_dump(mode="json") for r in rules]})
        return EXIT_OK
    if not rules:
        print("No allow rule holds: every call is asked about.")
        return EXIT_OK
    now = datetime.now(UTC)
    rows = [
        [
            cell(r.id),
            "allow" if r.mode == "allow" else "mute",
            r.expires_at.astimezone().strftime("%H:%M") + f" ({format_duration(r.expires_at - now)})",
            str(r.allowed_count) if r.mode == "allow" else "-",
            cell(r.set_by or "", 24),
            rule_scope_words(r) + (" (danger-risk too)" if r.danger and r.mode == "allow" else ""),
        ]
        for r in rules
    ]
    headers = ["ID", "MODE", "UNTIL", "ALLOWED", "SET BY", "COVERS"]
    for line in render_table(headers, rows, last_flexible=True, width=terminal_width(sys.stdout)):
        print(line)
    return EXIT_OK


async def revoke(args: argparse.Namespace) -> int:
    """End one rule (``ID``) or every rule (``--all``) now."""
    if bool(args.rule_id) == bool(args.all):
        raise usage("name the rule to end (its id, from `preloop approvals rules`) or give --all, not both")
    async with connect(args) as backend:
        _refuse_without_rules(backend)
        if args.all:
            ended = await backend.revoke_all_rules()
        else:

            async def candidates() -> list[str]:
                return [r.id for r in await backend.list_rules()]

            ended = [await backend.revoke_rule(await resolve_id(args.rule_id, "rule", candidates))]
    if args.json:
        print_json({"total": len(ended), "items": [r.model_dump(mode="json") for r in ended]})
        return EXIT_OK
    if not ended:
        print("No allow rule held: nothing to end.")
    for rule in ended:
        print(_ended_line(rule))
    return EXIT_OK


def _ended_line(rule: AllowRule) -> str:
    if rule.revoked_at is None:
        return f"Rule {cell(rule.id)} ({rule_scope_words(rule)}) had not ended: the server kept it."
    count = (
        f"; it allowed {rule.allowed_count} call{'s' if rule.allowed_count != 1 else ''}"
        if rule.mode == "allow"
        else ""
    )
    return f"Rule {cell(rule.id)} ended: {rule_scope_words(rule)} is asked about again{count}."


def _refuse_without_rules(backend: Backend) -> None:
    if backend.capabilities.rules is None:
        raise usage(
            f"a {backend.server_kind} server keeps no allow rules: every call it asks about is decided one "
            "by one"
        )
