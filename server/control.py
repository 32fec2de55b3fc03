"""The control plane's rules, independent of HTTP: sessions, events, notes, approvals, accounts.

Every state change happens in one :meth:`server.store.Store.write` transaction that also appends the
matching events, so the stream and the REST view can never disagree. The HTTP layer (``server.app``)
only parses requests, calls one method here and serialises the result.

Errors are raised as :class:`ApiError` (status + Preloop's sentence) and turned into ``{"detail": ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import aiosqlite

from client.events import EventDecodeError
from client.harness import (
    AGENT_EVENT_TYPES,
    AgentEventsAccepted,
    ApprovalRecord,
    PendingNote,
    PendingNotesRequest,
    PendingNotesResponse,
    PermissionCheckRequest,
    PermissionCheckResponse,
    RuntimeTokenRequest,
    RuntimeTokenResponse,
    SessionEndResponse,
)
from client.models import ActivityItem, Note, NoteAuthor, Session, TokenUsage
from server.bus import EventBus
from server.store import Store, WriteTx, dumps, now_utc, parse_ts, ts

NOTE_RATE_LIMIT = 20
NOTE_RATE_WINDOW = timedelta(hours=1)
NOTE_DEFAULT_TTL = 24 * 3600
NOTE_CLAIM_BATCH = 5
ACTIVE_NOW_WINDOW = timedelta(minutes=5)
RATE_LIMIT_SENTENCE = (
    "Rate limit reached: 20 notes per hour per agent or session. "
    "Steering this often usually means restarting with a better prompt."
)
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
_COUNTER_EVENTS = frozenset({"model.step", "tool.started"})


class ApiError(Exception):
    """A refusal with an HTTP status and Preloop's ``detail`` sentence."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


@dataclass(frozen=True, slots=True)
class Operator:
    """A human's bearer token: may read and steer every session of its account."""

    account_id: str
    user_id: str
    display: str
    api_key_id: str


@dataclass(frozen=True, slots=True)
class Runtime:
    """An agent's runtime token: bound to exactly one session."""

    account_id: str
    session_id: str
    api_key_id: str


class _Query(Protocol):
    """Either the reader (committed state) or a write transaction (its own uncommitted changes)."""

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]: ...


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mask_token(token: str) -> str:
    """What may be printed of a token: a short prefix, never the secret part."""
    return token[:8] + "…"


def parse_uuid(value: str) -> str | None:
    """The canonical form of a UUID, or None for anything else (a bad id is a 404, never a 500)."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None


def _dt(value: Any) -> datetime | None:
    return parse_ts(value) if isinstance(value, str) else None


class ControlPlane:
    """All rules of the local control plane over one :class:`Store` and one :class:`EventBus`."""

    def __init__(self, store: Store, bus: EventBus, *, permission_timeout_seconds: float = 300.0) -> None:
        self.store = store
        self.bus = bus
        self.permission_timeout_seconds = permission_timeout_seconds
        self.operator_token: str | None = None
        self._waiters: dict[str, asyncio.Future[str]] = {}
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        store.set_publisher(bus.publish)

    # ------------------------------------------------------------------------------------------------
    # lifecycle and accounts
    # ------------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open storage, make sure the first account exists, and start the expiry timer."""
        await self.store.open()
        self.operator_token = await self._bootstrap()
        self._timer = asyncio.create_task(self._expiry_loop(), name="note-expiry")

    def begin_shutdown(self) -> None:
        """End live streams and release blocked permission checks so the HTTP server can stop now."""
        self.bus.close_all()
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_result("cancelled")

    async def stop(self) -> None:
        """Release everything live, stop the timer, then close storage."""
        self.begin_shutdown()
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        await self.store.close()

    async def _bootstrap(self) -> str:
        row = await self.store.fetchone("SELECT value FROM meta WHERE key = 'bootstrap_token'")
        if row is not None:
            return str(row["value"])
        token = await self.create_account("local", "Local Operator")
        async with self.store.write() as tx:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('bootstrap_token', ?)", (token,))
        return token

    async def create_account(self, name: str, display: str) -> str:
        """A new account with one user and one operator token (returned; only its hash is kept)."""
        account_id, user_id = str(uuid.uuid4()), str(uuid.uuid4())
        token = "plo_" + secrets.token_urlsafe(32)
        now = ts(now_utc())
        async with self.store.write() as tx:
            await tx.execute(
                "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)", (account_id, name, now)
            )
            await tx.execute(
                "INSERT INTO users (id, account_id, display, created_at) VALUES (?, ?, ?, ?)",
                (user_id, account_id, display, now),
            )
            await tx.execute(
                "INSERT INTO tokens (token_hash, kind, account_id, user_id, api_key_id, created_at)"
                " VALUES (?, 'operator', ?, ?, ?, ?)",
                (_hash(token), account_id, user_id, str(uuid.uuid4()), now),
            )
        return token

    async def authenticate(self, token: str) -> Operator | Runtime | None:
        """The principal behind a bearer token, or None if the token is unknown or expired."""
        row = await self.store.fetchone(
            "SELECT t.*, u.display FROM tokens t LEFT JOIN users u ON u.id = t.user_id WHERE token_hash = ?",
            (_hash(token),),
        )
        if row is None:
            return None
        expires = _dt(row["expires_at"])
        if expires is not None and expires <= now_utc():
            return None
        if row["kind"] == "operator":
            return Operator(
                row["account_id"], row["user_id"], row["display"] or "Operator", row["api_key_id"]
            )
        return Runtime(row["account_id"], row["session_id"], row["api_key_id"])

    # ------------------------------------------------------------------------------------------------
    # sessions
    # ------------------------------------------------------------------------------------------------

    async def mint_runtime_session(self, op: Operator, req: RuntimeTokenRequest) -> RuntimeTokenResponse:
        """Create a session (and its agent, by name) plus the runtime token the agent will use."""
        now = now_utc()
        session_id = str(uuid.uuid4())
        token = "plr_" + secrets.token_urlsafe(32)
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
            await tx.execute(
                "INSERT INTO tokens (token_hash, kind, account_id, session_id, api_key_id, created_at,"
                " expires_at)"
                " VALUES (?, 'runtime', ?, ?, ?, ?, ?)",
                (_hash(token), op.account_id, session_id, api_key_id, ts(now), ts(expires)),
            )
            await tx.emit(session_id, "session.started", session=await self._session(tx, session_id))
        return RuntimeTokenResponse(
            runtime_session_id=session_id,
            token=token,
            expires_at=expires,
            session_source_type=req.session_source_type,
            session_source_id=req.session_source_id,
            session_reference=req.session_reference,
            warnings=[],
        )

    async def _session_row(self, q: _Query, account_id: str, session_id: str) -> aiosqlite.Row:
        sid = parse_uuid(session_id)
        row = None
        if sid is not None:
            row = await q.fetchone(
                "SELECT * FROM sessions WHERE id = ? AND account_id = ?", (sid, account_id)
            )
        if row is None:
            raise ApiError(404, "Runtime session not found")
        return row

    async def _session(self, q: _Query, session_id: str) -> dict[str, Any]:
        row = await q.fetchone(
            "SELECT s.*, a.name AS agent_name FROM sessions s LEFT JOIN agents a ON a.id = s.agent_id"
            " WHERE s.id = ?",
            (session_id,),
        )
        assert row is not None
        return (await self._session_model(q, row)).model_dump(mode="json")

    async def _session_model(self, q: _Query, row: aiosqlite.Row) -> Session:
        sid = row["id"]
        notes = await q.fetchone(
            "SELECT COUNT(*) AS n FROM notes WHERE runtime_session_id = ?",
            (sid,),
        )
        latest = await q.fetchone(
            "SELECT author_display, created_at FROM notes WHERE runtime_session_id = ?"
            " ORDER BY created_at DESC LIMIT 1",
            (sid,),
        )
        pending = await q.fetchone(
            "SELECT COUNT(*) AS n FROM approvals WHERE session_id = ? AND status = 'pending'", (sid,)
        )
        ended = _dt(row["ended_at"])
        last_activity = _dt(row["last_activity_at"])
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
            started_at=_dt(row["started_at"]),
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
            token_usage=TokenUsage(),
            estimated_cost=0.0,
            last_request_at=_dt(row["last_request_at"]),
            note_count=int(notes["n"]) if notes else 0,
            latest_note_author_display=latest["author_display"] if latest else None,
            latest_note_author_auth_method="token" if latest else None,
            latest_note_at=_dt(latest["created_at"]) if latest else None,
            managed_agent_id=agent_id,
            managed_agent_name=row["agent_name"],
            agent_kind=row["agent_kind"],
            cwd=row["cwd"],
            tool_call_count=row["tool_call_count"],
            pending_approval_count=int(pending["n"]) if pending else 0,
            artifact_counts={},
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
        where = ["s.account_id = ?"]
        params: list[Any] = [op.account_id]
        if status == "active":
            where.append("s.ended_at IS NULL")
        elif status == "ended":
            where.append("s.ended_at IS NOT NULL")
        if active_within_minutes is not None:
            where.append("s.last_activity_at >= ?")
            params.append(ts(now - timedelta(minutes=active_within_minutes)))
        if agent:
            where.append("(a.name = ? OR s.agent_id = ? OR s.runtime_principal_name = ?)")
            params += [agent, agent, agent]
        if agent_kind:
            where.append("s.agent_kind = ?")
            params.append(agent_kind)
        if start_date is not None:
            where.append("s.started_at >= ?")
            params.append(ts(start_date if start_date.tzinfo else start_date.replace(tzinfo=now.tzinfo)))
        if parent_session_id:
            where.append("s.parent_session_id = ?")
            params.append(parent_session_id)
        if flow_execution_id:
            where.append("s.flow_execution_id = ?")
            params.append(flow_execution_id)
        base = " FROM sessions s LEFT JOIN agents a ON a.id = s.agent_id WHERE " + " AND ".join(where)
        total_row = await self.store.fetchone("SELECT COUNT(*) AS n" + base, params)
        total = int(total_row["n"]) if total_row else 0
        rows = await self.store.fetchall(
            "SELECT s.*, a.name AS agent_name"
            + base
            + " ORDER BY s.last_activity_at DESC, s.id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        items = [(await self._session_model(self.store, r)).model_dump(mode="json") for r in rows]
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
        row = await self._session_row(self.store, op.account_id, session_id)
        return {
            "period_start": None,
            "period_end": None,
            "session": await self._session(self.store, row["id"]),
            "usage_by_model": [],
        }

    async def session_status(self, op: Operator, session_id: str) -> tuple[str, bool, int]:
        """``(canonical id, ended, last seq)`` of a session the operator may see (404 otherwise)."""
        row = await self._session_row(self.store, op.account_id, session_id)
        return str(row["id"]), row["ended_at"] is not None, int(row["last_seq"])

    async def session_ended(self, session_id: str) -> bool:
        """Whether a stream can stop waiting for live events."""
        row = await self.store.fetchone("SELECT ended_at FROM sessions WHERE id = ?", (session_id,))
        return row is None or row["ended_at"] is not None

    async def end_session(
        self, account_id: str, session_id: str, reason: str = "ended"
    ) -> tuple[dict[str, Any], int]:
        """End a session: pending notes become undeliverable, pending approvals are cancelled, and
        ``session.ended`` is the last event of its stream. Ending twice changes nothing."""
        waiters: list[str] = []
        async with self.store.write() as tx:
            row = await self._session_row(tx, account_id, session_id)
            sid = str(row["id"])
            if row["ended_at"] is not None:
                return await self._session(tx, sid), 0
            now = ts(now_utc())
            notes = await tx.fetchall(
                "SELECT id FROM notes WHERE runtime_session_id = ? AND state IN ('pending', 'claimed')"
                " ORDER BY created_at",
                (sid,),
            )
            for note in notes:
                await tx.execute(
                    "UPDATE notes SET state = 'undeliverable', undeliverable_at = ?,"
                    " undeliverable_reason = 'session_ended' WHERE id = ?",
                    (now, note["id"]),
                )
                await tx.emit(sid, "note.undeliverable", note=await self._note(tx, note["id"]))
            approvals = await tx.fetchall(
                "SELECT id FROM approvals WHERE session_id = ? AND status = 'pending'", (sid,)
            )
            for approval in approvals:
                await tx.execute(
                    "UPDATE approvals SET status = 'cancelled', resolved_at = ? WHERE id = ?",
                    (now, approval["id"]),
                )
                await tx.emit(sid, "approval.decided", approval=await self._approval(tx, approval["id"]))
                waiters.append(str(approval["id"]))
            await tx.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?", (now, reason, sid)
            )
            session = await self._session(tx, sid)
            await tx.emit(sid, "session.ended", session=session, reason=reason)
            for approval_id in waiters:
                tx.after_commit(functools.partial(self._resolve, approval_id, "cancelled"))
        return await self._session(self.store, sid), len(notes)

    async def activity(self, op: Operator, session_id: str) -> dict[str, Any]:
        """Newest-first activity built from the stored events (tool calls, delivered notes, start/end)."""
        row = await self._session_row(self.store, op.account_id, session_id)
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
            item = _activity_item(sid, seq, kind, data, row)
            if item is not None:
                items.append(item.model_dump(mode="json"))
        return {"items": items}

    # ------------------------------------------------------------------------------------------------
    # agent events
    # ------------------------------------------------------------------------------------------------

    async def agent_events(self, rt: Runtime, events: list[dict[str, Any]]) -> AgentEventsAccepted:
        """Store a batch of agent-reported events; the server assigns seq, session_id and at."""
        for index, ev in enumerate(events):
            kind = ev.get("type")
            if kind not in AGENT_EVENT_TYPES:
                raise ApiError(422, f"events[{index}]: type {kind!r} cannot be reported by an agent")
        async with self.store.write() as tx:
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
                elif stored.type == "model.step":
                    await tx.execute(
                        "UPDATE sessions SET total_requests = total_requests + 1, last_request_at = ?"
                        " WHERE id = ?",
                        (ts(stored.at), rt.session_id),
                    )
                counters = counters or stored.type in _COUNTER_EVENTS
            if counters:
                await tx.emit(
                    rt.session_id, "session.updated", session=await self._session(tx, rt.session_id)
                )
        return AgentEventsAccepted(accepted=len(seqs), first_seq=seqs[0], last_seq=seqs[-1])

    async def harness_end(self, rt: Runtime, reason: str | None) -> SessionEndResponse:
        """The agent ends its own session (Preloop's ``session-end``)."""
        _, marked = await self.end_session(rt.account_id, rt.session_id, reason or "exit")
        return SessionEndResponse(runtime_session_id=rt.session_id, marked=marked)

    # ------------------------------------------------------------------------------------------------
    # notes
    # ------------------------------------------------------------------------------------------------

    async def _note(self, q: _Query, note_id: str) -> dict[str, Any]:
        row = await q.fetchone("SELECT * FROM notes WHERE id = ?", (note_id,))
        assert row is not None
        return _note_model(row).model_dump(mode="json")

    async def _note_sessions(self, q: _Query, row: aiosqlite.Row, *, delivered: bool = False) -> list[str]:
        """The live sessions whose stream should show a change of this note."""
        if delivered and row["delivered_session_id"]:
            targets = await q.fetchall(
                "SELECT id FROM sessions WHERE id = ? AND ended_at IS NULL", (row["delivered_session_id"],)
            )
        elif row["runtime_session_id"]:
            targets = await q.fetchall(
                "SELECT id FROM sessions WHERE id = ? AND ended_at IS NULL", (row["runtime_session_id"],)
            )
        elif row["execution_id"]:
            targets = await q.fetchall(
                "SELECT id FROM sessions WHERE account_id = ? AND flow_execution_id = ? AND ended_at IS NULL",
                (row["account_id"], row["execution_id"]),
            )
        else:
            targets = await q.fetchall(
                "SELECT id FROM sessions WHERE account_id = ? AND agent_id = ? AND ended_at IS NULL",
                (row["account_id"], row["managed_agent_id"]),
            )
        return [str(t["id"]) for t in targets]

    async def _emit_note(self, tx: WriteTx, note_id: str, type_: str, *, delivered: bool = False) -> None:
        row = await tx.fetchone("SELECT * FROM notes WHERE id = ?", (note_id,))
        assert row is not None
        note = _note_model(row).model_dump(mode="json")
        for sid in await self._note_sessions(tx, row, delivered=delivered):
            await tx.emit(sid, type_, note=note)
            if type_ in ("note.created", "note.delivered", "note.cancelled", "note.expired"):
                await tx.emit(sid, "session.updated", session=await self._session(tx, sid))

    async def create_note(
        self,
        op: Operator,
        *,
        text: str,
        runtime_session_id: str | None,
        agent_id: str | None,
        execution_id: str | None,
        expires_in_seconds: int | None,
        correlation_id: str | None,
    ) -> dict[str, Any]:
        """Queue a note for an agent's next turn boundary (rate limited, idempotent by correlation id)."""
        now = now_utc()
        ttl = expires_in_seconds if expires_in_seconds is not None else NOTE_DEFAULT_TTL
        async with self.store.write() as tx:
            ended = False
            managed_agent_id: str | None = None
            if runtime_session_id is not None:
                srow = await self._session_row(tx, op.account_id, runtime_session_id)
                managed_agent_id = srow["agent_id"]
                ended = srow["ended_at"] is not None
                target_sql, target = "runtime_session_id = ?", str(srow["id"])
                runtime_session_id = target
            elif agent_id is not None:
                arow = await tx.fetchone(
                    "SELECT id FROM agents WHERE id = ? AND account_id = ?", (agent_id, op.account_id)
                )
                if arow is None:
                    raise ApiError(404, "Agent not found")
                managed_agent_id = target = str(arow["id"])
                target_sql = "runtime_session_id IS NULL AND execution_id IS NULL AND managed_agent_id = ?"
            else:
                assert execution_id is not None
                erow = await tx.fetchone(
                    "SELECT agent_id FROM sessions WHERE flow_execution_id = ? AND account_id = ? LIMIT 1",
                    (execution_id, op.account_id),
                )
                if erow is None:
                    raise ApiError(404, "Flow execution not found")
                managed_agent_id = erow["agent_id"]
                target_sql, target = "execution_id = ?", execution_id
            if correlation_id is not None:
                existing = await tx.fetchone(
                    "SELECT id FROM notes WHERE author_user_id = ? AND correlation_id = ?",
                    (op.user_id, correlation_id),
                )
                if existing is not None:
                    return await self._note(tx, existing["id"])
            count = await tx.fetchone(
                "SELECT COUNT(*) AS n FROM notes WHERE author_user_id = ? AND created_at >= ? AND "
                + target_sql,
                (op.user_id, ts(now - NOTE_RATE_WINDOW), target),
            )
            if count is not None and int(count["n"]) >= NOTE_RATE_LIMIT:
                raise ApiError(429, RATE_LIMIT_SENTENCE)
            note_id = uuid.uuid4().hex[:16]
            await tx.execute(
                "INSERT INTO notes (id, account_id, author_user_id, author_display, correlation_id, text,"
                " state,"
                " runtime_session_id, managed_agent_id, execution_id, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
                (
                    note_id,
                    op.account_id,
                    op.user_id,
                    op.display,
                    correlation_id,
                    text,
                    runtime_session_id,
                    managed_agent_id,
                    execution_id,
                    ts(now),
                    ts(now + timedelta(seconds=ttl)),
                ),
            )
            if ended:
                # Preloop leaves such a note pending forever; ours says at once that it cannot arrive.
                await tx.execute(
                    "UPDATE notes SET state = 'undeliverable', undeliverable_at = ?,"
                    " undeliverable_reason = 'session_ended' WHERE id = ?",
                    (ts(now), note_id),
                )
            else:
                await self._emit_note(tx, note_id, "note.created")
            tx.after_commit(self._wake.set)
            return await self._note(tx, note_id)

    async def list_notes(
        self,
        op: Operator,
        *,
        runtime_session_id: str | None,
        agent_id: str | None,
        execution_id: str | None,
        state: str | None,
        limit: int,
        offset: int,
    ) -> dict[str, Any]:
        """Notes of one target, newest first, as ``{notes, total}``."""
        await self.expire_due()
        if runtime_session_id is not None:
            srow = await self._session_row(self.store, op.account_id, runtime_session_id)
            where, params = "runtime_session_id = ?", [str(srow["id"])]
        elif agent_id is not None:
            where, params = "managed_agent_id = ?", [agent_id]
        elif execution_id is not None:
            where, params = "execution_id = ?", [execution_id]
        else:
            raise ApiError(400, "Name an agent_id, runtime_session_id or execution_id")
        where += " AND account_id = ?"
        params.append(op.account_id)
        if state is not None:
            where += " AND state = ?"
            params.append(state)
        total = await self.store.fetchone(f"SELECT COUNT(*) AS n FROM notes WHERE {where}", params)
        rows = await self.store.fetchall(
            f"SELECT * FROM notes WHERE {where} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return {
            "notes": [_note_model(r).model_dump(mode="json") for r in rows],
            "total": int(total["n"]) if total else 0,
        }

    async def get_note(self, op: Operator, note_id: str) -> dict[str, Any]:
        """One note of this account, expired first if its time has come."""
        await self.expire_due()
        row = await self.store.fetchone(
            "SELECT * FROM notes WHERE id = ? AND account_id = ?", (note_id, op.account_id)
        )
        if row is None:
            raise ApiError(404, "Note not found")
        return _note_model(row).model_dump(mode="json")

    async def cancel_note(self, op: Operator, note_id: str) -> dict[str, Any]:
        """Withdraw a pending note; any other state answers 200 with the note unchanged (as Preloop)."""
        await self.expire_due()
        async with self.store.write() as tx:
            row = await tx.fetchone(
                "SELECT * FROM notes WHERE id = ? AND account_id = ?", (note_id, op.account_id)
            )
            if row is None:
                raise ApiError(404, "Note not found")
            if row["state"] == "pending":
                await tx.execute(
                    "UPDATE notes SET state = 'cancelled', cancelled_at = ? WHERE id = ?",
                    (ts(now_utc()), note_id),
                )
                await self._emit_note(tx, note_id, "note.cancelled")
            return await self._note(tx, note_id)

    async def claim_notes(self, rt: Runtime, req: PendingNotesRequest) -> PendingNotesResponse:
        """Hand the session's oldest pending notes (at most 5) to the agent, each exactly once."""
        await self.expire_due()
        now = now_utc()
        async with self.store.write() as tx:
            srow = await tx.fetchone("SELECT * FROM sessions WHERE id = ?", (rt.session_id,))
            if srow is None or srow["ended_at"] is not None:
                return PendingNotesResponse(notes=[], text=None, channel_event=None)
            turn = req.turn_index if req.turn_index is not None else int(srow["total_requests"])
            rows = await tx.fetchall(
                "SELECT * FROM notes WHERE state = 'pending' AND account_id = ? AND expires_at > ? AND ("
                " runtime_session_id = ?"
                " OR (runtime_session_id IS NULL AND execution_id IS NULL AND managed_agent_id = ?)"
                " OR (execution_id IS NOT NULL AND execution_id = ?))"
                " ORDER BY created_at, id LIMIT ?",
                (
                    rt.account_id,
                    ts(now),
                    rt.session_id,
                    srow["agent_id"],
                    srow["flow_execution_id"],
                    NOTE_CLAIM_BATCH,
                ),
            )
            state = "claimed" if req.defer_delivery else "delivered"
            claimed: list[aiosqlite.Row] = []
            for row in rows:
                changed = await tx.execute(
                    f"UPDATE notes SET state = '{state}', claimed_at = ?, delivered_at = ?,"
                    " delivery_channel = ?,"
                    " delivery_event = ?, delivered_turn_index = ?, delivered_session_id = ?"
                    " WHERE id = ? AND state = 'pending'",
                    (
                        ts(now),
                        None if req.defer_delivery else ts(now),
                        req.channel,
                        req.event,
                        turn,
                        rt.session_id,
                        row["id"],
                    ),
                )
                if changed:
                    claimed.append(row)
                    await self._emit_note(tx, row["id"], f"note.{state}", delivered=True)
        return _pending_response(claimed, rt.session_id)

    async def ack_notes(self, rt: Runtime, note_ids: list[str]) -> None:
        """Deferred notes the agent has now shown to its model become delivered."""
        async with self.store.write() as tx:
            for note_id in note_ids:
                changed = await tx.execute(
                    "UPDATE notes SET state = 'delivered', delivered_at = ?"
                    " WHERE id = ? AND state = 'claimed'"
                    " AND delivered_session_id = ?",
                    (ts(now_utc()), note_id, rt.session_id),
                )
                if changed:
                    await self._emit_note(tx, note_id, "note.delivered", delivered=True)

    async def expire_due(self) -> datetime | None:
        """Expire notes and approvals whose time has come; return when the next one is due."""
        now = now_utc()
        due_notes = await self.store.fetchall(
            "SELECT id FROM notes WHERE state = 'pending' AND expires_at <= ?", (ts(now),)
        )
        due_approvals = await self.store.fetchall(
            "SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= ?", (ts(now),)
        )
        if due_notes or due_approvals:
            async with self.store.write() as tx:
                for note in due_notes:
                    changed = await tx.execute(
                        "UPDATE notes SET state = 'expired', expired_at = ?"
                        " WHERE id = ? AND state = 'pending'",
                        (ts(now), note["id"]),
                    )
                    if changed:
                        await self._emit_note(tx, note["id"], "note.expired")
                for approval in due_approvals:
                    await self._finish_approval(tx, str(approval["id"]), "expired", None, human=False)
        nxt = await self.store.fetchone(
            "SELECT MIN(t) AS t FROM (SELECT MIN(expires_at) AS t FROM notes WHERE state = 'pending'"
            " UNION ALL SELECT MIN(expires_at) FROM approvals WHERE status = 'pending')"
        )
        return _dt(nxt["t"]) if nxt is not None else None

    async def _expiry_loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                due = await self.expire_due()
            except Exception:  # storage hiccup: try again shortly rather than die silently
                due = now_utc() + timedelta(seconds=1)
            timeout = None if due is None else max(0.0, (due - now_utc()).total_seconds()) + 0.005
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    # ------------------------------------------------------------------------------------------------
    # approvals
    # ------------------------------------------------------------------------------------------------

    async def _approval(self, q: _Query, approval_id: str) -> dict[str, Any]:
        row = await q.fetchone(
            "SELECT ap.*, a.name AS agent_name, a.kind AS agent_kind, s.session_source_id"
            " FROM approvals ap LEFT JOIN agents a ON a.id = ap.agent_id"
            " LEFT JOIN sessions s ON s.id = ap.session_id WHERE ap.id = ?",
            (approval_id,),
        )
        assert row is not None
        return _approval_model(row).model_dump(mode="json")

    async def list_approvals(
        self, op: Operator, *, status: str | None, runtime_session_id: str | None, limit: int, skip: int
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of approvals, newest first, and the total (sent as ``X-Total-Count``)."""
        await self.expire_due()
        where, params = "account_id = ?", [op.account_id]
        if status is not None:
            where += " AND status = ?"
            params.append(status)
        if runtime_session_id is not None:
            where += " AND session_id = ?"
            params.append(runtime_session_id)
        total = await self.store.fetchone(f"SELECT COUNT(*) AS n FROM approvals WHERE {where}", params)
        rows = await self.store.fetchall(
            f"SELECT id FROM approvals WHERE {where} ORDER BY requested_at DESC, id LIMIT ? OFFSET ?",
            [*params, limit, skip],
        )
        return [await self._approval(self.store, r["id"]) for r in rows], int(total["n"]) if total else 0

    async def _own_approval(self, q: _Query, op: Operator, approval_id: str) -> aiosqlite.Row:
        aid = parse_uuid(approval_id)
        row = None
        if aid is not None:
            row = await q.fetchone(
                "SELECT * FROM approvals WHERE id = ? AND account_id = ?", (aid, op.account_id)
            )
        if row is None:
            raise ApiError(404, "Approval request not found")
        return row

    async def get_approval(self, op: Operator, approval_id: str) -> dict[str, Any]:
        """One approval of this account, expired first if its time has come."""
        await self.expire_due()
        row = await self._own_approval(self.store, op, approval_id)
        return await self._approval(self.store, row["id"])

    async def decide(
        self, op: Operator, approval_id: str, *, approve: bool, comment: str | None
    ) -> dict[str, Any]:
        """Approve or decline a pending approval; deciding twice is a 400 (as Preloop)."""
        await self.expire_due()
        async with self.store.write() as tx:
            row = await self._own_approval(tx, op, approval_id)
            if row["status"] != "pending":
                raise ApiError(400, f"Request already {row['status']}")
            status = "approved" if approve else "declined"
            await self._finish_approval(tx, str(row["id"]), status, comment, human=True)
            return await self._approval(tx, row["id"])

    async def _finish_approval(
        self, tx: WriteTx, approval_id: str, status: str, comment: str | None, *, human: bool
    ) -> None:
        changed = await tx.execute(
            "UPDATE approvals SET status = ?, resolved_at = ?, approver_comment = ?, decided_by_human = ?"
            " WHERE id = ? AND status = 'pending'",
            (status, ts(now_utc()), comment, int(human), approval_id),
        )
        if not changed:
            return
        row = await tx.fetchone(
            "SELECT ap.session_id, s.ended_at FROM approvals ap JOIN sessions s ON s.id = ap.session_id"
            " WHERE ap.id = ?",
            (approval_id,),
        )
        if row is not None and row["ended_at"] is None:
            sid = str(row["session_id"])
            await tx.emit(sid, "approval.decided", approval=await self._approval(tx, approval_id))
            await tx.emit(sid, "session.updated", session=await self._session(tx, sid))
        tx.after_commit(lambda: self._resolve(approval_id, status))

    def _resolve(self, approval_id: str, status: str) -> None:
        fut = self._waiters.get(approval_id)
        if fut is not None and not fut.done():
            fut.set_result(status)

    async def permission_check(self, rt: Runtime, req: PermissionCheckRequest) -> PermissionCheckResponse:
        """A tool call about to run: deliver pending notes on ``pre_tool_use``; on ``ask``, open an
        approval and block until a human decides, the approval expires, or the session ends."""
        operator_note: str | None = None
        if req.evaluation_phase == "pre_tool_use":
            pending = await self.claim_notes(rt, PendingNotesRequest(channel="hook", event="pre_tool_use"))
            operator_note = pending.text
        if req.client_decision != "ask":
            if req.client_decision == "deny":
                return PermissionCheckResponse(decision="deny", reason="", operator_note=operator_note)
            reason = "" if req.client_decision == "allow" else "No central native rule requires approval"
            return PermissionCheckResponse(decision="allow", reason=reason, operator_note=operator_note)
        timeout = min(req.timeout_seconds or self.permission_timeout_seconds, self.permission_timeout_seconds)
        approval_id = str(uuid.uuid4())
        now = now_utc()
        tool_args: dict[str, Any] = {}
        if req.cwd:
            tool_args["cwd"] = req.cwd
        tool_args.update(req.tool_input)
        if req.source:
            tool_args["_preloop_source"] = req.source
        shown = ", ".join(f"{k}={_short(v)}" for k, v in tool_args.items() if not k.startswith("_"))
        summary = f"Allow {req.tool_name} with {shown}?" if shown else f"Allow {req.tool_name}?"
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[str] = loop.create_future()
        self._waiters[approval_id] = fut
        try:
            async with self.store.write() as tx:
                srow = await tx.fetchone("SELECT * FROM sessions WHERE id = ?", (rt.session_id,))
                if srow is None or srow["ended_at"] is not None:
                    raise ApiError(409, "Runtime session has ended")
                await tx.execute(
                    "INSERT INTO approvals (id, account_id, session_id, agent_id, api_key_id, tool_name,"
                    " tool_args,"
                    " agent_reasoning, summary, status, requested_at, expires_at, risk_level)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
                    (
                        approval_id,
                        rt.account_id,
                        rt.session_id,
                        srow["agent_id"],
                        rt.api_key_id,
                        req.tool_name,
                        dumps(tool_args),
                        req.agent_reasoning,
                        summary,
                        ts(now),
                        ts(now + timedelta(seconds=timeout)),
                        "danger" if req.tool_name in ("Bash", "Write", "Edit") else "caution",
                    ),
                )
                await tx.emit(
                    rt.session_id, "approval.requested", approval=await self._approval(tx, approval_id)
                )
                await tx.emit(
                    rt.session_id, "session.updated", session=await self._session(tx, rt.session_id)
                )
                tx.after_commit(self._wake.set)
            try:
                status = await asyncio.wait_for(asyncio.shield(fut), timeout + 0.5)
            except TimeoutError:
                async with self.store.write() as tx:
                    await self._finish_approval(tx, approval_id, "expired", None, human=False)
                status = fut.result() if fut.done() else "expired"
        finally:
            self._waiters.pop(approval_id, None)
        row = await self.store.fetchone("SELECT approver_comment FROM approvals WHERE id = ?", (approval_id,))
        comment = (row["approver_comment"] if row else None) or ""
        if status == "approved":
            return PermissionCheckResponse(
                decision="allow", reason=comment, request_id=approval_id, operator_note=operator_note
            )
        reasons = {"expired": "Approval request timed out", "cancelled": "Approval request cancelled"}
        return PermissionCheckResponse(
            decision="deny",
            reason=comment or reasons.get(status, ""),
            request_id=approval_id,
            operator_note=operator_note,
            timed_out=status == "expired",
        )


# ----------------------------------------------------------------------------------------------------
# row → wire shapes (pure)
# ----------------------------------------------------------------------------------------------------


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 200 else text[:199] + "…"


def _note_model(row: aiosqlite.Row) -> Note:
    return Note(
        note_id=row["id"],
        state=row["state"],
        text=row["text"],
        managed_agent_id=row["managed_agent_id"],
        runtime_session_id=row["runtime_session_id"],
        next_session=False,
        author=NoteAuthor(user_id=row["author_user_id"], display=row["author_display"], auth_method="token"),
        created_at=_dt(row["created_at"]),
        expires_at=_dt(row["expires_at"]),
        claimed_at=_dt(row["claimed_at"]),
        expired_at=_dt(row["expired_at"]),
        undeliverable_at=_dt(row["undeliverable_at"]),
        undeliverable_reason=row["undeliverable_reason"],
        delivered_at=_dt(row["delivered_at"]),
        delivery_channel=row["delivery_channel"],
        delivery_event=row["delivery_event"],
        delivered_turn_index=row["delivered_turn_index"],
        cancelled_at=_dt(row["cancelled_at"]),
        correlation_id=row["correlation_id"],
    )


def _note_block(row: aiosqlite.Row) -> str:
    created = _dt(row["created_at"])
    at = created.isoformat() if created else ""
    author = _xml_attr(str(row["author_display"]))
    head = f'<operator-note id="{row["id"]}" from="{author}" auth="token" at="{at}">'
    # The text is escaped so a note cannot close its own element and forge another one.
    return f"{head}\n{_xml_text(row['text'])}\n</operator-note>"


def _xml_text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml_attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _pending_response(rows: list[aiosqlite.Row], session_id: str) -> PendingNotesResponse:
    if not rows:
        return PendingNotesResponse(notes=[], text=None, channel_event=None)
    notes = []
    for row in rows:
        created, expires = _dt(row["created_at"]), _dt(row["expires_at"])
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


def _approval_model(row: aiosqlite.Row) -> ApprovalRecord:
    agent_id = row["agent_id"]
    return ApprovalRecord(
        id=row["id"],
        tool_name=row["tool_name"],
        tool_args=json.loads(row["tool_args"]),
        agent_reasoning=row["agent_reasoning"],
        summary=row["summary"],
        execution_id=None,
        account_id=row["account_id"],
        status=row["status"],
        requested_at=_dt(row["requested_at"]),
        resolved_at=_dt(row["resolved_at"]),
        expires_at=_dt(row["expires_at"]),
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
        rule_context=dict(RULE_CONTEXT),
    )


def _activity_item(
    session_id: str, seq: int, kind: str, data: dict[str, Any], session: aiosqlite.Row
) -> ActivityItem | None:
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
