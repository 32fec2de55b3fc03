"""SQLite storage for the local control plane (aiosqlite alone; see docs/storage.md for why).

Two connections to one WAL database:

* the *writer*, used only inside :meth:`Store.write`, which holds an ``asyncio.Lock`` and runs one
  ``BEGIN IMMEDIATE`` transaction at a time. Per-session event sequence numbers are assigned inside that
  transaction (``sessions.last_seq``), so a seq is never skipped or reused, even across restarts;
* the *reader*, for queries; under WAL it sees the last committed state and never blocks the writer.

Events written in a transaction are handed to the in-process bus only after the commit, in seq order, so a
live subscriber never sees an event that storage does not have.

The schema carries a version (``schema_version``); :data:`MIGRATIONS` upgrades an older file step by
step on open, and a file newer than this code is refused rather than guessed at.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from client.events import Event, event_from_dict, event_to_json

SCHEMA_VERSION = 5

_SCHEMA_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE users (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), display TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE tokens (
    token_hash TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('operator', 'runtime')),
    account_id TEXT NOT NULL REFERENCES accounts(id), user_id TEXT, session_id TEXT, api_key_id TEXT NOT NULL,
    created_at TEXT NOT NULL, expires_at TEXT
);
CREATE TABLE agents (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id), name TEXT NOT NULL,
    kind TEXT, created_at TEXT NOT NULL, UNIQUE (account_id, name)
);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id),
    agent_id TEXT REFERENCES agents(id), api_key_id TEXT,
    session_source_type TEXT, session_source_id TEXT, session_reference TEXT, runtime_principal_name TEXT,
    agent_kind TEXT, title TEXT, cwd TEXT, parent_session_id TEXT, flow_execution_id TEXT,
    started_at TEXT NOT NULL, last_activity_at TEXT NOT NULL, ended_at TEXT, end_reason TEXT,
    last_seq INTEGER NOT NULL DEFAULT 0, tool_call_count INTEGER NOT NULL DEFAULT 0,
    total_requests INTEGER NOT NULL DEFAULT 0, last_request_at TEXT
);
CREATE INDEX sessions_by_account ON sessions (account_id, last_activity_at);
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions(id), seq INTEGER NOT NULL, type TEXT NOT NULL,
    at TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_type ON events (session_id, type);
CREATE TABLE notes (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id),
    author_user_id TEXT NOT NULL, author_display TEXT NOT NULL, correlation_id TEXT,
    text TEXT NOT NULL, state TEXT NOT NULL,
    runtime_session_id TEXT, managed_agent_id TEXT, execution_id TEXT, delivered_session_id TEXT,
    created_at TEXT NOT NULL, expires_at TEXT NOT NULL, claimed_at TEXT, expired_at TEXT,
    undeliverable_at TEXT, undeliverable_reason TEXT, delivered_at TEXT, delivery_channel TEXT,
    delivery_event TEXT, delivered_turn_index INTEGER, cancelled_at TEXT
);
CREATE INDEX notes_by_session ON notes (runtime_session_id, state, created_at);
CREATE INDEX notes_by_agent ON notes (managed_agent_id, state, created_at);
CREATE INDEX notes_by_expiry ON notes (state, expires_at);
CREATE UNIQUE INDEX notes_by_correlation ON notes (author_user_id, correlation_id)
    WHERE correlation_id IS NOT NULL;
CREATE TABLE approvals (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id),
    session_id TEXT NOT NULL REFERENCES sessions(id), agent_id TEXT, api_key_id TEXT,
    tool_name TEXT NOT NULL, tool_args TEXT NOT NULL, agent_reasoning TEXT, summary TEXT,
    status TEXT NOT NULL, requested_at TEXT NOT NULL, resolved_at TEXT, expires_at TEXT NOT NULL,
    approver_comment TEXT, decided_by_human INTEGER NOT NULL DEFAULT 0, risk_level TEXT
);
CREATE INDEX approvals_by_account ON approvals (account_id, status, requested_at);
"""

_SCHEMA_V2 = """
CREATE TABLE event_batches (
    session_id TEXT NOT NULL REFERENCES sessions(id), batch_id TEXT NOT NULL,
    accepted INTEGER NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
    created_at TEXT NOT NULL, PRIMARY KEY (session_id, batch_id)
) WITHOUT ROWID;
"""

_SCHEMA_V3 = """
CREATE INDEX events_by_time ON events (session_id, at);
"""

_SCHEMA_V4 = """
CREATE TABLE allow_rules (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id),
    created_by_user_id TEXT NOT NULL, created_by_display TEXT NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('allow', 'mute')),
    scope TEXT NOT NULL CHECK (scope IN ('session', 'agent', 'account')),
    session_id TEXT, agent_id TEXT, tool_name TEXT, pattern TEXT, danger INTEGER NOT NULL DEFAULT 0,
    reason TEXT, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, revoked_at TEXT,
    revoked_by_display TEXT, allowed_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX allow_rules_by_account ON allow_rules (account_id, expires_at);
ALTER TABLE approvals ADD COLUMN rule_id TEXT;
"""
"""Time-boxed allow rules (``server.rules``: who made each, its scope, pattern and expiry), and on each
approval the rule that decided or muted it."""

_SCHEMA_V5 = """
ALTER TABLE approvals ADD COLUMN rule_name TEXT;
ALTER TABLE approvals ADD COLUMN decided_by_user_id TEXT;
ALTER TABLE approvals ADD COLUMN decided_by_display TEXT;
CREATE UNIQUE INDEX users_by_name ON users (account_id, display);
CREATE TABLE session_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id), model TEXT NOT NULL, calls INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, total_tokens INTEGER NOT NULL,
    cost_usd REAL, PRIMARY KEY (session_id, model)
) WITHOUT ROWID;
"""
"""Named operators (who decided an approval, by user), the rule that asked for it, and what each session's
model calls used (per model; ``cost_usd`` NULL while no call of that model reported a cost)."""

MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3, 4: _SCHEMA_V4, 5: _SCHEMA_V5}
"""``version -> SQL`` that takes a database from ``version - 1`` to ``version``. Append, never edit."""


class SchemaTooNewError(RuntimeError):
    """The database was written by a newer version of this program; refuse instead of corrupting it."""


def now_utc() -> datetime:
    """The one clock of the server (UTC, zone-aware)."""
    return datetime.now(UTC)


def ts(value: datetime) -> str:
    """Fixed-width UTC text, so stored timestamps sort as strings."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def parse_ts(value: str | None) -> datetime | None:
    """Inverse of :func:`ts`."""
    return None if value is None else datetime.fromisoformat(value)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored: ``data`` is the exact JSON sent on the wire."""

    session_id: str
    seq: int
    type: str
    data: str


Publisher = Callable[[Sequence[StoredEvent]], None]


class _Reads:
    """``fetchone`` / ``fetchall`` over one connection: what the store's reader and a write transaction
    both offer, so the same query code runs on committed state or inside a write."""

    def _connection(self) -> aiosqlite.Connection:
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> aiosqlite.Row | None:
        """First row or None."""
        async with self._connection().execute(sql, params) as cur:
            return await cur.fetchone()

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[aiosqlite.Row]:
        """All rows."""
        async with self._connection().execute(sql, params) as cur:
            return list(await cur.fetchall())


@dataclass
class WriteTx(_Reads):
    """One write transaction. :meth:`emit` appends an event with the session's next seq."""

    conn: aiosqlite.Connection
    published: list[StoredEvent] = field(default_factory=list)
    _after_commit: list[Callable[[], None]] = field(default_factory=list)

    async def emit(self, session_id: str, type_: str, **fields: Any) -> Event:
        """Store an event for ``session_id`` with the next seq; it is published after the commit."""
        async with self.conn.execute(
            "UPDATE sessions SET last_seq = last_seq + 1, last_activity_at = ? WHERE id = ?"
            " RETURNING last_seq",
            (ts(now_utc()), session_id),
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            raise KeyError(session_id)
        seq = int(row[0])
        at = now_utc()
        event = event_from_dict({**fields, "seq": seq, "type": type_, "session_id": session_id, "at": at})
        data = event_to_json(event)
        await self.conn.execute(
            "INSERT INTO events (session_id, seq, type, at, data) VALUES (?, ?, ?, ?, ?)",
            (session_id, seq, type_, ts(at), data),
        )
        self.published.append(StoredEvent(session_id, seq, type_, data))
        return event

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the transaction is committed (wake a waiter, reschedule a timer)."""
        self._after_commit.append(callback)

    def _connection(self) -> aiosqlite.Connection:
        return self.conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows changed."""
        async with self.conn.execute(sql, params) as cur:
            return cur.rowcount


class Store(_Reads):
    """The database file: open (creating or upgrading it), serialized writes, concurrent reads."""

    def __init__(self, path: Path, publisher: Publisher | None = None) -> None:
        self.path = path
        self._publisher = publisher
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    def set_publisher(self, publisher: Publisher) -> None:
        """Where committed events go (the bus); set once at start."""
        self._publisher = publisher

    async def open(self) -> None:
        """Open the file (0600 when new), switch to WAL, and bring the schema up to date."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        self._writer = await aiosqlite.connect(self.path, isolation_level=None)
        self._writer.row_factory = aiosqlite.Row
        await self._writer.execute("PRAGMA journal_mode=WAL")
        await self._writer.execute("PRAGMA synchronous=NORMAL")
        await self._writer.execute("PRAGMA foreign_keys=ON")
        await self._writer.execute("PRAGMA busy_timeout=5000")
        # Deleted or overwritten content is zeroed, not left in free space, so a secret removed from the
        # file (see :meth:`erase`) cannot be read back from it. Rows are rarely deleted: it costs nothing.
        await self._writer.execute("PRAGMA secure_delete=ON")
        await self._upgrade(self._writer)
        self._reader = await aiosqlite.connect(self.path, isolation_level=None)
        self._reader.row_factory = aiosqlite.Row
        await self._reader.execute("PRAGMA busy_timeout=5000")

    async def _upgrade(self, conn: aiosqlite.Connection) -> None:
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        async with conn.execute("SELECT MAX(version) FROM schema_version") as cur:
            row = await cur.fetchone()
        current = int(row[0]) if row is not None and row[0] is not None else 0
        if current > SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"{self.path} has schema version {current}; this program knows up to {SCHEMA_VERSION}"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            await conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _split_sql(MIGRATIONS[version]):
                    await conn.execute(statement)
                await conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise

    async def schema_version(self) -> int:
        """The version recorded in the file."""
        row = await self.fetchone("SELECT MAX(version) FROM schema_version")
        return int(row[0]) if row is not None and row[0] is not None else 0

    async def close(self) -> None:
        """Close both connections."""
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    @asynccontextmanager
    async def write(self) -> AsyncIterator[WriteTx]:
        """One serialized write transaction; events it emits are published after the commit."""
        async with self._lock:
            conn = self._writer
            if conn is None:
                raise RuntimeError("store is closed")
            tx = WriteTx(conn)
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield tx
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")
            if tx.published and self._publisher is not None:
                self._publisher(tx.published)
            for callback in tx._after_commit:
                callback()

    async def erase(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Delete something secret so that no copy is left in the file or its WAL: the write (with
        ``secure_delete`` on, the old bytes are zeroed), then a checkpoint that truncates the WAL."""
        async with self.write() as tx:
            await tx.execute(sql, params)
        async with self._lock:
            if self._writer is not None:
                await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @property
    def reader(self) -> aiosqlite.Connection:
        """The read-only connection (committed state under WAL)."""
        if self._reader is None:
            raise RuntimeError("store is closed")
        return self._reader

    def _connection(self) -> aiosqlite.Connection:
        return self.reader

    async def events_after(self, session_id: str, after: int, limit: int = 500) -> list[StoredEvent]:
        """Stored events with ``seq > after``, oldest first: the replay half of a resume."""
        rows = await self.fetchall(
            "SELECT seq, type, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, after, limit),
        )
        return [StoredEvent(session_id, int(r["seq"]), str(r["type"]), str(r["data"])) for r in rows]

    async def seq_before_time(self, session_id: str, at: datetime) -> int | None:
        """The seq just before the session's first event stored at or after ``at`` (what ``?since=``
        replays after), or None when no event is that recent. One index seek (``events_by_time``),
        however long the session: a digest of the last half hour of a 100,000-event session reads that
        half hour only."""
        row = await self.fetchone(
            "SELECT seq FROM events WHERE session_id = ? AND at >= ? ORDER BY at, seq LIMIT 1",
            (session_id, ts(at)),
        )
        return None if row is None else int(row["seq"]) - 1


def _split_sql(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON for stored values."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
