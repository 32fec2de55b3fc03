"""A Dendrux 0.4.1 app: Dendrux's read router (runs, events, traces) plus our steer router (notes,
approvals), both mounted by the app (see docs/dendrux.md and :mod:`preloop_steer.dendrux`).

A Dendrux *run* is a session here (``session_id`` = ``run_id``, a ULID). What the server cannot do, the
backend says in :attr:`DendruxBackend.capabilities` so the UI gates those keys and says why:

* a note cannot be withdrawn once submitted (Dendrux has no such call): ``withdraw_notes=False``;
* a run cannot be ended from the read/steer routes: ``end_session=False``;
* an approval takes no comment (Dendrux's approve has no reason; a decline's does): ``approve_comment=False``,
  and ``approve(id, comment)`` raises :class:`~client.errors.Unsupported` rather than drop it;
* a note for a finished run is refused by the steer router (409, ``RunAlreadyTerminalError``): that is
  :class:`~client.errors.SessionEnded`, as on every server;
* an app that mounted only the read router has no notes or approvals: the first call that needs the steer
  router finds out (its routes answer 404 although the run exists) and turns ``notes``/``approvals`` off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx

from client.backends.base import ApprovalPage, BatchItem, Capabilities, ServerKind, SessionFilter
from client.backends.dendrux.mapping import (
    TERMINAL_STATUSES,
    approval_from_row,
    note_from_row,
    session_from_run,
    session_list,
)
from client.backends.rest import RestBackend
from client.connection import Connection
from client.errors import (
    ClientError,
    Conflict,
    InvalidResponse,
    NotFound,
    SessionEnded,
    TransportError,
    Unsupported,
    UsageError,
)
from client.events import Event
from client.models import (
    ActivityItem,
    Approval,
    AttentionSnapshot,
    Health,
    Note,
    NoteList,
    Session,
    SessionList,
)
from client.notetext import require_sendable
from client.status import StreamStatus
from client.textsafe import safe_line

if TYPE_CHECKING:
    from client.timeline import Place

__all__ = ["ACTIVE_STATUSES", "NO_APPROVE_COMMENT", "DendruxBackend", "looks_like_dendrux"]

ACTIVE_STATUSES = (
    "pending",
    "running",
    "waiting_client_tool",
    "waiting_human_input",
    "waiting_approval",
    "paused",
)
_NO_STEER = (
    "this Dendrux app has no steer router mounted, so it cannot take {what}: the app adds "
    "make_steer_router next to make_read_router (see docs/dendrux.md)"
)
NO_APPROVE_COMMENT = (
    "a Dendrux app takes no comment with an approval (Dendrux's approve has no reason; a decline's comment "
    "reaches the agent): approve without one, or send it as a note"
)
_MAX_RUNS = 1000
_SCAN_PAGE = 250
_HISTORY_RUNS = 200
_PARALLEL = 4
_TITLE_FETCHES = 50


async def looks_like_dendrux(conn: Connection) -> bool:
    """Whether the server answers like a Dendrux read router (``GET /runs`` → ``{items, total, limit,
    offset}`` of run rows), for ``--server-kind auto``."""
    try:
        response = await conn.send("GET", "/runs", params={"limit": 1})
    except TransportError:
        return False
    if response.status_code in (401, 403):
        # an authorize hook refused us: ask the unauthenticated /health, which Dendrux serves at the root
        try:
            health = await conn.send("GET", "/health")
        except TransportError:
            return False
        return health.status_code == 200 and _json(health) == {"status": "ok"}
    body = _json(response)
    return (
        response.status_code == 200
        and isinstance(body, dict)
        and {"items", "total", "limit", "offset"} <= set(body)
        and all(isinstance(r, dict) and "run_id" in r for r in body["items"])
    )


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


class DendruxBackend(RestBackend):
    """The backend for a Dendrux app (see the module docstring). ``trace_wait`` bounds how long the live
    feed waits for a model step's text to land in ``/traces`` after its ``llm.completed`` event, ``gap_wait``
    how long it waits for REST to have an event the stream skipped before counting it missed."""

    server_kind: ServerKind = "dendrux"

    def __init__(
        self, conn: Connection, *, run_grace: float = 10.0, trace_wait: float = 3.0, gap_wait: float = 15.0
    ) -> None:
        super().__init__(conn)
        self.gap_wait = gap_wait
        self.run_grace = run_grace
        self.trace_wait = trace_wait
        self._caps = Capabilities(
            withdraw_notes=False,
            end_session=False,
            approve_comment=False,
            names_decider=False,
            original_args=False,
        )
        self._titles: dict[str, str | None] = {}
        self._note_runs: dict[str, str] = {}
        self._call_runs: dict[str, str] = {}

    @property
    def capabilities(self) -> Capabilities:
        """What this app can do (notes and approvals turn off once the steer router proves missing)."""
        return self._caps

    # ----------------------------------------------------------------------------------- plumbing

    async def get_json(self, path: str, *, what: str = "", params: dict[str, Any] | None = None) -> Any:
        """GET one read-router path as JSON (ClientError on any failure, InvalidResponse if not JSON)."""
        response = await self.conn.request("GET", path, what=what, params=params)
        body = _json(response)
        if body is None:
            raise InvalidResponse(f"the answer to GET {path} is not JSON: is this a Dendrux app?")
        return body

    async def _steer(self, method: str, path: str, run_id: str, what: str, json: Any = None) -> Any:
        """A steer-router call; a 404 on a run that exists means the router is not mounted."""
        try:
            response = await self.conn.request(method, path, what=f"run {run_id[:10]}", json=json)
        except NotFound:
            await self.get_run(run_id)  # NotFound for the run itself propagates from here
            self._caps = replace(self._caps, notes=False, approvals=False)
            raise Unsupported(_NO_STEER.format(what=what)) from None
        return _json(response)

    async def wait_for_run(self, run_id: str) -> dict[str, Any]:
        """The run row of a full run id, its 404 retried for ``run_grace`` seconds: a run the app has just
        started is not visible to its read router for a moment (docs/dendrux.md). NotFound after that."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.run_grace
        delay = 0.05
        while True:
            try:
                return await self.get_run(run_id)
            except NotFound:
                if loop.time() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def get_run(self, run_id: str) -> dict[str, Any]:
        """The run row (``GET /runs/{id}``)."""
        body = await self.get_json(f"/runs/{run_id}", what=f"run {safe_line(run_id, 26)}")
        if not isinstance(body, dict):
            raise InvalidResponse(f"the answer to GET /runs/{run_id} is not a run")
        return body

    # ----------------------------------------------------------------------------------- sessions

    async def health(self) -> Health:
        """``GET /health`` (Dendrux serves it without auth)."""
        body = await self.get_json("/health")
        status = body.get("status") if isinstance(body, dict) else None
        return Health(status=str(status or "unknown"))

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList:
        """``GET /runs`` with the filters Dendrux applies (status, agent, parent run); newest first.

        Dendrux 0.4.1 answers 500 to its own time filters (``started_after``/``started_before``: its router
        imports ``datetime`` for type checking only, so FastAPI cannot read the parameter), so a start date
        and "active within N minutes" (last activity, as on our server) are applied here, over the newest
        ``_MAX_RUNS`` runs (:meth:`_runs_in_time`)."""
        limit = max(1, min(limit, 1000))
        f = filters or SessionFilter()
        params: dict[str, Any] = {"agent_name": f.agent, "parent_run_id": f.parent_session_id}
        if f.status == "active":
            params["status"] = list(ACTIVE_STATUSES)
        elif f.status == "ended":
            params["status"] = sorted(TERMINAL_STATUSES)
        active_since = None
        if f.active_within_minutes is not None:
            active_since = datetime.now(UTC) - timedelta(minutes=f.active_within_minutes)
        if f.start_date is None and active_since is None:
            page = session_list(await self._runs({**params, "limit": limit, "offset": offset}))
        else:
            start = f.start_date.astimezone(UTC) if f.start_date is not None else None
            page = await self._runs_in_time(params, start, active_since, limit=limit, offset=offset)
        await self._learn_titles([s.id for s in page.items if s.id not in self._titles][:_TITLE_FETCHES])
        for session in page.items:
            session.title = session.title or self._titles.get(session.id)
        return page

    async def _runs(self, params: dict[str, Any]) -> dict[str, Any]:
        body = await self.get_json("/runs", what="runs", params=params)
        if not isinstance(body, dict):
            raise InvalidResponse("the answer to GET /runs is not a page of runs: is this a Dendrux app?")
        return body

    async def _runs_in_time(
        self,
        params: dict[str, Any],
        start: datetime | None,
        active_since: datetime | None,
        *,
        limit: int,
        offset: int,
    ) -> SessionList:
        """One page of the runs started at or after ``start`` and last active at or after
        ``active_since``, read newest first ``_SCAN_PAGE`` runs at a time: the reading stops once the
        page and one more are found, at the first run started before ``start`` (every later one is older),
        or after ``_MAX_RUNS`` runs. ``total`` is known only when every run was read."""
        kept: list[Session] = []
        read = 0
        complete = False
        while read < _MAX_RUNS and len(kept) <= offset + limit:
            size = min(_SCAN_PAGE, _MAX_RUNS - read)
            body = await self._runs({**params, "limit": size, "offset": read})
            rows = [r for r in body.get("items") or [] if isinstance(r, dict)]
            read += len(rows)
            for session in map(session_from_run, rows):
                started = session.started_at
                if start is not None:
                    if started is None:
                        continue
                    if started < start:
                        complete = True  # newest first: every run from here on started earlier
                        break
                last = session.last_activity_at or started
                if active_since is not None and (last is None or last < active_since):
                    continue
                kept.append(session)
            total = body.get("total")
            if complete or len(rows) < size or (isinstance(total, int) and read >= total):
                complete = True
                break
        return SessionList(
            items=kept[offset : offset + limit],
            total=len(kept) if complete else None,
            limit=limit,
            offset=offset,
            has_more=len(kept) > offset + limit,
        )

    async def _learn_titles(self, run_ids: list[str]) -> None:
        """A run row in ``GET /runs`` has no input; its detail does. A run's input never changes, so each
        run's title (the input's first line) is fetched once and kept."""
        gate = asyncio.Semaphore(_PARALLEL)

        async def one(run_id: str) -> None:
            async with gate:
                with contextlib.suppress(ClientError):  # a title is a nicety: the row shows a stand-in
                    self._titles[run_id] = session_from_run(await self.get_run(run_id)).title

        await asyncio.gather(*(one(r) for r in run_ids))

    session_scan = _MAX_RUNS

    async def get_session(self, session_id: str) -> Session:
        """One run as a session row. A run the app has just started is waited for (``run_grace``): a
        command given its full id right after the start reads it rather than "not found"."""
        session = session_from_run(await self.wait_for_run(session_id))
        self._titles[session.id] = session.title
        return session

    async def session_activity(self, session_id: str) -> list[ActivityItem]:
        """Dendrux has no activity list; the run's events are the timeline (``follow``)."""
        await self.get_run(session_id)
        return []

    async def end_session(self, session_id: str) -> Session:
        """Not possible: Dendrux cancels a run only from the app's Python code (``Agent.cancel_run``)."""
        raise Unsupported("a Dendrux app's HTTP routes cannot end a run (the app calls Agent.cancel_run)")

    # ----------------------------------------------------------------------------------- notes

    async def send_note(
        self,
        text: str,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        execution_id: str | None = None,
        expires_in_seconds: int | None = None,
        correlation_id: str | None = None,
    ) -> Note:
        """``POST /runs/{id}/notes``: the agent reads it at its next iteration (a paused run: on resuming)."""
        run_id = session_id or execution_id
        if not run_id:
            raise UsageError("on a Dendrux app a note goes to a run: pass the run id (--session)")
        if agent_id is not None:
            raise UsageError("a Dendrux app takes notes for a run, not for an agent")
        require_sendable(text)
        try:
            body = await self._steer("POST", f"/runs/{run_id}/notes", run_id, "notes", json={"text": text})
        except Conflict as exc:
            # The steer router's 409 for a finished run (RunAlreadyTerminalError); its other 409 (an
            # agent this app does not host) stays what it is.
            if not await self._run_over(run_id, exc):
                raise
            raise SessionEnded(f"run {run_id[:10]}", exc.detail) from None
        if not isinstance(body, dict):
            raise InvalidResponse("the answer to POST /runs/{id}/notes is not a note")
        note = note_from_row(body, run_id)
        self._note_runs[note.note_id] = run_id
        return note

    async def _run_over(self, run_id: str, conflict: Conflict) -> bool:
        """Whether a 409 for a note means the run has finished: the router names Dendrux's error, and an
        app on another version may not, so the run row decides then."""
        if conflict.detail.startswith("RunAlreadyTerminalError"):
            return True
        try:
            return str((await self.get_run(run_id)).get("status")) in TERMINAL_STATUSES
        except ClientError:
            return False

    async def list_notes(
        self,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        execution_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> NoteList:
        """``GET /runs/{id}/notes``: one run's notes (delivered / pending / undeliverable)."""
        run_id = session_id or execution_id
        if not run_id:
            raise UsageError("on a Dendrux app notes are listed per run: pass the run id (--session)")
        body = await self._steer("GET", f"/runs/{run_id}/notes", run_id, "notes")
        rows = body.get("notes") if isinstance(body, dict) else None
        ended = isinstance(body, dict) and body.get("run_status") in TERMINAL_STATUSES
        notes = [note_from_row(r, run_id, run_ended=ended) for r in rows or [] if isinstance(r, dict)]
        for note in notes:
            self._note_runs[note.note_id] = run_id
        if state is not None:
            notes = [n for n in notes if n.state == state]
        return NoteList(notes=notes[offset : offset + limit], total=len(notes))

    async def get_note(self, note_id: str) -> Note:
        """A note this backend has seen (sent or listed): Dendrux looks notes up by run only."""
        run_id = self._note_runs.get(note_id)
        if run_id is None:
            raise Unsupported("a Dendrux app looks notes up by run: list the run's notes first (--session)")
        for note in (await self.list_notes(session_id=run_id)).notes:
            if note.note_id == note_id:
                return note
        raise NotFound(404, f"note {note_id[:10]} not found")

    async def withdraw_note(self, note_id: str) -> Note:
        """Not possible: Dendrux keeps every submitted note until the agent reads it or the run ends."""
        raise Unsupported("a Dendrux app cannot withdraw a note once it is submitted")

    # ----------------------------------------------------------------------------------- approvals

    async def _run_approvals(self, run_id: str) -> list[Approval]:
        body = await self._steer("GET", f"/runs/{run_id}/approvals", run_id, "approval decisions")
        rows = body.get("items") if isinstance(body, dict) else None
        out = [a for r in rows or [] if isinstance(r, dict) and (a := approval_from_row(r, run_id))]
        for approval in out:
            self._call_runs[approval.id] = run_id
        return out

    async def list_approvals(
        self,
        *,
        session_id: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
        skip: int = 0,
    ) -> ApprovalPage:
        """Approval-gated calls, oldest first: one run's, or, across runs, the pending ones of every run
        waiting for approval, and (``status`` other than pending) every decided one of the newest
        ``_HISTORY_RUNS`` runs. Dendrux keeps no list of approvals: each run is asked for its own."""
        if session_id is not None:
            runs = [session_id]
        elif status == "pending":
            runs = [
                s.id
                async for s in self.iter_sessions(max_items=_MAX_RUNS)
                if s.activity_status == "waiting_approval"
            ]
        else:
            runs = [s.id async for s in self.iter_sessions(max_items=_HISTORY_RUNS)]
        gate = asyncio.Semaphore(_PARALLEL)

        async def of_run(run_id: str) -> list[Approval]:
            async with gate:
                return await self._run_approvals(run_id)

        items = [a for found in await asyncio.gather(*map(of_run, runs)) for a in found]
        if status is not None:
            items = [a for a in items if a.status == status]
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        items.sort(key=lambda a: a.requested_at or epoch)
        return ApprovalPage(items=items[skip : skip + limit], total=len(items))

    async def _run_of_call(self, approval_id: str) -> str:
        """The run a call id belongs to: known from a listing, else looked for among the waiting runs,
        then among the newest runs' decided calls."""
        for status in ("pending", None):
            run_id = self._call_runs.get(approval_id)
            if run_id is not None:
                return run_id
            await self.list_approvals(status=status)
        run_id = self._call_runs.get(approval_id)
        if run_id is None:
            raise NotFound(404, f"no run has an approval-gated call {safe_line(approval_id, 26)}")
        return run_id

    async def get_approval(self, approval_id: str) -> Approval:
        """One approval-gated call as it is now: pending, or decided with its reason."""
        run_id = await self._run_of_call(approval_id)
        for approval in await self._run_approvals(run_id):
            if approval.id == approval_id:
                return approval
        raise NotFound(404, f"call {safe_line(approval_id, 26)} is not an approval-gated call of its run")

    async def _decide(self, approval_id: str, approved: bool, comment: str | None) -> Approval:
        run_id = await self._run_of_call(approval_id)
        decision: dict[str, Any] = {"approved": approved, "reason": comment}
        await self._steer(
            "POST",
            f"/runs/{run_id}/approvals",
            run_id,
            "approval decisions",
            json={"decisions": {approval_id: decision}},
        )
        for approval in await self._run_approvals(run_id):
            if approval.id == approval_id:
                return approval
        status = "approved" if approved else "declined"
        return Approval(id=approval_id, status=status, approver_comment=comment, runtime_session_id=run_id)

    async def approve(self, approval_id: str, comment: str | None = None) -> Approval:
        """Let the call run (Dendrux resumes the run once every gated call of the pause is decided).
        Dendrux's approval takes no reason: a comment is refused before anything is sent, never dropped
        (``capabilities.approve_comment`` says so up front)."""
        if comment and comment.strip():
            raise Unsupported(NO_APPROVE_COMMENT)
        return await self._decide(approval_id, True, None)

    async def decline(self, approval_id: str, comment: str | None = None) -> Approval:
        """Deny the call; the model reads ``comment`` as the reason."""
        return await self._decide(approval_id, False, comment)

    async def original_args(self, approval_id: str) -> dict[str, Any]:
        """A Dendrux app redacts nothing of a gated call: its params are the call's own."""
        raise Unsupported("a Dendrux app keeps a gated call's params as they are: nothing was redacted")

    async def decide_batch(
        self, approval_ids: Sequence[str], *, approve: bool, comment: str | None = None
    ) -> list[BatchItem]:
        """One call per approval (the steer router decides the calls of one run's pause, no batch across
        runs): the calls of one run one after another (the last decision of a pause resumes the run),
        several runs at a time; each call's answer or failure is its item. An approval's comment is
        refused before anything is sent, as for one."""
        if approve and comment and comment.strip():
            raise Unsupported(NO_APPROVE_COMMENT)
        ids = list(dict.fromkeys(approval_ids))
        runs: dict[str | None, list[str]] = {}
        for approval_id in ids:
            try:
                run_id: str | None = await self._run_of_call(approval_id)
            except ClientError:
                run_id = None  # its own call says what is wrong with it
            runs.setdefault(run_id, []).append(approval_id)
        found: dict[str, BatchItem] = {}
        gate = asyncio.Semaphore(_PARALLEL)

        async def one_run(calls: list[str]) -> None:
            async with gate:
                for approval_id in calls:
                    try:
                        row = await self._decide(approval_id, approve, comment)
                    except ClientError as exc:
                        found[approval_id] = BatchItem(approval_id, decided=False, error=exc)
                        continue
                    status = "approved" if approve else "declined"
                    found[approval_id] = BatchItem(approval_id, decided=True, status=status, approval=row)

        await asyncio.gather(*(one_run(calls) for calls in runs.values()))
        return [found[approval_id] for approval_id in ids]

    # ----------------------------------------------------------------------------------- live

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncGenerator[Event | StreamStatus, None]:
        """The run's events after local seq ``after`` (see :mod:`client.backends.dendrux.feed`); a run is
        read whole (``tail`` is not offered: the gap check needs the run's events from the start)."""
        from client.backends.dendrux import feed

        async with aclosing(feed.follow(self, session_id, after=after)) as items:
            async for item in items:
                yield item

    async def history(
        self, session_id: str, *, since: datetime | None = None, after: Place | None = None
    ) -> list[Event]:
        """The run's events after the place ``after`` (by its Dendrux index) or since ``since`` (found by
        index with a few one-event requests: the app has no time filter), mapped as a follow does
        (:func:`client.backends.dendrux.feed.history`)."""
        from client.backends.dendrux import feed

        return await feed.history(self, session_id, since=since, after=after)

    def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        """Every run's pending approvals and undelivered notes, polled (:mod:`client.backends.attention`)."""
        from client.backends.attention import poll_attention

        return poll_attention(self, notes_window, interval=poll_interval)
