"""The REST side of the backends: what every one shares, and the Preloop-shaped API two of them speak.

* :class:`RestBackend`: what a backend's REST side is whatever the server's routes: one
  :class:`~client.connection.Connection` (closed with the backend, ``async with``), a repr that never shows
  the token, sessions paged across ``list_sessions`` pages, and the ids a short session id is matched
  against. Every backend class derives from it.
* :class:`PreloopRestApi`: the Preloop-shaped REST (``/api/v1``) that a Preloop server and our local
  control plane both speak; the local and the Preloop backend differ only where the servers do (the live
  channel, a few quirks). A Dendrux app has other routes (``client.backends.dendrux``).

Every answer is validated by a pydantic model, and every failure is a :mod:`client.errors` exception (via
:class:`Connection`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Self

import httpx
from pydantic import Field, TypeAdapter, ValidationError

from client.backends.base import API_PREFIX, ApprovalPage, BatchItem, SessionFilter
from client.connection import Connection
from client.errors import (
    ClientError,
    InvalidResponse,
    NoteOutcomeUnknown,
    SessionEnded,
    Timeout,
    TransportError,
    Unsupported,
    UsageError,
    error_for_status,
)
from client.ids import require_note_id, require_uuid, short_id
from client.listing import session_pages
from client.models import (
    BATCH_MAX_IDS,
    ActivityItem,
    ActivityList,
    AllowRule,
    Approval,
    ApprovalBatchAnswer,
    ApprovalBatchDecision,
    ApprovalBatchResult,
    ApprovalDecision,
    Health,
    Note,
    NoteCreate,
    NoteList,
    RuleSpec,
    Session,
    SessionDetail,
    SessionList,
    Standing,
    UserMe,
    WireModel,
)
from client.notetext import require_sendable

__all__ = ["API_PREFIX", "PreloopRestApi", "RestBackend"]

_approvals_adapter: TypeAdapter[list[Approval]] = TypeAdapter(list[Approval])
rules_adapter: TypeAdapter[list[AllowRule]] = TypeAdapter(list[AllowRule])
"""A JSON array of rules (our server's listing and revoke-all answer)."""


class _OriginalArgs(WireModel):
    """``GET /approval-requests/{id}/original-args``: ``{request_id, tool_args}``."""

    request_id: str | None = None
    tool_args: dict[str, Any] = Field(default_factory=dict)


# Counters a Preloop session *detail* leaves empty although the list row has them.
_LIST_ONLY_FIELDS = ("tool_call_count", "pending_approval_count", "note_count", "cwd")


class RestBackend:
    """What every backend shares, whatever its server's routes: its connection, and paging sessions."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._whoami: UserMe | None = None
        self._whoami_asked = False

    async def whoami(self) -> UserMe | None:
        """Who this token acts for, asked once (:meth:`_ask_whoami`); None when the server cannot say."""
        if not self._whoami_asked:
            try:
                self._whoami = await self._ask_whoami()
            except ClientError:
                self._whoami = None
            self._whoami_asked = True
        return self._whoami

    async def _ask_whoami(self) -> UserMe | None:
        return None

    async def approval_trail(self, approval: Approval) -> Approval:
        """As given: a server whose rows already say who decided (or that keeps no decider)."""
        return approval

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.conn.base_url!r}, token=***)"

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
        """Close the connection; open streams end."""
        await self.conn.aclose()

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList:
        """One page of sessions (each backend reads its server's own listing)."""
        raise NotImplementedError

    # --------------------------------------------------------------------------- allow rules (none here)

    def _rules(self, response: httpx.Response) -> list[AllowRule]:
        """A JSON array of rules, or InvalidResponse."""
        try:
            return rules_adapter.validate_json(response.content)
        except ValidationError as exc:
            raise self.conn.invalid(response, exc) from None

    def _no_rules(self) -> Unsupported:
        kind = getattr(self, "server_kind", "")
        return Unsupported(f"a {kind or 'this'} server keeps no allow rules: decide each call on its own")

    async def list_rules(self) -> list[AllowRule]:
        """The rules that hold now: a server without rules has none."""
        return []

    async def create_rule(self, spec: RuleSpec) -> AllowRule:
        """Make an allow rule (a server without rules refuses: ``Unsupported``)."""
        raise self._no_rules()

    async def revoke_rule(self, rule_id: str) -> AllowRule:
        """End one rule (a server without rules refuses: ``Unsupported``)."""
        raise self._no_rules()

    async def revoke_all_rules(self) -> list[AllowRule]:
        """End every rule (a server without rules refuses: ``Unsupported``)."""
        raise self._no_rules()

    async def standing(self) -> Standing:
        """Nothing decides for the operator on a server without rules or a kill switch."""
        return Standing()

    def iter_sessions(
        self, filters: SessionFilter | None = None, *, max_items: int = 1000, page_size: int = 100
    ) -> AsyncIterator[Session]:
        """Every session matching ``filters`` across pages, each once, up to ``max_items``, following
        ``has_more`` (``client.listing.session_pages``)."""
        return session_pages(self, filters, most=max_items, size=page_size)

    session_scan = 10_000
    """A short session id is matched against at most this many of the newest sessions."""

    async def session_ids(self, *, page_size: int = 100) -> AsyncIterator[str]:
        """The ids a short session id is matched against (``client.ids.resolve_session``): every
        session's, of every status, newest first, up to :attr:`session_scan`."""
        rows = self.iter_sessions(
            SessionFilter(status="all"), max_items=self.session_scan, page_size=page_size
        )
        async for row in rows:
            yield row.id


class PreloopRestApi(RestBackend):
    """Sessions, notes and approvals over Preloop's REST shapes, on a shared :class:`Connection`.

    Subclasses hook :meth:`_changed` to learn about a change the server will not push (a note sent or
    withdrawn, an approval decided), and :meth:`_before_note` to refuse a note the server would accept but
    never deliver.
    """

    async def _request(
        self,
        method: str,
        path: str,
        *,
        what: str = "",
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        return await self.conn.request(method, API_PREFIX + path, what=what, params=params, json=json)

    def _changed(self, session_id: str | None) -> None:
        """A note or approval of this session changed here; a follower that polls may want to look now."""

    async def _before_note(self, session_id: str) -> None:
        """A note for this session is about to be sent (its text already checked): a server that would
        accept a note it can never deliver is asked about the session here (raise to refuse)."""

    async def _ask_whoami(self) -> UserMe | None:
        return self.conn.parse(await self._request("GET", "/auth/users/me"), UserMe)

    # --------------------------------------------------------------------------------------- health

    async def health(self) -> Health:
        """Check the server answers at all; also tells our server from Preloop."""
        return self.conn.parse(await self._request("GET", "/health"), Health)

    # --------------------------------------------------------------------------------------- sessions

    async def list_sessions(
        self, filters: SessionFilter | None = None, *, limit: int = 20, offset: int = 0
    ) -> SessionList:
        """One page of sessions; keep paging while ``has_more`` (``total`` may be null)."""
        params = (filters or SessionFilter()).params(limit=limit, offset=offset)
        response = await self._request("GET", "/runtime-sessions", params=params)
        return self.conn.parse(response, SessionList)

    async def _session_detail(self, session_id: str) -> Session:
        sid = require_uuid(session_id)
        response = await self._request("GET", f"/runtime-sessions/{sid}", what=f"session {sid}")
        return self.conn.parse(response, SessionDetail).session

    async def get_session(self, session_id: str) -> Session:
        """The session detail, with the counters Preloop's detail leaves empty filled from its list row."""
        sid = require_uuid(session_id)
        session = await self._session_detail(sid)
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

    async def session_activity(self, session_id: str) -> list[ActivityItem]:
        """What happened in a session, newest first (Preloop's history; no total)."""
        sid = require_uuid(session_id)
        response = await self._request("GET", f"/runtime-sessions/{sid}/activity", what=f"session {sid}")
        return self.conn.parse(response, ActivityList).items

    async def end_session(self, session_id: str) -> Session:
        """Ask the server to end a session; pending notes become undeliverable."""
        sid = require_uuid(session_id)
        response = await self._request(
            "PATCH", f"/runtime-sessions/{sid}", what=f"session {sid}", json={"action": "end"}
        )
        return self.conn.parse(response, Session)

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
        require_sendable(text)
        body = NoteCreate(
            text=text,
            runtime_session_id=require_uuid(session_id) if session_id else None,
            agent_id=require_uuid(agent_id, "agent id") if agent_id else None,
            execution_id=require_uuid(execution_id, "execution id") if execution_id else None,
            expires_in_seconds=expires_in_seconds,
            correlation_id=correlation_id or uuid.uuid4().hex,
        )
        cid = body.correlation_id or ""
        if body.runtime_session_id:
            await self._before_note(body.runtime_session_id)
        url = API_PREFIX + "/operator-notes"
        what = f"session {session_id}" if session_id else "the note's target"  # a 404 names it in full
        try:
            response = await self.conn.send("POST", url, json=body.model_dump(exclude_none=True))
        except TransportError as err:
            if not err.sent:  # nothing left this machine: safe to say "not sent"
                raise type(err)(f"{err.hint}; the note was not sent") from None
            reason = "no answer in time" if isinstance(err, Timeout) else "the connection broke"
            raise NoteOutcomeUnknown(cid, reason) from None
        if response.status_code in (502, 504):
            # a proxy gave up waiting: the server behind it may well have created the note
            raise NoteOutcomeUnknown(cid, f"a proxy answered {response.status_code}")
        if response.status_code >= 400:
            error = self.conn.api_error(response, what)
            if error.status == 409 and session_id:
                # the only 409 of this route: the session has ended (our server; docs/protocol.md)
                raise SessionEnded(f"session {short_id(session_id)}", error.detail)
            raise error
        try:
            note = self.conn.parse(response, Note)
        except InvalidResponse:
            raise NoteOutcomeUnknown(cid, "the answer could not be read") from None
        self._changed(note.runtime_session_id)
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
        target = session_id or agent_id or execution_id
        kind = "session" if session_id else "agent" if agent_id else "execution"
        what = f"{kind} {target}" if target else ""
        response = await self._request("GET", "/operator-notes", what=what, params=params)
        return self.conn.parse(response, NoteList)

    async def get_note(self, note_id: str) -> Note:
        """A note as it is now (states move as the agent picks it up)."""
        nid = require_note_id(note_id)
        response = await self._request("GET", f"/operator-notes/{nid}", what=f"note {nid}")
        return self.conn.parse(response, Note)

    async def withdraw_note(self, note_id: str) -> Note:
        """Cancel a note; the answer is the note as it now is: read ``state`` (only pending ones cancel)."""
        nid = require_note_id(note_id)
        response = await self._request("POST", f"/operator-notes/{nid}/cancel", what=f"note {nid}")
        note = self.conn.parse(response, Note)
        self._changed(note.runtime_session_id)
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
            raise self.conn.invalid(response, exc) from None
        total_header = response.headers.get("x-total-count")
        total = int(total_header) if total_header and total_header.strip().isdigit() else None
        return ApprovalPage(items=items, total=total)

    async def get_approval(self, approval_id: str) -> Approval:
        """One approval request with its tool arguments and current status."""
        aid = require_uuid(approval_id, "approval id")
        response = await self._request("GET", f"/approval-requests/{aid}", what=f"approval {aid}")
        return self.conn.parse(response, Approval)

    async def original_args(self, approval_id: str) -> dict[str, Any]:
        """The approval's arguments before redaction (Preloop: a pending request whose rule keeps them);
        otherwise the server's 404 ("No original arguments are available for this request")."""
        aid = require_uuid(approval_id, "approval id")
        response = await self._request(
            "GET", f"/approval-requests/{aid}/original-args", what=f"approval {short_id(aid)}"
        )
        body = self.conn.parse(response, _OriginalArgs)
        return body.tool_args

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
            "POST", f"/approval-requests/{aid}/{verb}", what=f"approval {aid}", json=body
        )
        approval = self.conn.parse(response, Approval)
        self._changed(approval.runtime_session_id)
        return approval

    async def decide_batch(
        self, approval_ids: Sequence[str], *, approve: bool, comment: str | None = None
    ) -> list[BatchItem]:
        """One decision for many approvals: ``POST /approval-requests/decide-batch`` per
        :data:`~client.models.BATCH_MAX_IDS` ids, one after another, each answering one result per id
        (Preloop 0.17.1 and our server alike). A request that fails makes its ids failed items, and the
        next request is still sent: the batch never fails as a whole."""
        ids = list(dict.fromkeys(require_uuid(a, "approval id") for a in approval_ids))
        items: list[BatchItem] = []
        for start in range(0, len(ids), BATCH_MAX_IDS):
            chunk = ids[start : start + BATCH_MAX_IDS]
            body = ApprovalBatchDecision(ids=chunk, approved=approve, comment=comment)
            try:
                response = await self._request(
                    "POST",
                    "/approval-requests/decide-batch",
                    what="the approvals",
                    json=body.model_dump(exclude_none=True),
                )
                answer = self.conn.parse(response, ApprovalBatchAnswer)
            except ClientError as exc:
                items.extend(BatchItem(aid, decided=False, error=exc) for aid in chunk)
                continue
            items.extend(_batch_items(chunk, answer.results))
        for session_id in {i.approval.runtime_session_id for i in items if i.approval is not None}:
            self._changed(session_id)
        return items


def _batch_items(sent: list[str], results: list[ApprovalBatchResult]) -> list[BatchItem]:
    """The server's results for the ids ``sent``, one item per id in that order; an id the answer left
    out is a failed item (the answer did not say: never counted as decided)."""
    by_id = {r.id.lower(): r for r in results}
    items: list[BatchItem] = []
    for aid in sent:
        result = by_id.get(aid)
        what = f"approval {short_id(aid)}"
        if result is None:
            error: ClientError = InvalidResponse(f"the server's answer says nothing about {what}")
            items.append(BatchItem(aid, decided=False, error=error))
            continue
        row = result.approval
        if result.ok:
            items.append(BatchItem(aid, decided=True, status=result.status, approval=row))
            continue
        said = {"detail": result.error or "not decided"}
        gone = (result.error or "").lower().endswith("not found")
        error = error_for_status(404 if gone else 400, said, what=what)
        items.append(BatchItem(aid, decided=False, status=result.status, error=error, approval=row))
    return items
