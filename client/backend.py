"""The one interface the TUI and the CLI talk to, whatever server is behind it.

``client.api.Client`` implements it for both kinds of server: the REST calls are the same (Preloop-shaped),
and only the live channel differs: our local control plane streams SSE, a Preloop server pushes a
websocket and is polled for the rest (``client.preloop_live``). Nothing above ``client/`` may know which
kind it is talking to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

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
from client.status import StreamStatus

ServerKind = Literal["local", "preloop"]


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Filters of ``GET /api/v1/runtime-sessions``, as the server names them."""

    status: Literal["all", "active", "ended"] | None = None
    active_within_minutes: int | None = None
    agent: str | None = None
    agent_kind: str | None = None
    start_date: datetime | None = None
    parent_session_id: str | None = None
    flow_execution_id: str | None = None


@dataclass(frozen=True, slots=True)
class ApprovalPage:
    """A page of approvals; the server sends a bare array and the total in ``X-Total-Count``."""

    items: list[Approval] = field(default_factory=list)
    total: int | None = None


class Backend(Protocol):
    """What a server must let the client do. Every method raises ``client.errors.ClientError`` subclasses."""

    server_kind: ServerKind

    async def health(self) -> Health: ...

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList: ...

    def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]: ...

    async def get_session(self, session_id: str) -> Session: ...

    async def resolve_session_id(self, id_or_prefix: str) -> str: ...

    async def session_activity(self, session_id: str) -> list[ActivityItem]: ...

    async def end_session(self, session_id: str) -> Session: ...

    async def send_note(
        self,
        text: str,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        execution_id: str | None = None,
        expires_in_seconds: int | None = None,
        correlation_id: str | None = None,
    ) -> Note: ...

    async def list_notes(
        self,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        execution_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> NoteList: ...

    async def get_note(self, note_id: str) -> Note: ...

    async def withdraw_note(self, note_id: str) -> Note: ...

    async def list_approvals(
        self,
        *,
        session_id: str | None = None,
        status: str | None = "pending",
        limit: int = 100,
        skip: int = 0,
    ) -> ApprovalPage: ...

    async def get_approval(self, approval_id: str) -> Approval: ...

    async def approve(self, approval_id: str, comment: str | None = None) -> Approval: ...

    async def decline(self, approval_id: str, comment: str | None = None) -> Approval: ...

    def follow(self, session_id: str, *, after: int = 0) -> AsyncIterator[Event | StreamStatus]: ...

    def watch_attention(
        self, *, notes_window: timedelta = ..., poll_interval: float = ...
    ) -> AsyncIterator[AttentionSnapshot | Event | StreamStatus]: ...

    async def aclose(self) -> None: ...
