"""A fake Preloop 0.17.1 server built from the recorded exchanges in ``captures/``.

Shapes, statuses, headers and quirks come from the recordings (``captures/NNN_*.json`` for HTTP,
``captures/ws_*.json`` for the session websocket); the state behind them is small and in memory so a
test can drive a live scenario:

* :meth:`FakePreloop.tool_call` records a tool call (activity + the pushed ``runtime_session_updated``);
* :meth:`FakePreloop.deliver_notes` is the harness pulling pending notes (note → delivered, pushed);
* :meth:`FakePreloop.request_approval` creates a pending approval (never pushed on the session socket);
* :meth:`FakePreloop.end_session` ends a session (pushed, or silently as Preloop's idle sweep does);
* :meth:`FakePreloop.model_call` pushes a model gateway call (shape not recorded: see docs/preloop.md);
* :meth:`FakePreloop.play` pushes the recorded frames of one phase (``during:``/``after:`` a capture);
* :meth:`FakePreloop.drop_sockets` / :meth:`hold_connections` force a reconnect with missed events;
* an approval's history (who looked, votes, escalation, who decided: captures 119-121) and its sealed
  originals (122-124): :meth:`FakePreloop.colleague_decides`, :meth:`view_as`, :meth:`escalate`,
  :meth:`ai_decides`, ``request_approval(redacted=True)``; reading an approval's detail marks it viewed by
  the token's user (alice), as Preloop does;
* :meth:`FakePreloop.spend` is the gateway counting a model call's tokens and cost on the session row.
* the account-wide websocket ``/api/v1/ws/unified`` gets the approval frames Preloop broadcasts
  (``approval_created`` / ``approved`` / ``declined`` / ``expired`` / ``vote_received`` / ``escalated``:
  :meth:`FakePreloop.vote`, :meth:`escalate`, :meth:`expire_approval`; ``unified_muted`` stops them, so
  only polling finds an approval);
* many approvals at once (``POST /api/v1/approval-requests/decide-batch``: up to 100 ids, one result each,
  captures 141-142; ``can_decide = False`` refuses it 403 as a whole);
* approval bypasses (``/api/v1/approval-bypasses``: create, list, status, revoke, revoke-all; an
  ``auto_approve`` one approves a matching request at once, pushing ``approval_approved`` only) and the
  kill switch's status (``/api/v1/account/kill-switch/status``: :meth:`FakePreloop.halt`), shaped as
  Preloop 0.17.1's source says (captures 130-140, ``ws_unified_approval_progress``); ``can_decide =
  False`` refuses bypass changes with the recorded 403 sentence.

The REST quirks are reproduced: naive UTC datetimes, ``total`` null while ``has_more`` (``null_total``),
500 + dropped connection for a non-UUID session id, session detail counters left empty, cancel answering
200 with the note unchanged, approvals as a bare array with ``X-Total-Count`` paged by ``skip``, notes
under ``notes``, 422 ``detail`` lists, 401 with ``WWW-Authenticate: Bearer``, the 21st note a 429.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Query, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, model_validator

CAPTURES = Path(__file__).resolve().parent / "captures"

MAIN_SESSION = "f7303a36-18c9-406b-825f-6a43b492ec5e"
RATE_SESSION = "d81bce9c-a54a-4e44-b857-04b0aea69ecd"
FOREIGN_SESSION = "22628686-3d9c-4e83-84aa-0c609ea4e77d"  # bob's: alice gets 404
ACCOUNT_ID = "95d26676-8232-46c6-931c-d60cb93bc994"
TOKEN = "alice-test-token"
NOTE_RATE_LIMIT = 20
ALICE_ID = "d7900eb9-894e-48d6-9fd1-61d9d5de38a7"  # the token's user (capture 006)
ALICE_EMAIL = "alice113619@example.com"
DANA_ID = "5b1f6c2e-8d4a-4f0e-9b7c-2a6e1d3c4f58"  # a colleague (captures 119, 120)
DANA_EMAIL = "dana@example.com"

_TARGET_MSG = (
    "Name exactly one of agent_id, runtime_session_id, execution_id, alias, external_session_id, children"
)


def load_capture(name: str) -> dict[str, Any]:
    """One recorded exchange by file name without ``.json`` (``"018_runtime_session_activity"``)."""
    data: dict[str, Any] = json.loads((CAPTURES / f"{name}.json").read_text())
    return data


def capture_by_suffix(suffix: str) -> dict[str, Any]:
    """The recorded exchange whose name ends with ``suffix`` (``"approval_approve"``)."""
    for path in sorted(CAPTURES.glob("*.json")):
        if path.stem.split("_", 1)[-1] == suffix:
            data: dict[str, Any] = json.loads(path.read_text())
            return data
    raise KeyError(suffix)


def naive(dt: datetime) -> str:
    """Preloop's zone-less columns (session rows, note created_at, approval times)."""
    return dt.astimezone(UTC).replace(tzinfo=None).isoformat()


def zulu(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def offset(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


def _now() -> datetime:
    return datetime.now(UTC)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class NoteCreateIn(BaseModel):
    """Preloop's note body (its validation produces the recorded 422 shapes)."""

    text: str = Field(min_length=1, max_length=4096)
    runtime_session_id: uuid.UUID | None = None
    agent_id: uuid.UUID | None = None
    execution_id: uuid.UUID | None = None
    expires_in_seconds: int | None = Field(default=None, ge=60)

    @model_validator(mode="after")
    def _one_target(self) -> NoteCreateIn:
        targets = [self.runtime_session_id, self.agent_id, self.execution_id]
        if sum(t is not None for t in targets) != 1:
            raise ValueError(_TARGET_MSG)
        return self


class Decision(BaseModel):
    comment: str | None = None


class BatchDecisionIn(BaseModel):
    """Preloop's ``ApprovalBatchDecision`` (1..100 UUIDs; more is its 422)."""

    ids: list[uuid.UUID] = Field(min_length=1, max_length=100)
    approved: bool
    comment: str | None = None


class BypassCreateIn(BaseModel):
    """Preloop's ``ApprovalBypassCreate`` (its validation produces the 422 of capture 136)."""

    mode: Literal["mute_notifications", "auto_approve"]
    duration_minutes: int = Field(ge=1, le=480)
    managed_agent_id: uuid.UUID | None = None
    reason: str | None = Field(default=None, max_length=500)
    created_via: str | None = None


class RawText(str):
    """A frame sent exactly as given (not JSON-encoded): for malformed-frame tests."""


class _Socket:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[dict[str, Any] | str] = asyncio.Queue()

    def put(self, item: dict[str, Any] | str) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


class FakePreloop:
    """State + scenario drivers. Thread-safe: the server runs in its own thread, tests drive from theirs."""

    def __init__(self, *, null_total: bool = False) -> None:
        self.lock = threading.RLock()
        self.null_total = null_total
        self.muted = False  # True: the socket answers nothing (no pong, no push): a dead connection
        self.held = False  # True: new websocket attaches are closed 1013 right away
        self.requests: list[tuple[str, str]] = []
        self.ws_attaches = 0
        self.ws_received: list[dict[str, Any]] = []
        self.ws_upgrades: list[tuple[str, str | None]] = []  # (query string, Authorization header)
        self._sockets: dict[str, list[_Socket]] = {}
        sessions = load_capture("012_runtime_sessions_list_all")["body"]["items"]
        self.sessions: dict[str, dict[str, Any]] = {row["id"]: copy.deepcopy(row) for row in sessions}
        self.session_order = [row["id"] for row in sessions]
        self.activity: dict[str, list[dict[str, Any]]] = {sid: [] for sid in self.sessions}
        # Recorded history of the main session (oldest first here; served newest first).
        self.activity[MAIN_SESSION] = list(
            reversed(load_capture("018_runtime_session_activity")["body"]["items"])
        )
        self.activity[RATE_SESSION] = [self._started_item(self.sessions[RATE_SESSION])]
        self.notes: dict[str, dict[str, Any]] = {}
        self.approvals: dict[str, dict[str, Any]] = {}
        ws_main = json.loads((CAPTURES / "ws_session_main.json").read_text())
        self.recorded_frames: list[dict[str, Any]] = [
            m for m in ws_main["messages"] if m["direction"] == "received" and m["phase"] != "connect"
        ]
        self._tool_frame = copy.deepcopy(self.recorded_frames[0]["data"])
        self._note_frame = copy.deepcopy(
            next(
                m["data"]
                for m in self.recorded_frames
                if m["data"]["payload"].get("activity_type") == "agent_control_message"
            )
        )
        self._approval_template = load_capture("070_approvals_list_pending_for_session")["body"][0]
        self.history: dict[str, list[dict[str, Any]]] = {}
        """Approval id -> its history entries, oldest first (``GET .../history``)."""
        self.originals: dict[str, dict[str, Any]] = {}
        """Approval id -> its arguments before redaction, while pending (``GET .../original-args``)."""
        unified = json.loads((CAPTURES / "ws_unified_account.json").read_text())
        self._unified_frame = copy.deepcopy(
            next(m["data"] for m in unified["messages"] if m["data"].get("type") == "approval_created")
        )
        self._unified: list[_Socket] = []
        self.unified_muted = False  # True: approval frames are not broadcast (only polling finds them)
        self.unified_upgrades: list[str | None] = []  # the Authorization header of each unified attach
        self.bypasses: dict[str, dict[str, Any]] = {}
        self.can_decide = True  # False: bypasses and batch decisions are refused 403 (no decide_approvals)
        self.halted: dict[str, Any] = copy.deepcopy(load_capture("140_kill_switch_status_clear")["body"])
        self.user_id = load_capture("006_auth_users_me_alice")["body"]["id"]
        self._note_template = load_capture("027_note_create_to_deliver")["body"]

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _started_item(row: dict[str, Any]) -> dict[str, Any]:
        item = copy.deepcopy(load_capture("018_runtime_session_activity")["body"]["items"][-1])
        item["timestamp"] = row["started_at"] + "Z"
        item["summary"] = row["session_reference"]
        return item

    def _touch(self, sid: str, when: datetime) -> None:
        self.sessions[sid]["last_activity_at"] = naive(when)

    def push(self, sid: str, frame: dict[str, Any] | str) -> int:
        """Send a frame (or a control word) to every socket attached to ``sid``; returns how many."""
        with self.lock:
            sockets = list(self._sockets.get(sid, []))
        if self.muted and isinstance(frame, dict):
            return 0
        for sock in sockets:
            sock.put(frame)
        return len(sockets)

    def attached(self, sid: str = MAIN_SESSION) -> int:
        """How many sockets are attached to a session now (tests wait on this)."""
        with self.lock:
            return len(self._sockets.get(sid, []))

    def _envelope(
        self, sid: str, kind: str, payload: dict[str, Any], when: datetime, topic: str
    ) -> dict[str, Any]:
        return {
            "account_id": ACCOUNT_ID,
            "topic": topic,
            "type": kind,
            "timestamp": offset(when),
            "payload": payload,
            "runtime_session_id": sid,
        }

    # ------------------------------------------------------------------ scenario drivers

    def tool_call(
        self,
        tool_name: str = "Bash",
        *,
        sid: str = MAIN_SESSION,
        status: str = "allowed",
        duration_ms: int = 15,
        summary: str | None = "No central native rule requires approval",
        arg_sizes: dict[str, int] | None = None,
        approval_request_id: str | None = None,
        push: bool = True,
    ) -> str:
        """The harness asked permission for a tool call: activity item + pushed update. Returns its id."""
        when = _now()
        activity_id = str(uuid.uuid4())
        decision = "deny" if status in ("declined", "denied") else "allow"
        metadata: dict[str, Any] = {
            "origin": "native_hook",
            "source": "claude_code",
            "decision": decision,
            "evaluation_phase": "permission_request" if approval_request_id else "pre_tool_use",
            "duration_ms": duration_ms,
            "arguments_summary": arg_sizes or {"command": 8},
            "arguments_hash": uuid.uuid4().hex[:16],
        }
        if approval_request_id:
            metadata["approval_request_id"] = approval_request_id
        with self.lock:
            item = copy.deepcopy(load_capture("018_runtime_session_activity")["body"]["items"][1])
            item.update(
                activity_id=activity_id,
                timestamp=zulu(when),
                title=tool_name,
                summary=summary,
                status=status,
                tool_name=tool_name,
                metadata=metadata,
            )
            self.activity[sid].append(item)
            self._touch(sid, when)
            row = self.sessions[sid]
            row["tool_call_count"] = (row.get("tool_call_count") or 0) + 1
        frame = copy.deepcopy(self._tool_frame)
        frame["timestamp"] = offset(when + timedelta(milliseconds=3))
        frame["runtime_session_id"] = sid
        frame["payload"].update(
            runtime_session_id=sid,
            last_activity_at=offset(when),
            activity_id=activity_id,
            tool_name=tool_name,
            status=status,
            summary=summary,
            metadata=metadata,
        )
        if push:
            self.push(sid, frame)
        return activity_id

    def deliver_notes(self, sid: str = MAIN_SESSION, *, push: bool = True) -> list[str]:
        """The harness pulled the session's pending notes: each becomes delivered (and is pushed)."""
        when = _now()
        delivered: list[str] = []
        with self.lock:
            for note in self.notes.values():
                if note["runtime_session_id"] != sid or note["state"] != "pending":
                    continue
                note.update(
                    state="delivered",
                    claimed_at=zulu(when),
                    delivered_at=zulu(when),
                    delivery_channel="hook",
                    delivery_event="pre_tool_use",
                )
                item = copy.deepcopy(load_capture("116_runtime_session_activity_final")["body"]["items"][3])
                item.update(activity_id=str(uuid.uuid4()), timestamp=zulu(when), summary=note["text"])
                item["metadata"]["note_id"] = note["note_id"]
                self.activity[sid].append(item)
                self._touch(sid, when)
                delivered.append(note["note_id"])
        for note_id in delivered:
            frame = copy.deepcopy(self._note_frame)
            frame["timestamp"] = offset(when + timedelta(milliseconds=10))
            frame["runtime_session_id"] = sid
            frame["payload"].update(
                runtime_session_id=sid, last_activity_at=offset(when), summary=self.notes[note_id]["text"]
            )
            frame["payload"]["metadata"]["note_id"] = note_id
            if push:
                self.push(sid, frame)
        return delivered

    def expire_note(self, note_id: str) -> None:
        """A note's TTL ran out (Preloop notices lazily, when notes are read)."""
        with self.lock:
            self.notes[note_id].update(state="expired", expired_at=zulu(_now()))

    def request_approval(
        self, command: str = "git push origin main", *, sid: str = MAIN_SESSION, redacted: bool = False
    ) -> str:
        """A tool call now waits for a human; Preloop never pushes this on the session socket. ``redacted``:
        a sensitive-data rule gated it, its arguments redacted and the original sealed (capture 124)."""
        when = _now()
        approval = copy.deepcopy(self._approval_template)
        approval_id = str(uuid.uuid4())
        approval.update(
            id=approval_id,
            status="pending",
            requested_at=naive(when),
            resolved_at=None,
            expires_at=naive(when + timedelta(minutes=5)),
            approver_comment=None,
            decided_by_human=False,
            runtime_session_id=sid,
            tool_args={"cwd": "/home/dev/demo", "command": command, "_preloop_source": "claude_code"},
            summary=f"Allow Bash with cwd=/home/dev/demo, command={command}?",
        )
        approval["session"]["id"] = sid
        if redacted:
            gated = load_capture("124_approval_get_redacted")["body"]
            approval.update(
                tool_args=copy.deepcopy(gated["tool_args"]),
                summary=gated["summary"],
                agent_reasoning=gated["agent_reasoning"],
                rule_context=copy.deepcopy(gated["rule_context"]),
            )
        with self.lock:
            bypass = self._bypass_for(approval)
            if bypass is not None:  # services/approval_service.py: _auto_approve_via_bypass
                scope = "all agents" if bypass["managed_agent_id"] is None else "this agent"
                approval.update(
                    status="approved",
                    resolved_at=naive(_now()),
                    approver_comment=(
                        f"Auto-approved without review: an approval bypass for {scope} is active until "
                        f"{bypass['expires_at']}Z"
                    ),
                    auto_approved_reason="bypass",
                    auto_approval_bypass_id=bypass["id"],
                    was_bypassed=True,
                )
                bypass["auto_approved_count"] += 1
            self.approvals[approval_id] = approval
            self.sessions[sid]["pending_approval_count"] = self._pending_count(sid)
            if redacted:
                self.originals[approval_id] = load_capture("122_approval_original_args")["body"]["tool_args"]
            self._event(
                approval_id,
                "approval_requested",
                f"Approval requested for tool 'Bash' from agent '{sid[:8]}'",
            )
            snapshot = copy.deepcopy(approval)
        # Broadcast after the row is stored, as Preloop does after its commit (a bypass: approved only).
        kind = "approval_approved" if bypass is not None else "approval_created"
        self.push_unified(self.approval_frame(kind, snapshot))
        if bypass is not None:
            self.tool_call("Bash", sid=sid, status="approved", approval_request_id=approval_id)
        return approval_id

    # ------------------------------------------------------------------ approval history (119-121)

    def _event(
        self,
        approval_id: str,
        kind: str,
        detail: str,
        *,
        actor: tuple[str, str] | None = None,
        comment: str | None = None,
        when: datetime | None = None,
    ) -> None:
        """One history entry, shaped as ``ApprovalEventResponse`` (naive UTC timestamp)."""
        self.history.setdefault(approval_id, []).append(
            {
                "id": str(uuid.uuid4()),
                "event_type": kind,
                "detail": detail,
                "comment": comment,
                "actor_id": actor[0] if actor else None,
                "actor_email": actor[1] if actor else None,
                "timestamp": naive(when or _now()),
            }
        )

    def view_as(self, approval_id: str, user: tuple[str, str] = (DANA_ID, DANA_EMAIL)) -> None:
        """``user`` (id, email) opened the approval: one ``viewed`` entry per person."""
        with self.lock:
            seen = any(
                e["event_type"] == "viewed" and e["actor_id"] == user[0]
                for e in self.history.get(approval_id, [])
            )
            if not seen:
                self._event(approval_id, "viewed", "Approval request opened", actor=user)

    def _settle(self, approval_id: str, status: str, comment: str | None, *, human: bool) -> dict[str, Any]:
        approval = self.approvals[approval_id]
        approval.update(
            status=status, resolved_at=naive(_now()), approver_comment=comment, decided_by_human=human
        )
        self.originals.pop(approval_id, None)  # the sealed copy is deleted at decision
        approval["tool_args"].pop("_preloop_sealed_args", None)
        return copy.deepcopy(approval)

    def _vote(
        self, approval_id: str, verb: str, comment: str | None, user: tuple[str, str]
    ) -> dict[str, Any]:
        """A person decides (quorum 1): their vote, then the outcome, as ``approve_request`` records them."""
        if verb == "approve":
            self._event(
                approval_id,
                "vote_received",
                f"Approved by {user[0]} (1/1) via console",
                actor=user,
                comment=comment,
            )
            self._event(approval_id, "approval_complete", "Approval request approved (quorum 1/1 met)")
            return self._settle(approval_id, "approved", comment, human=True)
        self._event(
            approval_id,
            "vote_received",
            f"Declined by {user[0]} (1 decline(s)) via console",
            actor=user,
            comment=comment,
        )
        self._event(
            approval_id,
            "approval_complete",
            "Approval request declined (quorum cannot be reached: 1 decline(s))",
            comment=comment,
        )
        return self._settle(approval_id, "declined", comment, human=True)

    def colleague_decides(
        self,
        approval_id: str,
        verb: str = "approve",
        comment: str | None = "looks fine",
        user: tuple[str, str] = (DANA_ID, DANA_EMAIL),
    ) -> None:
        """Another person decides the approval first (from the console): the race this client loses."""
        with self.lock:
            self.view_as(approval_id, user)
            self._vote(approval_id, verb, comment, user)

    def ai_decides(
        self, approval_id: str, model: str = "gpt-4o-mini", reason: str = "a read-only call"
    ) -> None:
        """An AI reviewer approves it (``decided_by_ai``; the history names the model)."""
        with self.lock:
            self._event(approval_id, "approval_complete", f"Auto-approved by AI ({model}): {reason}")
            self._settle(approval_id, "approved", reason, human=False)
            self.approvals[approval_id].update(decided_by_ai=True, ai_model=model, ai_reasoning=reason)

    def spend(self, sid: str = MAIN_SESSION, *, input_tokens: int, output_tokens: int, cost: float) -> None:
        """The gateway counted a model call on the session row (``token_usage``, ``estimated_cost``)."""
        with self.lock:
            row = self.sessions[sid]
            usage = row["token_usage"]
            for key, value in (
                ("input_tokens", input_tokens),
                ("prompt_tokens", input_tokens),
                ("uncached_input_tokens", input_tokens),
                ("output_tokens", output_tokens),
                ("completion_tokens", output_tokens),
                ("total_tokens", input_tokens + output_tokens),
            ):
                usage[key] = (usage.get(key) or 0) + value
            row["estimated_cost"] = round((row.get("estimated_cost") or 0.0) + cost, 6)
            row["total_requests"] = (row.get("total_requests") or 0) + 1

    # ------------------------------------------------------------------ the account-wide socket

    def unified_attached(self) -> int:
        """How many authenticated unified sockets are open (tests wait on this)."""
        with self.lock:
            return len(self._unified)

    def push_unified(self, frame: dict[str, Any] | str) -> int:
        """Send a frame to every authenticated unified socket (the account topic); returns how many."""
        with self.lock:
            sockets = list(self._unified)
        if self.unified_muted and isinstance(frame, dict):
            return 0
        for sock in sockets:
            sock.put(frame)
        return len(sockets)

    def approval_frame(self, kind: str, approval: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """What ``_broadcast_approval_update`` sends for one approval: flat, redacted args, no decider."""
        frame = copy.deepcopy(self._unified_frame)
        for key in (
            "tool_name", "summary", "tool_args", "agent_reasoning", "managed_agent_name", "managed_agent_id",
            "runtime_session_id", "api_key_id", "status", "requested_at", "resolved_at", "expires_at",
        ):  # fmt: skip
            frame[key] = copy.deepcopy(approval.get(key))
        frame.update(type=kind, approval_request_id=approval["id"], timestamp=naive(_now()), **extra)
        return frame

    def vote(self, approval_id: str, approvals: int, required: int) -> None:
        """A quorum vote: the request stays pending; Preloop broadcasts the progress."""
        with self.lock:
            approval = copy.deepcopy(self.approvals[approval_id])
        self.push_unified(
            self.approval_frame(
                "approval_vote_received", approval, approval_count=approvals, approvals_required=required
            )
        )

    def escalate(self, approval_id: str, minutes: float = 5) -> str:
        """Nobody answered in time: the deadline is extended once and the escalation broadcast."""
        with self.lock:
            approval = self.approvals[approval_id]
            approval["expires_at"] = naive(_now() + timedelta(minutes=minutes))
            snapshot = copy.deepcopy(approval)
            self._event(
                approval_id,
                "escalation_triggered",
                "Approval request escalated due to timeout - notifying escalation contacts",
            )
        self.push_unified(
            self.approval_frame("approval_escalated", snapshot, new_expires_at=snapshot["expires_at"])
        )
        return str(snapshot["expires_at"])

    def expire_approval(self, approval_id: str) -> None:
        """The request timed out with no escalation left: expired, broadcast."""
        with self.lock:
            approval = self.approvals[approval_id]
            approval.update(status="expired", resolved_at=naive(_now()))
            snapshot = copy.deepcopy(approval)
            sid = approval["runtime_session_id"]
            self.sessions[sid]["pending_approval_count"] = self._pending_count(sid)
        self.push_unified(self.approval_frame("approval_expired", snapshot))

    def halt(self, scopes: tuple[str, ...] = ("tools", "gateway"), reason: str | None = None) -> None:
        """Turn the account's kill switch on (``scopes``) or off (none)."""
        body = copy.deepcopy(load_capture("139_kill_switch_status_halted")["body"])
        entry = body["scopes"][0]
        with self.lock:
            self.halted = {
                "active": bool(scopes),
                "scopes": [
                    {
                        **entry,
                        "scope": scope,
                        "reason": reason or entry["reason"],
                        "activated_at": naive(_now()),
                    }
                    for scope in scopes
                ],
            }

    # ------------------------------------------------------------------ approval bypasses

    def _active_bypasses(self) -> list[dict[str, Any]]:
        now = naive(_now())
        return [b for b in self.bypasses.values() if b["revoked_at"] is None and b["expires_at"] > now]

    def create_bypass(self, body: BypassCreateIn) -> dict[str, Any]:
        when = _now()
        bypass = copy.deepcopy(load_capture("130_approval_bypass_create")["body"])
        bypass.update(
            id=str(uuid.uuid4()),
            user_id=self.user_id,
            created_by_user_id=self.user_id,
            managed_agent_id=str(body.managed_agent_id) if body.managed_agent_id else None,
            mode=body.mode,
            reason=body.reason,
            created_via=body.created_via,
            created_at=naive(when),
            expires_at=naive(when + timedelta(minutes=body.duration_minutes)),
            revoked_at=None,
            revoked_by_user_id=None,
            auto_approved_count=0,
            is_account_wide=body.managed_agent_id is None,
            suppresses_approvals=body.mode == "auto_approve",
        )
        with self.lock:
            self.bypasses[bypass["id"]] = bypass
            return copy.deepcopy(bypass)

    def revoke_bypass(self, bypass_id: str) -> dict[str, Any] | None:
        with self.lock:
            bypass = self.bypasses.get(bypass_id)
            if bypass is None:
                return None
            if bypass["revoked_at"] is None:
                bypass.update(revoked_at=naive(_now()), revoked_by_user_id=self.user_id)
            return copy.deepcopy(bypass)

    def _bypass_for(self, approval: dict[str, Any]) -> dict[str, Any] | None:
        for bypass in self._active_bypasses():
            agent = bypass["managed_agent_id"]
            if bypass["mode"] == "auto_approve" and agent in (None, approval.get("managed_agent_id")):
                return bypass
        return None

    def _pending_count(self, sid: str) -> int:
        return sum(
            1 for a in self.approvals.values() if a["runtime_session_id"] == sid and a["status"] == "pending"
        )

    def end_session(self, sid: str = MAIN_SESSION, *, push: bool = True) -> None:
        """End a session: pending notes turn undeliverable; pushed unless it is the silent idle sweep."""
        when = _now()
        with self.lock:
            row = self.sessions[sid]
            row.update(
                ended_at=naive(when),
                last_activity_at=naive(when),
                is_active_now=False,
                activity_status="ended",
            )
            for note in self.notes.values():
                if note["runtime_session_id"] == sid and note["state"] in ("pending", "claimed"):
                    note.update(
                        state="undeliverable",
                        undeliverable_at=zulu(when),
                        undeliverable_reason="session_ended",
                    )
            item = copy.deepcopy(load_capture("116_runtime_session_activity_final")["body"]["items"][0])
            item.update(timestamp=zulu(when), summary=row["session_reference"])
            self.activity[sid].append(item)
            payload = copy.deepcopy(row)
        if push:
            self.push(sid, self._envelope(sid, "runtime_session_ended", payload, when, "runtime_sessions"))
            audit = copy.deepcopy(self.recorded_frames[-2]["data"])
            audit["timestamp"] = offset(when)
            audit["runtime_session_id"] = sid
            self.push(sid, audit)

    def model_call(self, text: str, *, tool_calls: int = 0, sid: str = MAIN_SESSION) -> str:
        """A model call through Preloop's gateway (shape unrecorded in 0.17.1: our best reading)."""
        when = _now()
        usage_id = str(uuid.uuid4())
        self.push(
            sid,
            self._envelope(
                sid,
                "model_gateway_request_started",
                {"runtime_session_id": sid, "api_usage_id": usage_id, "model_alias": "claude-sonnet"},
                when,
                "model_gateway",
            ),
        )
        response: dict[str, Any] = {"source": "response", "role": "assistant", "text": text}
        if tool_calls:
            response["tool_calls"] = [{"name": "Bash"} for _ in range(tool_calls)]
        payload = {
            "runtime_session_id": sid,
            "api_usage_id": usage_id,
            "model_alias": "claude-sonnet",
            "status": "success",
            "conversation_preview": [
                {"source": "request", "role": "user", "text": "(prompt)"},
                response,
            ],
        }
        self.push(sid, self._envelope(sid, "model_gateway_call", payload, when, "model_gateway"))
        return usage_id

    def play(self, phase: str, sid: str = MAIN_SESSION) -> int:
        """Push, verbatim, the recorded frames that arrived during/after one recorded call."""
        frames = [
            m["data"] for m in self.recorded_frames if m["phase"] in (f"during:{phase}", f"after:{phase}")
        ]
        for frame in frames:
            self.push(sid, copy.deepcopy(frame))
        return len(frames)

    def drop_sockets(self, sid: str = MAIN_SESSION) -> int:
        """Close every socket of a session (1012, service restart): the client must reconnect."""
        return self.push(sid, "__drop__")

    def hold_connections(self, held: bool = True) -> None:
        """While held, new attaches are closed 1013 (try again later), so pushes in between are missed."""
        self.held = held

    # ------------------------------------------------------------------ views

    def session_row(self, sid: str) -> dict[str, Any]:
        with self.lock:
            row = copy.deepcopy(self.sessions[sid])
            row["note_count"] = sum(1 for n in self.notes.values() if n["runtime_session_id"] == sid)
            row["pending_approval_count"] = self._pending_count(sid)
            return row

    def session_detail(self, sid: str) -> dict[str, Any]:
        """The detail leaves counters empty (0) and cwd null, as recorded (017 vs 012)."""
        row = self.session_row(sid)
        row.update(tool_call_count=0, pending_approval_count=0, note_count=0, cwd=None)
        return {"period_start": None, "period_end": None, "session": row, "usage_by_model": []}

    # ------------------------------------------------------------------ notes

    def create_note(self, body: NoteCreateIn) -> tuple[int, dict[str, Any]]:
        with self.lock:
            sid = str(body.runtime_session_id) if body.runtime_session_id else None
            if sid is not None and sid not in self.sessions:
                return 404, {"detail": "Runtime session not found"}
            if sid is not None:
                sent = sum(1 for n in self.notes.values() if n["runtime_session_id"] == sid)
                if sent >= NOTE_RATE_LIMIT:
                    return 429, load_capture("107_rate_note_21")["body"]
            when = _now()
            note = copy.deepcopy(self._note_template)
            note.update(
                note_id=uuid.uuid4().hex[:16],
                state="pending",
                text=body.text,
                runtime_session_id=sid,
                managed_agent_id=self.sessions[sid]["managed_agent_id"] if sid else str(body.agent_id),
                created_at=naive(when),
                expires_at=zulu(when + timedelta(seconds=body.expires_in_seconds or 86400)),
            )
            self.notes[note["note_id"]] = note
            if sid:
                self.sessions[sid]["latest_note_at"] = naive(when)
            return 201, copy.deepcopy(note)

    def cancel_note(self, note_id: str) -> dict[str, Any] | None:
        """200 in every case with the note as it now is: only a pending note becomes cancelled."""
        with self.lock:
            note = self.notes.get(note_id)
            if note is None:
                return None
            if note["state"] == "pending":
                note.update(state="cancelled", cancelled_at=zulu(_now()))
            return copy.deepcopy(note)

    # ------------------------------------------------------------------ approvals

    def decide(self, approval_id: str, verb: str, comment: str | None) -> tuple[int, dict[str, Any]]:
        with self.lock:
            approval = self.approvals.get(approval_id)
            if approval is None:
                return 404, {"detail": "Approval request not found"}
            if approval["status"] != "pending":
                return 400, {"detail": f"Request already {approval['status']}"}
            result = self._vote(approval_id, verb, comment, (ALICE_ID, ALICE_EMAIL))
            sid = approval["runtime_session_id"]
        self.push_unified(self.approval_frame(f"approval_{result['status']}", result))
        # The blocked permission check returns and its tool call is recorded (pushed), as in the capture.
        self.tool_call(
            "Bash",
            sid=sid,
            status=result["status"],
            duration_ms=2049,
            summary=comment,
            arg_sizes={"command": len(result["tool_args"].get("command", ""))},
            approval_request_id=approval_id,
        )
        return 200, result


def _unauthorised(request_auth: str | None) -> JSONResponse | None:
    if not request_auth:
        return JSONResponse({"detail": "Not authenticated"}, 401, headers={"WWW-Authenticate": "Bearer"})
    if request_auth != f"Bearer {TOKEN}":
        return JSONResponse(
            {"detail": "Invalid authentication credentials"}, 401, headers={"WWW-Authenticate": "Bearer"}
        )
    return None


def _not_found(what: str) -> JSONResponse:
    return JSONResponse({"detail": f"{what} not found"}, 404)


def build_app(fake: FakePreloop) -> FastAPI:
    """The fake's HTTP + websocket routes over ``fake``'s state."""
    app = FastAPI()

    @app.middleware("http")
    async def auth(request: Request, call_next: Callable[[Request], Any]) -> Response:
        fake.requests.append((request.method, request.url.path))
        if request.url.path != "/api/v1/health":
            refused = _unauthorised(request.headers.get("authorization"))
            if refused is not None:
                return refused
        response: Response = await call_next(request)
        return response

    @app.get("/api/v1/health")
    async def health() -> dict[str, Any]:
        body: dict[str, Any] = load_capture("001_health")["body"]
        return body

    @app.get("/api/v1/runtime-sessions")
    async def list_sessions(
        status: Annotated[str, Query(pattern="^(all|active|ended)$")] = "all",
        limit: Annotated[int, Query(ge=1, le=500)] = 20,
        offset: Annotated[int, Query(ge=0)] = 0,
        active_within_minutes: int | None = None,
        agent_kind: str | None = None,
    ) -> dict[str, Any]:
        with fake.lock:
            rows = [fake.session_row(sid) for sid in fake.session_order]
        if status == "active":
            rows = [r for r in rows if r["ended_at"] is None]
        elif status == "ended":
            rows = [r for r in rows if r["ended_at"] is not None]
        if agent_kind:
            rows = [r for r in rows if r["agent_kind"] == agent_kind]
        if active_within_minutes is not None:
            since = naive(_now() - timedelta(minutes=active_within_minutes))
            rows = [r for r in rows if (r["last_activity_at"] or r["started_at"]) >= since]
        page = rows[offset : offset + limit]
        has_more = offset + len(page) < len(rows)
        now = _now()
        return {
            "period_start": zulu(now - timedelta(days=30)),
            "period_end": zulu(now),
            "query": None,
            "session_source_type": None,
            "status": status,
            "total": None if (fake.null_total and has_more) else len(rows),
            "has_more": has_more,
            "limit": limit,
            "offset": offset,
            "items": page,
        }

    @app.get("/api/v1/runtime-sessions/{sid}")
    async def session_detail(sid: str) -> Response:
        if not _is_uuid(sid):
            # Recorded: a 500, and the keep-alive connection is dropped.
            return JSONResponse({"detail": "Internal server error"}, 500, headers={"Connection": "close"})
        if sid not in fake.sessions:
            return _not_found("Runtime session")
        return JSONResponse(fake.session_detail(sid))

    @app.get("/api/v1/runtime-sessions/{sid}/activity")
    async def session_activity(sid: str) -> Response:
        if not _is_uuid(sid):
            return JSONResponse({"detail": "Internal server error"}, 500, headers={"Connection": "close"})
        if sid not in fake.sessions:
            return _not_found("Runtime session")
        with fake.lock:
            items = list(reversed(copy.deepcopy(fake.activity[sid])))
        return JSONResponse({"items": items})

    @app.patch("/api/v1/runtime-sessions/{sid}")
    async def patch_session(sid: str, body: Annotated[dict[str, Any], Body()]) -> Response:
        if sid not in fake.sessions:
            return _not_found("Runtime session")
        if body.get("action") == "end":
            fake.end_session(sid)
        row = fake.session_row(sid)
        row.update(agent_id=None, agent_name=None, managed_agent_id=None, note_count=0, cwd=None)
        return JSONResponse(row)

    @app.post("/api/v1/operator-notes", status_code=201)
    async def create_note(body: NoteCreateIn) -> Response:
        status, payload = fake.create_note(body)
        return JSONResponse(payload, status)

    @app.get("/api/v1/operator-notes")
    async def list_notes(
        runtime_session_id: uuid.UUID | None = None,
        agent_id: uuid.UUID | None = None,
        execution_id: uuid.UUID | None = None,
        state: Annotated[
            str | None,
            Query(
                pattern="^(pending|claimed|delivered|acknowledged|cancelled|expired|failed|undeliverable)$"
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> Response:
        if runtime_session_id is None and agent_id is None and execution_id is None:
            return JSONResponse({"detail": "Name an agent_id, runtime_session_id or execution_id"}, 400)
        with fake.lock:
            notes = [copy.deepcopy(n) for n in fake.notes.values()]
        if runtime_session_id is not None:
            notes = [n for n in notes if n["runtime_session_id"] == str(runtime_session_id)]
        if agent_id is not None:
            notes = [n for n in notes if n["managed_agent_id"] == str(agent_id)]
        if state is not None:
            notes = [n for n in notes if n["state"] == state]
        notes.reverse()  # newest first
        return JSONResponse({"notes": notes[offset : offset + limit], "total": len(notes)})

    @app.get("/api/v1/operator-notes/{note_id}")
    async def get_note(note_id: str) -> Response:
        with fake.lock:
            note = copy.deepcopy(fake.notes.get(note_id))
        return JSONResponse(note) if note else _not_found("Note")

    @app.post("/api/v1/operator-notes/{note_id}/cancel")
    async def cancel_note(note_id: str) -> Response:
        note = fake.cancel_note(note_id)
        return JSONResponse(note) if note else _not_found("Note")

    @app.get("/api/v1/approval-requests")
    async def list_approvals(
        status: str | None = None,
        runtime_session_id: uuid.UUID | None = None,
        skip: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> Response:
        with fake.lock:
            items = [copy.deepcopy(a) for a in fake.approvals.values()]
        if status is not None:
            items = [a for a in items if a["status"] == status]
        if runtime_session_id is not None:
            items = [a for a in items if a["runtime_session_id"] == str(runtime_session_id)]
        items.reverse()
        return JSONResponse(items[skip : skip + limit], headers={"X-Total-Count": str(len(items))})

    @app.get("/api/v1/approval-requests/{approval_id}")
    async def get_approval(approval_id: uuid.UUID) -> Response:
        with fake.lock:
            approval = copy.deepcopy(fake.approvals.get(str(approval_id)))
            if approval:  # reading the detail is a view by the token's user (Preloop's _record_viewed_event)
                fake.view_as(str(approval_id), (ALICE_ID, ALICE_EMAIL))
        return JSONResponse(approval) if approval else _not_found("Approval request")

    @app.get("/api/v1/approval-requests/{approval_id}/history")
    async def approval_history(approval_id: uuid.UUID) -> Response:
        with fake.lock:
            if str(approval_id) not in fake.approvals:
                return _not_found("Approval request")
            return JSONResponse(copy.deepcopy(fake.history.get(str(approval_id), [])))

    @app.get("/api/v1/approval-requests/{approval_id}/original-args")
    async def original_args(approval_id: uuid.UUID) -> Response:
        with fake.lock:
            approval = fake.approvals.get(str(approval_id))
            if approval is None:
                return _not_found("Approval request")
            original = fake.originals.get(str(approval_id))
            if approval["status"] != "pending" or original is None:
                return JSONResponse(load_capture("123_err_404_approval_original_args")["body"], 404)
            return JSONResponse({"request_id": str(approval_id), "tool_args": copy.deepcopy(original)})

    @app.get("/api/v1/auth/users/me")
    async def users_me() -> dict[str, Any]:
        body: dict[str, Any] = load_capture("006_auth_users_me_alice")["body"]
        return body

    @app.post("/api/v1/approval-requests/{approval_id}/approve")
    async def approve(approval_id: uuid.UUID, body: Decision | None = None) -> Response:
        status, payload = await asyncio.to_thread(
            fake.decide, str(approval_id), "approve", body.comment if body else None
        )
        return JSONResponse(payload, status)

    @app.post("/api/v1/approval-requests/{approval_id}/decline")
    async def decline(approval_id: uuid.UUID, body: Decision | None = None) -> Response:
        status, payload = await asyncio.to_thread(
            fake.decide, str(approval_id), "decline", body.comment if body else None
        )
        return JSONResponse(payload, status)

    @app.post("/api/v1/approval-requests/decide-batch")
    async def decide_batch(body: BatchDecisionIn) -> Response:
        """Each id decided on its own, in order, duplicates dropped (capture 141); 403 before any id is read
        without ``decide_approvals`` (capture 142)."""
        if not fake.can_decide:
            return JSONResponse(load_capture("142_err_403_approvals_decide_batch_no_permission")["body"], 403)
        verb = "approve" if body.approved else "decline"
        results: list[dict[str, Any]] = []
        for approval_id in dict.fromkeys(str(i) for i in body.ids):
            status, payload = await asyncio.to_thread(fake.decide, approval_id, verb, body.comment)
            if status == 200:
                results.append({"id": approval_id, "ok": True, "status": payload["status"], "error": None})
                continue
            with fake.lock:
                current = fake.approvals.get(approval_id)
                now = current["status"] if current is not None else None
            results.append({"id": approval_id, "ok": False, "status": now, "error": payload["detail"]})
        succeeded = sum(1 for r in results if r["ok"])
        return JSONResponse({"results": results, "succeeded": succeeded, "failed": len(results) - succeeded})

    def _may_decide() -> JSONResponse | None:
        if fake.can_decide:
            return None
        return JSONResponse(load_capture("137_err_403_approval_bypass_no_permission")["body"], 403)

    @app.get("/api/v1/approval-bypasses/status")
    async def bypass_status() -> Response:
        with fake.lock:
            active = sorted(
                (copy.deepcopy(b) for b in fake._active_bypasses()), key=lambda b: b["expires_at"]
            )
        return JSONResponse(
            {
                "active": bool(active),
                "auto_approve_active": any(b["mode"] == "auto_approve" for b in active),
                "bypasses": active,
                "soonest_expiry": active[0]["expires_at"] if active else None,
            }
        )

    @app.get("/api/v1/approval-bypasses")
    async def list_bypasses() -> Response:
        with fake.lock:
            active = [copy.deepcopy(b) for b in fake._active_bypasses()]
        return JSONResponse(sorted(active, key=lambda b: b["expires_at"], reverse=True))

    @app.post("/api/v1/approval-bypasses", status_code=201)
    async def create_bypass(body: BypassCreateIn) -> Response:
        refused = _may_decide()
        return refused or JSONResponse(fake.create_bypass(body), 201)

    @app.post("/api/v1/approval-bypasses/revoke-all")
    async def revoke_all_bypasses() -> Response:
        refused = _may_decide()
        if refused is not None:
            return refused
        with fake.lock:
            ids = [b["id"] for b in fake._active_bypasses()]
        return JSONResponse([fake.revoke_bypass(bid) for bid in ids])

    @app.delete("/api/v1/approval-bypasses/{bypass_id}")
    async def revoke_bypass(bypass_id: uuid.UUID) -> Response:
        refused = _may_decide()
        if refused is not None:
            return refused
        revoked = fake.revoke_bypass(str(bypass_id))
        return JSONResponse(revoked) if revoked else _not_found("Approval bypass")

    @app.get("/api/v1/account/kill-switch/status")
    async def kill_switch_status() -> Response:
        with fake.lock:
            return JSONResponse(copy.deepcopy(fake.halted))

    @app.websocket("/api/v1/ws/unified")
    async def unified_socket(websocket: WebSocket) -> None:
        """Anonymous without a valid token (handshake ``authenticated: false``, nothing of the account)."""
        await websocket.accept()
        auth_header = websocket.headers.get("authorization")
        fake.unified_upgrades.append(auth_header)
        authenticated = auth_header == f"Bearer {TOKEN}"
        sock = _Socket(asyncio.get_running_loop())
        if authenticated:
            with fake.lock:
                fake._unified.append(sock)
        try:
            await websocket.send_json(
                {
                    "type": "handshake",
                    "session_id": str(uuid.uuid4()),
                    "authenticated": authenticated,
                    "message": "Connected to unified WebSocket",
                }
            )

            async def reader() -> None:
                while True:
                    message = await websocket.receive_json()
                    fake.ws_received.append(message)
                    if isinstance(message, dict) and message.get("type") == "ping" and not fake.muted:
                        sock.put({"type": "pong"})

            reading = asyncio.create_task(reader())
            try:
                while True:
                    getter = asyncio.create_task(sock.queue.get())
                    done, _ = await asyncio.wait({getter, reading}, return_when=asyncio.FIRST_COMPLETED)
                    if reading in done:
                        getter.cancel()
                        return
                    item = getter.result()
                    if isinstance(item, RawText):
                        await websocket.send_text(str(item))
                    elif item == "__drop__":
                        await websocket.close(code=1012, reason="service restart")
                        return
                    else:
                        await websocket.send_json(item)
            finally:
                reading.cancel()
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            with fake.lock:
                if sock in fake._unified:
                    fake._unified.remove(sock)

    @app.websocket("/api/v1/ws/runtime-sessions/{sid}")
    async def session_socket(websocket: WebSocket, sid: str) -> None:
        await websocket.accept()
        auth_header = websocket.headers.get("authorization")
        fake.ws_upgrades.append((websocket.url.query, auth_header))
        if auth_header != f"Bearer {TOKEN}":
            await websocket.send_json(
                {"type": "error", "error": "unauthorized", "detail": "A valid bearer token is required"}
            )
            await websocket.close(code=4401)
            return
        if not _is_uuid(sid) or sid not in fake.sessions:
            await websocket.send_json(
                {"type": "error", "error": "not_found", "detail": "Runtime session not found"}
            )
            await websocket.close(code=4404)
            return
        if fake.held:
            await websocket.close(code=1013, reason="try again later")
            return
        sock = _Socket(asyncio.get_running_loop())
        with fake.lock:
            fake._sockets.setdefault(sid, []).append(sock)
            fake.ws_attaches += 1
            ended_at = fake.sessions[sid]["ended_at"]
        try:
            await websocket.send_json(
                {
                    "type": "attached",
                    "runtime_session_id": sid,
                    "execution_id": None,
                    "ended_at": ended_at,
                    "approvals_visible": True,
                }
            )

            async def reader() -> None:
                while True:
                    message = await websocket.receive_json()
                    fake.ws_received.append(message)
                    if isinstance(message, dict) and message.get("type") == "ping" and not fake.muted:
                        sock.put({"type": "pong"})

            reading = asyncio.create_task(reader())
            try:
                while True:
                    getter = asyncio.create_task(sock.queue.get())
                    done, _ = await asyncio.wait({getter, reading}, return_when=asyncio.FIRST_COMPLETED)
                    if reading in done:
                        getter.cancel()
                        return
                    item = getter.result()
                    if isinstance(item, RawText):
                        await websocket.send_text(str(item))
                    elif item == "__drop__":
                        await websocket.close(code=1012, reason="service restart")
                        return
                    else:
                        await websocket.send_json(item)
            finally:
                reading.cancel()
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            with fake.lock:
                socks = fake._sockets.get(sid, [])
                if sock in socks:
                    socks.remove(sock)

    return app
