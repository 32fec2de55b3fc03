"""Pydantic models of the harness API: what an *agent* sends to a control plane and gets back.

The operator side (sessions, notes, approvals) is in :mod:`client.models`; this module is the other half,
the calls a coding agent's hooks make (Preloop 0.17.1 shapes where Preloop has the call, ours otherwise):

* ``POST /api/v1/auth/runtime-sessions/token`` (operator token): :class:`RuntimeTokenRequest` →
  :class:`RuntimeTokenResponse`, a new runtime session and the runtime token the agent uses from then on;
* ``POST /api/v1/agents/events`` (ours): :class:`AgentEventBatch` → :class:`AgentEventsAccepted`;
* ``POST /api/v1/agents/notes/pending``: :class:`PendingNotesRequest` → :class:`PendingNotesResponse`;
* ``POST /api/v1/agents/notes/ack``: :class:`NotesAckRequest` → :class:`NotesAckResponse`;
* ``POST /api/v1/agents/permission-check``: :class:`PermissionCheckRequest` →
  :class:`PermissionCheckResponse`;
* ``POST /api/v1/agents/session-end``: :class:`SessionEndRequest` → :class:`SessionEndResponse`.

The server (``server/``) validates requests with these models and serialises responses with them, so the
two sides cannot drift. :class:`ApprovalRecord` is the full approval row a Preloop server returns (the
client reads the leaner :class:`client.models.Approval`, which ignores the rest).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from client.models import Approval, UtcDatetime, WireModel

AGENT_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "run.started",
        "model.delta",
        "model.step",
        "tool.started",
        "tool.completed",
        "run.completed",
        "run.failed",
        "run.cancelled",
    }
)
"""Event types an agent may report. The control plane emits the rest (session, note, approval events)."""

INT64_MAX = 2**63 - 1
"""The largest integer an index or offset on the wire may carry (SQLite's INTEGER is a signed 64-bit)."""


class RuntimeTokenRequest(WireModel):
    """Mint a runtime session. ``title`` and ``cwd`` are ours; Preloop ignores unknown fields."""

    session_source_type: str = "claude_code"
    session_source_id: str | None = None
    session_reference: str | None = None
    runtime_principal_name: str | None = None
    agent_kind: str | None = "claude_code"
    expires_in_minutes: int = Field(default=240, ge=1, le=7 * 24 * 60)
    parent_session_id: str | None = None
    flow_execution_id: str | None = None
    title: str | None = Field(default=None, max_length=500)
    cwd: str | None = Field(default=None, max_length=4096)


class RuntimeTokenResponse(WireModel):
    """The new session's id and the runtime token the agent uses from now on."""

    runtime_session_id: str
    token: str
    expires_at: UtcDatetime
    session_source_type: str | None = None
    session_source_id: str | None = None
    session_reference: str | None = None
    warnings: list[str] = Field(default_factory=list)


MAX_EVENT_BYTES = 256 * 1024
"""The largest event an agent may report, measured as its compact UTF-8 JSON (split a longer text)."""


class AgentEventBatch(WireModel):
    """Events as an agent reports them: no ``seq``, ``session_id`` or ``at``; the server assigns those.

    ``batch_id`` is the batch's idempotency key (as ``correlation_id`` is a note's): a retry with the same
    key in the same session stores nothing again and gets the first answer back, so an agent whose answer
    was lost can resend blindly.
    """

    events: list[dict[str, Any]] = Field(min_length=1, max_length=500)
    batch_id: str | None = Field(default=None, min_length=1, max_length=200)


class AgentEventsAccepted(WireModel):
    """How many events were stored and the seqs they got; ``replayed`` when a ``batch_id`` repeated."""

    accepted: int
    first_seq: int | None = None
    last_seq: int | None = None
    replayed: bool = False


class PendingNotesRequest(WireModel):
    """Claim notes at a turn boundary. ``defer_delivery`` claims now and delivers on ack."""

    channel: str = "hook"
    event: str | None = None
    defer_delivery: bool = False
    turn_index: int | None = Field(default=None, ge=0, le=INT64_MAX)


class PendingNoteAuthor(WireModel):
    """Author as the note envelope names it (camelCase, as Preloop sends it)."""

    userId: str | None = None
    display: str | None = None
    authMethod: str | None = None


class PendingNote(WireModel):
    """One claimed note: its id, an A2A-style message envelope, and the stamped text block."""

    note_id: str
    envelope: dict[str, Any] = Field(default_factory=dict)
    text: str


class PendingNotesResponse(WireModel):
    """Claimed notes, and one stamped text block to put in front of the model."""

    notes: list[PendingNote] = Field(default_factory=list)
    text: str | None = None
    channel_event: dict[str, Any] | None = None


class NotesAckRequest(WireModel):
    """Deferred notes the agent has now delivered to its model."""

    note_ids: list[str] = Field(default_factory=list, max_length=100)


class NotesAckResponse(WireModel):
    """Always ``{"ok": true}``."""

    ok: bool = True


class PermissionCheckRequest(WireModel):
    """A tool call about to run. ``client_decision="ask"`` asks a human and blocks until decided.

    ``timeout_seconds`` and ``rule_name`` are ours (Preloop waits 300 s; its rules are its own); the server
    caps the timeout at its own limit. ``agent_reasoning`` and ``rule_name`` reach the operator's approval
    card as "why it is asked".
    """

    tool_name: str = Field(min_length=1, max_length=200)
    tool_input: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    cwd: str | None = None
    evaluation_phase: str | None = None
    hook_event_name: str | None = None
    client_decision: Literal["allow", "deny", "ask"] | None = None
    agent_reasoning: str | None = Field(default=None, max_length=20_000)
    """Why the agent wants to make the call: shown to the operator on the approval."""
    rule_name: str | None = Field(default=None, max_length=200)
    """Ours: the rule of the agent's permission hook that asked for approval (shown as "rule: ...")."""
    timeout_seconds: float | None = Field(default=None, gt=0, le=3600)


class PermissionCheckResponse(WireModel):
    """``allow`` or ``deny``; ``request_id`` names the approval when a human was asked."""

    decision: Literal["allow", "deny"]
    reason: str = ""
    request_id: str | None = None
    operator_note: str | None = None
    timed_out: bool = False


class SessionEndRequest(WireModel):
    """Why the agent stopped (free text)."""

    reason: str | None = Field(default=None, max_length=200)


class SessionEndResponse(WireModel):
    """The ended session and how many notes became undeliverable."""

    runtime_session_id: str
    marked: int = 0


class ApprovalRecord(Approval):
    """The full approval row (Preloop 0.17.1), as approval list/get/approve/decline return it."""

    tool_configuration_id: str | None = None
    approval_workflow_id: str | None = None
    structured_answer: Any = None
    webhook_posted_at: UtcDatetime | None = None
    webhook_error: str | None = None
    api_key_id: str | None = None
    decided_by_ai: bool = False
    ai_model: str | None = None
    ai_confidence: float | None = None
    ai_reasoning: str | None = None
    auto_approved_reason: str | None = None
    auto_approval_bypass_id: str | None = None
    api_key: dict[str, Any] | None = None
    flow_execution: dict[str, Any] | None = None
    was_bypassed: bool = False
    approval_policy_id: str | None = None
    is_question: bool = False
    question: str | None = None
    question_options: list[Any] = Field(default_factory=list)
    allow_free_text: bool = True
    question_items: list[Any] = Field(default_factory=list)
    question_schema: dict[str, Any] | None = None
    has_answer_form: bool = False
