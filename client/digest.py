"""What happened in a session while the operator was away, in a few lines (pure: no I/O, no UI).

Coming back to a session after a while, or taking over a shift, an operator first needs the answer to
"what changed?": how long they were away, the tool calls since (how many failed), the approvals decided
(by whom, with the comment) and the ones waiting now, their notes and what the agent did after reading
each, the agent's latest words and whether a final answer came. :func:`session_digest` computes that from
a :class:`client.session.SessionCore` (its timeline, notes, approvals), so the attach screen (from what it
holds) and ``preloop sessions digest`` (from the events since the time asked: ``client.history``) say
the same; :func:`digest_lines` gives the three to six lines both show, :func:`digest_markdown` the text to
paste into a ticket (times with their zone), :func:`digest_json` the shape for scripts. :class:`Handoff`
is a shift's worth of them (``sessions digest --all --since 8h``): the sessions that need a human first
(an approval waits, or something went wrong in a session that still runs), then the rest, each "since" its
own start when it began inside the window, then what the operator decided in the window, then what expired.

The text lines name every decision someone made (with who and the comment) before the approvals that
expired, which are counted ("⌛ 4 expired (Bash)"), and list every problem or say how many more there are.

"Since" is a :class:`Since`: a time (``--since 30m``) or a mark's place (``--since-last``, the rule line
on coming back), which counts by the server's own numbering where it has one (``client.timeline.Place``).

Servers differ in what they keep: our server names the operator who decided, Preloop names them in the
approval's history (read by ``Backend.approval_trail`` before the digest is made), a Dendrux app names
nobody (the digest says so once, never inventing one) and keeps no comment for an approval (its decline
carries the reason). A decision by this operator reads "you". What the session's model calls cost in the
window ("+$0.42 · 12k tokens") is the sum of their usage (``client.costs``); a server that reports none
shows nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from client.costs import Cost, cost_json, cost_words, row_cost
from client.export import md_block, md_inline
from client.ids import short_id
from client.models import Approval, Note, Session, iso
from client.present import NO_DECIDER, decider_words, how_long
from client.preview import Preview, approval_preview
from client.session import THEN_WIDTH, SessionCore
from client.textsafe import safe_line
from client.timeline import (
    ApprovalEntry,
    NoteEntry,
    Place,
    RunEntry,
    RunStatus,
    SessionEntry,
    TextEntry,
    TextPhase,
    TimelineEntry,
    ToolEntry,
    ToolState,
    UnknownEntry,
    then_line,
)
from client.views import is_problem

__all__ = [
    "Decision",
    "Digest",
    "Handoff",
    "NoteLine",
    "Since",
    "digest_json",
    "digest_lines",
    "digest_markdown",
    "handoff_json",
    "handoff_lines",
    "handoff_markdown",
    "local_time",
    "session_digest",
]

NO_APPROVE_COMMENT = "this server keeps no comment for an approval"
"""Said beside an approval decided on a server that keeps no comment for one (a Dendrux app)."""

_TEXT = 120
"""Agent and operator words are cut to this many characters on a digest line."""
_NOTES_SHOWN = 2
_FAILED_NOTE = frozenset({"failed", "expired", "undeliverable"})
_LAPSED = frozenset({"expired", "cancelled"})
_PROBLEMS_SHOWN = 4


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Since:
    """From when things count: a time (``--since 30m``), or a mark (the place the operator last looked
    at, and when), whose events count by the server's own numbering where it has one."""

    at: datetime
    place: Place | None = None
    looked_at: datetime | None = None

    @staticmethod
    def mark(place: Place, looked_at: datetime) -> Since:
        """Since a mark: what came after ``place``; the operator was away from ``looked_at``."""
        return Since(place.at, place, looked_at)

    @staticmethod
    def within(start: datetime, row: Session | None) -> Since:
        """A window's start for one session: the session's own start when it began inside the window (a
        handoff's "Since" for a session that started an hour ago is that hour, not the whole shift)."""
        began = row.started_at if row is not None else None
        if began is not None and _utc(began) > _utc(start):
            return Since(_utc(began))
        return Since(start)

    def covers(self, place: Place | None, at: datetime | None = None) -> bool:
        """Whether an event at ``place`` (or, without one, at time ``at``) came since."""
        if place is not None and self.place is not None:
            return self.place.before(place)
        when = place.at if place is not None else at
        return when is not None and _utc(when) >= _utc(self.at)


@dataclass(frozen=True, slots=True)
class Decision:
    """An approval decided since: the tool, the outcome, who decided (as far as the server says), the
    comment (``comment_kept`` False: the server keeps none for this kind of decision), and when."""

    approval_id: str
    tool: str
    status: str
    by: str | None
    comment: str | None
    comment_kept: bool
    at: datetime | None
    session_id: str
    you: bool = False
    """This operator decided it (``by`` is then "you")."""
    change: Preview | None = None
    """What the decided call changes, when it is a file edit (``client.preview``): the digest shows it."""


@dataclass(frozen=True, slots=True)
class NoteLine:
    """A note sent or settled since: its words, its state, when it was sent, what the agent did after
    reading it ("then: ..."; None until it read the note and did something)."""

    note_id: str
    text: str
    state: str
    sent_at: datetime | None
    then: str | None
    session_id: str

    @property
    def failed(self) -> bool:
        """The note never reached the agent (failed, expired, undeliverable)."""
        return self.state in _FAILED_NOTE


@dataclass(frozen=True)
class Digest:
    """One session since a time or a mark (see the module docstring); ``partial`` says why it may leave
    something out (the mark is earlier than what was loaded)."""

    session_id: str
    agent: str
    title: str
    since: Since
    until: datetime
    tools: int = 0
    tools_failed: int = 0
    decided: tuple[Decision, ...] = ()
    waiting: tuple[Approval, ...] = ()
    notes: tuple[NoteLine, ...] = ()
    commentary: str | None = None
    final_answer: str | None = None
    problems: tuple[str, ...] = ()
    """What went wrong besides failed tool calls (counted in ``tools_failed``): a run that failed, an
    approval that expired, a note that never reached the agent."""
    ended: str | None = None
    """How the session ended, when it did since ("completed", "ended")."""
    over: bool = False
    """The session has ended (since, or before: its row says so): nobody can act on it any more."""
    entries: int = 0
    """Timeline entries made or changed since."""
    partial: str | None = None
    spent: Cost | None = None
    """What the model calls since cost (their usage added up); None when the server reports none."""
    total: Cost | None = None
    """What the whole session has cost (its row), for scripts and the export."""
    deciders_recorded: bool = True
    """False on a server that keeps no decider: the digest says so once."""

    @property
    def away(self) -> timedelta:
        """How long since the operator last looked (or since the time asked)."""
        start = self.since.looked_at or self.since.at
        return max(_utc(self.until) - _utc(start), timedelta(0))

    @property
    def made(self) -> tuple[Decision, ...]:
        """The decisions someone made (approved, declined), oldest first: what the digest names first."""
        return tuple(x for x in self.decided if x.status not in _LAPSED)

    @property
    def lapsed(self) -> tuple[Decision, ...]:
        """The approvals nobody decided (expired, or cancelled with the session), oldest first."""
        return tuple(x for x in self.decided if x.status in _LAPSED)

    @property
    def needs_human(self) -> bool:
        """Something waits for a person (an approval), or went wrong since in a session that still runs
        (a problem, a failed tool call, an approval that expired): an ended session with nothing waiting
        is reported with the others, not first."""
        if self.waiting:
            return True
        return not self.over and bool(self.problems or self.tools_failed or self.lapsed)

    @property
    def active(self) -> bool:
        """Anything happened since (or something waits)."""
        return bool(self.entries or self.decided or self.notes or self.waiting)


def session_digest(
    core: SessionCore,
    since: Since,
    now: datetime,
    *,
    approvals: Iterable[Approval] = (),
    comment_kept: bool = True,
    partial: str | None = None,
) -> Digest:
    """The digest of what ``core`` holds since ``since``. ``approvals`` are the server's list of the
    session's approvals in every status (the timeline alone knows only the decisions it saw happen), with
    their trails read; ``comment_kept`` False when the server keeps no comment for an approval
    (``Capabilities``); ``core.deciders_recorded`` False when it keeps no decider."""
    timeline = core.timeline
    tools = failed = entries = 0
    problems: list[str] = []
    commentary: TextEntry | None = None
    final: TextEntry | None = None
    ended: str | None = None
    decided_here: dict[str, Approval] = {}
    for entry in timeline:
        if not since.covers(entry.place, entry.at):
            continue
        entries += 1
        if isinstance(entry, ToolEntry):
            tools += 1
            if entry.state in (ToolState.FAILED, ToolState.DENIED):
                failed += 1
        elif isinstance(entry, TextEntry):
            if entry.phase is TextPhase.FINAL:
                final = entry
            elif entry.text.strip():
                commentary = entry
        elif isinstance(entry, ApprovalEntry) and entry.decided and entry.approval is not None:
            decided_here[entry.approval.id] = entry.approval
        elif isinstance(entry, SessionEntry) and entry.ended:
            ended = entry.reason or "ended"
        if is_problem(entry) and not _told_elsewhere(entry):
            problems.append(_problem(entry))
    known: dict[str, Approval] = dict(timeline.approvals)
    for approval in approvals:
        known[approval.id] = approval
    for approval in known.values():
        if (
            not approval.pending
            and approval.resolved_at is not None
            and since.covers(None, approval.resolved_at)
        ):
            decided_here.setdefault(approval.id, approval)
    decisions = sorted(
        (_decision(known.get(a.id, a), core, comment_kept) for a in decided_here.values()),
        key=lambda d: (d.at is None, d.at or now),
    )
    waiting = tuple(a for a in core.pending.values() if a.pending)
    notes = _notes(core, since)
    problems += [f"note {n.state}: “{safe_line(n.text, 40)}”" for n in notes if n.failed]
    spent = Cost.of_calls(u for place, u in timeline.usage.values() if since.covers(place))
    row = core.session
    return Digest(
        session_id=core.session_id,
        agent=row.agent_label if row is not None else "?",
        title=(row.title or "") if row is not None else "",
        since=since,
        until=now,
        tools=tools,
        tools_failed=failed,
        decided=tuple(decisions),
        waiting=waiting,
        notes=notes,
        commentary=_words(commentary.text) if commentary is not None else None,
        final_answer=_words(final.text) if final is not None else None,
        problems=tuple(problems),
        ended=ended,
        over=ended is not None or core.ended or (row is not None and row.ended_at is not None),
        entries=entries,
        partial=partial,
        spent=spent,
        total=row_cost(row),
        deciders_recorded=core.deciders_recorded,
    )


def _told_elsewhere(entry: TimelineEntry) -> bool:
    """Problems the digest says on their own line: failed tool calls (counted), notes (listed from the
    notes), declines and expiries (listed with the approvals)."""
    if isinstance(entry, ToolEntry | NoteEntry):
        return True
    return isinstance(entry, ApprovalEntry) and entry.status in ("declined", *_LAPSED)


def _words(text: str) -> str:
    return " ".join(text.split())


def _problem(entry: TimelineEntry) -> str:
    if isinstance(entry, RunEntry):
        word = "run failed" if entry.status is RunStatus.FAILED else "run cancelled"
        return f"{word}: {entry.detail}" if entry.detail else word
    if isinstance(entry, ApprovalEntry) and entry.approval is not None:
        return f"approval {entry.status} ({entry.approval.tool_name or 'tool'})"
    if isinstance(entry, UnknownEntry):
        return f"{entry.event_type}: {entry.summary}" if entry.summary else entry.event_type
    return "problem"


def _decision(approval: Approval, core: SessionCore, comment_kept: bool) -> Decision:
    you = core.decisions.by_you(approval)
    kept = comment_kept or approval.status != "approved"
    return Decision(
        approval_id=approval.id,
        tool=approval.tool_name or "tool",
        status=approval.status,
        by=decider_words(approval, you=you),
        comment=approval.approver_comment or None,
        comment_kept=kept,
        at=approval.resolved_at,
        session_id=approval.runtime_session_id or core.session_id,
        you=you,
        change=decided_change(approval),
    )


def _notes(core: SessionCore, since: Since) -> tuple[NoteLine, ...]:
    out: list[NoteLine] = []
    records = core.timeline.notes
    for note_id, note in core.notes.items():
        record = records.get(note_id)
        times = list(record.state_times.values()) if record is not None else []
        times += [t for t in _note_times(note) if t is not None]
        if not any(since.covers(None, t) for t in times):
            continue
        then = core.thens.get(note_id)
        if then is None:
            entry = core.timeline.then_entry(note_id)
            then = then_line(entry, THEN_WIDTH) if entry is not None else None
        out.append(
            NoteLine(
                note_id=note_id,
                text=note.text,
                state=note.state,
                sent_at=note.created_at,
                then=then,
                session_id=note.runtime_session_id or core.session_id,
            )
        )
    out.sort(key=lambda n: n.sent_at or datetime.min.replace(tzinfo=UTC))
    return tuple(out)


def _note_times(note: Note) -> list[datetime | None]:
    return [
        note.created_at,
        note.delivered_at,
        note.claimed_at,
        note.cancelled_at,
        note.expired_at,
        note.undeliverable_at,
    ]


# ---------------------------------------------------------------------------------------- rendering


def local_time(when: datetime, *, seconds: bool = False, date: bool = False) -> str:
    """A time in this machine's zone, with the zone ("14:02 CET"): a digest pasted into a ticket is read
    by people elsewhere."""
    local = _utc(when).astimezone()
    shape = ("%Y-%m-%d " if date else "") + ("%H:%M:%S" if seconds else "%H:%M")
    zone = local.tzname() or local.strftime("%z")
    return f"{local.strftime(shape)} {zone}"


def _clock(when: datetime) -> str:
    return _utc(when).astimezone().strftime("%H:%M")


def _decision_words(d: Decision, *, limit: int = 60) -> str:
    glyph = {"approved": "✓", "declined": "✗", "expired": "⌛"}.get(d.status, "·")
    words = f"{glyph} {safe_line(d.tool, 24)} {safe_line(d.status, 12)}"
    if d.by:
        words += f" by {safe_line(d.by, 80)}"  # a rule's words name it and who set it
    if d.comment:
        words += f": “{safe_line(d.comment, limit)}”"
    elif not d.comment_kept:
        words += f" ({NO_APPROVE_COMMENT})"
    if d.change is not None:
        words += f" · {safe_line(d.change.first_line, limit)}"
    return words


def _lapsed_words(lapsed: Iterable[Decision]) -> list[str]:
    """Approvals nobody decided, counted per outcome after the decisions: "⌛ 4 expired (Bash, Write)"."""
    out: list[str] = []
    for status, glyph in (("expired", "⌛"), ("cancelled", "⊘")):
        tools = [x.tool for x in lapsed if x.status == status]
        if tools:
            names = ", ".join(safe_line(t, 20) for t in dict.fromkeys(tools))
            out.append(f"{glyph} {len(tools)} {status} ({names})")
    return out


def _problem_words(problems: Iterable[str]) -> str:
    """Every problem once (a repeated one with "×3"); past a few, how many more: never dropped unsaid."""
    counted: dict[str, int] = {}
    for problem in problems:
        counted[problem] = counted.get(problem, 0) + 1
    parts = [safe_line(p, 60) + (f" ×{n}" if n > 1 else "") for p, n in counted.items()]
    if len(parts) > _PROBLEMS_SHOWN:
        more = len(parts) - _PROBLEMS_SHOWN + 1
        parts = [*parts[: _PROBLEMS_SHOWN - 1], f"+{more} more problems (--format md lists them)"]
    return " · ".join(parts)


CHANGE_LINES = 40
"""A decided edit's diff shows this many lines in a digest's Markdown (then how many more there are)."""


def decided_change(approval: Approval) -> Preview | None:
    """What a decided (approved or declined) file edit changes, as its preview; None for anything else."""
    if approval.status not in ("approved", "declined"):
        return None
    change = approval_preview(approval)
    return change if change.kind == "diff" else None


def _change_json(change: Preview | None) -> dict[str, Any] | None:
    return None if change is None else change.to_json(limit=CHANGE_LINES)


def _changes_markdown(decided: Iterable[Decision]) -> list[str]:
    """The diffs of the decided edits, each under the decision it belongs to (fenced: nothing in them is
    Markdown)."""
    out: list[str] = []
    for x in decided:
        if x.change is None:
            continue
        if not out:
            out.append("- **What the decided edits change**:")
        out.append(f"  - {x.status} `{_code(x.tool)}`: {_md(x.change.first_line)}")
        out.append("")
        out += md_block(
            "\n".join(
                x.change.text_lines(CHANGE_LINES, hint=f"preloop approvals show {short_id(x.approval_id)}")
            ),
            "    ",
            "diff",
        )
        out.append("")
    return out


def _note_words(n: NoteLine, *, limit: int = 60) -> str:
    words = f"“{safe_line(n.text, limit)}” {safe_line(n.state, 14)}"
    if n.then:
        words += f" → then: {safe_line(n.then, limit)}"
    elif n.state in ("delivered", "acknowledged"):
        words += " → nothing done since"
    return words


def digest_lines(digest: Digest, *, say_no_decider: bool = True) -> list[str]:
    """The digest in three to six plain lines (terminal-safe; the attach screen and the CLI print them):
    time away and tool calls (and what the model calls since cost); approvals decided (by whom) and
    waiting; notes (up to two) and what followed; problems; the agent's latest words and whether a final
    answer came. ``say_no_decider`` False: a handoff says once for all that the server names no decider."""
    d = digest
    if d.since.looked_at is not None:
        head = f"Away {how_long(d.away)} (last looked {_clock(d.since.looked_at)})"
    else:
        head = f"Since {_clock(d.since.at)} ({how_long(d.away)})"
    tools = f"{d.tools} tool call{'s' if d.tools != 1 else ''}"
    if d.tools:
        tools += f", {d.tools_failed} failed" if d.tools_failed else ", none failed"
    head += f" · {tools}"
    spent = cost_words(d.spent, split=False)
    if spent:
        head += f" · +{spent}"
    if d.ended:
        head += f" · session ended ({safe_line(d.ended, 30)})"
    if d.partial:
        head += f" · {d.partial}"
    lines = [head]
    parts = [_decision_words(x, limit=40) for x in d.made]  # every one: a decision is never "+N more"
    parts += _lapsed_words(d.lapsed)
    approvals = "Approvals: " + (" · ".join(parts) if parts else "none decided")
    if d.waiting:
        names = ", ".join(safe_line(a.tool_name or "tool", 20) for a in d.waiting[:3])
        approvals += f" · ⚑ {len(d.waiting)} waiting now ({names})"
    else:
        approvals += " · none waiting"
    if d.decided and not d.deciders_recorded and say_no_decider:
        approvals += f" ({NO_DECIDER})"
    lines.append(approvals)
    for note in d.notes[:_NOTES_SHOWN]:
        lines.append(f"Note {_note_words(note)}")
    if len(d.notes) > _NOTES_SHOWN:
        lines[-1] += f" · +{len(d.notes) - _NOTES_SHOWN} more notes"
    if d.problems:
        lines.append("Problems: " + _problem_words(d.problems))
    agent = "Agent: "
    agent += f"“{safe_line(d.commentary, _TEXT)}”" if d.commentary else "no commentary since"
    if d.final_answer is not None:
        agent += f" · final answer: “{safe_line(d.final_answer, 60)}”"
    else:
        agent += " · no final answer since" if not d.ended else " · ended without a final answer"
    lines.append(agent)
    return lines[:6]


def digest_json(digest: Digest) -> dict[str, Any]:
    """The digest for scripts (times in ISO 8601 UTC; text as the server sent it, not cut)."""
    d = digest
    return {
        "session_id": d.session_id,
        "agent": d.agent,
        "title": d.title,
        "since": iso(d.since.at),
        "since_place": None
        if d.since.place is None
        else {"id": d.since.place.id, "at": iso(d.since.place.at), "number": d.since.place.number},
        "last_looked_at": iso(d.since.looked_at),
        "until": iso(d.until),
        "away_seconds": int(d.away.total_seconds()),
        "tool_calls": d.tools,
        "tool_calls_failed": d.tools_failed,
        "approvals_decided": [
            {
                "id": x.approval_id,
                "tool": x.tool,
                "status": x.status,
                "by": x.by,
                "comment": x.comment,
                "comment_kept_by_server": x.comment_kept,
                "at": iso(x.at),
                "you": x.you,
                "change": _change_json(x.change),
            }
            for x in d.decided
        ],
        "deciders_recorded_by_server": d.deciders_recorded,
        "cost_since": cost_json(d.spent),
        "cost_total": cost_json(d.total),
        "approvals_waiting": [
            {"id": a.id, "tool": a.tool_name, "requested_at": iso(a.requested_at)} for a in d.waiting
        ],
        "notes": [
            {"id": n.note_id, "text": n.text, "state": n.state, "sent_at": iso(n.sent_at), "then": n.then}
            for n in d.notes
        ],
        "latest_commentary": d.commentary,
        "final_answer": d.final_answer,
        "ended": d.ended,
        "problems": list(d.problems),
        "needs_human": d.needs_human,
        "partial": d.partial,
    }


def _md(text: str) -> str:
    """Untrusted text as one line of inert Markdown (``client.export.md_inline``: its line breaks as
    spaces)."""
    return md_inline(text, newline=" ")


def digest_markdown(digest: Digest, *, heading: str = "###", say_no_decider: bool = True) -> str:
    """The digest to paste into a ticket or a chat: a heading and a list, every time with its zone."""
    d = digest
    name = f"{_md(d.title)} " if d.title else ""
    lines = [f"{heading} Session {name}({short_id(d.session_id)}, {_md(d.agent)})", ""]
    span = f"{local_time(d.since.at, date=True)} → {local_time(d.until, date=True)} ({how_long(d.away)})"
    if d.since.looked_at is not None:
        span = (
            f"last looked {local_time(d.since.looked_at, date=True)}; until {local_time(d.until, date=True)}"
        )
        span += f" ({how_long(d.away)} away)"
    lines.append(f"- **Since**: {span}")
    if d.partial:
        lines.append(f"- **Note**: {_md(d.partial)}")
    failed = f", {d.tools_failed} failed" if d.tools_failed else ""
    lines.append(f"- **Tool calls**: {d.tools}{failed}")
    spent = cost_words(d.spent)
    if spent:
        lines.append(f"- **Cost since**: +{_md(spent)}")
    if d.decided:
        lines.append("- **Approvals decided**:")
        for x in (*d.made, *d.lapsed):
            when = f" at {local_time(x.at, seconds=True)}" if x.at else ""
            by = f" by {_md(x.by)}" if x.by else ""
            said = (
                f" — “{_md(x.comment)}”"
                if x.comment
                else ("" if x.comment_kept else f" ({NO_APPROVE_COMMENT})")
            )
            lines.append(f"  - {x.status} `{_code(x.tool)}`{by}{when}{said}")
    else:
        lines.append("- **Approvals decided**: none")
    if d.decided and not d.deciders_recorded and say_no_decider:
        lines.append(f"- _{NO_DECIDER}_")
    lines += _changes_markdown(d.decided)
    if d.waiting:
        names = ", ".join(f"`{_code(a.tool_name or 'tool')}`" for a in d.waiting)
        lines.append(f"- **Waiting now**: {len(d.waiting)} ({names})")
    for n in d.notes:
        sent = f" (sent {local_time(n.sent_at)})" if n.sent_at else ""
        then = f" → then: {_md(n.then)}" if n.then else ""
        lines.append(f"- **Note**{sent}: “{_md(n.text)}” — {_md(n.state)}{then}")
    if d.problems:
        lines.append("- **Problems**: " + "; ".join(_md(p) for p in d.problems))
    lines.append(
        f"- **Latest commentary**: {'“' + _md(d.commentary) + '”' if d.commentary else 'none since'}"
    )
    final = f"“{_md(d.final_answer)}”" if d.final_answer is not None else "none since"
    lines.append(f"- **Final answer**: {final}")
    if d.ended:
        lines.append(f"- **Session ended**: {_md(d.ended)}")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    return safe_line(text, 60).replace("`", "'")


# ---------------------------------------------------------------------------------------- handoff


@dataclass(frozen=True)
class Handoff:
    """A shift's digests: every session with activity in the window (the ones that need a human first),
    and what the operator decided in it; ``comment_kept`` False on a server that keeps no comment for an
    approval (say so once)."""

    since: datetime
    until: datetime
    digests: tuple[Digest, ...] = ()
    comment_kept: bool = True
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Sessions whose digest could not be read, with why."""
    deciders_recorded: bool = True
    """False on a server that keeps no decider (say so once)."""

    @property
    def spent(self) -> Cost | None:
        """What every session's model calls in the window cost, added up (None: no server said)."""
        costs = [d.spent for d in self.digests if d.spent is not None]
        return sum(costs[1:], costs[0]) if costs else None

    @property
    def first(self) -> list[Digest]:
        """The sessions that need a human, most waiting first."""
        need = [d for d in self.digests if d.needs_human]
        return sorted(need, key=lambda d: (-len(d.waiting), -len(d.problems), d.session_id))

    @property
    def rest(self) -> list[Digest]:
        """The other sessions with activity, most active first."""
        return sorted((d for d in self.digests if not d.needs_human), key=lambda d: -d.entries)

    @property
    def decisions(self) -> list[Decision]:
        """Every approval decided in the window, oldest first."""
        found = [x for d in self.digests for x in d.decided]
        return sorted(found, key=lambda x: (x.at is None, x.at or self.until))

    @property
    def made(self) -> list[Decision]:
        """The approvals someone decided in the window (approved, declined), oldest first."""
        return [x for x in self.decisions if x.status not in _LAPSED]

    @property
    def lapsed(self) -> list[Decision]:
        """The approvals nobody decided in the window (expired, cancelled), oldest first."""
        return [x for x in self.decisions if x.status in _LAPSED]

    @property
    def notes(self) -> list[NoteLine]:
        """Every note sent or settled in the window, oldest first."""
        found = [n for d in self.digests for n in d.notes]
        return sorted(found, key=lambda n: (n.sent_at is None, n.sent_at or self.until))


def _session_head(d: Digest) -> str:
    title = f" “{safe_line(d.title, 50)}”" if d.title else ""
    return f"{short_id(d.session_id)} {safe_line(d.agent, 24)}{title}"


def handoff_lines(handoff: Handoff) -> list[str]:
    """The handoff as plain lines: the window, the sessions that need a human first (each with its
    digest), the rest, then what was decided (approvals, declines with their comments, notes), then the
    approvals nobody decided (expired, cancelled)."""
    h = handoff
    span = f"{local_time(h.since, date=True)} → {local_time(h.until, date=True)}"
    head = (
        f"Shift handoff · {span} · {len(h.digests)} session{'s' if len(h.digests) != 1 else ''} with activity"
    )
    spent = cost_words(h.spent, split=False)
    if spent:
        head += f" · +{spent} since {_clock(h.since)}"
    lines = [head]
    if not h.deciders_recorded:
        lines.append(f"(Who decided is not shown: {NO_DECIDER}.)")
    if not h.comment_kept:
        lines.append(f"(Approvals here carry no comment: {NO_APPROVE_COMMENT}; a decline keeps its reason.)")
    for title, group in (("Needs a human first", h.first), ("Other sessions with activity", h.rest)):
        if not group:
            continue
        lines += ["", f"{title}:"]
        for d in group:
            lines.append(f"  {_session_head(d)}")
            lines += [f"    {line}" for line in digest_lines(d, say_no_decider=False)]
    lines += ["", "Decided in this window:"]
    if not h.made and not h.notes:
        lines.append("  nothing: no approval decided, no note sent")
    for x in h.made:
        when = _clock(x.at) if x.at else "--:--"
        lines.append(f"  {when} {short_id(x.session_id)} {_decision_words(x, limit=100)}")
    for n in h.notes:
        when = _clock(n.sent_at) if n.sent_at else "--:--"
        lines.append(f"  {when} {short_id(n.session_id)} note {_note_words(n, limit=100)}")
    if h.lapsed:
        lines += ["", _LAPSED_TITLE + ":"]
    for x in h.lapsed:
        when = _clock(x.at) if x.at else "--:--"
        lines.append(f"  {when} {short_id(x.session_id)} {_decision_words(x, limit=100)}")
    for session_id, why in h.skipped.items():
        lines.append(f"  (could not read {short_id(session_id)}: {safe_line(why, 80)})")
    return lines


_LAPSED_TITLE = "Expired or cancelled, nobody decided"


def _decision_item(x: Decision) -> str:
    when = local_time(x.at, seconds=True) if x.at else "unknown time"
    by = f" by {_md(x.by)}" if x.by else ""
    said = f" — “{_md(x.comment)}”" if x.comment else ("" if x.comment_kept else f" ({NO_APPROVE_COMMENT})")
    return f"- {when}, {short_id(x.session_id)}: {x.status} `{_code(x.tool)}`{by}{said}"


def handoff_markdown(handoff: Handoff) -> str:
    """The handoff to paste into a ticket or a chat (times with their zone)."""
    h = handoff
    out = [f"## Shift handoff, {local_time(h.since, date=True)} → {local_time(h.until, date=True)}", ""]
    spent = cost_words(h.spent)
    if spent:
        out += [f"Model calls in this window: +{_md(spent)}.", ""]
    if not h.deciders_recorded:
        out += [f"_Who decided is not shown: {NO_DECIDER}._", ""]
    if not h.comment_kept:
        out += [f"_Approvals here carry no comment ({NO_APPROVE_COMMENT}); a decline keeps its reason._", ""]
    for title, group in (("Needs a human first", h.first), ("Other sessions with activity", h.rest)):
        out += [f"### {title}", ""]
        if not group:
            out += ["None.", ""]
        for d in group:
            out.append(digest_markdown(d, heading="####", say_no_decider=False))
    out += ["### Decided in this window", ""]
    if not h.made and not h.notes:
        out.append("Nothing: no approval decided, no note sent.")
    for x in h.made:
        out.append(_decision_item(x))
    for n in h.notes:
        when = local_time(n.sent_at, seconds=True) if n.sent_at else "unknown time"
        then = f" → then: {_md(n.then)}" if n.then else ""
        out.append(f"- {when}, {short_id(n.session_id)}: note “{_md(n.text)}” — {_md(n.state)}{then}")
    if h.lapsed:
        out += ["", f"### {_LAPSED_TITLE}", ""]
    for x in h.lapsed:
        out.append(_decision_item(x))
    for session_id, why in h.skipped.items():
        out.append(f"- could not read {short_id(session_id)}: {_md(why)}")
    return "\n".join(out) + "\n"


def handoff_json(handoff: Handoff) -> dict[str, Any]:
    """The handoff for scripts."""
    h = handoff
    return {
        "since": iso(h.since),
        "until": iso(h.until),
        "comment_kept_by_server": h.comment_kept,
        "deciders_recorded_by_server": h.deciders_recorded,
        "cost_since": cost_json(h.spent),
        "needs_human": [digest_json(d) for d in h.first],
        "other": [digest_json(d) for d in h.rest],
        "decided": [
            {
                "session_id": x.session_id,
                "approval_id": x.approval_id,
                "tool": x.tool,
                "status": x.status,
                "by": x.by,
                "you": x.you,
                "comment": x.comment,
                "at": iso(x.at),
            }
            for x in h.decisions
        ],
        "notes": [
            {"session_id": n.session_id, "id": n.note_id, "text": n.text, "state": n.state, "then": n.then}
            for n in h.notes
        ],
        "skipped": dict(h.skipped),
    }
