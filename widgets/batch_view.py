"""Many approvals decided at once: what the decision dialog names, and what came of each approval.

Presentational only (no network): given the marked approvals, :class:`ManyCalls` says how many, which
tools, which sessions and the highest risk, and names every call at a risk that must be named (the
dangerous ones list themselves, one line each: tool, risk, session, the first line of the call, as
:func:`widgets.approvals_panel.call_first_line` writes it); :func:`batch_results` gives one row per
approval of a :class:`client.steering.BatchDecision`: decided, already decided (by whom and when, as far as
the server says), expired, or not decided and why. Agent-supplied text goes through ``client.textsafe``
into ``rich.text.Text``, never into markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from client.models import Approval
from client.present import settled_line, settled_phrase
from client.steering import (
    AlreadyDeciding,
    AlreadySettled,
    BatchDecision,
    Decided,
    DecideOutcome,
)
from client.textsafe import safe_line
from widgets.approvals_panel import call_first_line
from widgets.inbox_view import agent_of, session_label

RISK_ORDER = ("low", "caution", "medium", "high", "danger", "critical")
"""Risk levels from the least to the most; a level not in it counts as the least."""

SESSIONS_SHOWN = 4
"""The dialog names this many sessions (the most marked first), then how many more."""


def risk_rank(approval: Approval) -> int:
    """Where an approval's risk level stands in :data:`RISK_ORDER` (-1: none or unknown)."""
    level = (approval.risk_level or "").strip().lower()
    return RISK_ORDER.index(level) if level in RISK_ORDER else -1


def call_line(approval: Approval, width: int = 60) -> Text:
    """One call in one line: tool, risk, session, the first line of what it does."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(safe_line(approval.tool_name or "tool", 24), style="bold")
    if approval.risk_level:
        line.append(f" {safe_line(approval.risk_level, 12)}", style="bold red")
    line.append("  ")
    line.append_text(session_label(agent_of(approval), approval.runtime_session_id))
    first = call_first_line(approval, width)
    if first:
        line.append("  ")
        line.append(first, style="yellow")
    return line


@dataclass(frozen=True, slots=True)
class ManyCalls:
    """The approvals one decision is about, as the dialog that asks for it names them. ``named_risks``:
    the risk levels whose calls are each named by the dialog."""

    approvals: tuple[Approval, ...]
    named_risks: frozenset[str]

    @property
    def count(self) -> int:
        return len(self.approvals)

    @property
    def named(self) -> list[Approval]:
        """The calls the dialog names one by one (their risk is one of ``named_risks``)."""
        return [a for a in self.approvals if (a.risk_level or "").strip().lower() in self.named_risks]

    def highest_risk(self) -> str | None:
        """The highest risk level among the calls (None when none has one)."""
        rated = [a for a in self.approvals if a.risk_level]
        if not rated:
            return None
        return safe_line(max(rated, key=risk_rank).risk_level or "", 12).strip().lower()

    def tools(self) -> str:
        """``Bash ×7, Write ×3, Read``: each tool and how many of its calls, the most first."""
        counts = Counter(safe_line(a.tool_name or "tool", 24) for a in self.approvals)
        return ", ".join(f"{tool} ×{n}" if n > 1 else tool for tool, n in counts.most_common())

    def sessions(self) -> Text:
        """The sessions the calls are in, the most marked first (how many from each), then how many more."""
        counts = Counter(a.runtime_session_id or "" for a in self.approvals)
        first = {a.runtime_session_id or "": a for a in self.approvals}
        out = Text()
        for i, (session_id, n) in enumerate(counts.most_common(SESSIONS_SHOWN)):
            if i:
                out.append(", ")
            out.append_text(session_label(agent_of(first[session_id]), session_id or None))
            if n > 1:
                out.append(f" ×{n}", style="dim")
        more = len(counts) - SESSIONS_SHOWN
        if more > 0:
            out.append(f", {more} more session{'s' if more != 1 else ''}", style="dim")
        return out

    def title(self) -> Text:
        """Under the question: ``12 calls in 5 sessions · highest risk danger``."""
        sessions = len({a.runtime_session_id for a in self.approvals})
        out = Text(style="not bold")
        out.append(f"{self.count} call{'s' if self.count != 1 else ''}", style="bold yellow")
        out.append(f" in {sessions} session{'s' if sessions != 1 else ''}", style="yellow")
        risk = self.highest_risk()
        if risk:
            out.append(" · highest risk ", style="dim")
            out.append(risk, style="bold red" if risk in self.named_risks else "bold")
        return out

    def card(self) -> Table:
        """The tools, the sessions, and every call at a named risk level, one line each."""
        card = Table.grid(padding=(0, 2))
        card.add_column(style="dim", no_wrap=True)
        card.add_column(overflow="fold")
        card.add_row("Tools", Text(self.tools()))
        card.add_row("Sessions", self.sessions())
        named = self.named
        for i, approval in enumerate(named):
            card.add_row("Risky" if i == 0 else "", call_line(approval))
        return card


# ------------------------------------------------------------------------------------------- results

GLYPHS = {"decided": ("✓", "bold green"), "settled": ("↷", "bold yellow"), "failed": ("✗", "bold red")}


def outcome_words(outcome: DecideOutcome) -> tuple[str, Text]:
    """What came of one approval of a batch: its kind (``decided``, ``settled``, ``failed``) and a
    sentence: "approved", "already approved: approval 1a2b3c4d (Bash) was approved by dana at 12:01:05,
    comment "fine"", "expired before anyone decided",
    "not declined: <why> (still waiting)"."""
    if isinstance(outcome, Decided):
        return "decided", Text("approved" if outcome.verb == "approve" else "declined", style="green")
    if isinstance(outcome, AlreadySettled):
        row = outcome.approval
        status = safe_line(row.status, 20)
        if status not in ("approved", "declined"):  # expired, cancelled: nobody's decision
            return "settled", Text(settled_phrase(status, elsewhere=False), style="yellow")
        # the one sentence for a settled approval (client.present): by whom as the server says, when, comment
        return "settled", Text(f"already {status}: {settled_line(row, you=outcome.by_you)}", style="yellow")
    if isinstance(outcome, AlreadyDeciding):
        return "settled", Text("already being decided from here", style="yellow")
    words = Text(f"not {'approved' if outcome.verb == 'approve' else 'declined'}: ", style="red")
    words.append(safe_line(outcome.error.hint, 160), style="red")
    words.append(" (still waiting)", style="dim")
    return "failed", words


def batch_results(batch: BatchDecision, rows: Mapping[str, Approval]) -> Group:
    """The last batch: a head ("Last decision: 3 of 5 marked approved · 2 not"), then each approval in
    the order decided: a glyph and, on one line cut to the width, what came of it and the call (``rows``:
    the approvals as the inbox listed them); for one not decided here, the call, then under it what it
    is or why not (wrapped)."""
    decided = len(batch.decided)
    total = len(batch.outcomes)
    verb = "approved" if batch.verb == "approve" else "declined"
    head = Text(f"Last decision: {decided} of {total} marked {verb}", style="bold")
    if decided < total:
        head.append(f" · {total - decided} not", style="bold red")
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    for outcome in batch.outcomes:
        kind, words = outcome_words(outcome)
        glyph, style = GLYPHS[kind]
        told: Approval | None = None
        if isinstance(outcome, Decided | AlreadySettled):
            told, aid = outcome.approval, outcome.approval.id
        else:
            aid = outcome.approval_id
        approval = rows.get(aid) or told
        what = call_line(approval) if approval is not None else Text(aid[:8], style="dim")
        if kind == "decided":  # one line: "approved  Bash high deployer 0202abcd rm -rf build/"
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append_text(words)
            line.append("  ")
            line.append_text(what)
            table.add_row(Text(glyph, style=style), line)
        else:  # the call on its line, then what it is or why not, wrapped
            table.add_row(Text(glyph, style=style), Group(what, words))
    return Group(head, Padding(table, (0, 0, 0, 2)))


def marked_in_order(approvals: Iterable[Approval], marked: Iterable[str]) -> list[Approval]:
    """The marked approvals in the order they are listed."""
    wanted = set(marked)
    return [a for a in approvals if a.id in wanted]
