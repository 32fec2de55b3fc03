"""What the TUI and the CLI may ask of a server, split by capability, whatever kind of server it is.

Every backend class (``client.backends.local``, ``client.backends.preloop``, ...) implements the whole
:class:`Backend` protocol so the UI is written once and type-checked against it. Servers differ in what they
*can* do: a backend says so in :attr:`Backend.capabilities`; an action the server cannot take raises
:class:`client.errors.Unsupported` (a sentence, never a traceback), and a listing it cannot make answers
an empty page. The UI reads the capabilities to hide
or disable keys up front instead of letting the operator find out by failing.

The capability protocols exist so a piece of code can ask for no more than it needs (a notes command needs
a :class:`NoteDesk`, a follower needs a :class:`LiveFeed`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

if TYPE_CHECKING:  # annotations only (client.config reads ServerKind here without any model)
    from collections.abc import Sequence

    from client.errors import ClientError
    from client.events import Event
    from client.models import (
        ActivityItem,
        AllowRule,
        Approval,
        AttentionSnapshot,
        Health,
        Note,
        NoteList,
        RuleSpec,
        Session,
        SessionList,
        Standing,
        UserMe,
    )
    from client.status import StreamStatus
    from client.timeline import Place

ServerKind = Literal["local", "preloop", "dendrux"]
"""The kinds of server the client knows; ``client.backends.backend_for`` maps each to its backend."""

SERVER_KINDS: tuple[ServerKind, ...] = ("local", "preloop", "dendrux")

API_PREFIX = "/api/v1"
"""Where the Preloop-shaped REST lives (``client.backends.rest``)."""


@dataclass(frozen=True, slots=True)
class RuleSupport:
    """What kind of time-boxed allow rules a server keeps (``client.rules``), so a screen offers only
    those and a command refuses the rest before any request, saying what the server can do."""

    name: str
    """What the server calls them, as the subject of a sentence ("Preloop's approval bypasses")."""
    scopes: frozenset[str]
    """``session``, ``agent``, ``account``: what one rule can cover."""
    tools: bool
    """A rule can be narrowed to one tool."""
    patterns: bool
    """A rule can be narrowed to an argument pattern (``pytest *``)."""
    max_minutes: int
    """The longest rule the server makes (there is no forever)."""
    risk_aware: bool
    """The server leaves danger-risk calls out of a rule not made for them; Preloop's bypass approves
    every call in its scope, so an ``allow`` one always takes the second confirmation."""
    can: str
    """What it can do, as the end of a sentence that refused something finer."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend's server can do, so the UI gates keys on it instead of failing after a key press."""

    notes: bool = True
    """Operator notes can be sent and listed."""
    withdraw_notes: bool = True
    """A pending note can be withdrawn."""
    approvals: bool = True
    """Pending approvals are listed and can be approved or declined."""
    end_session: bool = True
    """A session can be ended from the client."""
    approve_comment: bool = True
    """An approval can carry a comment (a decline always can): a Dendrux app's approve takes no reason,
    so a front end refuses the comment up front instead of the server dropping it."""
    names_decider: bool = True
    """The server records who decided an approval (our server by operator, Preloop in its history); a
    Dendrux app keeps no decider, which a front end says once instead of inventing one."""
    original_args: bool = True
    """The server may keep an approval's arguments from before redaction (Preloop's ``original-args``;
    ours answers that it keeps none)."""
    rules: RuleSupport | None = None
    """The time-boxed allow rules the server keeps (None: none, every call is decided one by one)."""
    halts: bool = False
    """The server has an account-wide kill switch whose state the banner shows (Preloop)."""


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

    def params(self, *, limit: int, offset: int) -> dict[str, Any]:
        """The query of one page of ``GET /api/v1/runtime-sessions``, unset filters left out."""
        query: dict[str, Any] = {
            "status": self.status,
            "active_within_minutes": self.active_within_minutes,
            "agent": self.agent,
            "agent_kind": self.agent_kind,
            "start_date": self.start_date.astimezone(UTC).isoformat() if self.start_date else None,
            "parent_session_id": self.parent_session_id,
            "flow_execution_id": self.flow_execution_id,
            "limit": limit,
            "offset": offset,
        }
        return {key: value for key, value in query.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ApprovalPage:
    """A page of approvals; the server sends a bare array and the total in ``X-Total-Count``."""

    items: list[Approval] = field(default_factory=list)
    total: int | None = None


@dataclass(frozen=True, slots=True)
class BatchItem:
    """What the server said about one approval of a batch decision (``ApprovalDesk.decide_batch``)."""

    approval_id: str
    decided: bool
    """Decided by this call (the server said so)."""
    status: str | None = None
    """The approval's status after the call as far as the server said (a refused one: what it already
    was, e.g. ``approved``, ``expired``); None when it did not say."""
    error: ClientError | None = None
    """Why it was not decided: the server's sentence for this id (``NotFound``, ``BadRequest`` "Request
    already approved"), or the failure of the request that carried it (a 403, a lost connection)."""
    approval: Approval | None = None
    """The approval's row when the server sent it (ours, a Dendrux app); Preloop's batch answer has
    none."""


class SessionDesk(Protocol):
    """Sessions: list, look up, end. Every method raises ``client.errors.ClientError`` subclasses."""

    async def health(self) -> Health: ...

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList: ...

    def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]: ...

    async def get_session(self, session_id: str) -> Session: ...

    def session_ids(self, *, page_size: int = 100) -> AsyncIterator[str]:
        """The ids a short session id is matched against (``client.ids.resolve_session``)."""
        ...

    async def session_activity(self, session_id: str) -> list[ActivityItem]: ...

    async def end_session(self, session_id: str) -> Session: ...

    async def whoami(self) -> UserMe | None:
        """Who this token acts for (to tell "you" from a colleague among deciders); None when the server
        does not say. Asked once per backend and remembered."""
        ...


class NoteDesk(Protocol):
    """Operator notes: send, list, withdraw (see ``Capabilities.notes`` / ``withdraw_notes``)."""

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


class ApprovalDesk(Protocol):
    """Approvals a tool call waits for: list, approve, decline (see ``Capabilities.approvals``)."""

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

    async def approval_trail(self, approval: Approval) -> Approval:
        """The approval with who decided it and who has looked at it, as far as the server says (our
        server sends the decider with the row; Preloop names it only in the approval's history, read
        here; a failure to read it leaves the approval as given)."""
        ...

    async def original_args(self, approval_id: str) -> dict[str, Any]:
        """The approval's arguments before the server redacted them (Preloop keeps them while it is
        pending when a rule says so); ``client.errors.NotFound`` with the server's sentence otherwise."""
        ...

    async def decide_batch(
        self, approval_ids: Sequence[str], *, approve: bool, comment: str | None = None
    ) -> list[BatchItem]:
        """One decision (and comment) for many approvals, as the server can take it (Preloop and ours:
        ``decide-batch`` per 100 ids; a Dendrux app: one call per id): one :class:`BatchItem` per id, in
        order. It never fails as a whole once a request has left: a request that fails makes each of its
        ids a failed item (``client.steering.Steering.decide_many`` reads what came of those). It raises
        only when nothing was sent (an id that is not one, a comment the server cannot take)."""
        ...


class RuleDesk(Protocol):
    """Time-boxed allow rules and what decides on the operator's behalf (see ``Capabilities.rules``; a
    server without rules raises ``client.errors.Unsupported`` for every change and has nothing standing)."""

    async def list_rules(self) -> list[AllowRule]:
        """The rules (Preloop: approval bypasses) that hold now, the soonest to end first."""
        ...

    async def create_rule(self, spec: RuleSpec) -> AllowRule:
        """Make a rule (checked first with ``client.rules.check_spec``); the server may still refuse it
        (a 403 without the permission, a 422 for a duration it will not take)."""
        ...

    async def revoke_rule(self, rule_id: str) -> AllowRule:
        """End one rule now; the answer is the rule as it now is."""
        ...

    async def revoke_all_rules(self) -> list[AllowRule]:
        """End every rule that holds; the answer lists those ended."""
        ...

    async def standing(self) -> Standing:
        """What decides or silences for the operator now (active rules, the account's kill switch): the
        banner's one cheap read."""
        ...


class LiveFeed(Protocol):
    """One session's events as they happen, in order, once each, with connection states between them.

    ``after`` resumes after a seq; ``tail`` (with ``after`` 0) asks for only the newest ``tail`` stored
    events first, so a long session opens at once. A server that cannot do it replays everything: the
    first event's seq tells the caller where the history starts."""

    def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncIterator[Event | StreamStatus]: ...


class HistoryDesk(Protocol):
    """A session's stored events since a time or a place, read once (no live follow): what the digest
    (``client.history``) reads, as cheaply as the server allows."""

    async def history(
        self, session_id: str, *, since: datetime | None = None, after: Place | None = None
    ) -> list[Event]:
        """The events stored at or after ``since``, or after the place ``after`` (it wins), oldest first,
        as of now; a server that cannot narrow the read returns more (the caller filters). Every failure
        is a ``client.errors.ClientError``."""
        ...


class AttentionFeed(Protocol):
    """Every session's pending approvals and failed notes, for the attention inbox (``client.inbox``)."""

    def watch_attention(
        self, *, notes_window: timedelta = ..., poll_interval: float = ...
    ) -> AsyncIterator[AttentionSnapshot | Event | StreamStatus]: ...


class Backend(SessionDesk, NoteDesk, ApprovalDesk, RuleDesk, LiveFeed, HistoryDesk, AttentionFeed, Protocol):
    """Everything the TUI and the CLI talk to; one class per server kind implements it."""

    @property
    def server_kind(self) -> ServerKind:
        """Which kind of server this is (for messages and remembering it in a profile)."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What the server can do: the UI gates keys on it."""
        ...

    async def aclose(self) -> None:
        """Close the connection pool; open streams end."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
