"""The local server's live feed: its SSE stream, opened, read and mapped for the shared reconnect loop.

Promises (the loop in :mod:`client.streaming.reconnect` and :class:`~client.streaming.intake.SeqIntake`
keep most of them):

* every event is released exactly once and in ``seq`` order: duplicates (a replay after reconnecting)
  are dropped, and a **gap** is held back while the stream is reopened after the last contiguous seq, so
  the missing events are filled in before the held ones go out;
* the stream is opened and parsed by httpx-sse (:meth:`client.connection.Connection.event_source`,
  ``EventSource.aiter_sse``), and each event is validated as it comes;
* a dropped connection, a 5xx or a stall (no byte, not even a keep-alive, for ``stall_timeout``: the
  stream's read timeout) is a reconnect with ``Last-Event-ID``, after a jittered exponential backoff
  starting from the server's ``retry:`` when it sent one;
* 403/404 (any 4xx but 401/408/425/429) stop it with ``Refused``; a 401 (the token expired or was
  revoked) waits with ``LoginNeeded`` and retries, each attempt reading the token again;
* a frame that cannot be decoded is skipped and counted (``Skipped``); its seq still counts as seen;
* ``tail=N`` (on a first open only) asks for the newest N stored events; the ``Preloop-Replay-After``
  header says where they start, so what came before is not mistaken for a gap; each open's ``Live`` says
  where what is stored ends (``Preloop-Stored-Through``): the replay up to there is a backlog;
* it stops after ``session.ended`` with ``Ended``, or when the server closes the stream with nothing new
  and REST says the session has ended (resuming at the end of an ended session).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing, suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any

from client.backends.rest import API_PREFIX
from client.errors import ClientError, ConnectionLost, error_for_status
from client.events import Event, EventDecodeError, parse_event
from client.status import Ended, Live, StreamStatus
from client.streaming.intake import SeqIntake
from client.streaming.reconnect import Link, Refusal, Retry, reconnecting

if TYPE_CHECKING:
    from client.backends.rest import PreloopRestApi
    from client.timeline import Place

__all__ = ["REPLAY_AFTER_HEADER", "STORED_THROUGH_HEADER", "events_path", "follow", "history"]

#: The stream's answer to ``?tail=N``: the seq just before the first replayed event (docs/protocol.md).
REPLAY_AFTER_HEADER = "Preloop-Replay-After"
#: The newest stored seq when the stream opened: a reader of what is stored now stops there.
STORED_THROUGH_HEADER = "Preloop-Stored-Through"
QUIET_AFTER_REPLAY = 1.5
"""Seconds without a frame after which :func:`history` takes the replay of a server that does not send
``Preloop-Stored-Through`` as complete."""


def events_path(session_id: str) -> str:
    """URL path of a session's SSE stream."""
    return f"{API_PREFIX}/runtime-sessions/{session_id}/events"


async def _session_over(api: PreloopRestApi, session_id: str) -> bool:
    """Ask REST whether the session has ended (a stream that closes cleanly with nothing new may mean so)."""
    try:
        return (await api.get_session(session_id)).ended
    except ClientError:
        return False


def follow(
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
        what = f"session {session_id}"  # a 404 names it in full
        async with conn.event_source(
            events_path(session_id), what=what, headers=headers, params=params
        ) as source:
            answered = source.response.headers
            if params is not None and "tail" in params:
                # Where the server's tail starts: events before it were left out on purpose, not lost.
                with suppress(ValueError):
                    intake.start_after(int(answered.get(REPLAY_AFTER_HEADER, "0")))
            through: int | None = None
            with suppress(ValueError):  # (an older server does not say where its replay ends)
                through = int(answered.get(STORED_THROUGH_HEADER, ""))
            yield Live(intake.cursor, stored_through=through)
            released_here = 0
            proven = False  # (the loop changes the link only between connections: told once is enough)
            take_frame, check_gap = intake.frame, intake.check_gap  # (bound once: called per frame)
            async with aclosing(source.aiter_sse()) as frames:
                async for frame in frames:
                    if not proven:
                        proven = True
                        link.alive()  # bytes flow again: the next drop starts the backoff afresh
                    retry = frame.retry
                    if retry is not None:
                        link.retry_hint = retry / 1000
                    if not frame.data:
                        continue  # a keep-alive, a lone retry: line: no event
                    released_here += 1
                    for item in take_frame(frame):
                        yield item
                    if not intake.ended:
                        for item in check_gap():
                            yield item
                    if intake.ended:
                        yield Ended(intake.cursor)
                        return
        if not released_here and await _session_over(api, session_id):
            # e.g. resuming at or past the end of an ended session: nothing more will come
            yield Ended(intake.cursor)
            return
        raise Retry("the server closed the stream")

    return reconnecting(
        connect,
        backoff_initial=conn.backoff_initial,
        backoff_max=conn.backoff_max,
        classify=conn.stream_failure,
    )


async def history(
    api: PreloopRestApi, session_id: str, *, since: datetime | None = None, after: Place | None = None
) -> list[Event]:
    """The session's stored events after the place ``after`` (its seq: ``?after=``) or from the time
    ``since`` (``?since=``, our server's extension: one index seek, then only those events), read once up
    to the newest stored when the stream opened (``Preloop-Stored-Through``); a frame that cannot be
    decoded is skipped. An older server without the extension replays everything: the caller filters."""
    from client.models import iso

    params: dict[str, Any] | None = None
    if after is not None and after.number is not None:
        params = {"after": after.number}
    elif since is not None:
        params = {"since": iso(since)}
    what = f"session {session_id}"  # a 404 names it in full
    events: list[Event] = []
    try:
        async with api.conn.event_source(events_path(session_id), what=what, params=params) as source:
            headers = source.response.headers
            try:
                through = int(headers.get(STORED_THROUGH_HEADER, ""))
            except ValueError:
                through = None  # an older server: the replay ends where the stream first goes quiet
            if through is not None and through <= int(headers.get(REPLAY_AFTER_HEADER, "0") or 0):
                return events
            async with aclosing(source.aiter_sse()) as frames:
                while True:
                    try:
                        # An older server says nothing of where its replay ends: quiet for a moment, it has.
                        async with asyncio.timeout(QUIET_AFTER_REPLAY if through is None else None):
                            frame = await anext(frames)
                    except (StopAsyncIteration, TimeoutError):
                        break
                    if not frame.data:
                        continue
                    try:
                        event = parse_event(frame.data, frame.event or None)
                    except EventDecodeError:
                        continue
                    events.append(event)
                    if event.type == "session.ended" or (through is not None and event.seq >= through):
                        break
    except Refusal as refusal:
        raise error_for_status(refusal.status or 403, {"detail": refusal.reason}, what=what) from None
    except Retry as retry:
        raise ConnectionLost(f"could not read the session's events ({retry.reason}); try again") from None
    except Exception as exc:
        reason = api.conn.stream_failure(exc)
        if reason is None:
            raise
        raise ConnectionLost(f"could not read the session's events ({reason}); try again") from None
    return events
