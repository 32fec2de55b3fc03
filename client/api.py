"""The typed API client: one object, one ``httpx.AsyncClient``, every call the TUI and the CLI make.

::

    async with Client("http://127.0.0.1:8765", token) as client:
        page = await client.list_sessions(SessionFilter(status="active"))
        async for item in client.follow(page.items[0].id):
            ...  # Event | StreamStatus

It talks to a Preloop 0.17.1 server and to our local control plane with the same REST calls; only the live
channel differs (SSE here in :mod:`client.follow`, a websocket in ``client.preloop_live``). Every failure is
a :mod:`client.errors` exception with a sentence for people; every answer is validated by a pydantic model,
and an answer of the wrong shape is an :class:`~client.errors.InvalidResponse`, never a traceback.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from client.backend import ApprovalPage, Backend, ServerKind, SessionFilter
from client.errors import (
    ApiError,
    ClientError,
    ConnectionLost,
    InvalidResponse,
    NoteOutcomeUnknown,
    ServerUnreachable,
    Timeout,
    TransportError,
    UsageError,
    error_for_status,
)
from client.events import Event
from client.ids import match_prefix, normalise_prefix, require_note_id, require_uuid, short_id
from client.models import (
    ActivityItem,
    ActivityList,
    Approval,
    ApprovalDecision,
    AttentionSnapshot,
    Health,
    Note,
    NoteCreate,
    NoteList,
    Session,
    SessionDetail,
    SessionList,
)
from client.notetext import NOTE_EMPTY, note_text_problem
from client.status import StreamStatus
from client.textsafe import safe_line

__all__ = ["API_PREFIX", "Client", "open_client"]

API_PREFIX = "/api/v1"
_M = TypeVar("_M", bound=BaseModel)
_approvals_adapter: TypeAdapter[list[Approval]] = TypeAdapter(list[Approval])

# Counters a Preloop session *detail* leaves empty although the list row has them.
_LIST_ONLY_FIELDS = ("tool_call_count", "pending_approval_count", "note_count", "cwd")
_RESOLVE_LIMIT = 10_000


def _display_url(url: str) -> str:
    """The URL for messages: without user:password, query or fragment, which may carry secrets."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "the server"
    return str(parsed.copy_with(username=None, password=None, query=None, fragment=None))


def _check_token(token: str | None) -> str | None:
    """A token goes into a header: refuse one that cannot, without ever echoing it (httpx would)."""
    if token is None or not token.strip():
        return None
    token = token.strip()
    if any(not (0x21 <= ord(ch) <= 0x7E) for ch in token):
        raise UsageError(
            "the token contains spaces, line breaks or non-ASCII characters: copy it again "
            "(`preloop login --with-token` reads it from standard input)"
        )
    return token


class Client:
    """One connection pool to one server with one token; implements :class:`client.backend.Backend`.

    ``transport`` is injectable (tests pass a fault-injecting transport); ``server_kind`` may be given when
    known (a profile remembers it), otherwise :meth:`detect_server_kind` or the first :meth:`follow` asks.
    ``stall_timeout`` (default twice ``keepalive_interval``) is how long an event stream may stay silent
    before the follower reconnects.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 10.0,
        server_kind: ServerKind | None = None,
        keepalive_interval: float = 15.0,
        stall_timeout: float | None = None,
        backoff_initial: float = 1.0,
        backoff_max: float = 30.0,
    ) -> None:
        url = base_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"server URL must start with http:// or https:// (got '{safe_line(url, 80)}')")
        self.base_url = url
        self._token = _check_token(token)
        self._server_kind: ServerKind | None = server_kind
        self.timeout = timeout
        self.stall_timeout = stall_timeout if stall_timeout is not None else 2 * keepalive_interval
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self._http = httpx.AsyncClient(
            base_url=url,
            transport=transport,
            timeout=httpx.Timeout(timeout),
            headers={"Accept": "application/json", **self.auth_headers()},
            follow_redirects=False,
        )

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r}, server_kind={self._server_kind!r}, token=***)"

    # --------------------------------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; open streams end."""
        await self._http.aclose()

    # --------------------------------------------------------------------------------------- identity

    @property
    def server_kind(self) -> ServerKind:
        """The kind of server, once known; reads as ``"local"`` (our own server) until detected."""
        return self._server_kind or "local"

    @server_kind.setter
    def server_kind(self, value: ServerKind) -> None:
        self._server_kind = value

    @property
    def server_kind_known(self) -> bool:
        """False until given or detected; :meth:`follow` detects it itself when needed."""
        return self._server_kind is not None

    @property
    def display_url(self) -> str:
        """The server URL safe to show (no credentials, query or fragment)."""
        return _display_url(self.base_url)

    @property
    def has_token(self) -> bool:
        """Lets a UI say "no token" up front instead of waiting for the server's 401."""
        return self._token is not None

    def auth_headers(self) -> dict[str, str]:
        """The headers that authenticate a request (the websocket follower sends the same ones)."""
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    async def detect_server_kind(self) -> ServerKind:
        """Ask /health which kind of server this is: ours says ``"local"``, Preloop says nothing."""
        health = await self.health()
        kind: ServerKind = "local" if health.server_kind == "local" else "preloop"
        self._server_kind = kind
        return kind

    # --------------------------------------------------------------------------------------- plumbing

    def _transport_error(self, exc: httpx.TransportError, method: str, path: str) -> TransportError:
        where = self.display_url
        if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError | httpx.UnsupportedProtocol):
            return ServerUnreachable(
                f"cannot reach {where}: is the server running? (`preloop serve` starts a local one)"
            )
        if isinstance(exc, httpx.TimeoutException):
            return Timeout(f"{method} {path} got no answer from {where} within {self.timeout:g} s")
        return ConnectionLost(f"the connection to {where} broke during {method} {path}")

    async def _request(
        self,
        method: str,
        path: str,
        *,
        what: str = "",
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        url = API_PREFIX + path
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = await self._http.request(method, url, params=clean or None, json=json)
        except httpx.TransportError as exc:
            raise self._transport_error(exc, method, url) from None
        if response.status_code >= 400:
            raise self.api_error(response, what)
        if response.status_code >= 300:
            raise self._redirected(response)
        return response

    def _redirected(self, response: httpx.Response) -> InvalidResponse:
        """Redirects are not followed (the token must not travel to another host): say where it points."""
        target = (
            _display_url(response.headers.get("location", "")) if response.headers.get("location") else "?"
        )
        return InvalidResponse(
            f"the server redirects {response.request.url.path} to {safe_line(target, 120)}: "
            "use that address as the server URL"
        )

    def api_error(self, response: httpx.Response, what: str) -> ApiError:
        """The error an error answer means, with the token scrubbed from the server's text; the SSE
        follower uses it too, so a refused stream reads exactly like a refused REST call."""
        try:
            body: Any = response.json()
        except ValueError:
            # Not cut here: ``error_for_status`` scrubs the token first and then shortens (a cut first
            # could leave the start of an echoed token that no longer matches the whole one).
            body = response.text
        return error_for_status(
            response.status_code,
            body,
            what=what,
            token_sent=self._token is not None,
            retry_after=response.headers.get("retry-after"),
            secret=self._token,
        )

    def _invalid(self, response: httpx.Response, exc: Exception) -> InvalidResponse:
        path = response.request.url.path
        detail = "wrong shape"
        if isinstance(exc, ValidationError) and exc.error_count():
            first = exc.errors()[0]
            where = safe_line(".".join(str(p) for p in first["loc"]), 60)
            if first["type"] == "json_invalid":
                detail = "not JSON"
            elif where:
                detail = f"{exc.error_count()} field error(s), first at '{where}'"
        return InvalidResponse(
            f"the answer to {response.request.method} {path} could not be read ({detail}): "
            "is this a Preloop-compatible server?"
        )

    def _parse(self, response: httpx.Response, model: type[_M]) -> _M:
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise self._invalid(response, exc) from None

    # --------------------------------------------------------------------------------------- health

    async def health(self) -> Health:
        """Check the server answers at all; also tells our server from Preloop."""
        return self._parse(await self._request("GET", "/health"), Health)

    # --------------------------------------------------------------------------------------- sessions

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList:
        """One page of sessions; keep paging while ``has_more`` (``total`` may be null)."""
        f = filters or SessionFilter()
        params: dict[str, Any] = {
            "status": f.status,
            "active_within_minutes": f.active_within_minutes,
            "agent": f.agent,
            "agent_kind": f.agent_kind,
            "start_date": f.start_date.astimezone(UTC).isoformat() if f.start_date else None,
            "parent_session_id": f.parent_session_id,
            "flow_execution_id": f.flow_execution_id,
            "limit": limit,
            "offset": offset,
        }
        response = await self._request("GET", "/runtime-sessions", params=params)
        return self._parse(response, SessionList)

    async def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]:
        """Every session matching ``filters`` across pages, up to ``max_items``, following ``has_more``."""
        offset = 0
        seen = 0
        while seen < max_items:
            page = await self.list_sessions(filters, limit=min(page_size, max_items - seen), offset=offset)
            for item in page.items:
                yield item
                seen += 1
                if seen >= max_items:
                    return
            if not page.has_more or not page.items:
                return
            offset += len(page.items)

    async def get_session(self, session_id: str) -> Session:
        """The session detail, with the counters Preloop's detail leaves empty filled from its list row."""
        sid = require_uuid(session_id)
        response = await self._request("GET", f"/runtime-sessions/{sid}", what=f"session {short_id(sid)}")
        session = self._parse(response, SessionDetail).session
        if self._server_kind == "local":
            return session  # our server fills the detail completely
        # Preloop's detail sends 0/None for these even when the list row has them (captures 017 vs 012).
        missing = [name for name in _LIST_ONLY_FIELDS if not getattr(session, name)]
        if not missing:
            return session
        try:
            async for row in self.iter_sessions(SessionFilter(status="all"), max_items=500):
                if row.id.lower() == sid:
                    update = {n: getattr(row, n) for n in missing if getattr(row, n) is not None}
                    return session.model_copy(update=update) if update else session
        except ClientError:
            pass  # the detail itself is fine; the counters just stay unknown
        return session

    async def resolve_session_id(self, id_or_prefix: str, *, page_size: int = 100) -> str:
        """Turn a full UUID or a short id (≥ 4 hex characters) into a full id, looking across all pages."""
        text = id_or_prefix.strip()
        if len(text) == 36:
            return require_uuid(text)
        prefix = normalise_prefix(text)
        candidates: list[str] = []
        sessions = self.iter_sessions(
            SessionFilter(status="all"), max_items=_RESOLVE_LIMIT, page_size=page_size
        )
        async for row in sessions:
            if row.id.lower().startswith(prefix):
                candidates.append(row.id.lower())
        return match_prefix(prefix, candidates)

    async def session_activity(self, session_id: str) -> list[ActivityItem]:
        """What happened in a session, newest first (Preloop's history; no total)."""
        sid = require_uuid(session_id)
        response = await self._request(
            "GET", f"/runtime-sessions/{sid}/activity", what=f"session {short_id(sid)}"
        )
        return self._parse(response, ActivityList).items

    async def end_session(self, session_id: str) -> Session:
        """Ask the server to end a session; pending notes become undeliverable."""
        sid = require_uuid(session_id)
        response = await self._request(
            "PATCH", f"/runtime-sessions/{sid}", what=f"session {short_id(sid)}", json={"action": "end"}
        )
        return self._parse(response, Session)

    # --------------------------------------------------------------------------------------- notes

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
        """Send a note exactly once: a ``correlation_id`` is always attached so a deliberate retry with the
        same id returns the first note (on our server); if the answer is lost, raise NoteOutcomeUnknown
        rather than guess."""
        targets = [t for t in (session_id, agent_id, execution_id) if t]
        if len(targets) != 1:
            raise UsageError("a note needs exactly one target: a session, an agent or an execution")
        problem = note_text_problem(text)
        if problem is not None:
            raise UsageError(f"{problem}: type something to send" if problem == NOTE_EMPTY else problem)
        body = NoteCreate(
            text=text,
            runtime_session_id=require_uuid(session_id) if session_id else None,
            agent_id=require_uuid(agent_id, "agent id") if agent_id else None,
            execution_id=require_uuid(execution_id, "execution id") if execution_id else None,
            expires_in_seconds=expires_in_seconds,
            correlation_id=correlation_id or uuid.uuid4().hex,
        )
        cid = body.correlation_id or ""
        url = API_PREFIX + "/operator-notes"
        what = f"session {short_id(session_id)}" if session_id else "the note's target"
        try:
            response = await self._http.post(url, json=body.model_dump(exclude_none=True))
        except (
            httpx.ConnectError,
            httpx.ConnectTimeout,
            httpx.PoolTimeout,
            httpx.UnsupportedProtocol,
        ) as exc:
            # Nothing left this machine: safe to say "not sent".
            err = self._transport_error(exc, "POST", url)
            raise type(err)(f"{err.hint}; the note was not sent") from None
        except httpx.TransportError as exc:
            reason = (
                "no answer in time" if isinstance(exc, httpx.TimeoutException) else "the connection broke"
            )
            raise NoteOutcomeUnknown(cid, reason) from None
        if response.status_code in (502, 504):
            # a proxy gave up waiting: the server behind it may well have created the note
            raise NoteOutcomeUnknown(cid, f"a proxy answered {response.status_code}")
        if response.status_code >= 400:
            raise self.api_error(response, what)
        try:
            note = self._parse(response, Note)
        except InvalidResponse:
            raise NoteOutcomeUnknown(cid, "the answer could not be read") from None
        self._poll_soon(note.runtime_session_id)
        return note

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
        """Notes for one target (the server refuses a list without one), newest first."""
        params = {
            "runtime_session_id": require_uuid(session_id) if session_id else None,
            "agent_id": require_uuid(agent_id, "agent id") if agent_id else None,
            "execution_id": require_uuid(execution_id, "execution id") if execution_id else None,
            "state": state,
            "limit": limit,
            "offset": offset,
        }
        response = await self._request("GET", "/operator-notes", params=params)
        return self._parse(response, NoteList)

    async def get_note(self, note_id: str) -> Note:
        """A note as it is now (states move as the agent picks it up)."""
        nid = require_note_id(note_id)
        response = await self._request("GET", f"/operator-notes/{nid}", what=f"note {nid}")
        return self._parse(response, Note)

    async def withdraw_note(self, note_id: str) -> Note:
        """Cancel a note; the answer is the note as it now is: read ``state`` (only pending ones cancel)."""
        nid = require_note_id(note_id)
        response = await self._request("POST", f"/operator-notes/{nid}/cancel", what=f"note {nid}")
        note = self._parse(response, Note)
        self._poll_soon(note.runtime_session_id)
        return note

    # --------------------------------------------------------------------------------------- approvals

    async def list_approvals(
        self,
        *,
        session_id: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
        skip: int = 0,
    ) -> ApprovalPage:
        """Approval requests (pending by default); the total comes from ``X-Total-Count``."""
        params = {
            "runtime_session_id": require_uuid(session_id) if session_id else None,
            "status": status,
            "limit": limit,
            "skip": skip,
        }
        response = await self._request("GET", "/approval-requests", params=params)
        try:
            items = _approvals_adapter.validate_json(response.content)
        except ValidationError as exc:
            raise self._invalid(response, exc) from None
        total_header = response.headers.get("x-total-count")
        total = int(total_header) if total_header and total_header.strip().isdigit() else None
        return ApprovalPage(items=items, total=total)

    async def get_approval(self, approval_id: str) -> Approval:
        """One approval request with its tool arguments and current status."""
        aid = require_uuid(approval_id, "approval id")
        response = await self._request("GET", f"/approval-requests/{aid}", what=f"approval {short_id(aid)}")
        return self._parse(response, Approval)

    async def approve(self, approval_id: str, comment: str | None = None) -> Approval:
        """Let the waiting tool call run; deciding twice is a BadRequest ("Request already approved")."""
        return await self._decide(approval_id, "approve", comment)

    async def decline(self, approval_id: str, comment: str | None = None) -> Approval:
        """Refuse the waiting tool call; the comment reaches the agent."""
        return await self._decide(approval_id, "decline", comment)

    async def _decide(self, approval_id: str, verb: str, comment: str | None) -> Approval:
        aid = require_uuid(approval_id, "approval id")
        body = ApprovalDecision(comment=comment).model_dump(exclude_none=True)
        response = await self._request(
            "POST", f"/approval-requests/{aid}/{verb}", what=f"approval {short_id(aid)}", json=body
        )
        approval = self._parse(response, Approval)
        self._poll_soon(approval.runtime_session_id)
        return approval

    def _poll_soon(self, session_id: str | None) -> None:
        """After a change Preloop will not push (note sent or withdrawn, approval decided), make a live
        Preloop follower of that session poll now, so the change shows at once instead of at its timer."""
        if self._server_kind != "preloop" or not session_id:
            return
        from client.preloop_live import nudge

        nudge(self, session_id)

    # --------------------------------------------------------------------------------------- live

    def events_path(self, session_id: str) -> str:
        """URL path of a session's SSE stream (our local server only)."""
        return f"{API_PREFIX}/runtime-sessions/{require_uuid(session_id)}/events"

    @asynccontextmanager
    async def open_event_stream(self, session_id: str, after: int) -> AsyncIterator[httpx.Response]:
        """Low-level: open the SSE stream resuming after ``after``; the response is not yet checked.

        The read timeout is the stall timeout, so a silent stream raises ``httpx.ReadTimeout``.
        """
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        if after > 0:
            headers["Last-Event-ID"] = str(after)
        timeout = httpx.Timeout(self.timeout, read=self.stall_timeout)
        params = {"after": after} if after > 0 else None
        async with self._http.stream(
            "GET", self.events_path(session_id), headers=headers, params=params, timeout=timeout
        ) as response:
            yield response

    @asynccontextmanager
    async def open_attention_stream(self, notes_since_minutes: int) -> AsyncIterator[httpx.Response]:
        """Low-level: open our server's account-wide attention stream; the response is not yet checked."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        timeout = httpx.Timeout(self.timeout, read=self.stall_timeout)
        async with self._http.stream(
            "GET",
            f"{API_PREFIX}/attention/events",
            headers=headers,
            params={"notes_since_minutes": notes_since_minutes},
            timeout=timeout,
        ) as response:
            yield response

    async def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncIterator[AttentionSnapshot | Event | StreamStatus]:
        """Every session's pending approvals and failed notes: pushed by our server, polled from Preloop.

        Yields a snapshot first (and again after every reconnect or poll), events in between; never ends
        on its own except on a refusal. Feed it to :class:`client.inbox.Inbox`.
        """
        from client.attention_live import follow_attention_local, poll_attention

        if self._server_kind is None:
            with contextlib.suppress(ClientError):
                await self.detect_server_kind()
        if self._server_kind == "preloop":
            async for item in poll_attention(self, notes_window, interval=poll_interval):
                yield item
            return
        async for item in follow_attention_local(self, notes_window, poll_interval=poll_interval):
            yield item

    async def follow(self, session_id: str, *, after: int = 0) -> AsyncIterator[Event | StreamStatus]:
        """Live events of a session after seq ``after``, in order, exactly once, with connection states.

        Ends after the session's end event or a refusal (401/403/404); everything else is retried.
        """
        sid = require_uuid(session_id)
        if self._server_kind is None:
            # Unknown and unanswerable: try our own SSE stream; its follower reports and retries failures.
            with contextlib.suppress(ClientError):
                await self.detect_server_kind()
        if self._server_kind == "preloop":
            from client.preloop_live import follow_preloop  # written separately; imported when needed

            async for item in follow_preloop(self, sid, after=after):
                yield item
            return
        from client.follow import follow_local

        async for item in follow_local(self, sid, after=after):
            yield item


@asynccontextmanager
async def open_client(
    *,
    url: str | None = None,
    token: str | None = None,
    profile: str | None = None,
    server_kind: str | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """A Client for what the flags, environment, profile or local server file name (``client.config``).

    ``server_kind`` ``"local"``/``"preloop"`` forces the kind; ``None``/``"auto"`` uses the profile's or
    detects it. ``options`` go to :class:`Client` (timeout, transport, ...).
    """
    from client.config import resolve_settings

    settings = resolve_settings(url=url, token=token, profile=profile)
    kind: ServerKind | None = settings.server_kind
    if server_kind == "local":
        kind = "local"
    elif server_kind == "preloop":
        kind = "preloop"
    elif server_kind not in (None, "auto"):
        raise UsageError(f"server kind must be local, preloop or auto (got '{server_kind[:20]}')")
    async with Client(settings.url, settings.token, server_kind=kind, **options) as client:
        yield client


if TYPE_CHECKING:

    def _implements_backend(client: Client) -> Backend:
        """mypy checks here that Client satisfies the Backend protocol the TUI and CLI are written against."""
        return client
