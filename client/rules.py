"""Time-boxed allow rules, written once: what a rule covers, how long it may last, and how it reads.

"Allow calls like this for 30 minutes": an operator who answers the same harmless call (``pytest``, ``git
status``) every few minutes makes a rule instead. A rule has a scope (this tool in this session,
optionally with an argument pattern such as ``pytest *``; on Preloop, one agent or the whole account,
which is what Preloop's approval bypasses cover), a required, bounded duration (there is no "forever":
at most :data:`RULE_MAX_MINUTES` on our server, the server's own maximum elsewhere) and a mode: ``allow``
decides matching calls for the operator, ``mute`` silences their alerts and still asks.

Everything about rules that is not I/O lives here, so the local server (which applies them where an
approval is raised), the command line and the screens agree:

* :func:`rule_minutes` reads ``--for 30m`` (0, no unit, or over the maximum: a sentence, never a guess);
* :func:`check_pattern` / :func:`pattern_matches`: the argument pattern, a shell-style glob over the
  call's subject (:func:`call_subject`: a shell call's command, a file edit's path, else its arguments
  as compact JSON). ``*`` matches any run of characters and ``?`` one, ``[abc]`` / ``[a-z]`` / ``[!x]``
  a class, ``\\`` escapes; the whole subject must match. Neither ``*`` nor ``?`` crosses a shell
  operator or a line end (``; & | ` $ < >``), so ``pytest *`` never allows ``pytest x; rm -rf ~``. A
  pattern with an unclosed ``[`` or a trailing ``\\`` does not parse;
* :func:`covers` says whether a rule decides (or mutes) a call: active, in scope, the tool and pattern
  matching, and a danger-risk call only when the rule was made for danger-risk calls (:data:`DANGER`)
  with a second confirmation;
* :func:`check_spec` refuses, before any request, a rule the server cannot hold, saying what it can
  (``Capabilities.rules``: a Preloop bypass has no session, tool or pattern; a Dendrux app keeps none);
* :func:`banner_line` words a rule for the banner ("auto-allow: Bash `pytest *` in 1a2b3c4d until 15:40 ·
  3 allowed"); what a rule covers and who decided by it are words of ``client.present``.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from client.errors import UsageError
from client.models import AllowRule, Approval, RuleSpec
from client.present import parse_duration, rule_scope_words
from client.textsafe import safe_line

if TYPE_CHECKING:
    from client.backends.base import Capabilities

__all__ = [
    "DANGER",
    "PATTERN_MAX",
    "RULE_MAX_MINUTES",
    "RuleSpec",
    "banner_line",
    "call_subject",
    "check_pattern",
    "check_spec",
    "covers",
    "is_danger",
    "muted",
    "pattern_matches",
    "rule_minutes",
]

RULE_MAX_MINUTES = 480
"""The longest rule our server makes (8 hours, as Preloop's approval bypasses): re-arming is cheap and
forces a conscious re-decision."""

PATTERN_MAX = 200
"""The longest argument pattern, in characters."""

DANGER = frozenset({"danger", "critical"})
"""Risk levels a rule covers only when it was made for them, with a second confirmation."""

_SHELL = frozenset({"bash", "shell", "run_command", "exec", "exec_command", "run_shell_command"})
_PATH_KEYS = ("file_path", "path", "notebook_path")
_STOPS = ";&|`$<>\n\r"
"""What ``*`` and ``?`` never match: a pattern cannot reach past one command."""
_ANY = "[^" + re.escape(_STOPS) + "]"


# --------------------------------------------------------------------------------------------- duration


def rule_minutes(text: str, maximum: int = RULE_MAX_MINUTES) -> int:
    """``--for 30m`` as whole minutes (a part of a minute counts as one), between 1 and ``maximum``; a
    duration of 0, without a unit, or past the maximum is a :class:`UsageError` saying what is allowed."""
    limit = _minutes_words(maximum)
    try:
        delta = parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{exc}; a rule lasts 1 minute to {limit}") from None
    minutes = math.ceil(delta.total_seconds() / 60)
    if minutes < 1:
        raise UsageError(
            f"a rule needs a duration of at least 1 minute (there is no forever; at most {limit})"
        )
    if minutes > maximum:
        raise UsageError(
            f"{safe_line(text, 20)} is longer than the server allows: a rule lasts at most {limit} "
            "(there is no forever: make it again when it ends)"
        )
    return minutes


def _minutes_words(minutes: int) -> str:
    if minutes % 60 == 0:
        return f"{minutes // 60} hours ({minutes} minutes)" if minutes > 60 else "1 hour"
    return f"{minutes} minutes"


# --------------------------------------------------------------------------------------------- patterns


def check_pattern(pattern: str) -> str:
    """The pattern as given when it parses (see the module docstring), else a :class:`UsageError`
    saying why."""
    _compile(pattern)
    return pattern


def pattern_matches(pattern: str, subject: str) -> bool:
    """Whether the whole ``subject`` (its surrounding spaces ignored) matches ``pattern``."""
    return _compile(pattern).fullmatch(subject.strip()) is not None


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    shown = safe_line(pattern, 60)
    if not pattern.strip():
        raise UsageError("the argument pattern is empty: give one such as 'pytest *', or leave it out")
    if len(pattern) > PATTERN_MAX:
        raise UsageError(f"the argument pattern is longer than {PATTERN_MAX} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in pattern):
        raise UsageError("the argument pattern holds a control character (a line end, a tab...)")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(_ANY + "*")
        elif ch == "?":
            out.append(_ANY)
        elif ch == "\\":
            if i + 1 >= len(pattern):
                raise UsageError(f"the pattern '{shown}' ends with a lone \\ (escape what?)")
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                raise UsageError(
                    f"the pattern '{shown}' has a [ that is never closed (write \\[ for the character)"
                )
            out.append(_char_class(pattern[i + 1 : end], shown))
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as exc:  # e.g. a range written backwards ("[z-a]")
        raise UsageError(f"the pattern '{shown}' does not parse: {exc.msg}") from None


def _char_class(body: str, shown: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    if not body:
        raise UsageError(f"the pattern '{shown}' has an empty [] class")
    parts: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            if body[i] > body[i + 2]:
                raise UsageError(f"the pattern '{shown}' has a range written backwards ({body[i : i + 3]})")
            parts.append(f"{re.escape(body[i])}-{re.escape(body[i + 2])}")
            i += 3
        else:
            parts.append(re.escape(body[i]))
            i += 1
    if negate:  # "anything but", still never a shell operator or a line end
        return "[^" + "".join(parts) + re.escape(_STOPS) + "]"
    return "[" + "".join(parts) + "]"


def call_subject(tool: str | None, args: Mapping[str, Any] | None) -> str:
    """What a pattern is matched against: a shell call's command (an argv list joined as a shell would
    read it), a file tool's path, else the call's arguments as compact JSON (keys sorted, the server's
    own ``_`` keys left out)."""
    shown = {str(k): v for k, v in (args or {}).items() if not str(k).startswith("_")}
    if (tool or "").strip().lower() in _SHELL:
        value = next((shown[k] for k in ("command", "cmd", "argv") if k in shown), None)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(word, str) for word in value):
            return shlex.join(value)
    for key in _PATH_KEYS:
        if isinstance(shown.get(key), str):
            return str(shown[key])
    return json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


# --------------------------------------------------------------------------------------------- coverage


def is_danger(risk: str | None) -> bool:
    """Whether a call's risk level is one a rule covers only when made for it (:data:`DANGER`)."""
    return (risk or "").strip().lower() in DANGER


def covers(
    rule: AllowRule,
    *,
    tool: str | None,
    args: Mapping[str, Any] | None,
    session_id: str | None,
    agent_id: str | None,
    risk: str | None,
    now: datetime,
) -> bool:
    """Whether ``rule`` decides (or, muting, silences) this call now: it holds, the call is in its scope,
    its tool and pattern match, and (allowing) a danger-risk call only when the rule was made for those."""
    if not rule.active(now):
        return False
    if rule.scope == "session" and (not session_id or rule.session_id != session_id):
        return False
    if rule.scope == "agent" and (not agent_id or rule.agent_id != agent_id):
        return False
    if rule.tool_name is not None and rule.tool_name != tool:
        return False
    if rule.pattern is not None:
        try:
            if not pattern_matches(rule.pattern, call_subject(tool, args)):
                return False
        except UsageError:  # a stored pattern that no longer parses covers nothing
            return False
    # Muting decides nothing; allowing a danger-risk call takes a rule made for it.
    return rule.mode == "mute" or rule.danger or not is_danger(risk)


def muted(approval: Approval, rules: Iterable[AllowRule], now: datetime) -> bool:
    """Whether an approval's alert is silenced: a ``mute`` rule covers it (the server may say so itself
    by attaching the rule)."""
    if approval.rule is not None and approval.rule.mode == "mute":
        return True
    return any(
        rule.mode == "mute"
        and covers(
            rule,
            tool=approval.tool_name,
            args=approval.tool_args,
            session_id=approval.runtime_session_id,
            agent_id=approval.managed_agent_id,
            risk=approval.risk_level,
            now=now,
        )
        for rule in rules
    )


# --------------------------------------------------------------------------------------------- servers


def check_spec(spec: RuleSpec, can: Capabilities, server_kind: str) -> None:
    """Refuse, before any request, a rule this server cannot hold, with a sentence saying what it can
    (:class:`UsageError`): no rules at all (a Dendrux app), a scope it has not (Preloop's bypasses cover
    an agent or the whole account: no session, tool or argument pattern), a duration past its maximum,
    or an ``allow`` rule that would also allow danger-risk calls without the second confirmation."""
    rules = can.rules
    if rules is None:
        raise UsageError(
            f"a {server_kind} server keeps no allow rules: every call it asks about is decided one by one"
        )
    if spec.scope not in rules.scopes:
        raise UsageError(f"{rules.name} cannot cover one {spec.scope}: {rules.can}")
    if (spec.tool_name is not None and not rules.tools) or (spec.pattern is not None and not rules.patterns):
        finer = "an argument pattern" if spec.pattern is not None else "one tool"
        raise UsageError(f"{rules.name} cannot be narrowed to {finer}: {rules.can}")
    if spec.pattern is not None:
        check_pattern(spec.pattern)
        if spec.tool_name is None:
            raise UsageError("an argument pattern belongs to one tool: name it (--tool NAME)")
    if spec.scope == "session" and not spec.session_id:
        raise UsageError("a rule for one session needs the session (--session ID)")
    if spec.scope == "agent" and not spec.agent_id:
        raise UsageError("a rule for one agent needs the agent's id (--agent ID)")
    if not 1 <= spec.minutes <= rules.max_minutes:
        raise UsageError(f"a rule lasts 1 minute to {_minutes_words(rules.max_minutes)}")
    if spec.mode == "allow" and not rules.risk_aware and not spec.danger:
        raise UsageError(
            f"{rules.name} approve every call in their scope, danger-risk ones too: confirm that "
            "a second time (--danger), or mute alerts instead (--mute)"
        )


# --------------------------------------------------------------------------------------------- words


def banner_line(rule: AllowRule, now: datetime) -> str:
    """One rule as the banner says it: "auto-allow: Bash `pytest *` in 1a2b3c4d until 15:40 · 3 allowed"
    (then "· danger-risk too" when it covers those; ``mute``: "muted: ... · alerts off, still asks")."""
    head = "auto-allow" if rule.mode == "allow" else "muted"
    until = rule.expires_at.astimezone().strftime("%H:%M")
    if rule.expires_at - now > timedelta(hours=23):
        until = rule.expires_at.astimezone().strftime("%a %H:%M")
    line = f"{head}: {rule_scope_words(rule)} until {until}"
    if rule.mode == "allow":
        line += f" · {rule.allowed_count} allowed"
        if rule.danger:
            line += " · danger-risk too"
    else:
        line += " · alerts off, still asks"
    return line
