"""A scripted in-memory Backend for SNAPSHOT tests only (pilot tests use the real local server).

It returns fixed rows, notes and approvals, and its ``follow`` yields a fixed script of events and status
values and then waits forever (like a live stream with nothing new), so screenshots are deterministic.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from client.backends.base import ApprovalPage, BatchItem, Capabilities, ServerKind, SessionFilter
from client.errors import ClientError, NotFound
from client.events import Event, event_from_dict
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

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def frozen_clock() -> datetime:
    return NOW


def ago(**kwargs: float) -> datetime:
    return NOW - timedelta(**kwargs)


class FakeBackend:
    server_kind: ServerKind = "local"
    capabilities = Capabilities()

    def __init__(
        self,
        *,
        sessions: Sequence[Session] = (),
        notes: Sequence[Note] = (),
        approvals: Sequence[Approval] = (),
        script: Sequence[Event | StreamStatus] = (),
        fail: ClientError | None = None,
        attention: Sequence[AttentionSnapshot | Event | StreamStatus] = (),
        standing: Standing | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self.sessions = list(sessions)
        self.notes = list(notes)
        self.approvals = list(approvals)
        self.script = list(script)
        self.fail = fail
        self.attention = list(attention)
        """What ``watch_attention`` yields (an empty snapshot when nothing is given), then it waits."""
        self.attention_consumed = False
        self.me: UserMe | None = None
        """Who ``whoami`` says this token acts for."""
        self.standing_now = standing or Standing()
        """What ``standing()`` answers (the banner's rules and kill switch)."""
        if capabilities is not None:
            self.capabilities = capabilities
        self.made: list[RuleSpec] = []
        self.settled_first: dict[str, Approval] = {}
        """Approvals a batch finds settled already (their row as the server has it now)."""
        self.refused: dict[str, ClientError] = {}
        """Approvals a batch cannot decide, and why."""
        self.batches: list[tuple[list[str], bool, str | None]] = []
        """Every ``decide_batch`` asked: the ids, approve or not, the comment."""
        self.sent: list[str] = []
        self.script_consumed = False
        """True once the follower has taken every scripted item (the screen has handled the last one)."""

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

    async def health(self) -> Health:
        self._check()
        return Health(status="ok", server_kind="local")

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList:
        self._check()
        return SessionList(items=self.sessions[offset : offset + limit], total=len(self.sessions))

    async def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]:
        self._check()
        for session in self.sessions[:max_items]:
            yield session

    async def get_session(self, session_id: str) -> Session:
        self._check()
        for session in self.sessions:
            if session.id == session_id:
                return session
        raise NotFound(404, f"no session {session_id}")

    async def session_ids(self, *, page_size: int = 100) -> AsyncIterator[str]:
        self._check()
        for session in self.sessions:
            yield session.id

    async def session_activity(self, session_id: str) -> list[ActivityItem]:
        return []

    async def end_session(self, session_id: str) -> Session:
        return await self.get_session(session_id)

    async def send_note(self, text: str, **kwargs: Any) -> Note:
        self._check()
        self.sent.append(text)
        return Note(note_id=f"n{len(self.sent)}", state="pending", text=text, created_at=NOW)

    async def list_notes(self, **kwargs: Any) -> NoteList:
        self._check()
        return NoteList(notes=self.notes, total=len(self.notes))

    async def get_note(self, note_id: str) -> Note:
        return next(n for n in self.notes if n.note_id == note_id)

    async def withdraw_note(self, note_id: str) -> Note:
        note = await self.get_note(note_id)
        return note.model_copy(update={"state": "cancelled"})

    async def list_approvals(self, **kwargs: Any) -> ApprovalPage:
        self._check()
        return ApprovalPage(items=self.approvals, total=len(self.approvals))

    async def get_approval(self, approval_id: str) -> Approval:
        return next(a for a in self.approvals if a.id == approval_id)

    async def approve(self, approval_id: str, comment: str | None = None) -> Approval:
        return (await self.get_approval(approval_id)).model_copy(update={"status": "approved"})

    async def decline(self, approval_id: str, comment: str | None = None) -> Approval:
        return (await self.get_approval(approval_id)).model_copy(update={"status": "declined"})

    async def approval_trail(self, approval: Approval) -> Approval:
        return approval

    async def original_args(self, approval_id: str) -> dict[str, Any]:
        raise NotFound(404, "No original arguments are available for this request")

    async def whoami(self) -> UserMe | None:
        return self.me

    async def decide_batch(
        self, approval_ids: Sequence[str], *, approve: bool, comment: str | None = None
    ) -> list[BatchItem]:
        self.batches.append((list(approval_ids), approve, comment))
        status = "approved" if approve else "declined"
        items: list[BatchItem] = []
        for approval_id in approval_ids:
            if approval_id in self.settled_first:
                row = self.settled_first[approval_id]
                items.append(BatchItem(approval_id, decided=False, status=row.status, approval=row))
            elif approval_id in self.refused:
                items.append(BatchItem(approval_id, decided=False, error=self.refused[approval_id]))
            else:
                row = (await self.get_approval(approval_id)).model_copy(
                    update={"status": status, "approver_comment": comment, "resolved_at": NOW}
                )
                items.append(BatchItem(approval_id, decided=True, status=status, approval=row))
        return items

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncIterator[Event | StreamStatus]:
        for item in self.script:
            yield item
        self.script_consumed = True
        await asyncio.Event().wait()

    async def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        for item in self.attention or [AttentionSnapshot(at=NOW)]:
            yield item
        self.attention_consumed = True
        await asyncio.Event().wait()

    async def list_rules(self) -> list[AllowRule]:
        return list(self.standing_now.rules)

    async def create_rule(self, spec: RuleSpec) -> AllowRule:
        self.made.append(spec)
        return AllowRule(id=f"r{len(self.made)}", mode=spec.mode, scope=spec.scope, expires_at=NOW)

    async def revoke_rule(self, rule_id: str) -> AllowRule:
        return next(r for r in self.standing_now.rules if r.id == rule_id)

    async def revoke_all_rules(self) -> list[AllowRule]:
        return list(self.standing_now.rules)

    async def standing(self) -> Standing:
        return self.standing_now

    async def aclose(self) -> None:
        return None


class Script:
    """Builds events with contiguous seq numbers for one session."""

    def __init__(self, session_id: str, start: datetime) -> None:
        self.session_id = session_id
        self.seq = 0
        self.at = start

    def __call__(self, kind: str, **fields: Any) -> Event:
        self.seq += 1
        self.at += timedelta(seconds=1)
        body = {"seq": self.seq, "type": kind, "session_id": self.session_id, "at": self.at.isoformat()}
        return event_from_dict({**body, **fields})
