"""The words a timeline entry shows the operator, written once (pure: no UI, no I/O).

The timeline widget (``widgets.timeline_render``) draws each entry as a glyph and these words, and find
(``client.find``) searches these same words, so what is on screen is what find matches: "note delivered",
"approval requested", "run started", "denied", "ok 1.3s". The glyphs and colours stay with the widget;
the words live here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from client.models import Approval, Note
from client.present import NOT_RECORDED, decider_words, unrecorded_decider
from client.timeline import (
    ApprovalEntry,
    NoteEntry,
    RunEntry,
    RunStatus,
    SessionEntry,
    TextEntry,
    TimelineEntry,
    ToolEntry,
    ToolState,
    UnknownEntry,
)

__all__ = [
    "RUN_WORDS",
    "TOOL_WORDS",
    "Reading",
    "approval_words",
    "by_rule_words",
    "decider_part",
    "duration_words",
    "entry_words",
    "note_words",
    "session_words",
]

TOOL_WORDS: dict[ToolState, str] = {
    ToolState.RUNNING: "running",
    ToolState.COMPLETED: "ok",
    ToolState.FAILED: "failed",
    ToolState.DENIED: "denied",
}
"""What a tool call's line says of its state."""

RUN_WORDS: dict[RunStatus, str] = {
    RunStatus.RUNNING: "run started",
    RunStatus.COMPLETED: "run completed",
    RunStatus.FAILED: "run failed",
    RunStatus.CANCELLED: "run cancelled",
}
"""What a run's line says."""


def duration_words(ms: int | None) -> str:
    """Short human duration for a tool line: ``340ms``, ``1.2s``, ``2m03s``; "" when unknown."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"{minutes}m{seconds:02d}s"


def tool_state_words(entry: ToolEntry) -> str:
    """The state and duration as the line shows them: ``ok 1.3s``, ``running``."""
    duration = duration_words(entry.duration_ms)
    word = TOOL_WORDS[entry.state]
    return f"{word} {duration}" if duration else word


def approval_words(entry: ApprovalEntry) -> str:
    """``approval requested`` for the request, ``approval declined`` (its status) for the decision."""
    return "approval requested" if not entry.decided else f"approval {entry.status}"


def by_rule_words(entry: ApprovalEntry) -> tuple[str, str] | None:
    """A decision an allow rule made (nobody was asked): "by rule 5e1f2a3b (Bash `pytest *` in 1a2b3c4d),
    set by alice" and the call's first line, which the line shows instead of a comment; None otherwise."""
    from client.present import decided_by
    from client.preview import approval_preview

    approval = entry.approval
    if not entry.decided or approval is None:
        return None
    who = decided_by(approval)
    if who is None or who["kind"] != "rule":
        return None
    return f"by {who['detail'] or 'a rule'}", approval_preview(approval).first_line


@dataclass(frozen=True, slots=True)
class Reading:
    """Who reads the timeline: what an entry's words depend on besides the entry. The widget draws with it
    and find searches with it, so "by you", "by dana" and "(no decider recorded)" are found as they read.
    ``by_you`` tells the approvals this operator decided, ``colleague`` names a colleague who sent a note,
    ``deciders_recorded`` False: the server keeps no decider (``Capabilities.names_decider``)."""

    by_you: Callable[[Approval], bool] | None = None
    colleague: Callable[[Note], str | None] | None = None
    deciders_recorded: bool = True

    def you(self, approval: Approval | None) -> bool:
        """Whether this operator decided ``approval`` (its line reads "by you")."""
        return self.by_you is not None and approval is not None and self.by_you(approval)

    def sender(self, note: Note | None) -> str | None:
        """The colleague who sent ``note``, by name; None for this operator's own notes and the agent's."""
        return self.colleague(note) if self.colleague is not None and note is not None else None


def decider_part(approval: Approval, *, you: bool, recorded: bool) -> str | None:
    """Who decided, as a decision's line says it after the tool: "by dana", "by you", or "(no decider
    recorded)" on a server that keeps none (``client.present.NOT_RECORDED``); None when nothing is said."""
    who = decider_words(approval, you=you)
    if who:
        return f"by {who}"
    if unrecorded_decider(approval, you=you, names_decider=recorded):
        return f"({NOT_RECORDED})"
    return None


def note_words(state: str) -> str:
    """``note sent`` (a pending note), ``note delivered``, ``note undeliverable``..."""
    return f"note {'sent' if state == 'pending' else state}"


def session_words(entry: SessionEntry) -> str:
    """``session started`` / ``session ended``."""
    return "session ended" if entry.ended else "session started"


def entry_words(entry: TimelineEntry, reading: Reading = Reading()) -> list[str]:
    """Every part of what the entry shows, glyphs aside, one part a string (untrusted text as it came:
    the caller makes it terminal-safe), as ``reading``'s reader sees it. Parts the line puts side by side
    with one space ("ok 1.3s", "note delivered") are one part; the rest are separate, so a query never
    spans two of them."""
    if isinstance(entry, TextEntry):
        return [entry.text]
    parts: list[str | None]
    if isinstance(entry, ToolEntry):
        parts = [entry.name, entry.args_summary, tool_state_words(entry), entry.result_summary]
    elif isinstance(entry, NoteEntry):
        note = entry.note
        parts = [note_words(entry.state)]
        sender = reading.sender(note)
        if sender:
            parts.append(f"by {sender}")
        if note is not None:
            parts += [note.text, note.undeliverable_reason]
    elif isinstance(entry, ApprovalEntry):  # the request shows its summary, the decision also its comment
        a = entry.approval
        parts = [approval_words(entry)]
        by_rule = by_rule_words(entry)
        if a is not None and by_rule is not None:  # a rule decided it: which rule, who set it, the call
            parts += [a.tool_name, *by_rule]
        elif a is not None:
            parts += [a.tool_name, a.summary, a.approver_comment if entry.decided else None]
            if entry.decided:  # who decided, as the line says it (this operator's own read "you" there)
                parts.append(decider_part(a, you=reading.you(a), recorded=reading.deciders_recorded))
        if not entry.decided and entry.status != "pending":
            parts.append(f"(now {entry.status})")
    elif isinstance(entry, RunEntry):
        parts = [RUN_WORDS[entry.status], entry.detail]
    elif isinstance(entry, SessionEntry):
        parts = [session_words(entry), entry.reason]
    elif isinstance(entry, UnknownEntry):
        parts = [f"unknown event {entry.event_type}", entry.summary]
    else:  # the dropped-entries marker: nothing the agent said
        parts = []
    return [part for part in parts if part]
