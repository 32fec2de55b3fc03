"""Pure presentation helpers shared by the CLI tables, the plain attach output and the TUI screens.

Nothing here does I/O or imports a UI toolkit, so the sessions table of ``preloop sessions list`` and the
TUI sessions screen compute the same titles, states and relative times from the same rows. Every function
that takes a clock takes ``now`` as an argument (default: the current UTC time) so tests pin it.

Every string these helpers return that came from the server is terminal-safe (``client.textsafe``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from client.cells import cell_len, fit, head, tail
from client.ids import short_id
from client.models import AllowRule, Approval, ApprovalDecider, Note, NoteState, Session
from client.textsafe import safe_line, safe_text

if TYPE_CHECKING:
    from client.events import Event

SessionState = Literal["live", "idle", "ended"]

LIVE_WINDOW = timedelta(minutes=2)
"""A session with activity this recent is shown as live; older activity is idle."""

ACTIVE_WINDOW_MINUTES = 10
"""``sessions list --active`` means activity within this many minutes (the server filters)."""

_KIND_LABELS = {
    "claude_code": "Claude Code",
    "codex": "Codex",
    "gemini_cli": "Gemini CLI",
    "cursor": "Cursor",
    "opencode": "OpenCode",
    "flow": "Flow",
}


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def relative_time(when: datetime | None, now: datetime | None = None) -> str:
    """Say how long ago something happened the way people read it at a glance ("5m ago").

    ``None`` (never happened) is ``-``. A time slightly in the future (clock skew between server and
    client) is "just now" rather than a confusing negative age.
    """
    if when is None:
        return "-"
    seconds = int((_now(now) - _utc(when)).total_seconds())
    if seconds < 5:
        return "just now"
    return f"{short_span(seconds)} ago"


def short_span(seconds: int, *, exact: bool = False) -> str:
    """A span of time in the tables' short words: "45s", "9m", "2h", "3d". ``exact`` (a countdown) keeps
    the minutes beside the hours and counts hours up to two days: "1h05m", "30h"."""
    seconds = max(seconds, 0)
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < (48 if exact else 24):
        return f"{hours}h{minutes % 60:02d}m" if exact and minutes % 60 else f"{hours}h"
    return f"{hours // 24}d"


def last_activity(row: Session) -> datetime | None:
    """The newest moment the session is known to have done something (the list row may lack a field)."""
    times = [t for t in (row.last_activity_at, row.last_request_at, row.started_at) if t is not None]
    return max((_utc(t) for t in times), default=None)


def session_state(row: Session, now: datetime | None = None) -> SessionState:
    """Classify a row for the STATE column: ended beats everything, then live if active in 2 minutes."""
    if row.ended_at is not None:
        return "ended"
    seen = last_activity(row)
    if seen is not None and _now(now) - seen <= LIVE_WINDOW:
        return "live"
    return "idle"


def agent_state(row: Session, pending_approvals: int, now: datetime | None = None) -> tuple[str, str]:
    """What the agent of an attached session is doing, as a state key and the words for it.

    Keys: ``ended``; ``waiting`` (alive and blocked on a human: "waiting for approval"); ``live`` (the
    session is open, so the agent is alive; the words add whether it did something in the last two minutes
    or how long it has been quiet). "live" never means merely "recent activity": an agent waiting on an
    approval is quiet yet alive.
    """
    if row.ended_at is not None:
        return "ended", "ended"
    if pending_approvals > 0:
        return "waiting", "waiting for approval"
    seen = last_activity(row)
    if seen is None or _now(now) - seen <= LIVE_WINDOW:
        return "live", "live · working"
    quiet = relative_time(seen, now).removesuffix(" ago")
    return "live", f"live · quiet for {quiet}"


def connection_lost(reason: str) -> str:
    """ "Connection lost (why)" without saying it twice when the reason already says so."""
    why = safe_line(reason, 120).strip()
    if not why:
        return "Connection lost"
    if why.lower().startswith(("connection lost", "connection closed", "connection reset")):
        return why[0].upper() + why[1:]
    return f"Connection lost ({why})"


def settled_phrase(status: str, *, elsewhere: bool) -> str:
    """What happened to an approval that stopped waiting, as a predicate: "was approved elsewhere", "expired
    before anyone decided" (an expiry is something that happened to it, not a decision made elsewhere),
    "is no longer pending" (its final record is not known)."""
    state = safe_line(status, 20)
    if state == "expired":
        return "expired before anyone decided"
    if state == "pending":
        return "is no longer pending"
    if state in ("approved", "declined"):
        return f"was {state}{' elsewhere' if elsewhere else ''}"
    return f"is no longer pending ({state})"


NOT_RECORDED = "no decider recorded"
"""Said beside a decision nobody is named for on a server that keeps no decider (a Dendrux app:
``Capabilities.names_decider`` False), so a blank never reads as "nobody" or as this operator
(:func:`unrecorded_decider` tells when): a timeline line, the whole-call view, ``approvals show``."""

NO_DECIDER = "this server does not record who decided an approval"
"""The same as a sentence, said once where decisions are listed (the digest, the export, ``approvals
list``) instead of beside each one."""


def unrecorded_decider(approval: Approval, *, you: bool = False, names_decider: bool = True) -> bool:
    """Whether to say :data:`NOT_RECORDED` beside this decision: it was approved or declined, not by this
    operator (``you``), on a server that keeps no decider, and nothing else (a rule) is named for it."""
    decided = approval.status in ("approved", "declined")
    return decided and not names_decider and not you and decider_of(approval) is None


def decider_of(approval: Approval) -> ApprovalDecider | None:
    """Who or what decided an approval, as far as the server says: its ``decider`` (our server names the
    operator; Preloop's history, read by ``Backend.approval_trail``), else what the row's flags say (an AI
    reviewer's model, a standing rule's reason). None while pending, for an expiry or a session's end
    (nobody's decision), and for a person the server does not name."""
    if approval.status not in ("approved", "declined"):
        return None
    rule = _deciding_rule(approval)
    if rule is not None:
        return ApprovalDecider(kind="rule", name=rule, at=approval.resolved_at)
    if approval.decider is not None:
        return approval.decider
    if approval.decided_by_ai:
        return ApprovalDecider(kind="ai", name=approval.ai_model, at=approval.resolved_at)
    if approval.auto_approved_reason:
        return ApprovalDecider(kind="rule", name=approval.auto_approved_reason, at=approval.resolved_at)
    return None


def _deciding_rule(approval: Approval) -> str | None:
    """The allow rule (ours) or Preloop approval bypass that approved a call nobody was asked about, named
    with what it covers and who set it (:func:`decided_by_rule`); None when none did. A bypass is a rule
    here as in ``rules list``: one this client has not seen (its scope unknown) still reads "rule <id>"."""
    rule = approval.rule
    if rule is not None and rule.mode == "allow" and approval.status == "approved":
        return decided_by_rule(rule)
    if approval.auto_approved_reason == "bypass":
        return f"rule {short_id(approval.auto_approval_bypass_id)} (a Preloop approval bypass)"
    return None


def decider_words(approval: Approval, *, you: bool = False) -> str | None:
    """Who decided, in words: "you" (this operator: ``Decisions.by_you``), the person's name ("dana"),
    "an AI reviewer (gpt-4o)", "a standing rule (bypass_active)", "an operator" (a person the server does not
    name: one decided before it named them, or a server that only says a person did);
    None when nobody decided (pending, expired, cancelled) or the server does not say who."""
    if approval.status not in ("approved", "declined"):
        return None
    if you:
        return "you"
    rule = _deciding_rule(approval)
    if rule is not None:
        return rule
    who = decider_of(approval)
    if who is None:
        return "an operator" if approval.decided_by_human else None
    name = safe_line(who.name, 60) if who.name else None
    if who.kind == "ai":
        return f"an AI reviewer ({name})" if name else "an AI reviewer"
    if who.kind == "rule":
        return f"a standing rule ({name})" if name else "a standing rule"
    return name or "an operator"


def decision_words(approval: Approval, *, you: bool = False, comment: int | None = 120) -> str:
    """What became of an approval, who did it, when and with which comment, in one line:
    ``approved by dana 14:02: “looks fine”``, ``declined by you 09:15``, ``expired 14:05 (nobody
    decided)``, ``cancelled 14:06 (the session ended)``; ``comment`` cuts the comment (None: whole)."""
    status = safe_line(approval.status, 20)
    who = decider_words(approval, you=you)
    decider = decider_of(approval)
    when = (decider.at if decider is not None and decider.at else None) or approval.resolved_at
    words = status + (f" by {who}" if who else "")
    if when is not None:
        words += f" {clock(when)[:5]}"
    if status == "expired":
        words += " (nobody decided)"
    elif status == "cancelled":
        words += " (the session ended)"
    elif status == "pending":
        words = "pending"
    if approval.approver_comment:
        words += f": “{safe_line(approval.approver_comment, comment)}”"
    return words


def decided_by(approval: Approval, *, you: bool = False) -> dict[str, object] | None:
    """Who decided, for scripts (JSON, the export): ``kind`` (``human``, ``ai``, ``policy``, ``rule``: an
    allow rule or a Preloop approval bypass, ``expiry``, ``unknown``), ``name`` and ``user_id`` as the
    server gives them, ``you`` (this operator decided it), ``at``, and ``detail`` (the words
    :func:`decider_words` says). None while pending."""
    if approval.pending:
        return None
    if approval.status == "expired":
        return {"kind": "expiry", "detail": "nobody decided before it expired"}
    rule = _deciding_rule(approval)
    if rule is not None:  # an allow rule or a bypass decided it: named with who set it
        return {"kind": "rule", "detail": rule}
    who = decider_of(approval)
    kinds = {"person": "human", "ai": "ai", "rule": "policy"}
    named = "human" if approval.decided_by_human or you else "unknown"
    kind = kinds[who.kind] if who is not None else named
    out: dict[str, object] = {"kind": kind, "detail": decider_words(approval, you=you)}
    if who is not None:
        out["name"] = _clean_text(who.name)
        out["user_id"] = who.user_id
        out["at"] = _iso(who.at)
    out["you"] = you
    return out


def trail_rows(approval: Approval, *, you: bool = False, names_decider: bool = True) -> list[tuple[str, str]]:
    """Who decided and who looked, as labelled rows (terminal-safe): the decision (who, when, how, with
    which comment), the votes of a quorum ("1 of 2"), an escalation and its new deadline, and who has
    opened the approval (Preloop's history). ``names_decider`` False: the server keeps no decider, said
    here instead of a name."""
    rows: list[tuple[str, str]] = []
    if not approval.pending:
        words = decision_words(approval, you=you, comment=200)
        if unrecorded_decider(approval, you=you, names_decider=names_decider):
            words += f" ({NOT_RECORDED})"
        rows.append(("Decided", words))
    votes = approval.votes
    if votes is not None:
        said = f"{votes.approvals} of {votes.required} approvals"
        if votes.declines:
            said += f", {votes.declines} decline{'s' if votes.declines != 1 else ''}"
        rows.append(("Votes", said))
    if approval.escalated_at is not None:
        deadline = f"; the new deadline is {clock(approval.expires_at)[:5]}" if approval.expires_at else ""
        rows.append(("Escalated", f"{clock(approval.escalated_at)[:5]}: nobody answered in time{deadline}"))
    if approval.viewed_by:
        shown = ", ".join(safe_line(name, 40) for name in approval.viewed_by[:6])
        more = f" and {len(approval.viewed_by) - 6} more" if len(approval.viewed_by) > 6 else ""
        rows.append(("Viewed by", shown + more))
    return rows


def note_author(note: Note, me: str | None) -> str | None:
    """Who wrote a note, as others are named: "you" when the server names this operator's user (``me``),
    else their name; None when the server names nobody."""
    author = note.author
    if author is None:
        return None
    if me is not None and author.user_id is not None and author.user_id == me:
        return "you"
    return safe_line(author.display, 40) if author.display else None


def colleague_of(note: Note, me: str | None) -> str | None:
    """The name of a colleague who wrote ``note``; None for this operator's own notes and unnamed ones
    (what a list of one's own notes need not repeat on every line)."""
    who = note_author(note, me)
    return None if who in (None, "you") or me is None else who


def _iso(when: datetime | None) -> str | None:
    return None if when is None else _utc(when).isoformat().replace("+00:00", "Z")


def _clean_text(text: str | None) -> str | None:
    return None if text is None else safe_text(text)


def settled_line(approval: Approval, *, you: bool = False) -> str:
    """An approval that is no longer pending, in one line: what happened to it, by whom as the server names
    them ("you" for this operator), when, and with which comment ("approval 3f6c1a52 (Bash) was approved by
    dana at 12:00:05, comment "ship it"")."""
    tool = f" ({safe_line(approval.tool_name, 40)})" if approval.tool_name else ""
    who = decider_words(approval, you=you)
    by = f" by {safe_line(who, 60)}" if who else ""
    when = f" at {clock(approval.resolved_at)}" if approval.resolved_at else ""
    said = f', comment "{safe_line(approval.approver_comment, 200)}"' if approval.approver_comment else ""
    what = settled_phrase(approval.status, elsewhere=False)
    return f"approval {short_id(approval.id)}{tool} {what}{by}{when}{said}"


def approval_outcome(approval: Approval, *, elsewhere: bool, you: bool = False) -> str:
    """A sentence for an approval that stopped waiting, naming who settled it when the server says:
    "The Bash approval was approved by dana 14:02: “looks fine”.", else "... was approved elsewhere.",
    "The Bash approval expired before anyone decided." (see :func:`settled_phrase`)."""
    tool = safe_line(approval.tool_name or "tool", 40)
    if approval.status in ("approved", "declined") and (you or decider_of(approval) is not None):
        return f"The {tool} approval was {decision_words(approval, you=you)}."
    return f"The {tool} approval {settled_phrase(approval.status, elsewhere=elsewhere)}."


def normalize_kind(kind: str) -> str:
    """Turn what people type ("Claude Code", "claude-code", "CLAUDE_CODE") into the server's kind key."""
    cleaned = re.sub(r"[\s\-.]+", "_", kind.strip().lower())
    return re.sub(r"_+", "_", cleaned).strip("_")


def kind_label(kind: str | None) -> str:
    """A human label for an agent kind key ("claude_code" -> "Claude Code"); unknown keys are title-cased."""
    if not kind:
        return "agent"
    key = normalize_kind(kind)
    return _KIND_LABELS.get(key) or safe_line(key.replace("_", " ").title())


def describe_session(session_id: str | None, agent: str | None = None) -> str:
    """A session named in one line for notices and dialogs: ``a1b2c3d4 (builder)``."""
    who = f" ({safe_line(agent, 30)})" if agent else ""
    return f"{short_id(session_id or '')}{who}"


def session_title(row: Session) -> str:
    """The row's title, or a readable stand-in from the kind, working directory and start time.

    Most sessions carry no title (Preloop leaves it null), so without a fallback every row would read "-".
    """
    title = (row.title or row.summary or "").strip()
    if title:
        return safe_line(title)
    parts = [kind_label(row.agent_kind or row.session_source_type)]
    if row.cwd:
        parts.append(f"in {safe_line(row.cwd)}")
    if row.started_at is not None:
        parts.append(f"started {_utc(row.started_at).strftime('%Y-%m-%d %H:%M')}")
    return " ".join(parts)


SORT_DESCRIPTION = "newest first (by start time)"
"""How :func:`sort_sessions` orders rows, in words (the CLI's footer; the TUI's status line says "newest
first" and marks the STARTED column)."""


NARROW_DROP_ORDER = ("model", "tools", "activity")
"""Columns a sessions list drops first, in this order, while a narrow terminal leaves the titles too little
room (the CLI's table and the TUI's sessions screen alike): id, agent, title, state, pending and cost
stay."""

TITLE_WANTED = 40
"""Columns are dropped until the titles have this much room (or the longest title's length)."""


def sort_sessions(rows: Sequence[Session]) -> list[Session]:
    """The one order of sessions lists, the CLI's and the TUI's: newest start first (a session without a
    start time by its last activity), ties by id. Stable while agents work, so rows do not jump about."""
    epoch = datetime.min.replace(tzinfo=UTC)
    by_id = sorted(rows, key=lambda s: s.id)
    return sorted(
        by_id, key=lambda s: _utc(s.started_at) if s.started_at else last_activity(s) or epoch, reverse=True
    )


def fit_titles(titles: Sequence[str], width: int) -> list[str]:
    """Cut each title to ``width`` terminal cells (``client.cells``: a CJK character or an emoji takes
    two) so that titles that differ still read differently.

    A plain cut keeps the beginning. When titles on the same page share a beginning longer than the
    room ("Add an index for invoice lookups" and "... (shift 2)"), a plain cut would make them read the
    same, so the part that tells them apart is kept and the middle is elided: "Add an inde… (shift 2)".
    """
    width = max(width, 8)
    out: list[str] = []
    for i, title in enumerate(titles):
        if cell_len(title) <= width:
            out.append(title)
            continue
        shared = max((_common_prefix(title, other) for j, other in enumerate(titles) if j != i), default=0)
        if cell_len(title[:shared]) < width - 1 or shared >= len(title):
            # The cut keeps the difference, or this title is the others' beginning: its end is "no more".
            out.append(head(title, width - 1).rstrip() + "…")
            continue
        # The difference starts at ``shared``: keep from the word it is in ("(shift 2)", not "2)": a
        # word of fewer than 6 cells takes the one before it along).
        room = width - 5  # at least 4 cells of the beginning and the ellipsis stay
        start = title.rfind(" ", 0, shared) + 1
        while start > 0 and cell_len(title[start:]) < 6:
            start = title.rfind(" ", 0, start - 1) + 1
        end = title[start:]
        if cell_len(end) > room:
            # Too long: its end when the difference is there, else its beginning.
            end = tail(title, room) if cell_len(title[shared:]) <= room else head(end, room - 1) + "…"
        out.append(f"{head(title, width - cell_len(end) - 2).rstrip()}… {end}")
    return out


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def unique_titles(rows: Sequence[Session]) -> list[str]:
    """Titles for one page, where two rows never read the same: duplicates get their short id appended."""
    titles = [session_title(row) for row in rows]
    counts = Counter(titles)
    return [
        f"{title} ({short_id(row.id)})" if counts[title] > 1 else title
        for title, row in zip(titles, rows, strict=True)
    ]


_DURATION_PART = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """Parse "60s", "30m", "2h", "7d", "1w" or combinations ("1h30m"); raise ``ValueError`` with a sentence.

    Used for ``--since`` and ``--expires-in`` so both accept the same spellings.
    """
    cleaned = text.strip().lower().replace(" ", "")
    if not cleaned:
        raise ValueError("a duration is empty: use a number and a unit, e.g. 30m, 2h or 7d")
    if cleaned.isdigit():
        raise ValueError(f"duration {text!r} has no unit: add s, m, h or d (e.g. {cleaned}s or {cleaned}m)")
    pos = 0
    total = 0
    for match in _DURATION_PART.finditer(cleaned):
        if match.start() != pos:
            break
        total += int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(cleaned) or pos == 0:
        raise ValueError(f"cannot read duration {text!r}: use a number and a unit, e.g. 60s, 30m, 2h or 7d")
    return timedelta(seconds=total)


def format_duration(delta: timedelta) -> str:
    """The inverse of :func:`parse_duration` for messages ("7d", "90m" -> "1h30m")."""
    seconds = int(delta.total_seconds())
    if seconds <= 0:
        return "0s"
    out = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            out.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(out)


def how_long(delta: timedelta, *, to_the_second: bool = False) -> str:
    """How long, for a person: "12 s", "23 min", "2 h 05 min", "3 days" (``to_the_second``: "1 min 29 s",
    for an outage counted as it lasts). A tool call's own duration is ``client.entry_words.duration_words``;
    a duration as a flag spells it, :func:`format_duration`."""
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if to_the_second and seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours // 24} days"


def until(when: datetime | None, now: datetime) -> str:
    """How long until ``when`` ("9m", "45s", "1h05m"), or "" when unknown; past times read "0s"."""
    if when is None:
        return ""
    return short_span(int((when - now).total_seconds()), exact=True)


def cell(value: object, limit: int | None = None) -> str:
    """One table cell: any value as terminal-safe single-line text, cut to ``limit`` terminal cells with an
    ellipsis."""
    if value is None:
        return "-"
    line = safe_line(str(value))
    return line if limit is None else fit(line, limit)


def count_cell(value: int | None) -> str:
    """A counter cell: unknown (the detail endpoint leaves counters empty) is ``-``, not a misleading 0."""
    return "-" if value is None else str(value)


def clock(when: datetime | None) -> str:
    """HH:MM:SS in local time, the time column of the plain attach output."""
    if when is None:
        return "--:--:--"
    return _utc(when).astimezone().strftime("%H:%M:%S")


def event_line(event: Event, *, by_you: Callable[[Approval], bool] | None = None) -> tuple[str, str]:
    """A short kind label and one terminal-safe line of text for an event (plain attach, logs); a decided
    approval says who decided it, when and with which comment (``by_you``: this operator's read "you").

    Model deltas are returned as their raw chunk (still made safe); the caller decides whether to buffer
    them into whole lines.
    """
    from client.events import (  # built on first use: scripted commands never stream
        ApprovalDecided,
        ApprovalRequested,
        ModelDelta,
        ModelStep,
        NoteEvent,
        RunCancelled,
        RunCompleted,
        RunFailed,
        RunStarted,
        SessionEnded,
        SessionStarted,
        SessionUpdated,
        ToolCompleted,
        ToolStarted,
        UnknownEvent,
    )

    match event:
        case SessionStarted(session=s):
            return "session", f"started: {session_title(s)}"
        case SessionUpdated(session=s):
            return "session", f"updated: {session_title(s)}"
        case SessionEnded(reason=reason):
            return "session", "ended" + (f": {safe_line(reason)}" if reason else "")
        case RunStarted(task=task):
            return "run", "started" + (f": {safe_line(task)}" if task else "")
        case ModelDelta(text=text):
            return "text", safe_line(text)
        case ModelStep(phase=phase, text=text, tool_calls=calls):
            label = "commentary" if phase == "commentary" else "answer"
            extra = f" ({calls} tool call{'s' if calls != 1 else ''})" if calls else ""
            return label, safe_line(text) + extra
        case ToolStarted(name=name, args_summary=args):
            return "tool", f"{safe_line(name)} {safe_line(args, 200)}".rstrip()
        case ToolCompleted(name=name, status=status, duration_ms=ms, result_summary=res):
            took = f" in {ms} ms" if ms is not None else ""
            tail = f": {safe_line(res, 200)}" if res else ""
            return "tool", f"{safe_line(name)} {status}{took}{tail}"
        case ApprovalRequested(approval=a):
            what = safe_line(a.summary or a.tool_name or "a tool call", 200)
            risk = f" [risk {safe_line(a.risk_level, 12)}]" if a.risk_level else ""
            sid = short_id(a.id)
            return "approval", f"requested {sid}: {what}{risk} (/approve {sid} or /decline {sid})"
        case ApprovalDecided(approval=a):
            who = decided_by(a)
            if who is not None and who["kind"] == "rule":  # nobody was asked: which rule, set by whom
                what = safe_line(a.summary or a.tool_name or "a tool call", 200)
                return "approval", f"{safe_line(a.status)} {short_id(a.id)} by {who['detail']}: {what}"
            named = decider_words(a, you=by_you(a) if by_you is not None else False)
            by = f" by {named}" if named else ""
            comment = f": {safe_line(a.approver_comment, 200)}" if a.approver_comment else ""
            return "approval", f"{safe_line(a.status)} {short_id(a.id)}{by}{comment}"
        case NoteEvent(type=kind, note=n):
            state = kind.split(".", 1)[1]
            why = f" ({safe_line(n.undeliverable_reason)})" if n.undeliverable_reason else ""
            return "note", f"{state} {short_id(n.note_id)}{why}: {safe_line(n.text, 200)}"
        case RunCompleted(answer=answer):
            return "done", safe_line(answer) if answer else "run completed"
        case RunFailed(error=error):
            return "failed", safe_line(error) if error else "run failed"
        case RunCancelled(reason=reason):
            return "cancelled", safe_line(reason) if reason else "run cancelled"
        case UnknownEvent(type=kind, said=said):
            # A type this client does not know may still say something worth reading (a Preloop
            # session warning: "this token allows no MCP tools"): show its own words when it has some.
            return (
                "unknown",
                f"{safe_line(kind)}: {safe_line(said, 300)}" if said else f"{safe_line(kind)} event",
            )
    return "event", safe_line(event.type)


def withdraw_outcome(note: Note, *, too_late: bool = False) -> tuple[bool, str]:
    """After a withdraw: whether the note is withdrawn now (the state the operator asked for holds, by this
    withdraw or an earlier one), and a sentence saying so or why not.

    Servers answer a withdraw of a note that is no longer pending with the note unchanged (200), so what
    happened is read from the state that came back, and from whether it was pending before
    (``too_late``: it was not, so a cancelled note was withdrawn before, not now: said as such).
    """
    nid = short_id(note.note_id)
    match note.state:
        case NoteState.CANCELLED if too_late:
            return True, f"note {nid} was already withdrawn: the agent will not see it (nothing changed now)"
        case NoteState.CANCELLED:
            return True, f"note {nid} is withdrawn (cancelled): the agent will not see it"
        case NoteState.PENDING:
            return False, f"note {nid} is still pending: the server did not withdraw it, try again"
        case NoteState.CLAIMED:
            why = "the agent has already picked it up and is about to read it"
        case NoteState.DELIVERED | NoteState.ACKNOWLEDGED:
            turn = f" at turn {note.delivered_turn_index}" if note.delivered_turn_index is not None else ""
            why = f"it was already delivered{turn}"
        case NoteState.EXPIRED:
            why = "it had already expired before it was delivered"
        case NoteState.UNDELIVERABLE:
            reason = f" ({safe_line(note.undeliverable_reason)})" if note.undeliverable_reason else ""
            why = f"it could not be delivered{reason}"
        case _:
            why = f"it is {safe_line(note.state)}, and only a pending note can be withdrawn"
    return False, f"note {nid} is {safe_line(note.state)}: nothing changed, because {why}"


def rule_scope_words(rule: AllowRule) -> str:
    """What a rule covers, in a few words: "Bash `pytest *` in 1a2b3c4d", "every tool of agent builder",
    "every agent's calls"."""
    what = safe_line(rule.tool_name, 40) if rule.tool_name else "every tool"
    if rule.pattern is not None:
        what += f" `{safe_line(rule.pattern, 60)}`"
    if rule.scope == "session":
        return f"{what} in {short_id(rule.session_id)}"
    if rule.scope == "agent":
        agent = safe_line(rule.agent_name, 30) if rule.agent_name else short_id(rule.agent_id)
        return f"{what} of agent {agent}"
    return f"{what}, every agent" if rule.tool_name else "every call of every agent"


def decided_by_rule(rule: AllowRule) -> str:
    """Who decided a call a rule allowed: "rule 5e1f2a3b (Bash `pytest *` in 1a2b3c4d), set by alice"."""
    by = f", set by {safe_line(rule.set_by, 40)}" if rule.set_by else ""
    return f"rule {short_id(rule.id)} ({rule_scope_words(rule)}){by}"
