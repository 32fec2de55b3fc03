"""Runtime sessions: mint (with the agent's runtime token), list, detail, activity, agent events, end.

A session's events get contiguous seqs from the store; this desk adds the counters Preloop shows
(``tool_call_count``, ``total_requests``, and the tokens and cost a ``model.step`` reports as its
``usage``, summed per model) and re-sends the session row when they change. Ending a session
hands its open notes and approvals to their desks first, so ``session.ended`` is always the last event.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from client.events import EventDecodeError, ModelStep
from client.models import CallUsage
from server.accounts import Operator, Runtime, insert_token, new_token
from server.approvals import Approvals
from server.errors import ApiError
from server.harness import (
    AGENT_EVENT_TYPES,
    MAX_EVENT_BYTES,
    AgentEventsAccepted,
    RuntimeTokenRequest,
    RuntimeTokenResponse,
    SessionEndResponse,
)
from server.notes import Notes
from server.rows import Where, own_row, page, parse_uuid, session_dict, session_entries, usage_by_model
from server.shapes import activity_item
from server.store import Store, WriteTx, now_utc, ts

# Agent events that change a session's counters: the session row is re-sent after a batch with one.
_COUNTER_EVENTS = frozenset({"model.step", "tool.started"})
_SESSIONS = "sessions s LEFT JOIN agents a ON a.id = s.agent_id"


async def _add_usage(tx: WriteTx, session_id: str, usage: CallUsage) -> None:
    """Add one model call's reported usage to the session's sums for its model (a cost only when given)."""
    await tx.execute(
        "INSERT INTO session_usage (session_id, model, calls, input_tokens, output_tokens, total_tokens,"
        " cost_usd) VALUES (?, ?, 1, ?, ?, ?, ?) ON CONFLICT (session_id, model) DO UPDATE SET"
        " calls = calls + 1, input_tokens = input_tokens + excluded.input_tokens,"
        " output_tokens = output_tokens + excluded.output_tokens,"
        " total_tokens = total_tokens + excluded.total_tokens,"
        " cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd"
        " ELSE COALESCE(cost_usd, 0) + excluded.cost_usd END",
        (
            session_id,
            usage.model or "",
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.tokens,
            usage.cost_usd,
        ),
    )


class Sessions:
    """The sessions desk."""

    def __init__(self, store: Store, notes: Notes, approvals: Approvals) -> None:
        self.store = store
        self.notes = notes
        self.approvals = approvals

    async def mint_runtime_session(self, op: Operator, req: RuntimeTokenRequest) -> RuntimeTokenResponse:
        """Create a session (and its agent, by name) plus the runtime token the agent will use."""
        now = now_utc()
        session_id = str(uuid.uuid4())
        token = new_token("plr_")
        expires = now + timedelta(minutes=req.expires_in_minutes)
        name = req.runtime_principal_name or req.session_reference or "agent"
        parent = parse_uuid(req.parent_session_id) if req.parent_session_id else None
        api_key_id = str(uuid.uuid4())
        async with self.store.write() as tx:
            agent = await tx.fetchone(
                "SELECT id FROM agents WHERE account_id = ? AND name = ?", (op.account_id, name)
            )
            if agent is None:
                agent_id = str(uuid.uuid4())
                await tx.execute(
                    "INSERT INTO agents (id, account_id, name, kind, created_at) VALUES (?, ?, ?, ?, ?)",
                    (agent_id, op.account_id, name, req.agent_kind, ts(now)),
                )
            else:
                agent_id = str(agent["id"])
            await tx.execute(
                "INSERT INTO sessions (id, account_id, agent_id, api_key_id, session_source_type,"
                " session_source_id, session_reference, runtime_principal_name, agent_kind, title, cwd,"
                " parent_session_id, flow_execution_id, started_at, last_activity_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    op.account_id,
                    agent_id,
                    api_key_id,
                    req.session_source_type,
                    req.session_source_id,
                    req.session_reference,
                    name,
                    req.agent_kind,
                    req.title,
                    req.cwd,
                    parent,
                    req.flow_execution_id,
                    ts(now),
                    ts(now),
                ),
            )
            await insert_token(
                tx,
                token,
                "runtime",
                account_id=op.account_id,
                api_key_id=api_key_id,
                session_id=session_id,
                expires_at=ts(expires),
            )
            await tx.emit(session_id, "session.started", session=await session_dict(tx, session_id))
        return RuntimeTokenResponse(
            runtime_session_id=session_id,
            token=token,
            expires_at=expires,
            session_source_type=req.session_source_type,
            session_source_id=req.session_source_id,
            session_reference=req.session_reference,
            warnings=[],
        )

    async def list_sessions(
        self,
        op: Operator,
        *,
        status: str = "all",
        active_within_minutes: int | None = None,
        agent: str | None = None,
        agent_kind: str | None = None,
        start_date: datetime | None = None,
        parent_session_id: str | None = None,
        flow_execution_id: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        """One page of the account's sessions, most recently active first (Preloop's page shape)."""
        now = now_utc()
        where = Where("s.account_id = ?", op.account_id)
        where.add("s.ended_at IS NULL", when=status == "active")
        where.add("s.ended_at IS NOT NULL", when=status == "ended")
        if active_within_minutes is not None:
            where.add("s.last_activity_at >= ?", ts(now - timedelta(minutes=active_within_minutes)))
        where.add(
            "(a.name = ? OR s.agent_id = ? OR s.runtime_principal_name = ?)", *[agent] * 3, when=bool(agent)
        )
        where.add("s.agent_kind = ?", agent_kind, when=bool(agent_kind))
        if start_date is not None:
            aware = start_date if start_date.tzinfo else start_date.replace(tzinfo=now.tzinfo)
            where.add("s.started_at >= ?", ts(aware))
        where.add("s.parent_session_id = ?", parent_session_id, when=bool(parent_session_id))
        where.add("s.flow_execution_id = ?", flow_execution_id, when=bool(flow_execution_id))
        rows, total = await page(
            self.store,
            "s.*, a.name AS agent_name",
            _SESSIONS,
            where,
            "s.last_activity_at DESC, s.id",
            limit,
            offset,
        )
        items = await session_entries(self.store, rows)
        return {
            "period_start": (now - timedelta(days=30)).isoformat().replace("+00:00", "Z"),
            "period_end": now.isoformat().replace("+00:00", "Z"),
            "query": None,
            "session_source_type": None,
            "status": status,
            "total": total,
            "has_more": offset + len(items) < total,
            "limit": limit,
            "offset": offset,
            "items": items,
        }

    async def get_session(self, op: Operator, session_id: str) -> dict[str, Any]:
        """Session detail. Unlike Preloop, the counters and ``cwd`` are filled in here too."""
        row = await own_row(self.store, "sessions", session_id, op.account_id)
        return {
            "period_start": None,
            "period_end": None,
            "session": await session_dict(self.store, row["id"]),
            "usage_by_model": await usage_by_model(self.store, str(row["id"])),
        }

    async def session_status(self, op: Operator, session_id: str) -> tuple[str, bool, int]:
        """``(canonical id, ended, last seq)`` of a session the operator may see (404 otherwise)."""
        row = await own_row(self.store, "sessions", session_id, op.account_id)
        return str(row["id"]), row["ended_at"] is not None, int(row["last_seq"])

    async def end_session(
        self, account_id: str, session_id: str, reason: str = "ended"
    ) -> tuple[dict[str, Any], int]:
        """End a session: pending notes become undeliverable, pending approvals are cancelled, and
        ``session.ended`` is the last event of its stream. Ending twice changes nothing.

        Returns the session as it now is and how many notes became undeliverable.
        """
        async with self.store.write() as tx:
            row = await own_row(tx, "sessions", session_id, account_id)
            sid = str(row["id"])
            if row["ended_at"] is not None:
                return await session_dict(tx, sid), 0
            now = ts(now_utc())
            marked = await self.notes.end_of_session(tx, sid, now)
            await self.approvals.end_of_session(tx, sid, now)
            await tx.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?", (now, reason, sid)
            )
            session = await session_dict(tx, sid)
            await tx.emit(sid, "session.ended", session=session, reason=reason)
        return await session_dict(self.store, sid), marked

    async def activity(self, op: Operator, session_id: str) -> dict[str, Any]:
        """Newest-first activity built from the stored events (tool calls, delivered notes, start/end)."""
        row = await own_row(self.store, "sessions", session_id, op.account_id)
        sid = str(row["id"])
        events = await self.store.fetchall(
            "SELECT seq, type, data FROM events WHERE session_id = ? AND type IN"
            " ('session.started', 'tool.started', 'tool.completed', 'note.delivered', 'approval.decided',"
            " 'session.ended')"
            " ORDER BY seq DESC LIMIT 200",
            (sid,),
        )
        items = []
        decoded = [(int(ev["seq"]), str(ev["type"]), json.loads(ev["data"])) for ev in events]
        args = {d.get("call_id"): d.get("args") or {} for _, t, d in decoded if t == "tool.started"}
        for seq, kind, data in decoded:
            if kind == "tool.completed":
                data = {**data, "args": args.get(data.get("call_id"), {})}
            item = activity_item(sid, seq, kind, data, row)
            if item is not None:
                items.append(item.model_dump(mode="json"))
        return {"items": items}

    async def agent_events(
        self, rt: Runtime, events: list[dict[str, Any]], batch_id: str | None = None
    ) -> AgentEventsAccepted:
        """Store a batch of agent-reported events; the server assigns seq, session_id and at.

        A repeated ``batch_id`` (a retry whose first answer was lost) stores nothing and gets the first
        answer again, even after the session ended.
        """
        for index, ev in enumerate(events):
            kind = ev.get("type")
            if kind not in AGENT_EVENT_TYPES:
                raise ApiError(422, f"events[{index}]: type {kind!r} cannot be reported by an agent")
            size = len(json.dumps(ev, separators=(",", ":"), ensure_ascii=False).encode())
            if size > MAX_EVENT_BYTES:
                raise ApiError(
                    413,
                    f"events[{index}] ({kind}) is {size} bytes; an event may be at most {MAX_EVENT_BYTES}"
                    " bytes: split long text into several events",
                )
        async with self.store.write() as tx:
            if batch_id is not None:
                seen = await tx.fetchone(
                    "SELECT accepted, first_seq, last_seq FROM event_batches"
                    " WHERE session_id = ? AND batch_id = ?",
                    (rt.session_id, batch_id),
                )
                if seen is not None:
                    return AgentEventsAccepted(
                        accepted=int(seen["accepted"]),
                        first_seq=int(seen["first_seq"]),
                        last_seq=int(seen["last_seq"]),
                        replayed=True,
                    )
            row = await tx.fetchone("SELECT ended_at FROM sessions WHERE id = ?", (rt.session_id,))
            if row is None or row["ended_at"] is not None:
                raise ApiError(409, "Runtime session has ended")
            seqs: list[int] = []
            counters = False
            for index, ev in enumerate(events):
                fields = {k: v for k, v in ev.items() if k not in ("seq", "session_id", "at", "type")}
                try:
                    stored = await tx.emit(rt.session_id, str(ev["type"]), **fields)
                except EventDecodeError as exc:
                    raise ApiError(422, f"events[{index}]: {exc}") from exc
                seqs.append(stored.seq)
                if stored.type == "tool.started":
                    await tx.execute(
                        "UPDATE sessions SET tool_call_count = tool_call_count + 1 WHERE id = ?",
                        (rt.session_id,),
                    )
                elif isinstance(stored, ModelStep):
                    await tx.execute(
                        "UPDATE sessions SET total_requests = total_requests + 1, last_request_at = ?"
                        " WHERE id = ?",
                        (ts(stored.at), rt.session_id),
                    )
                    if stored.usage is not None:
                        await _add_usage(tx, rt.session_id, stored.usage)
                counters = counters or stored.type in _COUNTER_EVENTS
            if counters:
                await tx.emit(rt.session_id, "session.updated", session=await session_dict(tx, rt.session_id))
            if batch_id is not None:
                await tx.execute(
                    "INSERT INTO event_batches (session_id, batch_id, accepted, first_seq, last_seq,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (rt.session_id, batch_id, len(seqs), seqs[0], seqs[-1], ts(now_utc())),
                )
        return AgentEventsAccepted(accepted=len(seqs), first_seq=seqs[0], last_seq=seqs[-1])

    async def harness_end(self, rt: Runtime, reason: str | None) -> SessionEndResponse:
        """The agent ends its own session (Preloop's ``session-end``)."""
        _, marked = await self.end_session(rt.account_id, rt.session_id, reason or "exit")
        return SessionEndResponse(runtime_session_id=rt.session_id, marked=marked)
