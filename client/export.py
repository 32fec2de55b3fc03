"""A session, exported for the post-incident review: one document, as JSON or as GitHub Markdown.

Pure (no I/O, no UI): :func:`build_export` turns what the client already holds (the session row, the
:class:`client.timeline.Timeline` fed with the session's events, the notes and approvals the server
lists) into one plain, JSON-ready ``dict``; :func:`to_json` and :func:`to_markdown` render that same dict,
so both formats always say the same thing. The CLI (``preloop sessions export``) and the TUI's export key
both call these.

The JSON document follows ``docs/export.schema.json`` (``"schema": "preloop-session-export/1"``); the
schema is the contract, tests validate exports against it.

Everything agent- or user-written is untrusted. In Markdown it is either escaped inline (every Markdown
and HTML special character is backslash-escaped; line breaks become ``<br>`` in a table cell, so a row
stays one row, and ``↵`` in a list item) or put in a fenced block whose fence is longer than any backtick
run in the text, so nothing can close the fence, open HTML, start a table, mention someone or render math.
Control and bidi characters are replaced in both formats (``client.textsafe``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from client.costs import Cost, cost_json, cost_words, row_cost
from client.entry_words import duration_words
from client.models import Approval, Note, Session, iso
from client.paths import replace_file
from client.present import NO_DECIDER, decided_by, session_title, settled_phrase
from client.preview import approval_preview
from client.textsafe import safe_text
from client.timeline import (
    ApprovalEntry,
    NoteEntry,
    RunEntry,
    SessionEntry,
    TextEntry,
    TextPhase,
    Timeline,
    TimelineEntry,
    ToolEntry,
    UnknownEntry,
    then_line,
)

__all__ = [
    "SCHEMA_ID",
    "build_export",
    "decided_by",
    "export_file_name",
    "md_block",
    "md_inline",
    "save_export",
    "to_json",
    "to_markdown",
]

SCHEMA_ID = "preloop-session-export/1"
"""The value of every export's ``schema`` field; bumped when the document changes incompatibly."""

_NOTE_TIME_FIELDS = (
    ("pending", "created_at"),
    ("claimed", "claimed_at"),
    ("delivered", "delivered_at"),
    ("cancelled", "cancelled_at"),
    ("expired", "expired_at"),
    ("undeliverable", "undeliverable_at"),
)


def _clean(text: str | None) -> str | None:
    return None if text is None else safe_text(text)


# ---------------------------------------------------------------------------------------- building


def _entry_item(entry: TimelineEntry) -> dict[str, Any] | None:
    base: dict[str, Any] = {"seq": entry.seq, "at": iso(entry.at)}
    if isinstance(entry, TextEntry):
        kind = "final_answer" if entry.phase is TextPhase.FINAL else "commentary"
        if entry.phase in (TextPhase.STREAMING, TextPhase.INTERRUPTED):
            kind = "text"
        return {
            **base,
            "kind": kind,
            "phase": entry.phase.value,
            "run_id": entry.run_id,
            "iteration": entry.iteration,
            "text": safe_text(entry.text),
            "dropped_chars": entry.dropped_chars,
        }
    if isinstance(entry, ToolEntry):
        return {
            **base,
            "kind": "tool_call",
            "call_id": entry.call_id,
            "run_id": entry.run_id,
            "name": safe_text(entry.name),
            "arguments": safe_text(entry.args_summary),
            "outcome": entry.state.value,
            "started_at": iso(entry.started_at),
            "duration_ms": entry.duration_ms,
            "result": safe_text(entry.result_summary),
        }
    if isinstance(entry, ApprovalEntry) and entry.approval is not None:
        a = entry.approval
        return {
            **base,
            "kind": "approval_decided" if entry.decided else "approval_requested",
            "approval_id": a.id,
            "tool": _clean(a.tool_name),
            "status": a.status,
        }
    if isinstance(entry, NoteEntry) and entry.note is not None:
        return {**base, "kind": "note", "note_id": entry.note.note_id, "state": entry.state}
    if isinstance(entry, RunEntry):
        return {
            **base,
            "kind": "run",
            "run_id": entry.run_id,
            "status": entry.status.value,
            "detail": safe_text(entry.detail),
        }
    if isinstance(entry, SessionEntry):
        return {
            **base,
            "kind": "session_ended" if entry.ended else "session_started",
            "reason": safe_text(entry.reason) or None,
        }
    if isinstance(entry, UnknownEntry):
        return {
            **base,
            "kind": "unknown",
            "event_type": safe_text(entry.event_type),
            "summary": safe_text(entry.summary),
        }
    return None  # the dropped-entries marker is reported as a count, not as an item


def _note_states(note: Note, seen: dict[str, datetime]) -> list[dict[str, Any]]:
    """Each state the note went through with when, oldest first: the note's own timestamps, then the
    event times the timeline saw for states the note row does not stamp (acknowledged, failed, ...)."""
    times: dict[str, datetime] = {}
    for state, attr in _NOTE_TIME_FIELDS:
        value = getattr(note, attr)
        if value is not None:
            times[state] = value
    for state, at in seen.items():
        times.setdefault(state, at)
    states: list[dict[str, Any]] = [
        {"state": state, "at": iso(at)} for state, at in sorted(times.items(), key=lambda kv: kv[1])
    ]
    if note.state not in times:
        states.append({"state": note.state, "at": None})
    return states


def _note_item(note: Note, timeline: Timeline) -> dict[str, Any]:
    record = timeline.notes.get(note.note_id)
    then: dict[str, Any] | None = None
    if record is not None and record.then_entry_id is not None:
        entry = timeline.then_entry(note.note_id)
        if entry is not None:
            then = {
                "seq": entry.seq,
                "at": iso(entry.at),
                "kind": "tool_call" if isinstance(entry, ToolEntry) else "text",
                "summary": safe_text(then_line(entry, 200)),
            }
    author = note.author.display if note.author is not None else None
    return {
        "note_id": note.note_id,
        "text": safe_text(note.text),
        "author": _clean(author),
        "state": note.state,
        "states": _note_states(note, record.state_times if record is not None else {}),
        "expires_at": iso(note.expires_at),
        "delivery_channel": _clean(note.delivery_channel),
        "delivered_turn_index": note.delivered_turn_index,
        "undeliverable_reason": _clean(note.undeliverable_reason),
        "then": then,
    }


def _approval_item(approval: Approval, you: bool) -> dict[str, Any]:
    rule = approval.rule_context.get("rule_name") if approval.rule_context else None
    return {
        "approval_id": approval.id,
        "tool": _clean(approval.tool_name),
        "summary": _clean(approval.summary),
        "reasoning": _clean(approval.agent_reasoning),
        "rule": _clean(rule) if isinstance(rule, str) else None,
        "arguments": json.loads(safe_text(json.dumps(approval.tool_args, ensure_ascii=False, default=str))),
        "risk": _clean(approval.risk_level),
        "status": approval.status,
        "requested_at": iso(approval.requested_at),
        "expires_at": iso(approval.expires_at),
        "decided_at": iso(approval.resolved_at) if not approval.pending else None,
        "decided_by": decided_by(approval, you=you),
        "comment": _clean(approval.approver_comment),
        "change": _change(approval),
    }


CHANGE_LINES = 400
"""A decided edit's diff keeps this many lines in an export (``more_lines`` says how many follow; the
arguments hold the whole call)."""


def _change(approval: Approval) -> dict[str, Any] | None:
    """What a decided (approved or declined) file edit changes, as its preview's text: the same lines
    the app and ``approvals show`` print; None for any other call."""
    if approval.status not in ("approved", "declined"):
        return None
    change = approval_preview(approval)
    if change.kind != "diff":
        return None
    return {
        "first_line": change.first_line,
        "files": [f.to_json() for f in change.files],
        "lines": [line.plain() for line in change.lines(CHANGE_LINES)],
        "more_lines": change.more(CHANGE_LINES),
    }


def _changes_markdown(approvals: list[dict[str, Any]]) -> list[str]:
    """The diffs of the decided edits, one fenced ``diff`` block each (nothing in them is Markdown)."""
    out: list[str] = []
    for a in approvals:
        change = a.get("change")
        if not change:
            continue
        if not out:
            out += ["## Changes decided", ""]
        at = f" at {_when(a['decided_at'])} UTC" if a["decided_at"] else ""
        what = f"**{md_inline(a['tool'] or 'tool')}** {md_inline(a['status'])}{at}"
        out.append(f"{what}: {md_inline(change['first_line'])}")
        out += ["", *md_block("\n".join(change["lines"]), lang="diff")]
        if change["more_lines"]:
            out.append(
                f"*… {change['more_lines']:,} more lines (the JSON export's arguments hold the whole call)*"
            )
        out.append("")
    return out


def build_export(
    session_id: str,
    timeline: Timeline,
    *,
    session: Session | None = None,
    notes: Iterable[Note] = (),
    approvals: Iterable[Approval] = (),
    exported_at: datetime,
    by_you: Callable[[Approval], bool] | None = None,
    deciders_recorded: bool = True,
) -> dict[str, Any]:
    """The whole export as a JSON-ready dict (see ``docs/export.schema.json``).

    ``notes`` and ``approvals`` are the server's lists (the newest state of each wins over the timeline's
    copy); whatever only the timeline saw is included too, so an export from events alone is complete.
    Each approval says who decided it as the server names them (``decider``: pass approvals through
    ``Backend.approval_trail`` first where the server keeps it apart); ``by_you`` tells the ones this
    operator decided (``Decisions.by_you``), which read "you". ``deciders_recorded`` False: the server
    keeps no decider (a Dendrux app), which the document says once. The session's tokens and cost are
    its row's (``client.costs``), absent when the server gives none.
    """
    row = session or timeline.session
    note_by_id: dict[str, Note] = {nid: record.note for nid, record in timeline.notes.items()}
    for note in notes:
        note_by_id[note.note_id] = note
    approval_by_id: dict[str, Approval] = dict(timeline.approvals)
    for approval in approvals:
        approval_by_id[approval.id] = approval

    items = [item for entry in timeline if (item := _entry_item(entry)) is not None]
    tools = [item for item in items if item["kind"] == "tool_call"]
    ordered_notes = sorted(
        note_by_id.values(), key=lambda n: n.created_at or datetime.min.replace(tzinfo=UTC)
    )
    ordered_approvals = sorted(
        approval_by_id.values(), key=lambda a: a.requested_at or datetime.min.replace(tzinfo=UTC)
    )
    session_item: dict[str, Any] = {
        "id": session_id,
        "title": safe_text(session_title(row)) if row is not None else None,
        "agent": safe_text(row.agent_label) if row is not None else None,
        "agent_kind": _clean(row.agent_kind) if row is not None else None,
        "started_at": iso(row.started_at) if row is not None else None,
        "ended_at": iso(row.ended_at) if row is not None else None,
    }
    spent = cost_json(row_cost(row))
    if spent is not None:
        session_item["cost"] = spent
    doc: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "exported_at": iso(exported_at),
        "session": session_item,
        "run_status": timeline.run_status.value if timeline.run_status is not None else None,
        "final_answer": safe_text(timeline.final_answer) if timeline.final_answer is not None else None,
        "dropped_entries": timeline.dropped_count,
        "timeline": items,
        "tool_calls": {
            "count": len(tools),
            "failed": sum(1 for t in tools if t["outcome"] in ("failed", "denied")),
            "total_duration_ms": sum(t["duration_ms"] or 0 for t in tools),
        },
        "notes": [_note_item(n, timeline) for n in ordered_notes],
        "approvals": [
            _approval_item(a, by_you(a) if by_you is not None else False) for a in ordered_approvals
        ],
    }
    if not deciders_recorded:
        doc["deciders_recorded"] = False
    if timeline.events_not_loaded:
        doc["events_not_loaded"] = timeline.events_not_loaded
    return doc


def export_file_name(session_id: str, exported_at: datetime, fmt: str) -> str:
    """``1a2b3c4d-20260301-103000.md``: sorts by session then time, safe on every file system."""
    stamp = exported_at.astimezone(UTC).strftime("%Y%m%d-%H%M%S")
    short = re.sub(r"[^0-9A-Za-z-]", "", session_id)[:8] or "session"
    return f"{short}-{stamp}.{fmt}"


def to_json(doc: dict[str, Any]) -> str:
    """The export as pretty JSON (non-ASCII kept: it is text for people and for ``jq``)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------- Markdown

# Inline text never starts a line (it follows a table pipe or a list item's prefix, and its own line
# breaks become <br>), so block syntax (#, -, 1., >) cannot trigger; these are the characters that mean
# something inline on GitHub: code, emphasis, links and images, HTML and entities, table cells,
# strikethrough, :emoji:, @mentions and $math$. Any ASCII punctuation may be backslash-escaped.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~:@$&#])")
_WWW = re.compile(r"(?i)\b(www)\.")  # GitHub links bare www. names: break the pattern, not the text
_BACKTICKS = re.compile(r"`+")


LIST_BREAK = " ↵ "
"""A line break inside a list item's inline text: HTML has no place there (a table cell's is ``<br>``)."""


def md_inline(text: str | None, limit: int | None = None, *, newline: str = "<br>") -> str:
    """Untrusted text as inert inline Markdown: specials escaped, line breaks as ``newline`` (``<br>``
    keeps a table row one row; list items use :data:`LIST_BREAK`), cut to ``limit`` characters with an
    ellipsis."""
    if not text:
        return ""
    clean = safe_text(text).replace("\r", "")
    if limit is not None and len(clean) > limit:
        clean = clean[: max(limit - 1, 0)] + "…"
    escaped = _WWW.sub(r"\1\\.", _MD_SPECIAL.sub(r"\\\1", clean))
    return newline.join(line.strip() for line in escaped.split("\n"))


def md_block(text: str, indent: str = "", lang: str = "text") -> list[str]:
    """Untrusted multi-line text as a fenced block nothing inside can close (longer fence than any run);
    ``lang`` names its language (``diff``: GitHub colours the + and - lines)."""
    clean = safe_text(text).replace("\r", "")
    longest = max((len(run) for run in _BACKTICKS.findall(clean)), default=0)
    fence = "`" * max(3, longest + 1)
    body = [f"{indent}{line}".rstrip() if line else "" for line in clean.split("\n")]
    return [f"{indent}{fence}{lang}", *body, f"{indent}{fence}"]


def _when(iso: str | None) -> str:
    """``2026-03-01 10:00:05`` (UTC) from an ISO string, or a dash."""
    if not iso:
        return "–"
    return iso.replace("T", " ").replace("Z", "")[:19]


def _duration(ms: int | None) -> str:
    """A tool call's duration as the timeline says it (``client.entry_words.duration_words``), or a dash."""
    return duration_words(ms) or "–"


def _row(*cells: str) -> str:
    return "| " + " | ".join(cell or " " for cell in cells) + " |"


def _li(text: str | None, limit: int | None = None) -> str:
    """Inline text inside a list item (its line breaks as :data:`LIST_BREAK`, never HTML)."""
    return md_inline(text, limit, newline=LIST_BREAK)


def _timeline_lines(doc: dict[str, Any]) -> list[str]:
    notes = {n["note_id"]: n for n in doc["notes"]}
    approvals = {a["approval_id"]: a for a in doc["approvals"]}
    lines: list[str] = []
    for item in doc["timeline"]:
        at = f"`{_when(item['at'])[11:]}`" if item["at"] else "`--:--:--`"
        kind = item["kind"]
        if kind in ("commentary", "final_answer", "text"):
            label = {"commentary": "Commentary", "final_answer": "**Final answer**"}.get(
                kind, f"Text ({item['phase']})"
            )
            cut = f" (first {item['dropped_chars']} characters not kept)" if item["dropped_chars"] else ""
            lines.append(f"- {at} {label}{cut}")
            lines.append("")
            lines.extend(md_block(item["text"], indent="  "))
        elif kind == "tool_call":
            outcome = item["outcome"]
            took = f" in {_duration(item['duration_ms'])}" if item["duration_ms"] is not None else ""
            args = f" {_li(item['arguments'], 160)}" if item["arguments"] else ""
            result = f" → {_li(item['result'], 160)}" if item["result"] else ""
            lines.append(f"- {at} Tool **{_li(item['name'], 60)}**{args}: {outcome}{took}{result}")
        elif kind in ("approval_requested", "approval_decided"):
            approval = approvals.get(item["approval_id"], {})
            tool = _li(item["tool"] or "tool", 60)
            if kind == "approval_requested":
                risk = f" (risk: {_li(approval.get('risk'))})" if approval.get("risk") else ""
                what = _li(approval.get("summary"), 160)
                lines.append(f"- {at} Approval requested for **{tool}**{risk}: {what}")
            else:
                who = approval.get("decided_by") or {}
                said = f": “{_li(approval.get('comment'), 200)}”" if approval.get("comment") else ""
                if who.get("kind") == "expiry":  # nobody decided: the expiry is what happened to it
                    what = _li(settled_phrase("expired", elsewhere=False))
                    lines.append(f"- {at} Approval for **{tool}** {what}{said}")
                else:
                    by = f" by {_li(who['detail'])}" if who.get("detail") else ""
                    lines.append(f"- {at} Approval for **{tool}** {_li(item['status'])}{by}{said}")
        elif kind == "note":
            note = notes.get(item["note_id"], {})
            text = _li(note.get("text"), 120)
            lines.append(f"- {at} Note {_li(item['note_id'][:8])} {_li(item['state'])}: {text}")
        elif kind == "run":
            detail = f": {_li(item['detail'], 200)}" if item["detail"] else ""
            status = "started" if item["status"] == "running" else item["status"]
            lines.append(f"- {at} Run {_li(status)}{detail}")
        elif kind in ("session_started", "session_ended"):
            reason = f" ({_li(item['reason'], 120)})" if item["reason"] else ""
            lines.append(f"- {at} Session {'ended' if kind == 'session_ended' else 'started'}{reason}")
        else:
            said = _li(item["summary"], 200)
            lines.append(f"- {at} Unknown event {_li(item['event_type'], 60)}: {said}")
    return lines


def _cost_cell(cost: dict[str, Any]) -> str:
    """The session's cost row: the same words the app and the digest use (``client.costs``)."""
    spent = Cost(
        cost.get("total_tokens") or 0,
        cost.get("input_tokens"),
        cost.get("output_tokens"),
        cost.get("cost_usd"),
    )
    return md_inline(cost_words(spent) or "–")


def to_markdown(doc: dict[str, Any]) -> str:
    """The export as GitHub-flavoured Markdown: summary, final answer, timeline, then tables of tool
    calls, notes and approvals."""
    session = doc["session"]
    title = md_inline(session["title"] or session["id"], 100)
    out = [f"# Session {title}", ""]
    out += [
        "| | |",
        "|---|---|",
        _row("Session id", md_inline(session["id"])),
        _row("Agent", md_inline(session["agent"])),
        _row("Started (UTC)", _when(session["started_at"])),
        _row("Ended (UTC)", _when(session["ended_at"]) if session["ended_at"] else "still running"),
        _row("Last run", md_inline(doc["run_status"]) or "–"),
        _row(
            "Tool calls",
            f"{doc['tool_calls']['count']} ({doc['tool_calls']['failed']} failed or denied), "
            f"{_duration(doc['tool_calls']['total_duration_ms'])} in total",
        ),
        _row("Notes", str(len(doc["notes"]))),
        _row("Approvals", str(len(doc["approvals"]))),
        *([_row("Cost", _cost_cell(session["cost"]))] if session.get("cost") else []),
        _row("Exported (UTC)", _when(doc["exported_at"])),
        "",
    ]
    if doc["final_answer"] is not None:
        out += ["## Final answer", "", *md_block(doc["final_answer"]), ""]
    out += ["## Timeline", ""]
    if doc.get("events_not_loaded"):
        out += [
            f"*The {doc['events_not_loaded']:,} earlier events were not read by the client; "
            "`preloop sessions export` has the whole session.*",
            "",
        ]
    if doc["dropped_entries"]:
        out += [f"*{doc['dropped_entries']} earlier entries were not kept by the client.*", ""]
    out += _timeline_lines(doc) or ["*No events.*"]
    out.append("")

    tools = [item for item in doc["timeline"] if item["kind"] == "tool_call"]
    out += ["## Tool calls", ""]
    if tools:
        out += [
            _row("Started (UTC)", "Tool", "Arguments", "Outcome", "Duration", "Result"),
            "|---|---|---|---|--:|---|",
        ]
        for t in tools:
            out.append(
                _row(
                    _when(t["started_at"] or t["at"]),
                    md_inline(t["name"], 60),
                    md_inline(t["arguments"], 200),
                    t["outcome"],
                    _duration(t["duration_ms"]),
                    md_inline(t["result"], 200),
                )
            )
    else:
        out.append("*No tool calls.*")
    out.append("")

    out += ["## Notes", ""]
    if doc["notes"]:
        out += [_row("Note", "Author", "Text", "States (UTC)", "Then the agent…"), "|---|---|---|---|---|"]
        for n in doc["notes"]:
            states = "<br>".join(f"{md_inline(s['state'])} {_when(s['at'])}" for s in n["states"])
            if n["undeliverable_reason"]:
                states += f"<br>reason: {md_inline(n['undeliverable_reason'], 120)}"
            then = "–"
            if n["then"] is not None:
                then = f"{_when(n['then']['at'])[11:]} {md_inline(n['then']['summary'], 120)}"
            out.append(
                _row(
                    md_inline(n["note_id"][:8]),
                    md_inline(n["author"]) or "–",
                    md_inline(n["text"], 500),
                    states,
                    then,
                )
            )
    else:
        out.append("*No notes.*")
    out.append("")

    out += ["## Approvals", ""]
    if doc.get("deciders_recorded") is False and doc["approvals"]:
        out += [f"*{NO_DECIDER[0].upper()}{NO_DECIDER[1:]}.*", ""]
    if doc["approvals"]:
        out += [
            _row("Requested (UTC)", "Tool", "Risk", "Request", "Decision", "Decided (UTC)", "By", "Comment"),
            "|---|---|---|---|---|---|---|---|",
        ]
        for a in doc["approvals"]:
            who = a["decided_by"]
            by = (
                "–"
                if not who
                else "nobody"
                if who["kind"] == "expiry"
                else md_inline(who["detail"])
                if who["detail"]
                else "–"
            )
            request = md_inline(a["summary"] or json.dumps(a["arguments"], ensure_ascii=False), 300)
            if a.get("reasoning"):
                request += f"<br>why: {md_inline(a['reasoning'], 300)}"
            if a.get("rule"):
                request += f"<br>rule: {md_inline(a['rule'], 120)}"
            out.append(
                _row(
                    _when(a["requested_at"]),
                    md_inline(a["tool"]) or "–",
                    md_inline(a["risk"]) or "–",
                    request,
                    md_inline(a["status"]),
                    _when(a["decided_at"]),
                    by,
                    md_inline(a["comment"], 300) or "–",
                )
            )
    else:
        out.append("*No approvals.*")
    out.append("")
    out += _changes_markdown(doc["approvals"])
    return "\n".join(out)


def save_export(doc: dict[str, Any], session_id: str, exported_at: datetime, directory: Path) -> Path:
    """Write ``doc`` as Markdown into ``directory`` (made if missing) under :func:`export_file_name`;
    returns the path (OSError when it cannot be written). Blocking: run it off the event loop."""
    target = directory / export_file_name(session_id, exported_at, "md")
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_file(target, to_markdown(doc))
    return target
