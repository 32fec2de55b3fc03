"""Pure row → wire shapes: what a stored row looks like on the wire (Preloop 0.17.1 field for field).

No I/O here: :mod:`server.rows` fetches the rows, the desks (:mod:`server.sessions`, :mod:`server.notes`,
:mod:`server.approvals`) decide what changes. Keeping the shapes pure lets every desk render a note, an
approval or a session the same way, inside a write transaction or from the reader.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiosqlite

from client.models import ActivityItem, AllowRule, ApprovalDecider, Note, NoteAuthor, Session, TokenUsage
from server.harness import ApprovalRecord, PendingNote, PendingNotesResponse
from server.store import dumps, now_utc, parse_ts

ACTIVE_NOW_WINDOW = timedelta(minutes=5)
NOTES_PREAMBLE = (
    "The block below is an instruction from the human operating this agent, delivered out of band by the "
    "Preloop control plane at a turn boundary. It is not content from a tool result, a fetched page or any "
    "other untrusted source: Preloop stamped every attribute, the sender authored only the text inside the "
    "element. Treat it with the authority of the named person, who already holds the permission to stop "
    "this agent. Cite the note id if you change course because of it."
)
RULE_CONTEXT = {
    "source": "agent_permission_hook",
    "decision": "require_approval",
    "rule_name": "Agent permission hook",
    "explanation": (
        "The agent's own permission hook escalated this call for human approval. "
        "No Preloop access rule was evaluated for it."
    ),
}
"""Why an approval was asked for, in Preloop's ``rule_context`` shape (its source for a hook's "ask"); a
rule the agent named (``rule_name`` of the permission check) replaces the generic label."""


def rule_context(rule_name: str | None) -> dict[str, Any]:
    """The approval's ``rule_context``: the hook's rule as the agent named it, else the generic one."""
    if not rule_name:
        return dict(RULE_CONTEXT)
    return {
        **RULE_CONTEXT,
        "rule_name": rule_name,
        "explanation": "The agent's permission hook asked for human approval under this rule.",
    }


@dataclass(frozen=True, slots=True)
class Usage:
    """A session's model calls summed (``session_usage`` rows): ``cost_usd`` None when none reported one."""

    calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost_usd: float | None

    @staticmethod
    def of(row: aiosqlite.Row | None) -> Usage | None:
        """The sums of a ``SELECT SUM(calls) AS calls, ...`` row; None when no call reported usage."""
        if row is None or not row["calls"]:
            return None
        cost = row["cost_usd"]
        return Usage(
            int(row["calls"]),
            int(row["input_tokens"] or 0),
            int(row["output_tokens"] or 0),
            int(row["total_tokens"] or 0),
            float(cost) if cost is not None else None,
        )


USAGE_SUMS = (
    "SUM(calls) AS calls, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,"
    " SUM(total_tokens) AS total_tokens, SUM(cost_usd) AS cost_usd"
)
"""The columns :meth:`Usage.of` reads (SQLite's SUM of only NULLs is NULL: no cost known stays None)."""


def dt(value: Any) -> datetime | None:
    """A stored timestamp as an aware datetime; None for NULL (or anything that is not stored text)."""
    return parse_ts(value) if isinstance(value, str) else None


def session_model(
    row: aiosqlite.Row,
    *,
    note_count: int,
    latest_note: aiosqlite.Row | None,
    pending_approvals: int,
    usage: Usage | None = None,
) -> Session:
    """A session row (joined with its agent's name) plus its counters, as Preloop's session row. Tokens
    and cost are what the agent reported with its model calls (``usage``); none reported, they are null
    (never a made-up 0)."""
    sid = row["id"]
    ended = dt(row["ended_at"])
    last_activity = dt(row["last_activity_at"])
    if ended is not None:
        status = "ended"
    elif last_activity is not None and now_utc() - last_activity <= ACTIVE_NOW_WINDOW:
        status = "active_now"
    else:
        status = "idle"
    agent_id = row["agent_id"]
    return Session(
        id=sid,
        session_source_type=row["session_source_type"],
        session_source_id=row["session_source_id"],
        session_reference=row["session_reference"],
        parent_session_id=row["parent_session_id"],
        runtime_principal_type=row["session_source_type"],
        runtime_principal_id=row["session_source_id"],
        runtime_principal_name=row["runtime_principal_name"],
        title=row["title"],
        started_at=dt(row["started_at"]),
        last_activity_at=last_activity,
        ended_at=ended,
        agent_id=agent_id,
        agent_name=row["agent_name"],
        agent_href=f"/console/agents/{agent_id}" if agent_id else None,
        flow_execution_id=row["flow_execution_id"],
        latest_model_alias="demo-model" if row["total_requests"] else None,
        latest_provider_name="local" if row["total_requests"] else None,
        is_active_now=status == "active_now",
        activity_status=status,
        total_requests=row["total_requests"],
        successful_requests=row["total_requests"],
        failed_requests=0,
        token_usage=None
        if usage is None
        else TokenUsage(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            uncached_input_tokens=usage.input_tokens,
            total_tokens=usage.total_tokens,
        ),
        estimated_cost=usage.cost_usd if usage is not None else None,
        last_request_at=dt(row["last_request_at"]),
        note_count=note_count,
        latest_note_author_display=latest_note["author_display"] if latest_note else None,
        latest_note_author_auth_method="token" if latest_note else None,
        latest_note_at=dt(latest_note["created_at"]) if latest_note else None,
        managed_agent_id=agent_id,
        managed_agent_name=row["agent_name"],
        agent_kind=row["agent_kind"],
        cwd=row["cwd"],
        tool_call_count=row["tool_call_count"],
        pending_approval_count=pending_approvals,
        artifact_counts={},
    )


def short(value: Any) -> str:
    """A tool argument cut to what an approval summary may show (200 characters)."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 200 else text[:199] + "…"


def note_model(row: aiosqlite.Row) -> Note:
    """A notes row as Preloop's note: the one shape of a note on REST and on the stream."""
    return Note(
        note_id=row["id"],
        state=row["state"],
        text=row["text"],
        managed_agent_id=row["managed_agent_id"],
        runtime_session_id=row["runtime_session_id"],
        next_session=False,
        author=NoteAuthor(user_id=row["author_user_id"], display=row["author_display"], auth_method="token"),
        created_at=dt(row["created_at"]),
        expires_at=dt(row["expires_at"]),
        claimed_at=dt(row["claimed_at"]),
        expired_at=dt(row["expired_at"]),
        undeliverable_at=dt(row["undeliverable_at"]),
        undeliverable_reason=row["undeliverable_reason"],
        delivered_at=dt(row["delivered_at"]),
        delivery_channel=row["delivery_channel"],
        delivery_event=row["delivery_event"],
        delivered_turn_index=row["delivered_turn_index"],
        cancelled_at=dt(row["cancelled_at"]),
        correlation_id=row["correlation_id"],
    )


def _note_block(row: aiosqlite.Row) -> str:
    created = dt(row["created_at"])
    at = created.isoformat() if created else ""
    author = _xml_attr(str(row["author_display"]))
    head = f'<operator-note id="{row["id"]}" from="{author}" auth="token" at="{at}">'
    # The text is escaped so a note cannot close its own element and forge another one.
    return f"{head}\n{_xml_text(row['text'])}\n</operator-note>"


def _xml_text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml_attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def pending_response(rows: list[aiosqlite.Row], session_id: str) -> PendingNotesResponse:
    """Claimed notes as the harness gets them: A2A envelopes plus one stamped block for the model."""
    if not rows:
        return PendingNotesResponse(notes=[], text=None, channel_event=None)
    notes = []
    for row in rows:
        created, expires = dt(row["created_at"]), dt(row["expires_at"])
        envelope = {
            "kind": "message",
            "role": "user",
            "parts": [{"kind": "text", "text": row["text"]}],
            "metadata": {
                "preloop.ai/kind": "operator_note",
                "preloop.ai/author": {
                    "userId": row["author_user_id"],
                    "display": row["author_display"],
                    "authMethod": "token",
                },
                "preloop.ai/noteId": row["id"],
                "preloop.ai/createdAt": created.isoformat() if created else None,
                "preloop.ai/expiresAt": expires.isoformat() if expires else None,
                "preloop.ai/managedAgentId": row["managed_agent_id"],
            },
            "contextId": row["runtime_session_id"],
            "messageId": row["id"],
        }
        notes.append(PendingNote(note_id=row["id"], envelope=envelope, text=_note_block(row)))
    block = (
        f'<operator-notes count="{len(notes)}" source="preloop-control-plane">\n{NOTES_PREAMBLE}\n'
        + "\n".join(n.text for n in notes)
        + "\n</operator-notes>"
    )
    channel_event = {
        "method": "notifications/claude/channel",
        "params": {"source": "preloop-operator-notes", "severity": "important", "text": block},
    }
    return PendingNotesResponse(notes=notes, text=block, channel_event=channel_event)


def decider(row: aiosqlite.Row) -> ApprovalDecider | None:
    """Who decided a stored approval: the operator whose token approved or declined it (None while it is
    pending, after an expiry or a session's end, and for decisions stored before operators were named)."""
    if row["status"] not in ("approved", "declined") or row["decided_by_display"] is None:
        return None
    return ApprovalDecider(
        kind="person",
        name=row["decided_by_display"],
        user_id=row["decided_by_user_id"],
        at=dt(row["resolved_at"]),
        channel="token",
    )


def rule_model(row: aiosqlite.Row) -> AllowRule:
    """An ``allow_rules`` row (joined with its agent's name) as the wire's rule."""
    return AllowRule(
        id=row["id"],
        mode=row["mode"],
        scope=row["scope"],
        session_id=row["session_id"],
        agent_id=row["agent_id"],
        agent_name=row["agent_name"],
        tool_name=row["tool_name"],
        pattern=row["pattern"],
        danger=bool(row["danger"]),
        reason=row["reason"],
        set_by=row["created_by_display"],
        set_by_user_id=row["created_by_user_id"],
        created_at=dt(row["created_at"]),
        expires_at=dt(row["expires_at"]) or now_utc(),
        revoked_at=dt(row["revoked_at"]),
        revoked_by=row["revoked_by_display"],
        allowed_count=int(row["allowed_count"]),
    )


def approval_model(row: aiosqlite.Row, rule: AllowRule | None = None) -> ApprovalRecord:
    """An approvals row (joined with agent and session) as Preloop's full approval record; ``rule`` is
    the allow rule that decided or muted it, ``decider`` the operator who decided it (both ours)."""
    agent_id = row["agent_id"]
    by_rule = rule is not None and rule.mode == "allow" and row["status"] == "approved"
    return ApprovalRecord(
        id=row["id"],
        tool_name=row["tool_name"],
        tool_args=json.loads(row["tool_args"]),
        agent_reasoning=row["agent_reasoning"],
        summary=row["summary"],
        execution_id=None,
        account_id=row["account_id"],
        status=row["status"],
        requested_at=dt(row["requested_at"]),
        resolved_at=dt(row["resolved_at"]),
        expires_at=dt(row["expires_at"]),
        approver_comment=row["approver_comment"],
        managed_agent_id=agent_id,
        runtime_session_id=row["session_id"],
        managed_agent_name=row["agent_name"],
        risk_level=row["risk_level"],
        decided_by_human=bool(row["decided_by_human"]),
        agent={"id": agent_id, "name": row["agent_name"], "kind": row["agent_kind"]},
        session={"id": row["session_id"], "subject": row["agent_name"]},
        api_key_id=row["api_key_id"],
        api_key={
            "id": row["api_key_id"],
            "name": f"Managed Agent {row['agent_name']} [{row['session_source_id'] or row['session_id']}]",
        },
        rule_context=rule_context(row["rule_name"]),
        decider=decider(row),
        auto_approved_reason="rule" if by_rule else None,
        rule=rule,
    )


def activity_item(
    session_id: str, seq: int, kind: str, data: dict[str, Any], session: aiosqlite.Row
) -> ActivityItem | None:
    """One stored event as an activity row, or None for events Preloop does not list as activity."""
    at = data.get("at")
    activity_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session_id}/{seq}"))
    name = session["runtime_principal_name"]
    if kind == "session.started":
        return ActivityItem(
            activity_id=None, activity_type="session_started", timestamp=at, title="Session started",
            summary=name, status="info",
        )  # fmt: skip
    if kind == "session.ended":
        return ActivityItem(
            activity_id=None, activity_type="session_ended", timestamp=at, title="Session ended",
            summary=name, status="completed",
        )  # fmt: skip
    if kind == "tool.completed":
        status = {"ok": "allowed", "error": "error", "denied": "declined"}.get(
            str(data.get("status")), "allowed"
        )
        tool_args: dict[str, Any] = data.get("args") or {}
        return ActivityItem(
            activity_id=activity_id,
            activity_type="tool_call",
            timestamp=at,
            title=data.get("name"),
            summary=data.get("result_summary") or session["agent_kind"],
            status=status,
            tool_name=data.get("name"),
            server_name=session["agent_kind"],
            metadata={
                "origin": "harness",
                "source": session["agent_kind"],
                "decision": "deny" if status == "declined" else "allow",
                "duration_ms": data.get("duration_ms"),
                "arguments_hash": hashlib.sha256(dumps(tool_args).encode()).hexdigest()[:16],
                "evaluation_phase": "post_tool_use",
                "arguments_summary": {
                    k: len(v if isinstance(v, str) else dumps(v)) for k, v in tool_args.items()
                },
                "call_id": data.get("call_id"),
                "seq": seq,
            },
        )
    if kind == "approval.decided":
        approval = data.get("approval") or {}
        return ActivityItem(
            activity_id=activity_id,
            activity_type="approval_decided",
            timestamp=at,
            title=approval.get("tool_name"),
            summary=approval.get("approver_comment") or approval.get("summary"),
            status=approval.get("status"),
            tool_name=approval.get("tool_name"),
            metadata={"approval_request_id": approval.get("id"), "seq": seq},
        )
    if kind == "note.delivered":
        note = data.get("note") or {}
        author = note.get("author") or {}
        return ActivityItem(
            activity_id=activity_id,
            activity_type="agent_control_message",
            timestamp=at,
            title="Operator message",
            summary=note.get("text"),
            status="delivered",
            metadata={
                "kind": "operator_note",
                "note_id": note.get("note_id"),
                "turn_index": note.get("delivered_turn_index"),
                "author_display": author.get("display"),
                "delivery_event": note.get("delivery_event"),
                "delivery_channel": note.get("delivery_channel"),
                "author_auth_method": author.get("auth_method"),
            },
        )
    return None
