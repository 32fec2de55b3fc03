"""The FastAPI app of the local control plane: Preloop-shaped operator API, harness API, SSE stream.

``create_app(db_path)`` builds an app whose lifespan opens the database and starts the expiry timer; the
rules live in the desks of :class:`server.control.ControlPlane` (``plane.sessions``, ``plane.notes``,
``plane.approvals``, ``plane.accounts``); this module only maps HTTP onto them. See docs/protocol.md.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from client.errors import UsageError
from client.models import BATCH_MAX_IDS, ApprovalDecision, UtcDatetime
from client.notetext import NOTE_MAX_CHARS, note_text_problem
from client.rules import PATTERN_MAX, RULE_MAX_MINUTES, check_pattern
from server.accounts import Operator, Runtime
from server.attention import window_of
from server.bus import MAX_QUEUED_BYTES, EventBus
from server.control import ControlPlane
from server.errors import ApiError
from server.harness import (
    AgentEventBatch,
    AgentEventsAccepted,
    NotesAckRequest,
    NotesAckResponse,
    PendingNotesRequest,
    PendingNotesResponse,
    PermissionCheckRequest,
    PermissionCheckResponse,
    RuntimeTokenRequest,
    RuntimeTokenResponse,
    SessionEndRequest,
    SessionEndResponse,
)
from server.http_input import Authenticate, BodyGuard, Offset, StrictJsonRoute, validation_error
from server.notes import NoteTarget
from server.store import Store, now_utc
from server.stream import MAX_TAIL, REPLAY_AFTER_HEADER, STORED_THROUGH_HEADER, sse_body

API = "/api/v1"
VERSION = "0.1.0"
NoteState = Literal[
    "pending", "claimed", "delivered", "acknowledged", "cancelled", "expired", "failed", "undeliverable"
]
ApprovalStatusQ = Literal["pending", "approved", "declined", "expired", "cancelled"]


class NoteCreateBody(BaseModel):
    """``POST /api/v1/operator-notes`` with Preloop's validation (1..4096 chars, one target, 60 s..7 d)."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1, max_length=NOTE_MAX_CHARS)
    runtime_session_id: uuid.UUID | None = None
    agent_id: uuid.UUID | None = None
    execution_id: uuid.UUID | None = None
    expires_in_seconds: int | None = Field(default=None, ge=60, le=604800)
    correlation_id: str | None = Field(default=None, min_length=1, max_length=200)

    @field_validator("text")
    @classmethod
    def _sendable(cls, text: str) -> str:
        """The rule the CLI applies (whitespace-only or NUL is refused), so no client can bypass it."""
        problem = note_text_problem(text)
        if problem is not None:
            raise ValueError(problem)
        return text

    @model_validator(mode="after")
    def _one_target(self) -> NoteCreateBody:
        targets = [t for t in (self.runtime_session_id, self.agent_id, self.execution_id) if t is not None]
        if len(targets) != 1:
            raise ValueError(
                "Name exactly one of agent_id, runtime_session_id, execution_id, alias, "
                "external_session_id, children"
            )
        return self


class RuleCreateBody(BaseModel):
    """``POST /api/v1/allow-rules``: a time-boxed rule (``client.rules``); no rule without an end."""

    model_config = ConfigDict(extra="ignore")

    mode: Literal["allow", "mute"]
    duration_minutes: int = Field(ge=1, le=RULE_MAX_MINUTES)
    scope: Literal["session", "agent", "account"] = "session"
    runtime_session_id: uuid.UUID | None = None
    agent_id: uuid.UUID | None = None
    tool_name: str | None = Field(default=None, min_length=1, max_length=200)
    pattern: str | None = Field(default=None, min_length=1, max_length=PATTERN_MAX)
    danger: bool = False
    reason: str | None = Field(default=None, max_length=500)

    @field_validator("pattern")
    @classmethod
    def _parses(cls, pattern: str | None) -> str | None:
        """The pattern parses as the client's does (one parser: ``client.rules``)."""
        if pattern is not None:
            try:
                check_pattern(pattern)
            except UsageError as exc:
                raise ValueError(exc.hint) from None
        return pattern

    @model_validator(mode="after")
    def _scope(self) -> RuleCreateBody:
        if self.scope == "session" and self.runtime_session_id is None:
            raise ValueError("a rule for one session names it (runtime_session_id)")
        if self.scope == "agent" and self.agent_id is None:
            raise ValueError("a rule for one agent names it (agent_id)")
        if self.pattern is not None and self.tool_name is None:
            raise ValueError("an argument pattern belongs to one tool: name it (tool_name)")
        return self


class ApprovalBatchBody(BaseModel):
    """``POST /api/v1/approval-requests/decide-batch``, as Preloop 0.17.1's ``ApprovalBatchDecision``:
    1 to :data:`~client.models.BATCH_MAX_IDS` UUIDs, one decision, an optional comment for every one."""

    model_config = ConfigDict(extra="ignore")

    ids: list[uuid.UUID] = Field(min_length=1, max_length=BATCH_MAX_IDS)
    approved: bool
    comment: str | None = None


class SessionPatchBody(BaseModel):
    """The only change an operator may make to a session (as Preloop): end it."""

    action: Literal["end"]


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _unauthorized(detail: str) -> ApiError:
    return ApiError(401, detail, {"WWW-Authenticate": "Bearer"})


async def operator_of(plane: ControlPlane, authorization: str | None) -> Operator:
    """The operator an ``Authorization`` header names, or the 401 Preloop answers."""
    token = _bearer(authorization)
    if token is None:
        raise _unauthorized("Not authenticated")
    principal = await plane.accounts.authenticate(token)
    if not isinstance(principal, Operator):
        raise _unauthorized("Invalid authentication credentials")
    return principal


async def runtime_of(plane: ControlPlane, authorization: str | None) -> Runtime:
    """The agent session an ``Authorization`` header names (a runtime token), or the 401."""
    token = _bearer(authorization)
    if token is None:
        raise _unauthorized("Runtime bearer token required")
    principal = await plane.accounts.authenticate(token)
    if isinstance(principal, Operator):
        raise _unauthorized("Runtime bearer token required")
    if principal is None:
        raise _unauthorized("Invalid API key")
    return principal


async def _operator(request: Request, authorization: Annotated[str | None, Header()] = None) -> Operator:
    return await operator_of(request.app.state.plane, authorization)


async def _runtime(request: Request, authorization: Annotated[str | None, Header()] = None) -> Runtime:
    return await runtime_of(request.app.state.plane, authorization)


def _body_gate(plane: ControlPlane) -> Authenticate:
    """What :class:`BodyGuard` asks before reading a body: the same check the route's dependency makes."""

    async def check(path: str, authorization: str | None) -> tuple[int, str] | None:
        if not path.startswith(f"{API}/"):
            return None
        try:
            if path.startswith(f"{API}/agents/"):
                await runtime_of(plane, authorization)
            else:
                await operator_of(plane, authorization)
        except ApiError as exc:
            return exc.status, exc.detail
        return None

    return check


Op = Annotated[Operator, Depends(_operator)]
Rt = Annotated[Runtime, Depends(_runtime)]
DecisionBody = Annotated[ApprovalDecision | None, Body()]  # approve/decline: the body is optional
NotesWindow = Annotated[int | None, Query(ge=1, le=10080)]  # attention: how far back failed notes count


def _text(value: uuid.UUID | None) -> str | None:
    """A validated UUID query value as the canonical text the desks compare with stored ids."""
    return str(value) if value is not None else None


def create_app(
    db_path: Path,
    *,
    keepalive_seconds: float = 15.0,
    permission_timeout_seconds: float = 300.0,
    subscriber_queue_bytes: int = MAX_QUEUED_BYTES,
    on_ready: Callable[[ControlPlane], Awaitable[None] | None] | None = None,
) -> FastAPI:
    """A ready-to-serve app over the SQLite file ``db_path`` (created and upgraded on start)."""
    plane = ControlPlane(
        Store(db_path),
        EventBus(subscriber_queue_bytes),
        permission_timeout_seconds=permission_timeout_seconds,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        """Open storage before the first request; release streams and close it on shutdown."""
        try:
            await plane.start()
        except Exception as exc:  # kept for EmbeddedServer.start(), which re-raises it to its caller
            app.state.startup_error = exc
            raise
        if on_ready is not None:
            result = on_ready(plane)
            if result is not None:
                await result
        try:
            yield
        finally:
            await plane.stop()

    app = FastAPI(title="Preloop local control plane", version=VERSION, lifespan=lifespan)
    app.router.route_class = StrictJsonRoute
    app.add_middleware(BodyGuard, authenticate=_body_gate(plane))
    app.state.plane = plane
    app.state.startup_error = None

    app.add_exception_handler(RequestValidationError, validation_error)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover - safety net
        return JSONResponse({"detail": "Internal server error"}, status_code=500)

    # -- health ----------------------------------------------------------------------------------

    @app.get(f"{API}/health")
    async def health() -> dict[str, Any]:
        """Unauthenticated liveness; ``server_kind`` tells a client which live channel to use."""
        return {
            "status": "healthy",
            "timestamp": now_utc().isoformat(),
            "database": "connected",
            "version": VERSION,
            "server_kind": "local",
        }

    # -- runtime sessions ------------------------------------------------------------------------

    @app.get(f"{API}/runtime-sessions")
    async def list_sessions(
        op: Op,
        status: Annotated[str, Query(pattern="^(all|active|ended)$")] = "all",
        active_within_minutes: Annotated[int | None, Query(ge=1, le=525600)] = None,
        agent: str | None = None,
        agent_kind: str | None = None,
        start_date: UtcDatetime | None = None,
        parent_session_id: uuid.UUID | None = None,
        flow_execution_id: str | None = None,
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        """The account's sessions, Preloop's page shape, most recently active first."""
        return await plane.sessions.list_sessions(
            op,
            status=status,
            active_within_minutes=active_within_minutes,
            agent=agent,
            agent_kind=agent_kind,
            start_date=start_date,
            parent_session_id=_text(parent_session_id),
            flow_execution_id=flow_execution_id,
            limit=limit,
            offset=offset,
        )

    @app.get(f"{API}/runtime-sessions/{{session_id}}")
    async def get_session(op: Op, session_id: str) -> dict[str, Any]:
        """One session the operator may see (404 otherwise, also for a non-UUID id)."""
        return await plane.sessions.get_session(op, session_id)

    @app.patch(f"{API}/runtime-sessions/{{session_id}}")
    async def patch_session(op: Op, session_id: str, body: SessionPatchBody) -> dict[str, Any]:
        """End a session from the operator side (idempotent)."""
        session, _ = await plane.sessions.end_session(op.account_id, session_id, "operator")
        return session

    @app.get(f"{API}/runtime-sessions/{{session_id}}/activity")
    async def session_activity(op: Op, session_id: str) -> dict[str, Any]:
        """Newest-first activity, as Preloop lists it."""
        return await plane.sessions.activity(op, session_id)

    @app.get(f"{API}/runtime-sessions/{{session_id}}/events")
    async def session_events(
        op: Op,
        session_id: str,
        after: Annotated[int | None, Query(ge=0)] = None,
        tail: Annotated[int | None, Query(ge=1, le=MAX_TAIL)] = None,
        since: Annotated[UtcDatetime | None, Query()] = None,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> StreamingResponse:
        """Replay from storage after the resume point, then live push; ends after ``session.ended``.

        ``tail=N`` without a resume point replays only the newest N stored events: a client attaching to
        a long session shows its recent history at once instead of reading all of it. ``since=<ISO
        time>`` replays only the events stored at or after that time (a digest of the last half hour reads
        that half hour); with ``tail`` too, the later start wins. Where the replay starts is in the
        ``Preloop-Replay-After`` header (the seq just before the first one sent), the newest stored seq
        when the stream opened in ``Preloop-Stored-Through`` (a reader that wants what is stored now,
        not what comes next, stops there)."""
        start = after or 0
        resume = after is not None
        if last_event_id is not None and last_event_id.strip():
            try:
                start = int(last_event_id.strip())
            except ValueError:
                raise ApiError(400, "Last-Event-ID must be an integer event id") from None
            resume = True
        sid, _, last_seq = await plane.sessions.session_status(op, session_id)
        if tail is not None and not resume:
            start = max(last_seq - tail, 0)
        if since is not None and not resume:
            before = await plane.store.seq_before_time(sid, since)
            start = max(start, last_seq if before is None else before)
        # A resume point beyond the newest event (e.g. an id from a database that was reset) must not
        # hide every new event: start from the newest one instead.
        start = min(max(start, 0), last_seq)
        return StreamingResponse(
            sse_body(plane.store, plane.bus, sid, start, keepalive_seconds),
            media_type="text/event-stream",
            headers={
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                REPLAY_AFTER_HEADER: str(start),
                STORED_THROUGH_HEADER: str(last_seq),
            },
        )

    # -- operator notes --------------------------------------------------------------------------

    @app.post(f"{API}/operator-notes", status_code=201)
    async def create_note(op: Op, body: NoteCreateBody) -> dict[str, Any]:
        """Queue a note for the agent's next turn boundary."""
        return await plane.notes.create_note(
            op,
            NoteTarget.of(body.runtime_session_id, body.agent_id, body.execution_id),
            text=body.text,
            expires_in_seconds=body.expires_in_seconds,
            correlation_id=body.correlation_id,
        )

    @app.get(f"{API}/operator-notes")
    async def list_notes(
        op: Op,
        runtime_session_id: uuid.UUID | None = None,
        agent_id: uuid.UUID | None = None,
        execution_id: uuid.UUID | None = None,
        state: NoteState | None = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        """Notes of one target; naming none is Preloop's 400."""
        target = NoteTarget.of(runtime_session_id, agent_id, execution_id)
        return await plane.notes.list_notes(op, target, state=state, limit=limit, offset=offset)

    @app.get(f"{API}/operator-notes/{{note_id}}")
    async def get_note(op: Op, note_id: str) -> dict[str, Any]:
        """One note of this account."""
        return await plane.notes.get_note(op, note_id)

    @app.post(f"{API}/operator-notes/{{note_id}}/cancel")
    async def cancel_note(op: Op, note_id: str) -> dict[str, Any]:
        """Withdraw a pending note; other states come back unchanged with a 200."""
        return await plane.notes.cancel_note(op, note_id)

    # -- approvals -------------------------------------------------------------------------------

    @app.get(f"{API}/approval-requests")
    async def list_approvals(
        op: Op,
        status: ApprovalStatusQ | None = None,
        runtime_session_id: uuid.UUID | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        skip: Offset = 0,
    ) -> JSONResponse:
        """A bare array with the total in X-Total-Count, as Preloop answers."""
        items, total = await plane.approvals.list_approvals(
            op,
            status=status,
            runtime_session_id=_text(runtime_session_id),
            limit=limit,
            skip=skip,
        )
        return JSONResponse(items, headers={"X-Total-Count": str(total)})

    @app.post(f"{API}/approval-requests/decide-batch")
    async def decide_batch(op: Op, body: ApprovalBatchBody) -> dict[str, Any]:
        """One decision for up to 100 approvals, Preloop's contract: one result per id, in order; the
        batch never fails as a whole (an id that is unknown or already decided is its own result)."""
        return await plane.approvals.decide_batch(
            op, [str(i) for i in body.ids], approve=body.approved, comment=body.comment
        )

    @app.get(f"{API}/approval-requests/{{approval_id}}")
    async def get_approval(op: Op, approval_id: str) -> dict[str, Any]:
        """One approval of this account."""
        return await plane.approvals.get_approval(op, approval_id)

    @app.get(f"{API}/approval-requests/{{approval_id}}/original-args")
    async def original_args(op: Op, approval_id: str) -> dict[str, Any]:
        """Preloop's arguments before redaction: this server redacts nothing, so always its 404."""
        return await plane.approvals.original_args(op, approval_id)

    @app.post(f"{API}/approval-requests/{{approval_id}}/approve")
    async def approve(op: Op, approval_id: str, body: DecisionBody = None) -> dict[str, Any]:
        """Let the waiting tool call run."""
        return await plane.approvals.decide(
            op, approval_id, approve=True, comment=body.comment if body else None
        )

    @app.post(f"{API}/approval-requests/{{approval_id}}/decline")
    async def decline(op: Op, approval_id: str, body: DecisionBody = None) -> dict[str, Any]:
        """Refuse the waiting tool call; the agent gets the comment as its reason."""
        return await plane.approvals.decide(
            op, approval_id, approve=False, comment=body.comment if body else None
        )

    # -- allow rules (ours) ----------------------------------------------------------------------

    @app.get(f"{API}/allow-rules")
    async def list_rules(op: Op, ended: bool = False) -> JSONResponse:
        """The account's allow rules that hold now, the soonest to end first (``ended``: all of them)."""
        return JSONResponse(await plane.rules.list_rules(op, ended=ended))

    @app.post(f"{API}/allow-rules", status_code=201)
    async def create_rule(op: Op, body: RuleCreateBody) -> dict[str, Any]:
        """Make a time-boxed rule; it applies to every approval raised from now until it ends."""
        return await plane.rules.create(
            op,
            mode=body.mode,
            minutes=body.duration_minutes,
            scope=body.scope,
            session_id=_text(body.runtime_session_id),
            agent_id=_text(body.agent_id),
            tool_name=body.tool_name,
            pattern=body.pattern,
            danger=body.danger,
            reason=body.reason,
        )

    @app.post(f"{API}/allow-rules/revoke-all")
    async def revoke_all_rules(op: Op) -> JSONResponse:
        """End every rule of the account that holds now."""
        return JSONResponse(await plane.rules.revoke_all(op))

    @app.delete(f"{API}/allow-rules/{{rule_id}}")
    async def revoke_rule(op: Op, rule_id: str) -> dict[str, Any]:
        """End one rule now."""
        return await plane.rules.revoke(op, rule_id)

    # -- attention (ours) ------------------------------------------------------------------------

    @app.get(f"{API}/attention")
    async def attention(op: Op, notes_since_minutes: NotesWindow = None) -> dict[str, Any]:
        """What needs a human across every session: pending approvals and notes that never arrived."""
        snap = await plane.attention.snapshot(op, window_of(notes_since_minutes))
        return snap.model_dump(mode="json")

    @app.get(f"{API}/attention/events")
    async def attention_events(op: Op, notes_since_minutes: NotesWindow = None) -> StreamingResponse:
        """The attention snapshot, then live approval and failed-note events of every session."""
        return StreamingResponse(
            plane.attention.stream(op, window_of(notes_since_minutes), keepalive_seconds),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # -- who is asking ---------------------------------------------------------------------------

    @app.get(f"{API}/auth/users/me")
    async def users_me(op: Op) -> dict[str, Any]:
        """Preloop's ``users/me``: the operator this token belongs to (a client tells "you" from a
        colleague by ``id``, the user id every decision is stored with)."""
        return {
            "id": op.user_id,
            "account_id": op.account_id,
            "username": op.display,
            "email": None,
            "full_name": op.display,
        }

    # -- harness API -----------------------------------------------------------------------------

    @app.post(f"{API}/auth/runtime-sessions/token", status_code=201, response_model=RuntimeTokenResponse)
    async def mint_runtime_token(op: Op, body: RuntimeTokenRequest) -> RuntimeTokenResponse:
        """Start a runtime session for an agent and give it its own token."""
        return await plane.sessions.mint_runtime_session(op, body)

    @app.post(f"{API}/agents/events", response_model=AgentEventsAccepted)
    async def agent_events(rt: Rt, body: AgentEventBatch) -> AgentEventsAccepted:
        """An agent reports what it did; the server assigns seq, session and time."""
        return await plane.sessions.agent_events(rt, body.events, body.batch_id)

    @app.post(f"{API}/agents/notes/pending", response_model=PendingNotesResponse)
    async def pending_notes(
        rt: Rt, body: Annotated[PendingNotesRequest | None, Body()] = None
    ) -> PendingNotesResponse:
        """The agent picks up notes at a turn boundary."""
        return await plane.notes.claim_notes(rt, body or PendingNotesRequest())

    @app.post(f"{API}/agents/notes/ack", response_model=NotesAckResponse)
    async def ack_notes(rt: Rt, body: NotesAckRequest) -> NotesAckResponse:
        """Deferred notes are now in front of the model."""
        await plane.notes.ack_notes(rt, body.note_ids)
        return NotesAckResponse(ok=True)

    @app.post(f"{API}/agents/permission-check", response_model=PermissionCheckResponse)
    async def permission_check(rt: Rt, body: PermissionCheckRequest) -> PermissionCheckResponse:
        """A tool call about to run; blocks on a human when the agent asks for one."""
        return await plane.approvals.permission_check(rt, body)

    @app.post(f"{API}/agents/session-end", response_model=SessionEndResponse)
    async def session_end(
        rt: Rt, body: Annotated[SessionEndRequest | None, Body()] = None
    ) -> SessionEndResponse:
        """The agent is done: notes left pending become undeliverable."""
        return await plane.sessions.harness_end(rt, body.reason if body else None)

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        """Say what this is to someone who opens the base URL."""
        return JSONResponse({"service": "preloop local control plane", "api": API, "docs": "/docs"})

    return app
