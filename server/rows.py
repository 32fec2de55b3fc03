"""Reading rows the desks share: a session, a note or an approval as its wire dict, and ownership lookups.

Every function takes a :class:`Query` (the store's reader for committed state, or a write transaction
that must see its own uncommitted changes), so a desk renders the same shapes inside and outside a write.
Ownership checks live here once: another account's id, an unknown id and a malformed id are all the same
404 (never a 500, unlike Preloop for a non-UUID session id).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import aiosqlite

from client.models import AllowRule
from server.errors import ApiError
from server.shapes import USAGE_SUMS, Usage, approval_model, note_model, rule_model, session_model


class Query(Protocol):
    """Either the reader (committed state) or a write transaction (its own uncommitted changes)."""

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None:
        """First row or None."""
        ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]:
        """All rows."""
        ...


def parse_uuid(value: str) -> str | None:
    """The canonical form of a UUID, or None for anything else (a bad id is a 404, never a 500)."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None


class Where:
    """A WHERE clause of ANDed conditions for the list endpoints; values travel as parameters, never as
    SQL text."""

    def __init__(self, sql: str, *params: Any) -> None:
        self.parts = [sql]
        self.params: list[Any] = list(params)

    def add(self, sql: str, *params: Any, when: bool | None = None) -> None:
        """Add a condition; by default only when every value is given (a filter left out filters nothing)."""
        if when is None:
            when = all(p is not None for p in params)
        if when:
            self.parts.append(sql)
            self.params.extend(params)

    @property
    def sql(self) -> str:
        """The conditions joined with AND."""
        return " AND ".join(self.parts)


async def page(
    q: Query, columns: str, source: str, where: Where, order: str, limit: int, offset: int
) -> tuple[list[aiosqlite.Row], int]:
    """One page of rows and how many match in all, read by one statement (a window count), so the total
    and the page agree even while rows are being added: two reads could list an item the total missed."""
    rows = await q.fetchall(
        f"SELECT {columns}, COUNT(*) OVER () AS page_total_ FROM {source} WHERE {where.sql} "
        f"ORDER BY {order} LIMIT ? OFFSET ?",
        [*where.params, limit, offset],
    )
    if rows:
        return rows, int(rows[0]["page_total_"])
    # Past the last page (or nothing matches): no row carries the count.
    total = await q.fetchone(f"SELECT COUNT(*) AS n FROM {source} WHERE {where.sql}", where.params)
    return rows, int(total["n"]) if total else 0


RULE_SELECT = "SELECT r.*, a.name AS agent_name FROM allow_rules r LEFT JOIN agents a ON a.id = r.agent_id"
"""An allow rule with its agent's name (``server.rules``)."""


async def rule_of(q: Query, rule_id: str) -> AllowRule | None:
    """The allow rule with this id (the caller already holds something of its account that names it)."""
    row = await q.fetchone(f"{RULE_SELECT} WHERE r.id = ?", (rule_id,))
    return rule_model(row) if row is not None else None


_NOT_FOUND = {
    "sessions": "Runtime session not found",
    "notes": "Note not found",
    "approvals": "Approval request not found",
}


async def own_row(
    q: Query, table: Literal["sessions", "notes", "approvals"], row_id: str, account_id: str
) -> aiosqlite.Row:
    """The row of ``table`` with this id in this account, or Preloop's 404 for that kind of thing.

    Sessions and approvals have UUID ids (canonicalised first); note ids are opaque hex strings.
    """
    key = row_id if table == "notes" else parse_uuid(row_id)
    row = None
    if key is not None:
        row = await q.fetchone(f"SELECT * FROM {table} WHERE id = ? AND account_id = ?", (key, account_id))
    if row is None:
        raise ApiError(404, _NOT_FOUND[table])
    return row


async def session_entry(q: Query, row: aiosqlite.Row) -> dict[str, Any]:
    """A session row (with ``agent_name``) and its live counters as the wire's session row."""
    sid = row["id"]
    notes = await q.fetchone("SELECT COUNT(*) AS n FROM notes WHERE runtime_session_id = ?", (sid,))
    latest = await q.fetchone(
        "SELECT author_display, created_at FROM notes WHERE runtime_session_id = ?"
        " ORDER BY created_at DESC LIMIT 1",
        (sid,),
    )
    pending = await q.fetchone(
        "SELECT COUNT(*) AS n FROM approvals WHERE session_id = ? AND status = 'pending'", (sid,)
    )
    usage = await q.fetchone(f"SELECT {USAGE_SUMS} FROM session_usage WHERE session_id = ?", (sid,))
    model = session_model(
        row,
        note_count=int(notes["n"]) if notes else 0,
        latest_note=latest,
        pending_approvals=int(pending["n"]) if pending else 0,
        usage=Usage.of(usage),
    )
    return model.model_dump(mode="json")


async def session_entries(q: Query, rows: Sequence[aiosqlite.Row]) -> list[dict[str, Any]]:
    """:func:`session_entry` for a page of rows, with the counters of all of them in four queries (not
    four per row: a page of 20 then answers in a few ms instead of ~20, which every ``sessions list``
    waits for)."""
    if not rows:
        return []
    ids = [row["id"] for row in rows]
    marks = ", ".join("?" * len(ids))
    notes = await q.fetchall(
        f"SELECT runtime_session_id AS sid, COUNT(*) AS n FROM notes WHERE runtime_session_id IN ({marks})"
        " GROUP BY runtime_session_id",
        ids,
    )
    latest = await q.fetchall(
        "SELECT sid, author_display, created_at FROM (SELECT runtime_session_id AS sid, author_display,"
        " created_at, ROW_NUMBER() OVER (PARTITION BY runtime_session_id ORDER BY created_at DESC) AS nth"
        f" FROM notes WHERE runtime_session_id IN ({marks})) WHERE nth = 1",
        ids,
    )
    pending = await q.fetchall(
        f"SELECT session_id AS sid, COUNT(*) AS n FROM approvals WHERE session_id IN ({marks})"
        " AND status = 'pending' GROUP BY session_id",
        ids,
    )
    usage = await q.fetchall(
        f"SELECT session_id AS sid, {USAGE_SUMS} FROM session_usage WHERE session_id IN ({marks})"
        " GROUP BY session_id",
        ids,
    )
    usages = {r["sid"]: Usage.of(r) for r in usage}
    note_counts = {r["sid"]: int(r["n"]) for r in notes}
    latest_notes = {r["sid"]: r for r in latest}
    pending_counts = {r["sid"]: int(r["n"]) for r in pending}
    return [
        session_model(
            row,
            note_count=note_counts.get(row["id"], 0),
            latest_note=latest_notes.get(row["id"]),
            pending_approvals=pending_counts.get(row["id"], 0),
            usage=usages.get(row["id"]),
        ).model_dump(mode="json")
        for row in rows
    ]


async def session_dict(q: Query, session_id: str) -> dict[str, Any]:
    """The session as it is now (for ``session.*`` events and responses); the id must exist."""
    row = await q.fetchone(
        "SELECT s.*, a.name AS agent_name FROM sessions s LEFT JOIN agents a ON a.id = s.agent_id"
        " WHERE s.id = ?",
        (session_id,),
    )
    assert row is not None
    return await session_entry(q, row)


async def usage_by_model(q: Query, session_id: str) -> list[dict[str, Any]]:
    """What each model the session called used (the session detail's ``usage_by_model``), most used
    first."""
    rows = await q.fetchall(
        "SELECT model, calls, input_tokens, output_tokens, total_tokens, cost_usd FROM session_usage"
        " WHERE session_id = ? ORDER BY total_tokens DESC, model",
        (session_id,),
    )
    return [
        {
            "model_alias": row["model"] or None,
            "provider_name": "local",
            "total_requests": int(row["calls"]),
            "input_tokens": int(row["input_tokens"]),
            "output_tokens": int(row["output_tokens"]),
            "total_tokens": int(row["total_tokens"]),
            "estimated_cost": row["cost_usd"],
        }
        for row in rows
    ]


async def note_dict(q: Query, note_id: str) -> dict[str, Any]:
    """The note as it is now (for ``note.*`` events and responses); the id must exist."""
    row = await q.fetchone("SELECT * FROM notes WHERE id = ?", (note_id,))
    assert row is not None
    return note_model(row).model_dump(mode="json")


async def approval_dict(q: Query, approval_id: str) -> dict[str, Any]:
    """The approval as it is now (for ``approval.*`` events and responses); the id must exist."""
    row = await q.fetchone(
        "SELECT ap.*, a.name AS agent_name, a.kind AS agent_kind, s.session_source_id"
        " FROM approvals ap LEFT JOIN agents a ON a.id = ap.agent_id"
        " LEFT JOIN sessions s ON s.id = ap.session_id WHERE ap.id = ?",
        (approval_id,),
    )
    assert row is not None
    rule_id = row["rule_id"]
    rule = await rule_of(q, rule_id) if rule_id else None
    return approval_model(row, rule).model_dump(mode="json")
