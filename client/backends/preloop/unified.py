"""The inbox on a Preloop server, live: approvals pushed over the account-wide websocket, polling beside it.

Preloop 0.17.1 broadcasts every approval's life on its unified websocket (``/api/v1/ws/unified``, header
auth, a ``handshake`` frame first): flat frames ``approval_created``, ``approval_approved``,
``approval_declined``, ``approval_expired``, ``approval_vote_received`` (quorum counts) and
``approval_escalated`` (``new_expires_at``), with the request's redacted arguments, agent, session, status
and times, but neither its risk level nor who decided (``services/approval_service.py``,
``_broadcast_approval_update``; ``captures/ws_unified_account.json``). :func:`watch` merges that socket
with the attention poll (:func:`client.backends.attention.poll_attention`, which stays as it was: the
fallback, and the only source of failed notes):

* ``approval_created``: the session's pending list is read at once (one request; the list, unlike the
  approval's detail, does not mark it viewed), so the new row arrives whole, risk level included, well
  under a second after the server created it (``benchmarks/bench_preloop_push.py``); if that read fails
  the frame's own fields go out, and the next poll completes them;
* ``approval_vote_received`` / ``approval_escalated``: the approval as last known, with its votes or its
  new deadline, goes out as ``approval.requested`` again, which the inbox takes as an update in place;
* ``approval_approved`` / ``declined`` / ``expired``: ``approval.decided`` at once, with its final
  record read the same way (the frame has no comment and names no decider; an approval a bypass
  approved is announced approved only: it never waited, and its record names the bypass);
* each frame nudges the backend's followers of that session (``PreloopBackend.nudge``), so an attached
  session's card shows the approval without waiting for its own poll;
* a poll snapshot taken before a pushed approval existed would drop it again: an approval pushed less
  than :data:`GRACE` poll intervals ago is kept in a snapshot that lacks it (the next one decides).

The socket reconnects with the shared loop (``client.streaming.reconnect``) and its connection states are
not the inbox's (the poll's are): while it is down the inbox is as fresh as polling makes it. A token the
socket does not accept (Preloop then answers ``authenticated: false`` and sends nothing of the account) is
waited out like any refused token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import ClientConnection, connect

from client.backends.attention import AttentionItem, poll_attention
from client.backends.preloop.feed import PreloopTiming, classify_failure, ws_url
from client.backends.wire import as_int, as_str, parse_time
from client.errors import ClientError
from client.events import ApprovalDecided, ApprovalRequested
from client.models import Approval, ApprovalVotes, AttentionSnapshot
from client.status import Live, StreamStatus
from client.streaming.reconnect import Link, Refusal, reconnecting

if TYPE_CHECKING:
    from client.backends.preloop import PreloopBackend

__all__ = ["APPROVAL_FRAMES", "GRACE", "approval_of_frame", "watch"]

APPROVAL_FRAMES = frozenset(
    {
        "approval_created",
        "approval_approved",
        "approval_declined",
        "approval_expired",
        "approval_vote_received",
        "approval_escalated",
    }
)
GRACE = 2.0
"""A pushed approval missing from a poll snapshot stays this many poll intervals (plus a second)."""

_FRAME_FIELDS = (
    "tool_name",
    "tool_args",
    "agent_reasoning",
    "summary",
    "execution_id",
    "account_id",
    "status",
    "managed_agent_id",
    "managed_agent_name",
    "runtime_session_id",
)
_FRAME_TIMES = ("requested_at", "resolved_at", "expires_at")
_WHOLE = frozenset({"approval_created", "approval_approved", "approval_declined", "approval_expired"})
"""Frames after which the approval's REST row is read: the frame lacks its risk level, comment, ..."""


def approval_of_frame(frame: Mapping[str, Any], known: Approval | None) -> Approval | None:
    """One approval frame as the approval it tells of: the frame's fields over what was known of it (the
    risk level and whatever else only the REST row carries); None for a frame that names no approval."""
    approval_id = as_str(frame.get("approval_request_id"))
    if approval_id is None:
        return None
    fields: dict[str, Any] = known.model_dump() if known is not None else {}
    fields["id"] = approval_id
    for key in _FRAME_FIELDS:
        if frame.get(key) is not None:
            fields[key] = frame[key]
    for key in _FRAME_TIMES:
        when = parse_time(frame.get(key))
        if when is not None:
            fields[key] = when
    kind = frame.get("type")
    if kind == "approval_vote_received":
        before = known.votes if known is not None else None
        fields["votes"] = ApprovalVotes(
            approvals=as_int(frame.get("approval_count")) or (before.approvals if before else 0),
            declines=as_int(frame.get("decline_count")) or (before.declines if before else 0),
            required=as_int(frame.get("approvals_required")) or (before.required if before else 1),
        )
    elif kind == "approval_escalated":
        deadline = parse_time(frame.get("new_expires_at"))
        if deadline is not None:
            fields["expires_at"] = deadline
        fields["escalated_at"] = parse_time(frame.get("timestamp")) or datetime.now(UTC)
    elif kind in ("approval_approved", "approval_declined", "approval_expired"):
        fields["status"] = str(kind).removeprefix("approval_")
    try:
        return Approval.model_validate(fields)
    except ValueError:
        return None


async def _unified_frames(
    backend: PreloopBackend, timing: PreloopTiming
) -> AsyncGenerator[dict[str, Any] | StreamStatus, None]:
    """The account-wide socket's approval frames, reconnecting for ever (its states are yielded too)."""
    conn = backend.conn

    async def connect_once(link: Link) -> AsyncGenerator[dict[str, Any] | StreamStatus, None]:
        if link.token_refused:  # the upgrade is not an httpx request: read the token again here
            await conn.reread_token(conn.token)
        async with connect(
            ws_url(conn.base_url, "unified"),
            additional_headers=dict(conn.auth_headers()),
            open_timeout=timing.attach_timeout,
            ping_interval=None,  # Preloop's own {"type": "ping"} keeps it alive
            close_timeout=timing.close_timeout,
            max_size=2**22,
        ) as ws:
            hello = json.loads(await asyncio.wait_for(ws.recv(), timing.attach_timeout))
            if not isinstance(hello, dict) or hello.get("type") != "handshake":
                raise ValueError("the unified socket did not start with a handshake")
            if hello.get("authenticated") is not True:  # anonymous: nothing of the account would come
                raise Refusal("the live channel did not accept the token", 4401)
            link.alive()
            yield Live(0)
            async for frame in _read(ws, timing):
                yield frame

    async with aclosing(
        reconnecting(
            connect_once,
            backoff_initial=timing.backoff_initial,
            backoff_max=timing.backoff_max,
            classify=classify_failure,
        )
    ) as items:
        async for item in items:
            yield item


async def _read(ws: ClientConnection, timing: PreloopTiming) -> AsyncGenerator[dict[str, Any], None]:
    """Approval frames as they come; a ping every ``ping_interval``, and ``dead_after`` of silence is a
    dead connection (raised, so the loop reconnects)."""
    loop = asyncio.get_running_loop()
    last = ping_due = loop.time()
    ping_due += timing.ping_interval
    while True:
        now = loop.time()
        wait = max(0.0, min(ping_due, last + timing.dead_after) - now)
        try:
            raw = await asyncio.wait_for(ws.recv(), wait)
        except TimeoutError:
            now = loop.time()
            if now >= last + timing.dead_after:
                raise TimeoutError(f"no message for {timing.dead_after:g} s") from None
            await ws.send(json.dumps({"type": "ping"}))
            ping_due = now + timing.ping_interval
            continue
        last = loop.time()
        with contextlib.suppress(ValueError):
            frame = json.loads(raw)
            if isinstance(frame, dict) and frame.get("type") in APPROVAL_FRAMES:
                yield frame


class _Merge:
    """What the merged feed remembers: the approvals as last known, and which were pushed when."""

    def __init__(self, interval: float) -> None:
        self.known: dict[str, Approval] = {}
        self.pushed: dict[str, tuple[Approval, float]] = {}
        self.grace = GRACE * interval + 1.0

    def snapshot(self, snap: AttentionSnapshot) -> AttentionSnapshot:
        """A poll's snapshot, with the approvals pushed since that poll may have begun kept in it."""
        now = time.monotonic()
        ids = {a.id for a in snap.approvals}
        kept = [a for i, (a, at) in self.pushed.items() if i not in ids and now - at < self.grace]
        self.pushed = {i: p for i, p in self.pushed.items() if i not in ids and now - p[1] < self.grace}
        approvals = [*snap.approvals, *kept]
        self.known = {a.id: a for a in approvals if a.pending}
        return snap.model_copy(update={"approvals": approvals}) if kept else snap

    def seen(self, approval: Approval) -> None:
        if approval.pending:
            self.known[approval.id] = approval
            self.pushed[approval.id] = (approval, time.monotonic())
        else:
            self.known.pop(approval.id, None)
            self.pushed.pop(approval.id, None)


async def _whole_row(backend: PreloopBackend, approval: Approval) -> Approval:
    """The approval's REST row (a new one's risk level, a decided one's comment and decider flags), as
    its session's list of approvals in that status has it (the list, unlike the detail, does not mark
    the approval viewed); the pushed fields when it cannot be read."""
    with contextlib.suppress(ClientError, ValueError):
        page = await backend.list_approvals(session_id=approval.runtime_session_id, status=approval.status)
        for row in page.items:
            if row.id == approval.id:
                return backend.with_bypass(row)
    return approval


async def watch(
    backend: PreloopBackend,
    notes_window: timedelta,
    *,
    poll_interval: float = 3.0,
    timing: PreloopTiming | None = None,
) -> AsyncGenerator[AttentionItem, None]:
    """The attention feed of a Preloop server: the poll's snapshots and states, and the unified socket's
    approvals as events between them (see the module docstring)."""
    timing = timing or PreloopTiming(
        backoff_initial=backend.conn.backoff_initial, backoff_max=backend.conn.backoff_max
    )
    queue: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
    done = object()

    async def pump(tag: str, source: AsyncGenerator[Any, None]) -> None:
        try:
            async with aclosing(source) as items:
                async for item in items:
                    await queue.put((tag, item))
        except Exception as exc:  # handed to the reader, which raises it where the feed is read
            await queue.put((tag, exc))
            return
        await queue.put((tag, done))

    merge = _Merge(poll_interval)
    tasks = [
        asyncio.create_task(pump("poll", poll_attention(backend, notes_window, interval=poll_interval))),
        asyncio.create_task(pump("push", _unified_frames(backend, timing))),
    ]
    try:
        while True:
            tag, item = await queue.get()
            if tag == "poll":
                if item is done:
                    return  # refused: the feed ends as polling alone would
                if isinstance(item, Exception):
                    raise item
                yield merge.snapshot(item) if isinstance(item, AttentionSnapshot) else item  # type: ignore[misc]
                continue
            if not isinstance(item, dict):  # the socket's own states, its end, or its failure
                continue
            approval = approval_of_frame(item, merge.known.get(str(item.get("approval_request_id"))))
            if approval is None:
                continue
            if item.get("type") in _WHOLE:
                approval = await _whole_row(backend, approval)
            merge.seen(approval)
            session_id = approval.runtime_session_id or ""
            at = parse_time(item.get("timestamp")) or datetime.now(UTC)
            if approval.pending:
                yield ApprovalRequested(seq=0, session_id=session_id, at=at, approval=approval)
            else:
                yield ApprovalDecided(seq=0, session_id=session_id, at=at, approval=approval)
            if session_id:
                backend.nudge(session_id)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
