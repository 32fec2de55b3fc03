"""A Preloop 0.17.1 session's live feed: its websocket, replay, and polling, for the shared reconnect loop.

``PreloopBackend.follow()`` runs this, so the TUI and the CLI read the same ``Event | StreamStatus``
values whatever is behind the backend; connecting, backoff and refusals are the shared loop's
(:mod:`client.streaming.reconnect`), this module supplies one connection's work. Preloop pushes less
than our SSE stream and numbers nothing, so this module:

* attaches to ``{base}/api/v1/ws/runtime-sessions/{id}`` (ws:// or wss://) with the bearer token in the
  ``Authorization`` header only; the first frame is ``attached`` or ``error`` (then a 44xx close);
* replays ``GET .../{id}/activity`` (newest first, reversed) on attach and after every reconnect, and
  drops what it already showed by a stable key (:mod:`client.backends.preloop.mapping`), numbering the
  rest with a contiguous local ``seq``; after a reconnect it yields ``Missed(n)`` for the n facts the
  replay found that happened while it was away;
* polls what is never pushed: note states other than *delivered* (fast while a note is open, slowly
  otherwise), pending approvals (``approval.requested`` / ``approval.decided`` when one disappears),
  and the session row (an idle sweep ends a session silently);
* pings every 25 s, treats 75 s of silence as a dead connection, reconnects with the shared jittered
  backoff, and stops for good on a 4400-4499 close or a refusing 4xx (``Refused``,
  :func:`client.streaming.policy.refuses`), but for a refused token (4401, 401): it waits
  (``LoginNeeded``), reading the token again before each new attempt.

Status values come from :mod:`client.status`; every interval is a :class:`PreloopTiming` field so
tests can run the whole dance in a fraction of a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from client.backends.preloop.mapping import (
    Draft,
    PreloopMapper,
    approval_decided_draft,
    approval_requested_draft,
    delivered_draft,
    delivered_note_id,
    from_envelope,
    note_draft,
    replay_drafts,
    session_ended_draft,
    session_updated_draft,
)
from client.errors import ApiError, ClientError
from client.events import Event
from client.ids import is_uuid
from client.listing import all_approvals, session_notes
from client.models import Approval, NoteState, Session
from client.status import Ended, Live, Missed, Refused, Skipped, StreamStatus
from client.steering import final_record
from client.stream_words import failure_words
from client.streaming.policy import BACKOFF_INITIAL, BACKOFF_MAX, refuses
from client.streaming.reconnect import Link, Refusal, reconnecting

if TYPE_CHECKING:
    from client.backends.preloop import PreloopBackend

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class PreloopTiming:
    """Every interval of the follower, in seconds (defaults are Preloop's own figures)."""

    ping_interval: float = 25.0
    dead_after: float = 75.0
    attach_timeout: float = 15.0
    note_poll: float = 3.0
    # Not 30 s: a note sent by this client is only known here once a poll (or a nudge) finds it, and
    # its "pending → cancelled/expired" change is never pushed: 5 s bounds how late it shows.
    note_idle_poll: float = 5.0
    approval_poll: float = 5.0
    session_poll: float = 30.0
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    close_timeout: float = 2.0
    page_size: int = 100


def is_session_id(value: str) -> bool:
    """Preloop answers a non-UUID session id with a 500 and drops the connection: check first."""
    return isinstance(value, str) and is_uuid(value)


def ws_url(base_url: Any, path: str) -> str:
    """``http(s)://host/prefix`` → ``ws(s)://host/prefix/api/v1/ws/{path}``."""
    base = str(base_url).rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    if base.endswith("/api/v1"):
        base = base[: -len("/api/v1")]
    return f"{base}/api/v1/ws/{path}"


def websocket_url(base_url: Any, session_id: str) -> str:
    """``http(s)://host/prefix`` → ``ws(s)://host/prefix/api/v1/ws/runtime-sessions/{id}``."""
    return ws_url(base_url, f"runtime-sessions/{session_id}")


def _is_rest_error(exc: Exception) -> bool:
    """REST failures the follower can survive (transport trouble, a 5xx) or must stop on (401/403/404)."""
    return isinstance(exc, ClientError | httpx.HTTPError | OSError | TimeoutError | ValueError)


def _refusal_from(exc: Exception) -> Refusal | None:
    if isinstance(exc, ApiError) and refuses(exc.status):
        return Refusal(str(exc), exc.status)
    return None


class _Follower:
    def __init__(self, client: PreloopBackend, session_id: str, after: int, timing: PreloopTiming) -> None:
        self.client = client
        self.session_id = session_id
        self.after = after
        self.timing = timing
        self.mapper = PreloopMapper(session_id)
        self.session: Session | None = None
        self.note_states: dict[str, str] = {}
        self.pending_approvals: set[str] = set()
        self.nudged = asyncio.Event()
        self.reported_skips = 0
        self.connections = 0

    # ---------------------------------------------------------------- output helpers

    def _emit(self, drafts: list[Draft]) -> list[Event]:
        out: list[Event] = []
        for draft in sorted(drafts, key=lambda d: d.at):
            out.extend(self.mapper.map(draft))
        return out

    def _visible(self, events: list[Event]) -> list[Event | StreamStatus]:
        out: list[Event | StreamStatus] = [event for event in events if event.seq > self.after]
        if self.mapper.skipped > self.reported_skips:
            self.reported_skips = self.mapper.skipped
            out.append(Skipped("a Preloop message did not fit our event model", self.mapper.skipped))
        return out

    # ---------------------------------------------------------------- REST (replay and polls)

    async def _rest(self, call: Awaitable[_T]) -> _T:
        """A REST call whose 401/403/404 ends the follow (as a refusal) rather than being retried."""
        try:
            return await call
        except Exception as exc:
            refusal = _refusal_from(exc)
            if refusal is not None:
                raise refusal from exc
            raise

    async def _poll_notes(self) -> list[Draft]:
        drafts: list[Draft] = []
        for note in await self._rest(session_notes(self.client, self.session_id, size=self.timing.page_size)):
            before = self.note_states.get(note.note_id)
            if before != note.state:
                draft = note_draft(self.session_id, note, first_seen=before is None)
                if draft is not None:
                    drafts.append(draft)
                self.note_states[note.note_id] = note.state
        return drafts

    def _notes_open(self) -> bool:
        return any(state in (NoteState.PENDING, NoteState.CLAIMED) for state in self.note_states.values())

    async def _poll_approvals(self) -> list[Draft]:
        listed = all_approvals(self.client, self.session_id, "pending", size=self.timing.page_size)
        pending = {approval.id: approval for approval in await self._rest(listed)}
        drafts = [
            approval_requested_draft(self.session_id, approval)
            for approval_id, approval in pending.items()
            if approval_id not in self.pending_approvals
        ]
        gone = sorted(self.pending_approvals - pending.keys())
        settled: dict[str, Approval] = {}
        if gone:
            # The session's newest approvals hold what became of them: read from the list, as reading an
            # approval's detail would mark it viewed by this operator on Preloop's timeline.
            recent = await self._rest(
                self.client.list_approvals(
                    session_id=self.session_id, status=None, limit=self.timing.page_size
                )
            )
            settled = {a.id: a for a in recent.items if not a.pending}
        for approval_id in gone:
            decided: Approval | None = settled.get(approval_id)
            if decided is not None:
                decided = await self.client.approval_trail(decided)  # who decided: its history says
            else:
                try:
                    decided = await self._rest(final_record(self.client, approval_id))
                except Refusal:
                    continue  # no longer ours: nothing to show
            if decided is not None:
                drafts.append(approval_decided_draft(self.session_id, decided))
        self.pending_approvals = set(pending)
        return drafts

    async def _replay(self) -> tuple[list[Event], bool]:
        """Everything the server can tell us now; returns the new events and whether the session ended."""
        session = await self._rest(self.client.get_session(self.session_id))
        self.session = session
        items = await self._rest(self.client.session_activity(self.session_id))
        # The activity list knows a delivered note by a few fields; the notes list has the whole row.
        whole = {d.key: d for d in await self._poll_notes()}
        drafts = [whole.pop(d.key, d) for d in replay_drafts(self.session_id, items, session)]
        drafts.extend(whole.values())
        drafts.extend(await self._poll_approvals())
        ended = session.ended or any(d.key == "session:ended" for d in drafts)
        # "session.ended" is the last event of a stream: hold it back until everything else is out.
        end_drafts = [d for d in drafts if d.key == "session:ended"]
        events = self._emit([d for d in drafts if d.key != "session:ended"])
        if ended:
            end = end_drafts[0] if end_drafts else session_ended_draft(self.session_id, session)
            events.extend(self.mapper.map(end))
        return events, ended

    async def _finish(self, end: Draft) -> list[Event]:
        """The session ended: a last look at notes (pending ones turn undeliverable) and approvals."""
        drafts: list[Draft] = []
        with contextlib.suppress(Refusal):
            drafts.extend(await self._poll_notes())
            drafts.extend(await self._poll_approvals())
        events = self._emit(drafts)
        events.extend(self.mapper.map(end))
        return events

    # ---------------------------------------------------------------- websocket

    async def _attach(self, ws: ClientConnection) -> dict[str, Any]:
        raw = await asyncio.wait_for(ws.recv(), self.timing.attach_timeout)
        frame = json.loads(raw)
        if not isinstance(frame, dict):
            raise ValueError("first frame is not a JSON object")
        if frame.get("type") == "error":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ws.wait_closed(), 2.0)
            code = ws.close_code
            detail = str(frame.get("detail") or frame.get("error") or "refused")
            raise Refusal(detail, code)
        if frame.get("type") != "attached":
            raise ValueError(f"unexpected first frame {frame.get('type')!r}")
        return frame

    async def _live(self, ws: ClientConnection) -> AsyncIterator[Event | StreamStatus]:
        loop = asyncio.get_running_loop()
        t = self.timing
        now = loop.time()
        last_message = now
        ping_due = now + t.ping_interval
        approvals_due = now + t.approval_poll
        session_due = now + t.session_poll
        notes_due = now + (t.note_poll if self._notes_open() else t.note_idle_poll)
        recv_task: asyncio.Task[str | bytes] | None = None
        nudge_task: asyncio.Task[bool] | None = None
        try:
            while True:
                now = loop.time()
                deadline = min(last_message + t.dead_after, ping_due, approvals_due, session_due, notes_due)
                if recv_task is None:
                    recv_task = asyncio.ensure_future(ws.recv())
                if nudge_task is None:
                    nudge_task = asyncio.ensure_future(self.nudged.wait())
                done, _ = await asyncio.wait(
                    {recv_task, nudge_task},
                    timeout=max(0.0, deadline - now),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                now = loop.time()
                end: Draft | None = None
                if recv_task in done:
                    raw = recv_task.result()  # raises ConnectionClosed when the socket is gone
                    recv_task = None
                    last_message = now
                    draft = self._frame(raw)
                    if draft is not None and draft.key == "session:ended":
                        end = draft
                    elif draft is not None:
                        for item in self._visible(self.mapper.map(await self._whole_note(draft))):
                            yield item
                if nudge_task in done:
                    nudge_task = None
                    self.nudged.clear()
                    notes_due = approvals_due = now
                if end is None and now >= last_message + t.dead_after:
                    raise TimeoutError(f"no message for {t.dead_after:g} s")
                if now >= ping_due:
                    await ws.send(json.dumps({"type": "ping"}))
                    ping_due = now + t.ping_interval
                drafts: list[Draft] = []
                if end is None and now >= approvals_due:
                    drafts.extend(await self._quiet(self._poll_approvals()))
                    approvals_due = now + t.approval_poll
                if end is None and now >= notes_due:
                    drafts.extend(await self._quiet(self._poll_notes()))
                    notes_due = now + (t.note_poll if self._notes_open() else t.note_idle_poll)
                if end is None and now >= session_due:
                    before = self.session
                    row = await self._quiet_session()
                    session_due = now + t.session_poll
                    if row is not None and row.ended:
                        end = session_ended_draft(
                            self.session_id, row, reason="ended (idle sweep or elsewhere)"
                        )
                    elif row is not None and _usage_moved(before, row):
                        drafts.append(session_updated_draft(self.session_id, row))
                for item in self._visible(self._emit(drafts)):
                    yield item
                if end is not None:
                    for item in self._visible(await self._finish(end)):
                        yield item
                    yield Ended(self.mapper.last_seq)
                    return
        finally:
            for task in (recv_task, nudge_task):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, ConnectionClosed, Exception):
                        await task

    async def _whole_note(self, draft: Draft) -> Draft:
        """A pushed delivery carries a few of the note's fields (no sent time, no delivery event) and the
        poll refreshes a note only when its state changes: fetch the whole row now, so what is shown is
        the note as ``notes list`` has it. A failed fetch keeps the pushed fields."""
        note_id = delivered_note_id(draft)
        if note_id is None or self.mapper.seen(draft.key):
            return draft
        try:
            note = await self.client.get_note(note_id)
        except ClientError:
            return draft
        return delivered_draft(self.session_id, note, draft.at)

    async def _quiet(self, call: Any) -> list[Draft]:
        """A poll that fails for a passing reason is retried at the next tick, not fatal."""
        try:
            result: list[Draft] = await call
        except Refusal:
            raise
        except Exception as exc:
            if not _is_rest_error(exc):
                raise
            return []
        return result

    async def _quiet_session(self) -> Session | None:
        try:
            row: Session = await self._rest(self.client.get_session(self.session_id))
        except Refusal:
            raise
        except Exception as exc:
            if not _is_rest_error(exc):
                raise
            return None
        self.session = row
        return row

    def _frame(self, raw: str | bytes) -> Draft | None:
        try:
            frame = json.loads(raw)
        except ValueError:
            self.mapper.skipped += 1
            return None
        if not isinstance(frame, dict):
            self.mapper.skipped += 1
            return None
        if frame.get("type") == "error":
            raise Refusal(str(frame.get("detail") or frame.get("error") or "refused"), None)
        try:
            draft = from_envelope(self.session_id, frame, self.session)
        except ValueError:  # includes pydantic's ValidationError: a frame we cannot read is skipped
            self.mapper.skipped += 1
            return None
        if draft is not None and draft.key.startswith("note:"):
            note_id = draft.key.split(":")[1]
            self.note_states[note_id] = "delivered"
        return draft

    # ---------------------------------------------------------------- the whole dance

    async def run(self) -> AsyncGenerator[Event | StreamStatus, None]:
        if not is_session_id(self.session_id):
            yield Refused(f"{self.session_id!r} is not a session id (a UUID)", None)
            return
        self.client.watch(self.session_id, self.nudged)
        try:
            feed: AsyncGenerator[Event | StreamStatus, None] = reconnecting(
                self._connect,
                backoff_initial=self.timing.backoff_initial,
                backoff_max=self.timing.backoff_max,
                classify=classify_failure,
            )
            async with contextlib.aclosing(feed) as items:
                async for item in items:
                    yield item
        finally:
            self.client.unwatch(self.session_id, self.nudged)

    async def _connect(self, link: Link) -> AsyncGenerator[Event | StreamStatus, None]:
        """One websocket connection: attach, replay what happened, then follow it live."""
        self.connections += 1
        conn = self.client.conn
        if link.token_refused:  # the upgrade is not an httpx request: read the token again here
            await conn.reread_token(conn.token)
        async with connect(
            websocket_url(self.client.conn.base_url, self.session_id),
            additional_headers=dict(conn.auth_headers()),
            open_timeout=self.timing.attach_timeout,
            ping_interval=None,  # Preloop's own {"type": "ping"} keeps it alive
            close_timeout=self.timing.close_timeout,
            max_size=2**22,
        ) as ws:
            await self._attach(ws)
            before = self.mapper.last_seq
            events, ended = await self._replay()
            for item in self._visible(events):
                yield item
            recovered = self.mapper.last_seq - before
            if self.connections > 1 and recovered > 0:
                yield Missed(recovered)
            link.alive()
            if ended:
                yield Ended(self.mapper.last_seq)
                return
            yield Live(self.mapper.last_seq)
            async for item in self._live(ws):
                yield item


def _usage_moved(before: Session | None, row: Session) -> bool:
    """Whether a polled row's tokens or cost differ from the last row's (an attached header shows them)."""
    if before is None:
        return False
    was, now_ = before.token_usage, row.token_usage
    tokens = (was.total_tokens if was else 0, now_.total_tokens if now_ else 0)
    return tokens[0] != tokens[1] or (before.estimated_cost or 0) != (row.estimated_cost or 0)


def classify_failure(exc: Exception) -> str | Refusal | None:
    """What a failed websocket connection means: a reason to retry, a refusal, or a bug (None)."""
    if isinstance(exc, ConnectionClosed):
        code = exc.rcvd.code if exc.rcvd is not None else None
        if code is not None and refuses(code) and code >= 4000:
            return Refusal(exc.rcvd.reason if exc.rcvd and exc.rcvd.reason else f"closed {code}", code)
        return f"connection closed ({code})" if code is not None else "connection lost"
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        if refuses(status):
            return Refusal(f"websocket upgrade refused: HTTP {status}", status)
        return f"websocket upgrade failed: HTTP {status}"
    if isinstance(exc, InvalidURI):
        return Refusal(f"bad server address: {exc}", None)
    if isinstance(exc, OSError | TimeoutError | InvalidHandshake | ValueError) or _is_rest_error(exc):
        return str(exc) or failure_words(exc)  # words, never the exception's name
    return None


async def follow(
    client: PreloopBackend, session_id: str, *, after: int = 0, timing: PreloopTiming | None = None
) -> AsyncGenerator[Event | StreamStatus, None]:
    """Live events of one session on a Preloop server, as ``Event | StreamStatus`` like our SSE follower.

    ``after`` hides events up to that local seq (seq is synthesized here, contiguous per follow).
    """
    if timing is None:  # the connection's own reconnect settings apply here too
        timing = PreloopTiming(
            backoff_initial=client.conn.backoff_initial, backoff_max=client.conn.backoff_max
        )
    follower = _Follower(client, session_id, after, timing)
    async with contextlib.aclosing(follower.run()) as items:
        async for item in items:
            yield item


async def history(
    client: PreloopBackend, session_id: str, *, timing: PreloopTiming | None = None
) -> list[Event]:
    """Everything Preloop can tell about a session now, as our events (what a follow replays on attach:
    the row, the activity list, newest first and whole, the notes and the pending approvals), without
    the websocket. Preloop's activity has no time filter: it is one request whatever the window, and the
    caller keeps what it asked for. A refusal is the server's error (a ``ClientError``)."""
    follower = _Follower(client, session_id, 0, timing or PreloopTiming())
    try:
        events, _ended = await follower._replay()
    except Refusal as refusal:
        cause = refusal.__cause__
        if isinstance(cause, ClientError):
            raise cause from None
        raise
    return events
