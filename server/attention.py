"""Attention: what waits for a human across all of an account's sessions, as a snapshot and a live stream.

``GET /api/v1/attention`` answers an :class:`client.models.AttentionSnapshot` (every pending approval,
oldest first, and the notes that ended expired, failed or undeliverable in a recent window);
``GET /api/v1/attention/events`` is an SSE stream that starts with that snapshot and then pushes the
session events that change it (:data:`ATTENTION_TYPES`), exactly as the sessions' own streams carry them.

Order matters as in :mod:`server.stream`: subscribe to the bus first, then read the snapshot, then drain
the live queue. An event that was already in the snapshot is harmless to apply twice (the client keys
everything by id), and nothing can fall between the snapshot and the first live event. A listener too
slow for its queue gets a fresh snapshot instead of losing events. There is no ``id:`` and no resume
point: a reconnecting client gets a new snapshot, which is cheaper than replaying every session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

from client.models import Approval, AttentionSnapshot
from server.accounts import Operator
from server.approvals import Approvals
from server.bus import EventBus, Subscription
from server.expiry import ExpiryTimer
from server.shapes import note_model
from server.store import Store, StoredEvent, now_utc, ts
from server.stream import SSE_RETRY_MS

ATTENTION_TYPES = frozenset(
    {"approval.requested", "approval.decided", "note.expired", "note.failed", "note.undeliverable"}
)
"""The session events that change what needs attention; the stream forwards only these."""

ENDED_BADLY = ("expired", "failed", "undeliverable")
"""Note states an operator should hear about: the note never reached the agent."""

DEFAULT_NOTES_WINDOW = timedelta(hours=6)
MAX_APPROVALS = 500
MAX_NOTES = 200


class Attention:
    """The attention desk: snapshot and stream of one operator's account."""

    def __init__(self, store: Store, bus: EventBus, approvals: Approvals, expiry: ExpiryTimer) -> None:
        self.store = store
        self.bus = bus
        self.approvals = approvals
        self.expiry = expiry

    async def snapshot(
        self, op: Operator, notes_window: timedelta = DEFAULT_NOTES_WINDOW
    ) -> AttentionSnapshot:
        """Pending approvals (oldest first) and recently failed notes (newest first), expired first if due."""
        await self.expiry.expire_due()
        now = now_utc()
        since = now - notes_window
        items, _ = await self.approvals.list_approvals(
            op, status="pending", runtime_session_id=None, limit=MAX_APPROVALS, skip=0
        )
        approvals = [Approval.model_validate(item) for item in reversed(items)]
        ended_at = "COALESCE(undeliverable_at, expired_at, created_at)"
        rows = await self.store.fetchall(
            f"SELECT * FROM notes WHERE account_id = ? AND state IN (?, ?, ?) AND {ended_at} >= ?"
            f" ORDER BY {ended_at} DESC, id LIMIT ?",
            (op.account_id, *ENDED_BADLY, ts(since), MAX_NOTES),
        )
        notes = [note_model(r) for r in rows]
        return AttentionSnapshot(at=now, notes_since=since, approvals=approvals, notes=notes)

    async def stream(self, op: Operator, notes_window: timedelta, keepalive: float) -> AsyncIterator[str]:
        """The SSE body: a snapshot, then live attention events of this account, keepalives in silence."""
        owners: dict[str, bool] = {}

        async def mine(event: StoredEvent) -> bool:
            known = owners.get(event.session_id)
            if known is None:
                row = await self.store.fetchone(
                    "SELECT account_id FROM sessions WHERE id = ?", (event.session_id,)
                )
                known = owners[event.session_id] = row is not None and row["account_id"] == op.account_id
            return known

        sub: Subscription = self.bus.subscribe_all(ATTENTION_TYPES)
        try:
            yield f"retry: {SSE_RETRY_MS}\n\n"
            while True:
                snap = await self.snapshot(op, notes_window)
                yield f"event: attention.snapshot\ndata: {snap.model_dump_json()}\n\n"
                while True:
                    live = await sub.get(keepalive)
                    if live is None:
                        yield ": keepalive\n\n"
                        continue
                    if Subscription.is_close(live):
                        return
                    if Subscription.is_lagged(live):
                        break
                    if await mine(live):
                        yield f"event: {live.type}\ndata: {live.data}\n\n"
                # lagged: start over from a fresh snapshot rather than lose what overflowed
                sub.unsubscribe()
                sub = self.bus.subscribe_all(ATTENTION_TYPES)
        finally:
            sub.unsubscribe()


def window_of(minutes: int | None) -> timedelta:
    """The notes window a request asked for (``notes_since_minutes``), or the default."""
    return DEFAULT_NOTES_WINDOW if minutes is None else timedelta(minutes=minutes)
