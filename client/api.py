"""``Client``: a backend for a server whose kind may not be known yet, plus ``open_client``.

::

    async with Client("http://127.0.0.1:8765", token) as client:
        page = await client.list_sessions(SessionFilter(status="active"))
        async for item in client.follow(page.items[0].id):
            ...  # Event | StreamStatus

It owns one :class:`~client.connection.Connection` (one ``httpx.AsyncClient``, injectable ``transport=``).
Given a ``server_kind`` it is that kind's backend from :func:`client.backends.backend_for` at once;
otherwise it asks ``/api/v1/health`` the first time the kind matters (a live feed) and then delegates to
the backend :func:`~client.backends.backend_for` gives, on the same connection. REST calls that every
Preloop-shaped server answers alike do not wait for that. It holds no server-kind branches of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import httpx

from client.backends import backend_for, detect_server_kind, open_backend, parse_server_kind
from client.backends.base import ApprovalPage, Backend, Capabilities, ServerKind, SessionFilter
from client.backends.rest import API_PREFIX, PreloopRestApi
from client.connection import Connection
from client.errors import ClientError
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
from client.streaming.policy import BACKOFF_INITIAL, BACKOFF_MAX

if TYPE_CHECKING:  # the event vocabulary is built only by a process that streams (~0.1 s of pydantic)
    from client.events import Event
    from client.status import StreamStatus

__all__ = ["API_PREFIX", "Client", "open_client"]

_T = TypeVar("_T")
_UNKNOWN = Capabilities()  # until the kind is known: what every Preloop-shaped server can do


class Client:
    """One connection to one server with one token; implements :class:`client.backends.base.Backend`.

    ``transport`` is injectable (tests pass a fault-injecting transport); ``server_kind`` may be given when
    known (a profile remembers it), otherwise :meth:`detect_server_kind` or the first :meth:`follow` asks.
    ``stall_timeout`` (default twice ``keepalive_interval``) is how long an event stream may stay silent
    before the follower reconnects. ``token_source`` reads the token again after a 401
    (:class:`~client.connection.Connection`).
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
        backoff_initial: float = BACKOFF_INITIAL,
        backoff_max: float = BACKOFF_MAX,
        token_source: Callable[[], str | None] | None = None,
    ) -> None:
        self.conn = Connection(
            base_url,
            token,
            transport=transport,
            timeout=timeout,
            keepalive_interval=keepalive_interval,
            stall_timeout=stall_timeout,
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            token_source=token_source,
        )
        self._rest = PreloopRestApi(self.conn)
        self._backend: Backend | None = None
        if server_kind is not None:
            self._backend = backend_for(server_kind, self.conn)

    def __repr__(self) -> str:
        kind = self._backend.server_kind if self._backend else None
        return f"Client(base_url={self.conn.base_url!r}, server_kind={kind!r}, token=***)"

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
        await self.conn.aclose()

    # --------------------------------------------------------------------------------------- identity

    @property
    def server_kind(self) -> ServerKind:
        """The kind of server, once known; reads as ``"local"`` (our own server) until detected."""
        return self._backend.server_kind if self._backend else "local"

    @server_kind.setter
    def server_kind(self, value: ServerKind) -> None:
        self._backend = backend_for(value, self.conn)

    @property
    def server_kind_known(self) -> bool:
        """False until given or detected; :meth:`follow` detects it itself when needed."""
        return self._backend is not None

    @property
    def backend(self) -> Backend | None:
        """The backend of the server's kind, once known."""
        return self._backend

    @property
    def capabilities(self) -> Capabilities:
        """What the server can do (what any Preloop-shaped server can, until its kind is known)."""
        return self._backend.capabilities if self._backend else _UNKNOWN

    @property
    def base_url(self) -> str:
        """The server URL as configured (may hold credentials: show :attr:`display_url` instead)."""
        return self.conn.base_url

    @property
    def display_url(self) -> str:
        """The server URL safe to show (no credentials, query or fragment)."""
        return self.conn.display_url

    @property
    def has_token(self) -> bool:
        """Lets a UI say "no token" up front instead of waiting for the server's 401."""
        return self.conn.has_token

    def auth_headers(self) -> dict[str, str]:
        """The headers that authenticate a request."""
        return self.conn.auth_headers()

    async def detect_server_kind(self) -> ServerKind:
        """Ask /health which kind of server this is and use that kind's backend from now on."""
        kind = await detect_server_kind(self.conn)
        self.server_kind = kind
        return kind

    def _api(self) -> Backend | PreloopRestApi:
        return self._backend or self._rest

    # --------------------------------------------------------------------------------------- delegation

    async def health(self) -> Health:
        """Check the server answers at all; also tells our server from Preloop."""
        return await self._api().health()

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList:
        """One page of sessions; keep paging while ``has_more`` (``total`` may be null)."""
        return await self._api().list_sessions(filters, limit=limit, offset=offset)

    async def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]:
        """Every session matching ``filters`` across pages, up to ``max_items``."""
        async for session in _closing(
            self._api().iter_sessions(filters, max_items=max_items, page_size=page_size)
        ):
            yield session

    async def get_session(self, session_id: str) -> Session:
        """The session detail, its counters complete."""
        return await self._api().get_session(session_id)

    async def resolve_session_id(self, id_or_prefix: str, *, page_size: int = 100) -> str:
        """Turn a full UUID or a short id (≥ 4 hex characters) into a full id, looking across all pages."""
        return await self._api().resolve_session_id(id_or_prefix, page_size=page_size)

    async def session_activity(self, session_id: str) -> list[ActivityItem]:
        """What happened in a session, newest first."""
        return await self._api().session_activity(session_id)

    async def end_session(self, session_id: str) -> Session:
        """Ask the server to end a session; pending notes become undeliverable."""
        return await self._api().end_session(session_id)

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
        """Send a note exactly once (see the backend's ``send_note``)."""
        return await self._api().send_note(
            text,
            session_id=session_id,
            agent_id=agent_id,
            execution_id=execution_id,
            expires_in_seconds=expires_in_seconds,
            correlation_id=correlation_id,
        )

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
        """Notes for one target, newest first."""
        return await self._api().list_notes(
            session_id=session_id,
            agent_id=agent_id,
            execution_id=execution_id,
            state=state,
            limit=limit,
            offset=offset,
        )

    async def get_note(self, note_id: str) -> Note:
        """A note as it is now (states move as the agent picks it up)."""
        return await self._api().get_note(note_id)

    async def withdraw_note(self, note_id: str) -> Note:
        """Cancel a note; read ``state`` of the answer (only pending ones cancel)."""
        return await self._api().withdraw_note(note_id)

    async def list_approvals(
        self,
        *,
        session_id: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
        skip: int = 0,
    ) -> ApprovalPage:
        """Approval requests (pending by default)."""
        return await self._api().list_approvals(session_id=session_id, status=status, limit=limit, skip=skip)

    async def get_approval(self, approval_id: str) -> Approval:
        """One approval request with its tool arguments and current status."""
        return await self._api().get_approval(approval_id)

    async def approve(self, approval_id: str, comment: str | None = None) -> Approval:
        """Let the waiting tool call run."""
        return await self._api().approve(approval_id, comment)

    async def decline(self, approval_id: str, comment: str | None = None) -> Approval:
        """Refuse the waiting tool call; the comment reaches the agent."""
        return await self._api().decline(approval_id, comment)

    async def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncIterator[AttentionSnapshot | Event | StreamStatus]:
        """Every session's pending approvals and failed notes: pushed by our server, polled from Preloop.

        Yields a snapshot first (and again after every reconnect or poll), events in between; never ends
        on its own except on a refusal. Feed it to :class:`client.inbox.Inbox`.
        """
        backend = await self._live_backend()
        async for item in _closing(
            backend.watch_attention(notes_window=notes_window, poll_interval=poll_interval)
        ):
            yield item

    async def _live_backend(self) -> Backend:
        """The backend of the server's kind, asking the server first when unknown; if it cannot be asked
        now, our own server's (its live feeds report and retry the failure)."""
        if self._backend is None:
            with contextlib.suppress(ClientError):
                await self.detect_server_kind()
        return self._backend or backend_for("local", self.conn)

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncIterator[Event | StreamStatus]:
        """Live events of a session after seq ``after``, in order, exactly once, with connection states.

        Ends after the session's end event or a refusal; everything else is retried. The server's kind is
        asked first when unknown; if it cannot be asked now, our own SSE stream is tried (its follower
        reports and retries the failure).
        """
        backend = await self._live_backend()
        async for item in _closing(backend.follow(session_id, after=after, tail=tail)):
            yield item


async def _closing(items: AsyncIterator[_T]) -> AsyncGenerator[_T, None]:
    """Relay ``items`` and close them (an async generator) when the relay is closed, not whenever."""
    try:
        async for item in items:
            yield item
    finally:
        if isinstance(items, AsyncGenerator):
            await items.aclose()


@asynccontextmanager
async def open_client(
    *,
    url: str | None = None,
    token: str | None = None,
    profile: str | None = None,
    server_kind: str | None = None,
    **options: Any,
) -> AsyncIterator[Backend]:
    """The backend for what the flags, environment, profile or local server file name (``client.config``).

    ``server_kind`` ``"local"``/``"preloop"``/... forces the kind; ``None``/``"auto"`` uses the profile's
    or detects it. ``options`` go to the connection (timeout, transport, ...).
    """
    from client.config import resolve_settings

    parse_server_kind(server_kind)  # a bad kind is a usage error before anything else
    settings = resolve_settings(url=url, token=token, profile=profile)
    backend = open_backend(settings, server_kind=server_kind, **options)
    try:
        yield backend
    finally:
        await backend.aclose()


if TYPE_CHECKING:

    def _implements_backend(client: Client) -> Backend:
        """mypy checks here that Client satisfies the Backend protocol the TUI and CLI are written against."""
        return client
