"""Our local server's attention feed: ``GET /api/v1/attention/events`` (docs/protocol.md), for the inbox.

Opened and parsed by httpx-sse like every SSE stream (``Connection.event_source``) and run by the one
reconnect loop (:func:`client.streaming.reconnect.reconnecting`): a snapshot first, then the approval and
failed-note events of every session as they are committed. A dropped connection, a 5xx or a stall is a
reconnect after a jittered backoff, and every (re)connection starts with a fresh snapshot; an approval that
left the pending list while away goes out with its final record first
(:func:`client.backends.attention.settled`), so nothing that happened meanwhile is lost or stale. A
refusing answer (403, ...) stops it (``Refused``), a 401 waits for a token the server accepts
(``LoginNeeded``); a server without the endpoint (404) is polled instead
(:func:`client.backends.attention.poll_attention`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import ValidationError

from client.backends.attention import AttentionItem, poll_attention, settled, window_minutes
from client.backends.base import API_PREFIX
from client.events import ApprovalDecided, ApprovalRequested, EventDecodeError
from client.models import Approval, AttentionSnapshot
from client.status import Live, Refused, Skipped
from client.streaming.decode import decode_frame
from client.streaming.reconnect import Link, Refusal, Retry, reconnecting

if TYPE_CHECKING:
    from client.backends.local import LocalBackend

__all__ = ["SNAPSHOT_EVENT", "follow_attention"]

SNAPSHOT_EVENT = "attention.snapshot"


async def follow_attention(
    api: LocalBackend, notes_window: timedelta, *, poll_interval: float = 3.0
) -> AsyncGenerator[AttentionItem, None]:
    """The local server's attention stream, reconnecting for ever (see the module docstring)."""
    conn = api.conn
    skipped = 0
    no_feed = False

    async def connect(link: Link) -> AsyncGenerator[AttentionItem, None]:
        nonlocal skipped, no_feed
        params = {"notes_since_minutes": window_minutes(notes_window)}
        path = f"{API_PREFIX}/attention/events"
        try:
            async with conn.event_source(path, what="the attention feed", params=params) as source:
                yield Live(0)
                async with aclosing(source.aiter_sse()) as frames:
                    async for frame in frames:
                        link.alive()
                        if frame.retry:
                            link.retry_hint = frame.retry / 1000
                        if not frame.data:
                            continue  # a keep-alive, a lone retry: line
                        try:
                            if frame.event == SNAPSHOT_EVENT:
                                yield AttentionSnapshot.model_validate_json(frame.data)
                            else:
                                yield decode_frame(frame)
                        except (EventDecodeError, ValidationError):
                            skipped += 1
                            reason = f"unreadable {frame.event or 'frame'}: not what this client can read"
                            yield Skipped(reason, skipped)
        except Refusal as refusal:
            if refusal.status == 404:  # a server from before the attention feed: poll it like any other
                no_feed = True
            raise
        raise Retry("the server closed the attention stream")

    feed: AsyncGenerator[AttentionItem, None] = reconnecting(
        connect,
        backoff_initial=conn.backoff_initial,
        backoff_max=conn.backoff_max,
        classify=conn.stream_failure,
    )
    known: dict[str, Approval] | None = None  # pending as last seen, across reconnections
    async with aclosing(feed) as items:
        async for item in items:
            if isinstance(item, Refused) and no_feed:
                break
            if isinstance(item, AttentionSnapshot):
                # A reconnection starts with a fresh snapshot: what was decided while away is fetched.
                fresh = {a.id: a for a in item.approvals if a.pending}
                if known is not None:
                    for decided in await settled(api, [a for i, a in known.items() if i not in fresh]):
                        yield decided
                known = fresh
            elif known is not None and isinstance(item, ApprovalRequested | ApprovalDecided):
                if item.approval.pending:
                    known[item.approval.id] = item.approval
                else:
                    known.pop(item.approval.id, None)
            yield item
    if no_feed:
        async with aclosing(poll_attention(api, notes_window, interval=poll_interval)) as polled:
            async for item in polled:
                yield item
