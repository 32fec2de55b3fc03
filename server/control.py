"""The control plane: one store, one event bus, and the desks that hold its rules.

Module map (imports point down only; nothing below imports this module)::

    control     ControlPlane: builds the desks, starts/stops them, runs the expiry sweep
    sessions    Sessions: mint, list, detail, activity, agent events, end
    attention   Attention: pending approvals and failed notes of every session, snapshot and stream
    approvals   Approvals: list, decide, the blocking permission check (owns the waiters)
    rules       Rules: time-boxed allow rules (make, list, revoke; the one covering a call)
    notes       Notes: create, list, cancel, claim, ack, expire
    accounts    Accounts, Operator, Runtime: tokens and who is calling
    expiry      ExpiryTimer: runs the sweep on time
    rows        shared readers: a session/note/approval as its wire dict, ownership 404s
    shapes      pure row → wire shapes
    errors      ApiError
    store, bus  SQLite (one write transaction per change, events inside it) and live fan-out

Beside it: ``app`` (HTTP routes onto the desks) and ``stream`` (the SSE body: replay, then live push).

Every state change happens in one :meth:`server.store.Store.write` transaction that also appends the
matching events, so the stream and the REST view can never disagree. The HTTP layer (``server.app``)
only parses requests, calls one desk method and serialises the result. Refusals are :class:`ApiError`
(status + Preloop's sentence), turned into ``{"detail": ...}``.
"""

from __future__ import annotations

from datetime import datetime

from server.accounts import (
    Accounts,
    Operator,
    Runtime,
    keep_token,
    mask_token,
    operator_token_file,
    read_kept_token,
)
from server.approvals import Approvals
from server.attention import Attention
from server.bus import EventBus
from server.errors import ApiError
from server.expiry import ExpiryTimer
from server.notes import Notes
from server.rows import parse_uuid
from server.rules import Rules
from server.sessions import Sessions
from server.shapes import dt
from server.store import Store, now_utc

__all__ = ["ApiError", "ControlPlane", "Operator", "Runtime", "mask_token", "parse_uuid"]


class ControlPlane:
    """All desks of the local control plane over one :class:`Store` and one :class:`EventBus`."""

    def __init__(self, store: Store, bus: EventBus, *, permission_timeout_seconds: float = 300.0) -> None:
        self.store = store
        self.bus = bus
        self.operator_token: str | None = None
        self.expiry = ExpiryTimer(self.expire_due)
        self.accounts = Accounts(store)
        self.notes = Notes(store, self.expiry)
        self.rules = Rules(store)
        self.approvals = Approvals(
            store, self.notes, self.expiry, timeout_seconds=permission_timeout_seconds, rules=self.rules
        )
        self.sessions = Sessions(store, self.notes, self.approvals)
        self.attention = Attention(store, bus, self.approvals, self.expiry)
        store.set_publisher(bus.publish)

    async def start(self) -> None:
        """Open storage, make sure the first account exists, and start the expiry timer."""
        await self.store.open()
        token_file = operator_token_file(self.store.path)
        kept = read_kept_token(token_file)
        self.operator_token = await self.accounts.bootstrap(kept)
        if self.operator_token != kept:
            keep_token(token_file, self.operator_token)
        self.expiry.start()

    def begin_shutdown(self) -> None:
        """End live streams and release blocked permission checks so the HTTP server can stop now."""
        self.bus.close_all()
        self.approvals.release_all()

    async def stop(self) -> None:
        """Release everything live, stop the timer, then close storage."""
        self.begin_shutdown()
        await self.expiry.stop()
        await self.store.close()

    async def expire_due(self) -> datetime | None:
        """The expiry sweep: expire notes and approvals whose time has come, in one write; return when
        the next one is due (the timer sleeps until then)."""
        now = now_utc()
        due_notes = await self.notes.due(now)
        due_approvals = await self.approvals.due(now)
        if due_notes or due_approvals:
            async with self.store.write() as tx:
                for note_id in due_notes:
                    await self.notes.expire(tx, note_id, now)
                for approval_id in due_approvals:
                    await self.approvals.finish(tx, approval_id, "expired", None, by=None)
        nxt = await self.store.fetchone(
            "SELECT MIN(t) AS t FROM (SELECT MIN(expires_at) AS t FROM notes WHERE state = 'pending'"
            " UNION ALL SELECT MIN(expires_at) FROM approvals WHERE status = 'pending')"
        )
        return dt(nxt["t"]) if nxt is not None else None
