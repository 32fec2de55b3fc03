"""The local server's live feed: its SSE stream, opened, read and mapped for the shared reconnect loop.

Promises (the loop in :mod:`client.streaming.reconnect` and :class:`~client.streaming.intake.SeqIntake`
keep most of them):

* every event is released exactly once and in ``seq`` order: duplicates (a replay after reconnecting)
  are dropped, and a **gap** is held back while the stream is reopened after the last contiguous seq, so
  the missing events are filled in before the held ones go out;
* a dropped connection, a 5xx or a stall (no byte, not even a keep-alive, for ``stall_timeout``)
  is a reconnect with ``Last-Event-ID``, after a jittered exponential backoff starting from the server's
  ``retry:`` when it sent one;
* 403/404 (any 4xx but 401/408/425/429) stop it with ``Refused``; a 401 (the token expired or was
  revoked) waits with ``LoginNeeded`` and retries, each attempt reading the token again;
* a frame that cannot be decoded is skipped and counted (``Skipped``); its seq still counts as seen;
* ``tail=N`` (on a first open only) asks for the newest N stored events; the ``Preloop-Replay-After``
  header says where they start, so what came before is not mistaken for a gap;
* it stops after ``session.ended`` with ``Ended``, or when the server closes the stream with nothing new
  and REST says the session has ended (resuming at the end of an ended session).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import httpx

from client.backends.rest import API_PREFIX
from client.errors import ClientError
from client.events import Event
from client.ids import short_id
from client.status import Ended, Live, StreamStatus
from client.streaming.intake import SeqIntake
from client.streaming.policy import refuses
from client.streaming.reconnect import Link, Refusal, Retry, reconnecting
from client.streaming.sse import SSEDecoder

if TYPE_CHECKING:
    from client.backends.rest import PreloopRestApi

__all__ = ["REPLAY_AFTER_HEADER", "events_path", "follow_sse"]

#: The stream's answer to ``?tail=N``: the seq just before the first replayed event (docs/protocol.md).
REPLAY_AFTER_HEADER = "Preloop-Replay-After"


def events_path(session_id: str) -> str:
    """URL path of a session's SSE stream."""
    return f"{API_PREFIX}/runtime-sessions/{session_id}/events"


async def _session_over(api: PreloopRestApi, session_id: str) -> bool:
    """Ask REST whether the session has ended (a stream that closes cleanly with nothing new may mean so)."""
    try:
        return (await api.get_session(session_id)).ended
    except ClientError:
        return False


def follow_sse(
    api: PreloopRestApi, session_id: str, *, after: int = 0, tail: int | None = None
) -> AsyncGenerator[Event | StreamStatus, None]:
    """Follow one session's SSE stream (see the module docstring for the promises); ``tail`` asks for
    only the newest ``tail`` stored events when starting from the beginning (``after`` 0)."""
    conn = api.conn
    intake = SeqIntake(after)

    async def connect(link: Link) -> AsyncGenerator[Event | StreamStatus, None]:
        cursor = intake.cursor
        headers = {"Last-Event-ID": str(cursor)} if cursor > 0 else {}
        params: dict[str, int] | None = {"after": cursor} if cursor > 0 else None
        if cursor == 0 and tail is not None:
            params = {"tail": tail}
        async with conn.event_source(events_path(session_id), headers=headers, params=params) as source:
            response = source.response
            status = response.status_code
            if refuses(status):
                await response.aread()
                raise Refusal(conn.api_error(response, f"session {short_id(session_id)}").hint, status)
            if status >= 400:
                await response.aread()
                raise Retry(f"the server answered {status}")
            ctype = response.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                raise Retry(f"the server sent {ctype or 'no content type'}, not an event stream")
            if params is not None and "tail" in params:
                # Where the server's tail starts: events before it were left out on purpose, not lost.
                with contextlib.suppress(ValueError):
                    intake.start_after(int(response.headers.get(REPLAY_AFTER_HEADER, "0")))
            yield Live(intake.cursor)
            decoder = SSEDecoder()
            chunks = response.aiter_bytes().__aiter__()
            released_here = 0
            while True:
                try:
                    async with asyncio.timeout(conn.stall_timeout):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    if not released_here and await _session_over(api, session_id):
                        # e.g. resuming at or past the end of an ended session: nothing more will come
                        yield Ended(intake.cursor)
                        return
                    raise Retry("the server closed the stream") from None
                except TimeoutError:
                    raise Retry(f"stalled: nothing received for {conn.stall_timeout:g} s") from None
                link.alive()  # bytes flow again: the next drop starts the backoff afresh
                frames = decoder.feed(chunk)
                if decoder.retry_ms is not None:
                    link.retry_hint = decoder.retry_ms / 1000
                released_here += len(frames)
                for item in intake.frames(frames):
                    yield item
                if not intake.ended:
                    for item in intake.check_gap():
                        yield item
                if intake.ended:
                    yield Ended(intake.cursor)
                    return

    def classify(exc: Exception) -> str | None:
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return f"cannot reach {conn.display_url}"
        if isinstance(exc, httpx.TimeoutException):
            return f"stalled: nothing received for {conn.stall_timeout:g} s"
        if isinstance(exc, httpx.TransportError):
            return f"connection lost ({type(exc).__name__})"
        return None

    return reconnecting(
        connect, backoff_initial=conn.backoff_initial, backoff_max=conn.backoff_max, classify=classify
    )
