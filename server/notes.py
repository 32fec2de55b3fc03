"""Operator notes: create (Preloop's rules), list, cancel, claim at a turn boundary, ack, expire.

A note for a session that has ended is refused (409, ``ENDED_SENTENCE``): nothing is created.
A note's life: ``pending`` → ``delivered`` (claimed by the agent) or ``claimed`` → ``delivered`` (deferred
claim, then ack); ``pending`` → ``cancelled`` / ``expired`` / ``undeliverable`` (its session ended).
Every change is one write transaction that also emits ``note.<state>`` with the full note to each live
session the note targets, so the stream and REST never disagree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiosqlite

from server.accounts import Operator, Runtime
from server.errors import ApiError
from server.expiry import ExpiryTimer
from server.harness import PendingNotesRequest, PendingNotesResponse
from server.rows import Query, Where, note_dict, own_row, page, session_dict
from server.shapes import note_model, pending_response
from server.store import Store, WriteTx, now_utc, ts

NOTE_RATE_LIMIT = 20
NOTE_RATE_WINDOW = timedelta(hours=1)
NOTE_DEFAULT_TTL = 24 * 3600
NOTE_CLAIM_BATCH = 5
RATE_LIMIT_SENTENCE = (
    "Rate limit reached: 20 notes per hour per agent or session. "
    "Steering this often usually means restarting with a better prompt."
)
ENDED_SENTENCE = "Runtime session {session} has ended; notes can no longer be delivered"
# Changes that alter a session's counters (note_count, latest note): its row is re-sent after them.
_COUNTED = frozenset({"note.created", "note.delivered", "note.cancelled", "note.expired"})


@dataclass(frozen=True, slots=True)
class NoteTarget:
    """Who notes are for: one of a session, an agent or a flow execution (Preloop's three targets).

    Creating a note needs exactly one (the HTTP layer enforces it); listing with none is Preloop's 400.
    """

    runtime_session_id: str | None = None
    agent_id: str | None = None
    execution_id: str | None = None

    @classmethod
    def of(
        cls, runtime_session_id: uuid.UUID | None, agent_id: uuid.UUID | None, execution_id: uuid.UUID | None
    ) -> NoteTarget:
        """From the UUIDs the HTTP layer parsed, as the canonical strings stored in the database."""
        ids = (runtime_session_id, agent_id, execution_id)
        return cls(*(str(value) if value is not None else None for value in ids))


class Notes:
    """The notes desk: every rule about operator notes."""

    def __init__(self, store: Store, expiry: ExpiryTimer) -> None:
        self.store = store
        self.expiry = expiry

    async def _live_targets(self, q: Query, row: aiosqlite.Row, *, delivered: bool = False) -> list[str]:
        """The live sessions whose stream should show a change of this note."""
        params: tuple[Any, ...]
        if delivered and row["delivered_session_id"]:
            sql, params = "id = ?", (row["delivered_session_id"],)
        elif row["runtime_session_id"]:
            sql, params = "id = ?", (row["runtime_session_id"],)
        elif row["execution_id"]:
            sql, params = "account_id = ? AND flow_execution_id = ?", (row["account_id"], row["execution_id"])
        else:
            sql, params = "account_id = ? AND agent_id = ?", (row["account_id"], row["managed_agent_id"])
        targets = await q.fetchall(f"SELECT id FROM sessions WHERE {sql} AND ended_at IS NULL", params)
        return [str(t["id"]) for t in targets]

    async def emit(self, tx: WriteTx, note_id: str, type_: str, *, delivered: bool = False) -> None:
        """Put a note's new state on the stream of every live session it targets (in this write)."""
        row = await tx.fetchone("SELECT * FROM notes WHERE id = ?", (note_id,))
        assert row is not None
        note = note_model(row).model_dump(mode="json")
        for sid in await self._live_targets(tx, row, delivered=delivered):
            await tx.emit(sid, type_, note=note)
            if type_ in _COUNTED:
                await tx.emit(sid, "session.updated", session=await session_dict(tx, sid))

    async def create_note(
        self,
        op: Operator,
        target: NoteTarget,
        *,
        text: str,
        expires_in_seconds: int | None,
        correlation_id: str | None,
    ) -> dict[str, Any]:
        """Queue a note for an agent's next turn boundary (rate limited, idempotent by correlation id)."""
        runtime_session_id, agent_id, execution_id = (
            target.runtime_session_id,
            target.agent_id,
            target.execution_id,
        )
        now = now_utc()
        ttl = expires_in_seconds if expires_in_seconds is not None else NOTE_DEFAULT_TTL
        async with self.store.write() as tx:
            ended = False
            managed_agent_id: str | None = None
            if runtime_session_id is not None:
                srow = await own_row(tx, "sessions", runtime_session_id, op.account_id)
                managed_agent_id = srow["agent_id"]
                ended = srow["ended_at"] is not None
                target_sql, key = "runtime_session_id = ?", str(srow["id"])
                runtime_session_id = key
            elif agent_id is not None:
                arow = await tx.fetchone(
                    "SELECT id FROM agents WHERE id = ? AND account_id = ?", (agent_id, op.account_id)
                )
                if arow is None:
                    raise ApiError(404, "Agent not found")
                managed_agent_id = key = str(arow["id"])
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
                target_sql, key = "execution_id = ?", execution_id
            if correlation_id is not None:
                existing = await tx.fetchone(
                    "SELECT id FROM notes WHERE author_user_id = ? AND correlation_id = ?",
                    (op.user_id, correlation_id),
                )
                if existing is not None:  # a retry of a note sent before the session ended is no error
                    return await note_dict(tx, existing["id"])
            if ended:
                # Preloop accepts it and leaves it pending for ever; ours refuses, so the sender is told
                # while the text is still at hand (docs/protocol.md, "Operator notes").
                raise ApiError(409, ENDED_SENTENCE.format(session=runtime_session_id))
            count = await tx.fetchone(
                "SELECT COUNT(*) AS n FROM notes WHERE author_user_id = ? AND created_at >= ? AND "
                + target_sql,
                (op.user_id, ts(now - NOTE_RATE_WINDOW), key),
            )
            if count is not None and int(count["n"]) >= NOTE_RATE_LIMIT:
                raise ApiError(429, RATE_LIMIT_SENTENCE)
            note_id = uuid.uuid4().hex[:16]
            await tx.execute(
                "INSERT INTO notes (id, account_id, author_user_id, author_display, correlation_id, text,"
                " state, runtime_session_id, managed_agent_id, execution_id, created_at, expires_at)"
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
            await self.emit(tx, note_id, "note.created")
            tx.after_commit(self.expiry.wake)
            return await note_dict(tx, note_id)

    async def list_notes(
        self, op: Operator, target: NoteTarget, *, state: str | None, limit: int, offset: int
    ) -> dict[str, Any]:
        """Notes of one target, newest first, as ``{notes, total}``; naming none is Preloop's 400."""
        await self.expiry.expire_due()
        if target.runtime_session_id is not None:
            srow = await own_row(self.store, "sessions", target.runtime_session_id, op.account_id)
            where = Where("runtime_session_id = ?", str(srow["id"]))
        elif target.agent_id is not None:
            where = Where("managed_agent_id = ?", target.agent_id)
        elif target.execution_id is not None:
            where = Where("execution_id = ?", target.execution_id)
        else:
            raise ApiError(400, "Name an agent_id, runtime_session_id or execution_id")
        where.add("account_id = ?", op.account_id)
        where.add("state = ?", state)
        rows, total = await page(self.store, "*", "notes", where, "created_at DESC, id", limit, offset)
        return {"notes": [note_model(r).model_dump(mode="json") for r in rows], "total": total}

    async def get_note(self, op: Operator, note_id: str) -> dict[str, Any]:
        """One note of this account, expired first if its time has come."""
        await self.expiry.expire_due()
        row = await own_row(self.store, "notes", note_id, op.account_id)
        return note_model(row).model_dump(mode="json")

    async def cancel_note(self, op: Operator, note_id: str) -> dict[str, Any]:
        """Withdraw a pending note; any other state answers 200 with the note unchanged (as Preloop)."""
        await self.expiry.expire_due()
        async with self.store.write() as tx:
            row = await own_row(tx, "notes", note_id, op.account_id)
            if row["state"] == "pending":
                await tx.execute(
                    "UPDATE notes SET state = 'cancelled', cancelled_at = ? WHERE id = ?",
                    (ts(now_utc()), note_id),
                )
                await self.emit(tx, note_id, "note.cancelled")
            return await note_dict(tx, note_id)

    async def claim_notes(self, rt: Runtime, req: PendingNotesRequest) -> PendingNotesResponse:
        """Hand the session's oldest pending notes (at most 5) to the agent, each exactly once.

        The ``UPDATE ... WHERE state = 'pending'`` inside the serialized write is what makes concurrent
        claims safe: a note another claim took first changes no row and is skipped.
        """
        await self.expiry.expire_due()
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
                    " delivery_channel = ?, delivery_event = ?, delivered_turn_index = ?,"
                    " delivered_session_id = ? WHERE id = ? AND state = 'pending'",
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
                    await self.emit(tx, row["id"], f"note.{state}", delivered=True)
        return pending_response(claimed, rt.session_id)

    async def ack_notes(self, rt: Runtime, note_ids: list[str]) -> None:
        """Deferred notes the agent has now shown to its model become delivered."""
        async with self.store.write() as tx:
            for note_id in note_ids:
                changed = await tx.execute(
                    "UPDATE notes SET state = 'delivered', delivered_at = ?"
                    " WHERE id = ? AND state = 'claimed' AND delivered_session_id = ?",
                    (ts(now_utc()), note_id, rt.session_id),
                )
                if changed:
                    await self.emit(tx, note_id, "note.delivered", delivered=True)

    async def due(self, now: datetime) -> list[str]:
        """Ids of pending notes whose time has come (the sweep expires them)."""
        rows = await self.store.fetchall(
            "SELECT id FROM notes WHERE state = 'pending' AND expires_at <= ?", (ts(now),)
        )
        return [str(r["id"]) for r in rows]

    async def expire(self, tx: WriteTx, note_id: str, now: datetime) -> None:
        """Expire one note if it is still pending (a claim may have taken it since :meth:`due`)."""
        changed = await tx.execute(
            "UPDATE notes SET state = 'expired', expired_at = ? WHERE id = ? AND state = 'pending'",
            (ts(now), note_id),
        )
        if changed:
            await self.emit(tx, note_id, "note.expired")

    async def _mark_undeliverable(self, tx: WriteTx, note_id: str, at: str) -> None:
        await tx.execute(
            "UPDATE notes SET state = 'undeliverable', undeliverable_at = ?,"
            " undeliverable_reason = 'session_ended' WHERE id = ?",
            (at, note_id),
        )

    async def end_of_session(self, tx: WriteTx, session_id: str, at: str) -> int:
        """The session is ending: its pending or claimed notes can never arrive. Returns how many.

        Each gets ``note.undeliverable`` on that session's stream, before its ``session.ended``.
        """
        notes = await tx.fetchall(
            "SELECT id FROM notes WHERE runtime_session_id = ? AND state IN ('pending', 'claimed')"
            " ORDER BY created_at",
            (session_id,),
        )
        for note in notes:
            await self._mark_undeliverable(tx, note["id"], at)
            await tx.emit(session_id, "note.undeliverable", note=await note_dict(tx, note["id"]))
        return len(notes)
