"""Why an approval is asked, and what of its call the server hid (pure: no I/O, no UI).

Before deciding, an operator reads why the call is asked: the agent's own reasoning, the server's
summary of the ask, and the rule that required approval (Preloop's ``rule_context``: the rule's name and a
plain explanation; ours names the rule of the agent's hook). A server may also have redacted the call's
arguments before storing them (Preloop's sensitive-data rules):

* a value with a detected span reads ``[REDACTED:<type>]`` (``email``, ``credit_card``, ...);
* a reference-only call keeps no arguments at all, only a record marked ``_preloop_reference`` with the
  names of its argument keys;
* while such a request is pending the server may keep the original, sealed, under
  ``_preloop_sealed_args``: ``Backend.original_args`` fetches it (``GET .../original-args``, which answers
  404 "No original arguments are available for this request" otherwise).

:func:`why_rows` gives the labelled rows every front end shows (the approval card, the whole-call view,
the "are you sure?" dialog, ``preloop approvals show``); :func:`redaction` says what was hidden.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from client.models import Approval
from client.textsafe import safe_line

__all__ = ["REDACTED", "REFERENCE_KEY", "SEALED_KEY", "Redaction", "redaction", "rule_words", "why_rows"]

REDACTED = re.compile(r"\[REDACTED:([a-z][a-z0-9_]{0,63})\]")
"""A span a server replaced (Preloop's ``redact_text``: ``[REDACTED:<type>]``)."""
SEALED_KEY = "_preloop_sealed_args"
"""Where Preloop keeps a pending request's original arguments, encrypted (never shown)."""
REFERENCE_KEY = "_preloop_reference"
"""The mark of a reference-only record: the arguments were never stored."""

_TEXT = 300


@dataclass(frozen=True, slots=True)
class Redaction:
    """What the server hid of a call: each redacted type and how often, whether it kept no arguments at
    all (``reference_only``, with the names of the keys it had), and whether the originals can be asked
    for while it is pending (``originals_kept``)."""

    types: tuple[tuple[str, int], ...] = ()
    reference_only: bool = False
    keys: tuple[str, ...] = ()
    originals_kept: bool = False

    @property
    def words(self) -> str:
        """``credit card, email ×2 redacted by the server``, ``the server kept no arguments (keys: a, b)``."""
        parts = []
        if self.types:
            named = ", ".join(
                f"{name.replace('_', ' ')}{f' ×{n}' if n > 1 else ''}" for name, n in self.types
            )
            parts.append(f"{named} redacted by the server")
        if self.reference_only:
            keys = f" (keys: {', '.join(self.keys)})" if self.keys else ""
            parts.append(f"the server kept no arguments{keys}")
        return "; ".join(parts)

    def hint(self, *, pending: bool, key: str = "o") -> str:
        """How to see more: the key that fetches the originals, or why there are none to fetch."""
        if self.originals_kept and pending:
            return f"{key}: the originals (kept until decided)"
        return "the server keeps no originals"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for child in value.values():
            yield from _strings(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _strings(child)


def redaction(approval: Approval) -> Redaction | None:
    """What the server hid of the approval's call; None when it hid nothing."""
    args = approval.tool_args or {}
    found: Counter[str] = Counter()
    for key, value in args.items():
        if str(key).startswith("_"):
            continue
        for text in _strings(value):
            found.update(match.group(1) for match in REDACTED.finditer(text))
    reference = args.get(REFERENCE_KEY) is True
    keys: tuple[str, ...] = ()
    if reference:
        names = args.get("arg_keys")
        keys = tuple(safe_line(str(k), 40) for k in names[:20]) if isinstance(names, list) else ()
    sealed = bool(args.get(SEALED_KEY))
    if not found and not reference and not sealed:
        return None
    return Redaction(
        types=tuple(sorted(found.items())), reference_only=reference, keys=keys, originals_kept=sealed
    )


def rule_words(approval: Approval) -> str | None:
    """The rule that required approval, named and explained ("git push needs a human: The agent's
    permission hook asked…"); None when the server evaluated none (Preloop then sends no context)."""
    context = approval.rule_context
    if not isinstance(context, dict):
        return None
    name = context.get("rule_name")
    explanation = context.get("explanation")
    name = safe_line(name, 80) if isinstance(name, str) and name.strip() else None
    explanation = (
        safe_line(explanation, _TEXT) if isinstance(explanation, str) and explanation.strip() else None
    )
    if name and explanation:
        return f"{name}: {explanation}"
    return name or explanation


def why_rows(approval: Approval, *, key: str = "o") -> list[tuple[str, str]]:
    """Why the call is asked, as labelled rows (terminal-safe): the agent's reasoning, the server's summary
    (when it says something else), the rule, and what was redacted (with ``key``, the key that fetches
    the originals where the server keeps them)."""
    rows: list[tuple[str, str]] = []
    reasoning = (approval.agent_reasoning or "").strip()
    summary = (approval.summary or "").strip()
    if reasoning:
        rows.append(("Why", safe_line(reasoning, _TEXT)))
    if summary and summary != reasoning:
        rows.append(("Asks", safe_line(summary, _TEXT)))
    rule = rule_words(approval)
    if rule:
        rows.append(("Rule", rule))
    hidden = redaction(approval)
    if hidden is not None:
        words = hidden.words or "arguments redacted by the server"
        rows.append(("Redacted", f"{words} · {hidden.hint(pending=approval.pending, key=key)}"))
    return rows
