"""Pydantic models of the REST wire contract (Preloop 0.17.1 shapes).

These are the shapes a Preloop server sends, matched field for field against the recorded exchanges in
`shared/preloop-0.17.1/captures/`. Our local control plane (`server/`) serialises the same models, so a
client that reads one reads the other.

Tolerance rules, because real servers differ from each other and from their own documentation:

* every model ignores fields it does not know (``extra="ignore"``), so a newer server cannot break us;
* every timestamp without a zone is taken as UTC (Preloop stores naive UTC in several columns);
* optional fields default to ``None`` / empty, because the session *detail* leaves counters empty that
  the session *list* row fills in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, overload

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer
from pydantic_core import TzInfo

_PARSED_UTC = TzInfo(0)  # the zone pydantic gives a parsed "...Z" (one shared object)


def _as_utc(value: datetime) -> datetime:
    """Give zone-less timestamps the zone Preloop means (UTC) so comparisons never raise.

    A value already in UTC (every parsed ``...Z`` timestamp) is returned as is: converting it again cost a
    third of event validation time in the client ingest benchmark and changes nothing it means.
    """
    zone = value.tzinfo
    if zone is None:
        return value.replace(tzinfo=UTC)
    if zone is UTC or zone is _PARSED_UTC:
        return value
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        raise ValueError("the time is outside the range a UTC timestamp can hold") from None


@overload
def iso(value: datetime) -> str: ...
@overload
def iso(value: datetime | None) -> str | None: ...
def iso(value: datetime | None) -> str | None:
    """A time as everything of ours writes it (events, the export and digest documents, queries): ISO
    8601 in UTC with a ``Z`` (a zone-less time is UTC); None stays None."""
    if value is None:
        return None
    return _as_utc(value).isoformat().replace("+00:00", "Z")


UtcDatetime = Annotated[
    datetime,
    AfterValidator(_as_utc),
    PlainSerializer(iso, return_type=str, when_used="json"),
]
"""A datetime that is always zone-aware UTC once parsed, and serialised with a ``Z`` suffix."""


class WireModel(BaseModel):
    """Base for every wire shape: unknown fields are ignored, never an error."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# --------------------------------------------------------------------------------------------------
# Runtime sessions
# --------------------------------------------------------------------------------------------------


class TokenUsage(WireModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_input_tokens: int = 0
    cache_hit_ratio: float | None = None


class Session(WireModel):
    """One runtime session row, as in the session list (and nested in the session detail)."""

    id: str
    session_source_type: str | None = None
    session_source_id: str | None = None
    session_reference: str | None = None
    alias: str | None = None
    parent_session_id: str | None = None
    runtime_principal_type: str | None = None
    runtime_principal_id: str | None = None
    runtime_principal_name: str | None = None
    title: str | None = None
    summary: str | None = None
    summary_updated_at: UtcDatetime | None = None
    started_at: UtcDatetime | None = None
    last_activity_at: UtcDatetime | None = None
    ended_at: UtcDatetime | None = None
    agent_id: str | None = None
    agent_name: str | None = None
    agent_href: str | None = None
    flow_href: str | None = None
    flow_id: str | None = None
    flow_name: str | None = None
    flow_execution_id: str | None = None
    latest_model_alias: str | None = None
    latest_provider_name: str | None = None
    is_active_now: bool | None = None
    activity_status: str | None = None
    total_requests: int | None = None
    successful_requests: int | None = None
    failed_requests: int | None = None
    token_usage: TokenUsage | None = None
    estimated_cost: float | None = None
    last_request_at: UtcDatetime | None = None
    optimization_waste_score: float | None = None
    optimization_potential_savings_tokens: int | None = None
    optimization_potential_savings_usd: float | None = None
    note_count: int | None = None
    latest_note_author_display: str | None = None
    latest_note_author_auth_method: str | None = None
    latest_note_at: UtcDatetime | None = None
    legal_hold: bool = False
    managed_agent_id: str | None = None
    managed_agent_name: str | None = None
    agent_kind: str | None = None
    cwd: str | None = None
    tool_call_count: int | None = None
    pending_approval_count: int | None = None
    artifact_counts: dict[str, int] = Field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """True once the session has an end time; an ended session takes no more notes."""
        return self.ended_at is not None

    @property
    def agent_label(self) -> str:
        """The best human name for the agent behind this session."""
        return (
            self.agent_name
            or self.managed_agent_name
            or self.runtime_principal_name
            or self.session_reference
            or "?"
        )


class SessionList(WireModel):
    """One page of ``GET /api/v1/runtime-sessions``; ``total`` may be null, so page by ``has_more``."""

    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    query: str | None = None
    session_source_type: str | None = None
    status: str | None = None
    total: int | None = None
    has_more: bool = False
    limit: int = 20
    offset: int = 0
    items: list[Session] = Field(default_factory=list)


class UsageByModel(WireModel):
    """One model's share of a session's use (``usage_by_model`` of the session detail)."""

    model_alias: str | None = None
    provider_name: str | None = None
    total_requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    estimated_cost: float | None = None


class CallUsage(WireModel):
    """What one model call used (ours): an agent reports it with its ``model.step``; a Dendrux app's
    ``llm.completed`` and a Preloop model call carry the same facts. A figure the server does not give is
    None, never 0: "no cost known" is not "free"."""

    model: str | None = Field(default=None, max_length=200)
    input_tokens: int | None = Field(default=None, ge=0, le=2**53)
    output_tokens: int | None = Field(default=None, ge=0, le=2**53)
    total_tokens: int | None = Field(default=None, ge=0, le=2**53)
    cost_usd: float | None = Field(default=None, ge=0, le=1e9, allow_inf_nan=False)

    @property
    def tokens(self) -> int:
        """Every token of the call: the total the server gave, else input plus output."""
        if self.total_tokens is not None:
            return self.total_tokens
        return (self.input_tokens or 0) + (self.output_tokens or 0)


class SessionDetail(WireModel):
    """``GET /api/v1/runtime-sessions/{id}``: the row (counters may be empty) plus usage by model."""

    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    session: Session
    usage_by_model: list[dict[str, Any]] = Field(default_factory=list)


class ActivityItem(WireModel):
    """One entry of ``GET .../{id}/activity`` (newest first, no total)."""

    activity_id: str | None = None
    activity_type: str
    timestamp: UtcDatetime | None = None
    title: str | None = None
    summary: str | None = None
    status: str | None = None
    api_usage_id: str | None = None
    tool_name: str | None = None
    server_name: str | None = None
    auth_subject_type: str | None = None
    api_key_id: str | None = None
    api_key_name: str | None = None
    estimated_cost: float | None = None
    total_tokens: int | None = None
    request_fingerprint: str | None = None
    gateway_attempt: int | None = None
    is_retry: bool = False
    retry_of_api_usage_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ActivityList(WireModel):
    items: list[ActivityItem] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Operator notes
# --------------------------------------------------------------------------------------------------


class NoteState(StrEnum):
    """Every state an operator note can be in. Terminal states never change again."""

    PENDING = "pending"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    ACKNOWLEDGED = "acknowledged"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"
    UNDELIVERABLE = "undeliverable"

    @property
    def terminal(self) -> bool:
        """A terminal note will not move again, so nothing needs to watch it any more."""
        return self not in (NoteState.PENDING, NoteState.CLAIMED)


ENDED_BADLY = frozenset({"expired", "failed", "undeliverable"})
"""Note states that mean the agent never read the note."""


class NoteAuthor(WireModel):
    user_id: str | None = None
    agent_id: str | None = None
    display: str | None = None
    auth_method: str | None = None


class Note(WireModel):
    """An operator note as Preloop returns it from create, get, list and cancel."""

    note_id: str
    state: str
    text: str
    managed_agent_id: str | None = None
    runtime_session_id: str | None = None
    next_session: bool = False
    author: NoteAuthor | None = None
    created_at: UtcDatetime | None = None
    expires_at: UtcDatetime | None = None
    claimed_at: UtcDatetime | None = None
    expired_at: UtcDatetime | None = None
    undeliverable_at: UtcDatetime | None = None
    undeliverable_reason: str | None = None
    delivered_at: UtcDatetime | None = None
    delivery_channel: str | None = None
    delivery_event: str | None = None
    delivered_turn_index: int | None = None
    acknowledged_turn_id: str | None = None
    cancelled_at: UtcDatetime | None = None
    # Ours (Preloop ignores it): lets a retried send return the first note instead of a second.
    correlation_id: str | None = None

    @property
    def note_state(self) -> NoteState | None:
        """The state as an enum, or None for a state this client does not know yet."""
        try:
            return NoteState(self.state)
        except ValueError:
            return None


def note_ended_at(note: Note) -> datetime:
    """When the note gave up (for ordering and the window); its creation time if the server left it out."""
    return note.undeliverable_at or note.expired_at or note.created_at or datetime(1970, 1, 1, tzinfo=UTC)


class NoteList(WireModel):
    """``GET /api/v1/operator-notes``: the list key is ``notes``, not ``items``."""

    notes: list[Note] = Field(default_factory=list)
    total: int | None = None


class NoteCreate(WireModel):
    """Body of ``POST /api/v1/operator-notes``; exactly one target must be set."""

    text: str
    runtime_session_id: str | None = None
    agent_id: str | None = None
    execution_id: str | None = None
    expires_in_seconds: int | None = None
    correlation_id: str | None = None


# --------------------------------------------------------------------------------------------------
# Approvals
# --------------------------------------------------------------------------------------------------


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class ApprovalAgentRef(WireModel):
    id: str | None = None
    name: str | None = None
    kind: str | None = None


class ApprovalSessionRef(WireModel):
    id: str | None = None
    subject: str | None = None


DeciderKind = Literal["person", "ai", "rule"]
"""How an approval was settled by someone or something: a person, an AI reviewer, a standing rule (a
bypass, a policy). An expiry or a session's end is nobody's decision: no decider."""


class ApprovalDecider(WireModel):
    """Who or what decided an approval, and when (ours). Our server sends it with every decided approval;
    a Preloop approval gets it from the approval's history (``client.backends.preloop.trail``), the only
    place Preloop names the decider; a Dendrux app keeps none."""

    kind: DeciderKind = "person"
    name: str | None = None
    """The person's name (Preloop: their email or user name), the AI's model, or the rule."""
    user_id: str | None = None
    """The person's user id, to tell "you" from a colleague."""
    at: UtcDatetime | None = None
    channel: str | None = None
    """Where the decision came from, when the server says (Preloop: console, cli, api, mobile)."""


class ApprovalVotes(WireModel):
    """A quorum's progress (ours: from Preloop's history or its websocket's vote events)."""

    approvals: int = 0
    declines: int = 0
    required: int = 1


class Approval(WireModel):
    """An approval request: a tool call waiting for a human yes or no."""

    id: str
    tool_name: str | None = None
    tool_args: dict[str, Any] = Field(default_factory=dict)
    agent_reasoning: str | None = None
    summary: str | None = None
    execution_id: str | None = None
    account_id: str | None = None
    status: str = "pending"
    requested_at: UtcDatetime | None = None
    resolved_at: UtcDatetime | None = None
    expires_at: UtcDatetime | None = None
    approver_comment: str | None = None
    managed_agent_id: str | None = None
    runtime_session_id: str | None = None
    managed_agent_name: str | None = None
    risk_level: str | None = None
    decided_by_human: bool = False
    decided_by_ai: bool = False
    ai_model: str | None = None
    auto_approved_reason: str | None = None
    agent: ApprovalAgentRef | None = None
    session: ApprovalSessionRef | None = None
    rule_context: dict[str, Any] | None = None
    """Why the server asked: the rule that required approval (Preloop's shape: ``rule_name``,
    ``explanation``, ``source``, ``expression``...); None when no rule was evaluated."""
    # Ours (Preloop ignores them): who decided and who looked, read from Preloop's history (and its
    # websocket's vote and escalation events) or sent by ours.
    decider: ApprovalDecider | None = None
    votes: ApprovalVotes | None = None
    viewed_by: list[str] = Field(default_factory=list)
    """Who has opened the approval (Preloop's history), in the order they first did."""
    escalated_at: UtcDatetime | None = None
    """When an unanswered approval was escalated (its ``expires_at`` is then the new deadline)."""
    auto_approval_bypass_id: str | None = None
    """Preloop's: the approval bypass that approved it without review (``auto_approved_reason`` "bypass")."""
    rule: AllowRule | None = None
    """Ours: the allow rule that decided this call (mode ``allow``) or silenced its alerts (``mute``)."""

    @property
    def pending(self) -> bool:
        """Only a pending approval can still be decided."""
        return self.status == ApprovalStatus.PENDING


class ApprovalDecision(WireModel):
    comment: str | None = None


BATCH_MAX_IDS = 100
"""Most ids one ``POST /approval-requests/decide-batch`` carries (Preloop 0.17.1's
``MAX_BATCH_DECISION_IDS``; our server takes the same): a longer batch is sent as several requests."""


class ApprovalBatchDecision(WireModel):
    """Body of ``POST /approval-requests/decide-batch``: one decision (and comment) for up to
    :data:`BATCH_MAX_IDS` approvals; the server drops duplicate ids and keeps the order."""

    ids: list[str] = Field(min_length=1, max_length=BATCH_MAX_IDS)
    approved: bool
    comment: str | None = None


class ApprovalBatchResult(WireModel):
    """What one id of a batch came to: ``ok`` (decided by this request), else ``error`` says why (not
    found, already resolved, ...) and ``status`` what the approval is now, when the server knows.
    ``approval`` is our server's: the approval's row (Preloop sends none)."""

    id: str
    ok: bool
    status: str | None = None
    error: str | None = None
    approval: Approval | None = None


class ApprovalBatchAnswer(WireModel):
    """The answer to a batch decision: one result per id, in the order sent ("the batch never fails as a
    whole")."""

    results: list[ApprovalBatchResult]
    succeeded: int | None = None
    failed: int | None = None


# --------------------------------------------------------------------------------------------------
# Standing decisions: time-boxed allow rules (ours; Preloop's approval bypasses) and the account halt
# --------------------------------------------------------------------------------------------------

RuleMode = Literal["allow", "mute"]
"""``allow`` decides matching calls for the operator (Preloop's ``auto_approve``); ``mute`` silences their
alerts and still asks (Preloop's ``mute_notifications``)."""

RuleScope = Literal["session", "agent", "account"]
"""What a rule covers: one session (ours), one agent, or every agent of the account."""


class AllowRule(WireModel):
    """A time-boxed rule "allow (or mute) calls like this for ..." (``client.rules`` reads and words it).

    Our server keeps these (``/api/v1/allow-rules``: a session, a tool, an argument pattern); a Preloop
    server's approval bypasses are mapped to the same shape (an agent or the whole account, every tool).
    There is no rule without an end: ``expires_at`` is required. ``danger``: the rule also covers
    danger-risk calls, which takes a second confirmation when it is made (a Preloop bypass always does).
    """

    id: str
    mode: RuleMode
    scope: RuleScope
    session_id: str | None = None
    agent_id: str | None = None
    agent_name: str | None = None
    tool_name: str | None = None
    pattern: str | None = None
    danger: bool = False
    reason: str | None = None
    set_by: str | None = None
    """Who made the rule, by name (None when the server does not say)."""
    set_by_user_id: str | None = None
    created_at: UtcDatetime | None = None
    expires_at: UtcDatetime
    revoked_at: UtcDatetime | None = None
    revoked_by: str | None = None
    allowed_count: int = 0
    """How many calls the rule has decided so far."""

    def active(self, now: datetime) -> bool:
        """Whether the rule holds at ``now`` (not revoked, not expired)."""
        return self.revoked_at is None and self.expires_at > now


class HaltedScope(WireModel):
    """One traffic class a Preloop account's kill switch halts (``gateway``, ``tools``, ``flows``)."""

    scope: str
    activated_by_username: str | None = None
    activated_at: UtcDatetime | None = None
    reason: str | None = None


class KillSwitch(WireModel):
    """``GET /api/v1/account/kill-switch/status`` (Preloop): whether the account's agents are halted."""

    active: bool = False
    scopes: list[HaltedScope] = Field(default_factory=list)


class Standing(WireModel):
    """What decides or silences on the operator's behalf right now, for the banner every screen shows:
    the active allow rules (or bypasses) and, on Preloop, the account's kill switch."""

    rules: list[AllowRule] = Field(default_factory=list)
    halt: KillSwitch | None = None


Approval.model_rebuild()  # its ``rule`` is an AllowRule, defined after it


# --------------------------------------------------------------------------------------------------
# Attention (ours): what waits for a human across every session
# --------------------------------------------------------------------------------------------------


class AttentionSnapshot(WireModel):
    """Everything that needs an operator right now, across all the account's sessions.

    ``GET /api/v1/attention`` answers it and the attention stream starts with it: every pending approval
    (oldest first) and the notes that ended ``expired``, ``failed`` or ``undeliverable`` since
    ``notes_since`` (newest first). A client replaces its whole view with it, so a reconnect never needs
    a resume point.
    """

    type: Literal["attention.snapshot"] = "attention.snapshot"
    at: UtcDatetime | None = None
    notes_since: UtcDatetime | None = None
    approvals: list[Approval] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Health
# --------------------------------------------------------------------------------------------------


class UserMe(WireModel):
    """``GET /api/v1/auth/users/me``: who this token acts for (to tell "you" from a colleague)."""

    id: str
    username: str | None = None
    email: str | None = None
    full_name: str | None = None

    @property
    def name(self) -> str:
        """How others see this person's decisions named."""
        return self.full_name or self.username or self.email or self.id


class Health(WireModel):
    status: str
    version: str | None = None
    server_kind: Literal["preloop", "local"] | None = None


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """A rule to make, as the operator asked for it (checked with :func:`check_spec` before it is sent)."""

    mode: RuleMode
    minutes: int
    scope: RuleScope
    session_id: str | None = None
    agent_id: str | None = None
    tool_name: str | None = None
    pattern: str | None = None
    danger: bool = False
    """Also cover danger-risk calls: the operator confirmed it a second time."""
    reason: str | None = None

    def body(self) -> dict[str, Any]:
        """The body of our server's ``POST /api/v1/allow-rules`` (docs/protocol.md)."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "duration_minutes": self.minutes,
            "scope": self.scope,
            "runtime_session_id": self.session_id,
            "agent_id": self.agent_id,
            "tool_name": self.tool_name,
            "pattern": self.pattern,
            "danger": self.danger,
            "reason": self.reason,
        }
        return {key: value for key, value in out.items() if value is not None}
