"""A Dendrux run's live feed: its SSE stream, opened, read and mapped for the shared reconnect loop.

Dendrux's stream (``GET /runs/{id}/events/stream``) numbers events from **0** (``id:`` = ``sequence_index``),
always says ``event: message`` with one JSON ``data:`` line, sends ``: keepalive`` after 15 s idle, never
closes and sends no ``retry:``. Its router polls the database every 0.5 s with a cursor, so when parallel
tools commit out of order an event can be skipped **for good** on the stream while REST has it. Here:

* raw events are ordered by ``sequence_index`` (:class:`~client.streaming.order.EventOrderer` with
  ``first_seq=0``); a jump opens a gap that is **backfilled from** ``GET /runs/{id}/events?after=N`` at
  once, without dropping the stream, and asked again (backing off to 0.5 s) while REST does not have it yet:
  the late commit usually lands within milliseconds but can take a second or more when the database is
  busy; a gap REST still cannot fill after ``gap_wait`` seconds is given up as ``Missed(n)``;
* what the orderer released is past the resume point (``Last-Event-ID``), so it waits in ``pending`` and
  leaves it batch by batch, each batch only once mapped whole: every REST call its mapping needs is made
  before any of it is mapped, and a failing one (a 500 from ``/traces``) ends the connection with the
  batch still pending; the next connection maps it first, then reads on;
* an ``llm.completed`` carries no text: the ``/traces`` assistant row of the same iteration does, and may
  land a few ms after the event, so it is fetched (new rows only) and re-fetched until ``trace_wait``.
  Past that (a busy database) the step goes out without text and is owed: ``/traces`` is asked again
  with every later batch and, while the stream is quiet, every 0.25-2 s, and the same ``model.step``
  goes out again with its text once the row is there (waited for up to ``trace_wait`` more when the run
  ends; Dendrux writes the row before the run's next event, so it is there by then);
* the terminal event is reconciled once: the run row (its answer) and the notes (unread ones become
  ``note.undeliverable``) are read again before ``run.completed``/``session.ended`` go out;
* a 404 for a run this follow has never seen is normal for a few seconds after it starts (``run_grace``):
  retried; later, and for 403, the feed stops with ``Refused`` (a 401 waits with ``LoginNeeded``);
* the stream is opened and parsed by httpx-sse like every SSE stream
  (:meth:`client.connection.Connection.event_source`, ``EventSource.aiter_sse``); reconnects (a dropped
  connection, an app restart, a stall: nothing, not even the keep-alive, for ``stall_timeout``) resume
  with ``Last-Event-ID``; mapping state survives them, so nothing is shown twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from client.backends.dendrux.mapping import TERMINAL_EVENTS, DendruxMapper, RawEvent, raw_event
from client.errors import ApiError, ClientError, NotFound, Unsupported
from client.events import Event, EventDecodeError
from client.status import Ended, Live, Missed, Skipped, StreamStatus
from client.streaming.order import EventOrderer
from client.streaming.policy import refuses
from client.streaming.reconnect import Link, Refusal, Retry, reconnecting

if TYPE_CHECKING:
    from httpx_sse import ServerSentEvent

    from client.backends.dendrux import DendruxBackend
    from client.timeline import Place

__all__ = ["FeedStats", "follow", "history"]

_PAGE = 1000
_LATE_FIRST = 0.25
_LATE_MAX = 2.0
"""While a step still waits for its text and the stream is quiet, ``/traces`` is asked again after
``_LATE_FIRST`` seconds, then twice as long each time up to ``_LATE_MAX``."""


@dataclass
class FeedStats:
    """What one follow saw, for tests and benchmarks: Dendrux indexes released (in order), how many came
    from the REST backfill rather than the stream, and how many were given up as missed."""

    released: list[int] = field(default_factory=list)
    from_stream: int = 0
    backfilled: int = 0
    gaps: int = 0
    missed: int = 0
    longest_fill: float = 0.0
    """Seconds the longest gap took to fill from REST (the late commit landing)."""


def follow(
    backend: DendruxBackend, run_id: str, *, after: int = 0, stats: FeedStats | None = None
) -> AsyncGenerator[Event | StreamStatus, None]:
    """Follow one run (see the module docstring); events numbered locally from 1, after ``after``."""
    conn = backend.conn
    mapper = DendruxMapper(run_id=run_id)
    order: EventOrderer[RawEvent] = EventOrderer(first_seq=0)
    pending: list[RawEvent | StreamStatus] = []
    """Released by the orderer (so past the resume point) but not mapped and handed on yet."""
    seen = stats if stats is not None else FeedStats()
    loop = asyncio.get_running_loop()
    started = loop.time()
    trace_rows = 0
    skipped = 0
    late_delay = _LATE_FIRST

    def not_found(what: str) -> Retry | Refusal:
        if not mapper.run and loop.time() - started < backend.run_grace:
            return Retry(f"run {run_id[:10]} is not visible yet ({what} answered 404)")
        return Refusal(f"run {run_id[:10]} not found", 404)

    async def fetch_traces() -> None:
        nonlocal trace_rows
        body = await backend.get_json(f"/runs/{run_id}/traces", params={"limit": _PAGE, "offset": trace_rows})
        items = body.get("items") if isinstance(body, dict) else None
        if isinstance(items, list):
            trace_rows += len(items)
            mapper.learn_traces(items)

    async def learn_notes() -> list[object]:
        try:
            body = await backend._steer("GET", f"/runs/{run_id}/notes", run_id, "notes")
        except Unsupported:
            return []
        rows = body.get("notes") if isinstance(body, dict) else None
        rows = rows if isinstance(rows, list) else []
        mapper.learn_notes(rows)
        return rows

    async def texts_for(raws: list[RawEvent]) -> None:
        """Fetch the trace rows the released ``llm.completed`` events need, re-fetching briefly if late;
        owed steps are looked for once on the way (and waited for too when the run ends here)."""
        ending = any(r.type in TERMINAL_EVENTS for r in raws)

        def missing() -> bool:
            return any(mapper.needs_trace(r) for r in raws) or (ending and bool(mapper.owed))

        if not missing():
            if mapper.owed:
                with contextlib.suppress(ClientError):  # a nicety here: asked again at the next chance
                    await fetch_traces()
            return
        delay = 0.02
        deadline = loop.time() + backend.trace_wait
        while True:
            await fetch_traces()
            if not missing() or loop.time() >= deadline:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def backfill() -> None:
        """Ask REST for what the stream skipped (released into ``pending`` as it comes); give the gap up
        when REST does not have it either."""
        seen.gaps += 1
        delay = 0.02
        began = loop.time()
        deadline = began + backend.gap_wait
        while True:
            body = await backend.get_json(
                f"/runs/{run_id}/events", params={"after": order.last_seq, "limit": _PAGE}
            )
            for item in body.get("items") or [] if isinstance(body, dict) else []:
                try:
                    raw = raw_event(item)
                except EventDecodeError:
                    continue
                released = order.push(raw.index, raw)
                seen.backfilled += int(raw in released)
                pending.extend(released)
            if not order.gap or loop.time() >= deadline:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
        seen.longest_fill = max(seen.longest_fill, loop.time() - began)
        if not order.gap:
            return
        missed, released, set_aside = order.give_up_gap()
        seen.missed += missed
        if missed:
            pending.append(Missed(missed))
        if set_aside:
            pending.append(
                Skipped(f"{set_aside} event(s) numbered far beyond the run were set aside", skipped)
            )
        pending.extend(released)

    async def mapped(raws: list[RawEvent]) -> list[Event]:
        """Our events for released raw events. Every REST call the mapping needs is made first, so a
        failing one leaves the batch unmapped (still pending), never half mapped."""
        await texts_for(raws)
        if any(mapper.needs_note(r) for r in raws):
            await learn_notes()
        closing: list[object] | None = None
        if not mapper.ended and any(r.type in TERMINAL_EVENTS for r in raws):
            # reconcile once: the answer and the fate of every note, as the app now has them
            with contextlib.suppress(ClientError):
                mapper.run = await backend.get_run(run_id)
            closing = await learn_notes()
        # nothing below waits or fails
        out = mapper.fill()
        for raw in raws:
            seen.released.append(raw.index)
            if closing is not None and raw.type in TERMINAL_EVENTS and not mapper.ended:
                out += mapper.close_out(closing, index=raw.index)
            out += mapper.map(raw)
        return [e for e in out if e.seq > after]

    async def take() -> list[Event | StreamStatus]:
        """What the oldest released batch (raw events up to the next status, or that status) becomes. It
        leaves ``pending`` only once mapped whole: a REST call failing on the way ends the connection
        with the batch still pending, and the next connection maps it before reading on (the stream
        resumes after it), so no event is lost or shown twice."""
        head = pending[0]
        if not isinstance(head, RawEvent):
            del pending[0]
            return [head]
        size = next((i for i, x in enumerate(pending) if not isinstance(x, RawEvent)), len(pending))
        out = await mapped([x for x in pending[:size] if isinstance(x, RawEvent)])
        del pending[:size]
        return list(out)

    async def late_texts() -> list[Event]:
        """The stream is quiet and a step still has no text: look for it again (a failure waits for the
        next look)."""
        nonlocal late_delay
        late_delay = min(late_delay * 2, _LATE_MAX)
        with contextlib.suppress(ClientError):
            await fetch_traces()
        return [e for e in mapper.fill() if e.seq > after]

    def quiet_after() -> float | None:
        """How long the stream may stay quiet before owed texts are looked for (None: nothing is owed)."""
        nonlocal late_delay
        if not mapper.owed:
            late_delay = _LATE_FIRST
            return None
        return late_delay

    async def connect(link: Link) -> AsyncGenerator[Event | StreamStatus, None]:
        nonlocal skipped
        try:
            mapper.run = await backend.get_run(run_id)
        except NotFound:
            raise not_found("GET /runs/{id}") from None
        await learn_notes()
        while pending:  # what the last connection released but could not map
            for item in await take():
                yield item
        if mapper.ended:
            yield Ended(mapper.last_seq)
            return
        headers = {"Last-Event-ID": str(order.last_seq)} if order.last_seq >= 0 else {}
        path = f"/runs/{run_id}/events/stream"
        try:
            async with (
                conn.event_source(path, what=f"run {run_id}", headers=headers) as source,
                aclosing(source.aiter_sse()) as frames,
                aclosing(_frames_or_quiet(frames, quiet_after)) as arrivals,
            ):
                yield Live(mapper.last_seq)
                async for frame in arrivals:
                    if frame is None:
                        for event in await late_texts():
                            yield event
                        continue
                    link.alive()
                    if not frame.data:
                        continue  # the 15 s keep-alive comment
                    jumps = order.jumps
                    try:
                        raw = raw_event(frame.data)
                    except EventDecodeError as exc:
                        skipped += 1
                        pending.append(Skipped(str(exc), skipped))
                        if frame.id.isascii() and frame.id.isdigit():
                            pending.extend(order.push(int(frame.id), None))
                    else:
                        got = order.push(raw.index, raw)
                        seen.from_stream += int(raw in got)
                        pending.extend(got)
                    if order.gap and order.jumps != jumps:
                        await backfill()
                    while pending:
                        for item in await take():
                            yield item
                    if mapper.ended:
                        yield Ended(mapper.last_seq)
                        return
        except Refusal as refusal:
            if refusal.status == 404:
                raise not_found("the event stream") from None
            raise
        raise Retry("the server closed the stream")

    def classify(exc: Exception) -> str | Refusal | None:
        if isinstance(exc, ApiError):
            if exc.status == 404:
                verdict = not_found("the server")
                return verdict if isinstance(verdict, Refusal) else verdict.reason
            return Refusal(exc.hint, exc.status) if refuses(exc.status) else exc.hint
        if isinstance(exc, ClientError):
            return exc.hint
        return conn.stream_failure(exc)

    return reconnecting(
        connect, backoff_initial=conn.backoff_initial, backoff_max=conn.backoff_max, classify=classify
    )


async def _frames_or_quiet(
    frames: AsyncIterator[ServerSentEvent], quiet_after: Callable[[], float | None]
) -> AsyncGenerator[ServerSentEvent | None, None]:
    """``frames`` as they arrive, and ``None`` each time ``quiet_after()`` seconds pass without one (when it
    says None, simply the next frame). The read that was going on when the quiet was noticed goes on, so
    a frame arriving meanwhile is not lost; it is cancelled only when this generator is closed."""
    reading: asyncio.Task[ServerSentEvent | None] | None = None
    try:
        while True:
            wait = quiet_after()
            if reading is None and wait is None:
                try:
                    frame = await anext(frames)
                except StopAsyncIteration:
                    return
                yield frame
                continue
            if reading is None:
                reading = asyncio.create_task(_next(frames))
            done, _ = await asyncio.wait({reading}, timeout=wait)
            if not done:
                yield None
                continue
            task, reading = reading, None
            got = task.result()
            if got is None:
                return
            yield got
    finally:
        if reading is not None:
            reading.cancel()
            await asyncio.wait({reading})
            if not reading.cancelled():
                reading.exception()  # the stream is being dropped: how its last read ended does not matter


async def _next(frames: AsyncIterator[ServerSentEvent]) -> ServerSentEvent | None:
    """The next frame, or None at the end of the stream (a task does not carry StopAsyncIteration well)."""
    try:
        return await anext(frames)
    except StopAsyncIteration:
        return None


async def _first_index(probe: Callable[[int], Awaitable[Any]], newer: Callable[[Any], bool]) -> int:
    """The smallest position whose item ``newer`` accepts (items ordered so that once one is, every later
    one is), found with about 2·log2(n) one-item requests: doubling until past it, then halving. The
    position after the last item when none is accepted."""
    low, high = -1, 0  # every item up to ``low`` is older; the answer is at most ``high`` (once found)
    step = 1
    while True:
        item = await probe(high)
        if item is None or newer(item):
            break
        low = high
        high += step
        step *= 2
    while high - low > 1:
        middle = (low + high) // 2
        item = await probe(middle)
        if item is None or newer(item):
            high = middle
        else:
            low = middle
    return high


async def history(
    backend: DendruxBackend, run_id: str, *, since: datetime | None = None, after: Place | None = None
) -> list[Event]:
    """A run's events after the place ``after`` (its Dendrux ``sequence_index``: ``?after=``) or from the
    time ``since``, mapped as a follow maps them. The app has no time filter: the first event at or after
    ``since`` is found by its index with one-event requests (about 2·log2 of the run's length), and the
    trace rows holding the model's words likewise; then only the events from there are read, 1,000 a
    request. Decisions on approvals requested before the window are not in it (the caller reads the
    run's approvals)."""
    run = await backend.get_run(run_id)
    mapper = DendruxMapper(run_id=run_id, run=run)
    try:
        body = await backend._steer("GET", f"/runs/{run_id}/notes", run_id, "notes")
    except Unsupported:
        body = None
    notes = body.get("notes") if isinstance(body, dict) else None
    notes = notes if isinstance(notes, list) else []
    mapper.learn_notes(notes)
    events_path = f"/runs/{run_id}/events"

    async def event_at(index: int) -> RawEvent | None:
        params: dict[str, Any] = {"limit": 1, **({"after": index - 1} if index > 0 else {})}
        body = await backend.get_json(events_path, params=params)
        items = body.get("items") if isinstance(body, dict) else None
        return raw_event(items[0]) if items else None

    cursor = -1
    if after is not None and after.number is not None:
        cursor = after.number
    elif since is not None:
        cursor = await _first_index(event_at, lambda raw: raw.at >= since) - 1
    raws: list[RawEvent] = []
    while True:
        params = {"limit": _PAGE, **({"after": cursor} if cursor >= 0 else {})}
        body = await backend.get_json(events_path, params=params)
        items = body.get("items") if isinstance(body, dict) else None
        items = items if isinstance(items, list) else []
        for item in items:
            with contextlib.suppress(EventDecodeError):
                raw = raw_event(item)
                raws.append(raw)
                cursor = max(cursor, raw.index)
        if len(items) < _PAGE:
            break
    iterations = [raw.iteration for raw in raws if raw.type == "llm.completed"]
    if iterations:
        first = min(iterations)
        traces_path = f"/runs/{run_id}/traces"

        async def trace_at(offset: int) -> dict[str, Any] | None:
            body = await backend.get_json(traces_path, params={"limit": 1, "offset": offset})
            items = body.get("items") if isinstance(body, dict) else None
            return items[0] if items and isinstance(items[0], dict) else None

        def reached(row: dict[str, Any]) -> bool:
            meta = row.get("meta")
            iteration = meta.get("iteration") if isinstance(meta, dict) else None
            return isinstance(iteration, int) and iteration >= first

        offset = await _first_index(trace_at, reached) if first > 0 else 0
        while True:
            body = await backend.get_json(traces_path, params={"limit": _PAGE, "offset": offset})
            items = body.get("items") if isinstance(body, dict) else None
            items = items if isinstance(items, list) else []
            mapper.learn_traces(items)
            offset += len(items)
            if len(items) < _PAGE:
                break
    out: list[Event] = []
    for raw in raws:
        if raw.type in TERMINAL_EVENTS and not mapper.ended:
            out += mapper.close_out(notes, index=raw.index)
        out += mapper.map(raw)
    return out
