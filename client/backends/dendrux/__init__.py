"""A Dendrux 0.4.1 app: Dendrux's read router (runs, events, traces) plus our steer router (notes,
approvals), both mounted by the app (see docs/dendrux.md and :mod:`preloop_steer.dendrux`).

A Dendrux *run* is a session here (``session_id`` = ``run_id``, a ULID). What the server cannot do, the
backend says in :attr:`DendruxBackend.capabilities` so the UI gates those keys and says why:

* a note cannot be withdrawn once submitted (Dendrux has no such call): ``withdraw_notes=False``;
* a run cannot be ended from the read/steer routes: ``end_session=False``;
* a note for a finished run is refused by the steer router (409, ``RunAlreadyTerminalError``): that is
  :class:`~client.errors.SessionEnded`, as on every server;
* an app that mounted only the read router has no notes or approvals: the first call that needs the steer
  router finds out (its routes answer 404 although the run exists) and turns ``notes``/``approvals`` off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

import httpx

from client.backends.base import ApprovalPage, Capabilities, ServerKind, SessionFilter
from client.backends.dendrux.mapping import (
    TERMINAL_STATUSES,
    note_from_row,
    session_from_run,
    session_list,
)
from client.connection import Connection
from client.errors import (
    ClientError,
    Conflict,
    InvalidResponse,
    NotFound,
    SessionEnded,
    Unsupported,
    UsageError,
)
from client.events import Event
from client.ids import match_id
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
from client.status import StreamStatus
from client.textsafe import safe_line

__all__ = ["ACTIVE_STATUSES", "DendruxBackend", "looks_like_dendrux"]

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
_MAX_RUNS = 1000
_TITLE_FETCHES = 50


async def looks_like_dendrux(conn: Connection) -> bool:
    """Whether the server answers like a Dendrux read router (``GET /runs`` → ``{items, total, limit,
    offset}`` of run rows), for ``--server-kind auto``."""
    try:
        response = await conn.http.get("/runs", params={"limit": 1})
    except httpx.HTTPError:
        return False
    if response.status_code in (401, 403):
        # an authorize hook refused us: ask the unauthenticated /health, which Dendrux serves at the root
        try:
            health = await conn.http.get("/health")
        except httpx.HTTPError:
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


class DendruxBackend:
    """The backend for a Dendrux app (see the module docstring). ``trace_wait`` bounds how long the live
    feed waits for a model step's text to land in ``/traces`` after its ``llm.completed`` event, ``gap_wait``
    how long it waits for REST to have an event the stream skipped before counting it missed."""

    server_kind: ServerKind = "dendrux"

    def __init__(
        self, conn: Connection, *, run_grace: float = 10.0, trace_wait: float = 3.0, gap_wait: float = 15.0
    ) -> None:
        self.conn = conn
        self.gap_wait = gap_wait
        self.run_grace = run_grace
        self.trace_wait = trace_wait
        self._caps = Capabilities(notes=True, withdraw_notes=False, approvals=True, end_session=False)
        self._titles: dict[str, str | None] = {}
        self._note_runs: dict[str, str] = {}
        self._call_runs: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"DendruxBackend(base_url={self.conn.base_url!r}, token=***)"

    @property
    def capabilities(self) -> Capabilities:
        """What this app can do (notes and approvals turn off once the steer router proves missing)."""
        return self._caps

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; open streams end."""
        await self.conn.aclose()

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
            self._caps = Capabilities(notes=False, withdraw_notes=False, approvals=False, end_session=False)
            raise Unsupported(_NO_STEER.format(what=what)) from None
        return _json(response)

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
        """``GET /runs`` with the filters Dendrux has (status, agent, start date); newest first."""
        params: dict[str, Any] = {"limit": max(1, min(limit, 1000)), "offset": offset}
        f = filters or SessionFilter()
        if f.status == "active":
            params["status"] = list(ACTIVE_STATUSES)
        elif f.status == "ended":
            params["status"] = sorted(TERMINAL_STATUSES)
        params["agent_name"] = f.agent
        params["parent_run_id"] = f.parent_session_id
        since = f.start_date
        if f.active_within_minutes is not None:
            recent = datetime.now(UTC) - timedelta(minutes=f.active_within_minutes)
            since = recent if since is None else max(since, recent)
        if since is not None:
            params["started_after"] = since.isoformat()
        body = await self.get_json("/runs", what="runs", params=params)
        if not isinstance(body, dict):
            raise InvalidResponse("the answer to GET /runs is not a page of runs: is this a Dendrux app?")
        page = session_list(body)
        await self._learn_titles([s.id for s in page.items if s.id not in self._titles][:_TITLE_FETCHES])
        for session in page.items:
            session.title = session.title or self._titles.get(session.id)
        return page

    async def _learn_titles(self, run_ids: list[str]) -> None:
        """A run row in ``GET /runs`` has no input; its detail does. A run's input never changes, so each
        run's title (the input's first line) is fetched once and kept."""
        gate = asyncio.Semaphore(4)

        async def one(run_id: str) -> None:
            async with gate:
                with contextlib.suppress(ClientError):  # a title is a nicety: the row shows a stand-in
                    self._titles[run_id] = session_from_run(await self.get_run(run_id)).title

        await asyncio.gather(*(one(r) for r in run_ids))

    async def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]:
        """Every run matching ``filters``, page by page, up to ``max_items``."""
        offset = 0
        seen = 0
        while seen < max_items:
            page = await self.list_sessions(filters, limit=min(page_size, max_items - seen), offset=offset)
            for session in page.items:
                yield session
            seen += len(page.items)
            offset += len(page.items)
            if not page.has_more or not page.items:
                return

    async def get_session(self, session_id: str) -> Session:
        """One run as a session row."""
        session = session_from_run(await self.get_run(session_id))
        self._titles[session.id] = session.title
        return session

    async def resolve_session_id(self, id_or_prefix: str, *, page_size: int = 100) -> str:
        """A full run id from a full id or the first characters of one (ULIDs are upper-case base32)."""
        text = id_or_prefix.strip().upper()
        if not text or not text.isalnum():
            raise UsageError(f"'{safe_line(id_or_prefix, 40)}' is not a Dendrux run id or the start of one")
        if len(text) == 26:
            try:
                await self.get_run(text)
                return text
            except NotFound:
                pass
        if len(text) < 4:
            raise UsageError("give at least 4 characters of the run id")
        runs = self.iter_sessions(max_items=_MAX_RUNS, page_size=page_size)
        return match_id(text, [s.id async for s in runs], "run")

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
        items = body.get("items") if isinstance(body, dict) else None
        out: list[Approval] = []
        for item in items or []:
            if not isinstance(item, dict) or not item.get("call_id"):
                continue
            call_id = str(item["call_id"])
            self._call_runs[call_id] = run_id
            out.append(
                Approval.model_validate(
                    {
                        "id": call_id,
                        "tool_name": item.get("tool_name"),
                        "tool_args": item.get("params") or {},
                        "status": item.get("status") or "pending",
                        "requested_at": item.get("requested_at"),
                        "approver_comment": item.get("reason"),
                        "runtime_session_id": run_id,
                        "execution_id": run_id,
                        "session": {"id": run_id},
                    }
                )
            )
        return out

    async def list_approvals(
        self,
        *,
        session_id: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
        skip: int = 0,
    ) -> ApprovalPage:
        """The gated calls of runs waiting for approval (one run, or every waiting run)."""
        if session_id is not None:
            runs = [session_id]
        else:
            runs = [
                s.id
                async for s in self.iter_sessions(max_items=_MAX_RUNS)
                if s.activity_status == "waiting_approval"
            ]
        items: list[Approval] = []
        for run_id in runs:
            items += await self._run_approvals(run_id)
        if status is not None:
            items = [a for a in items if a.status == status]
        return ApprovalPage(items=items[skip : skip + limit], total=len(items))

    async def _run_of_call(self, approval_id: str) -> str:
        run_id = self._call_runs.get(approval_id)
        if run_id is None:
            await self.list_approvals(status=None)
            run_id = self._call_runs.get(approval_id)
        if run_id is None:
            raise NotFound(404, f"no run is waiting for approval of call {safe_line(approval_id, 26)}")
        return run_id

    async def get_approval(self, approval_id: str) -> Approval:
        """One gated call of a waiting run."""
        run_id = await self._run_of_call(approval_id)
        for approval in await self._run_approvals(run_id):
            if approval.id == approval_id:
                return approval
        raise NotFound(404, f"call {safe_line(approval_id, 26)} is no longer waiting for approval")

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
        """Let the call run (Dendrux resumes the run once every gated call of the pause is decided)."""
        return await self._decide(approval_id, True, None)

    async def decline(self, approval_id: str, comment: str | None = None) -> Approval:
        """Deny the call; the model reads ``comment`` as the reason."""
        return await self._decide(approval_id, False, comment)

    # ----------------------------------------------------------------------------------- live

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncGenerator[Event | StreamStatus, None]:
        """The run's events after local seq ``after`` (see :mod:`client.backends.dendrux.feed`); a run is
        read whole (``tail`` is not offered: the gap check needs the run's events from the start)."""
        from client.backends.dendrux.feed import follow_dendrux

        async with aclosing(follow_dendrux(self, session_id, after=after)) as items:
            async for item in items:
                yield item

    async def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        """Every run's pending approvals and undelivered notes, polled (``client.attention_live``)."""
        from client.attention_live import poll_attention

        async with aclosing(poll_attention(self, notes_window, interval=poll_interval)) as items:
            async for item in items:
                yield item
