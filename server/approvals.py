"""Approvals: an agent's permission check opens one and blocks; a human approves or declines it.

The desk owns the *waiters*: one future per open approval, resolved after the commit that decides it
(approve, decline, expiry, session end or shutdown), so the agent's blocked HTTP call answers at once.
A permission check at ``pre_tool_use`` also delivers pending notes, as Preloop's hook does.

Where an approval is raised, the operators' allow rules are asked first (``server.rules``): an ``allow``
rule that covers the call decides it in the same write (stored approved, naming the rule; the session's
stream gets ``approval.decided`` only, so nothing rings) and the agent is answered at once; a ``mute``
rule is attached to the pending approval, which still waits for a human.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from datetime import datetime, timedelta
from typing import Any

from client.models import AllowRule
from server.accounts import Operator, Runtime
from server.errors import ApiError
from server.expiry import ExpiryTimer
from server.harness import PendingNotesRequest, PermissionCheckRequest, PermissionCheckResponse
from server.notes import Notes
from server.rows import Where, approval_dict, own_row, page, session_dict
from server.rules import Rules
from server.shapes import short
from server.store import Store, WriteTx, dumps, now_utc, ts

_DENIED_BECAUSE = {"expired": "Approval request timed out", "cancelled": "Approval request cancelled"}


class Approvals:
    """The approvals desk: list, decide, and the blocking permission check behind them."""

    def __init__(
        self, store: Store, notes: Notes, expiry: ExpiryTimer, *, timeout_seconds: float, rules: Rules
    ) -> None:
        self.store = store
        self.notes = notes
        self.rules = rules
        self.expiry = expiry
        self.timeout_seconds = timeout_seconds
        self._waiters: dict[str, asyncio.Future[str]] = {}

    def release_all(self) -> None:
        """Shutdown: every blocked permission check answers ``cancelled`` now instead of holding the
        HTTP server open until its timeout."""
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_result("cancelled")

    def _resolve(self, approval_id: str, status: str) -> None:
        fut = self._waiters.get(approval_id)
        if fut is not None and not fut.done():
            fut.set_result(status)

    async def list_approvals(
        self, op: Operator, *, status: str | None, runtime_session_id: str | None, limit: int, skip: int
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of approvals, newest first, and the total (sent as ``X-Total-Count``)."""
        await self.expiry.expire_due()
        where = Where("account_id = ?", op.account_id)
        where.add("status = ?", status)
        where.add("session_id = ?", runtime_session_id)
        rows, total = await page(self.store, "id", "approvals", where, "requested_at DESC, id", limit, skip)
        return [await approval_dict(self.store, r["id"]) for r in rows], total

    async def get_approval(self, op: Operator, approval_id: str) -> dict[str, Any]:
        """One approval of this account, expired first if its time has come."""
        await self.expiry.expire_due()
        row = await own_row(self.store, "approvals", approval_id, op.account_id)
        return await approval_dict(self.store, row["id"])

    async def original_args(self, op: Operator, approval_id: str) -> dict[str, Any]:
        """Preloop's ``original-args``: this server never redacts arguments, so there is no sealed original
        to give: the same 404 Preloop answers for a request without one (an unknown id stays a 404 of its
        own)."""
        await own_row(self.store, "approvals", approval_id, op.account_id)
        raise ApiError(404, "No original arguments are available for this request")

    async def decide(
        self, op: Operator, approval_id: str, *, approve: bool, comment: str | None, sweep: bool = True
    ) -> dict[str, Any]:
        """Approve or decline a pending approval; deciding twice is a 400 (as Preloop). ``sweep``: expire
        what is due first (a batch does it once for all its ids)."""
        if sweep:
            await self.expiry.expire_due()
        async with self.store.write() as tx:
            row = await own_row(tx, "approvals", approval_id, op.account_id)
            if row["status"] != "pending":
                raise ApiError(400, f"Request already {row['status']}")
            status = "approved" if approve else "declined"
            await self.finish(tx, str(row["id"]), status, comment, by=op)
            return await approval_dict(tx, row["id"])

    async def decide_batch(
        self, op: Operator, approval_ids: list[str], *, approve: bool, comment: str | None
    ) -> dict[str, Any]:
        """One decision for many approvals, Preloop's ``decide-batch`` contract: duplicates dropped, order
        kept, each id decided on its own (its own write, by this operator, as :meth:`decide`) and
        reported on its own; the batch never fails as a whole. Ours adds each approval's row."""
        results: list[dict[str, Any]] = []
        due = await self.expiry.expire_due()  # the sweep says when the next thing is due: only then again
        for approval_id in dict.fromkeys(approval_ids):
            if due is not None and now_utc() >= due:
                due = await self.expiry.expire_due()
            try:
                row = await self.decide(op, approval_id, approve=approve, comment=comment, sweep=False)
            except ApiError as exc:
                result: dict[str, Any] = {"id": approval_id, "ok": False, "status": None, "error": exc.detail}
                if exc.status != 404:  # found, not pending: say what it is (ours: with its row)
                    current = await self.get_approval(op, approval_id)
                    result.update(status=current["status"], approval=current)
                results.append(result)
                continue
            results.append(
                {"id": approval_id, "ok": True, "status": row["status"], "error": None, "approval": row}
            )
        succeeded = sum(1 for r in results if r["ok"])
        return {"results": results, "succeeded": succeeded, "failed": len(results) - succeeded}

    async def finish(
        self, tx: WriteTx, approval_id: str, status: str, comment: str | None, *, by: Operator | None
    ) -> None:
        """Close a still-pending approval (decided by the operator ``by``, or expired: None) and wake the
        agent waiting on it. The decider is stored by user and name, so every client names them."""
        changed = await tx.execute(
            "UPDATE approvals SET status = ?, resolved_at = ?, approver_comment = ?, decided_by_human = ?,"
            " decided_by_user_id = ?, decided_by_display = ? WHERE id = ? AND status = 'pending'",
            (
                status,
                ts(now_utc()),
                comment,
                int(by is not None),
                by.user_id if by is not None else None,
                by.display if by is not None else None,
                approval_id,
            ),
        )
        if not changed:
            return
        row = await tx.fetchone(
            "SELECT ap.session_id, s.ended_at FROM approvals ap JOIN sessions s ON s.id = ap.session_id"
            " WHERE ap.id = ?",
            (approval_id,),
        )
        if row is not None and row["ended_at"] is None:
            sid = str(row["session_id"])
            await tx.emit(sid, "approval.decided", approval=await approval_dict(tx, approval_id))
            await tx.emit(sid, "session.updated", session=await session_dict(tx, sid))
        tx.after_commit(lambda: self._resolve(approval_id, status))

    async def expire_now(self, approval_id: str) -> bool:
        """Expire a pending approval now, the way its time coming does: its deadline moves to now and the
        expiry sweep runs (``approval.decided`` with ``expired``, the blocked agent told ``timed_out``).
        For the process that embeds the server (tests see an expiry without racing a real deadline); no
        HTTP route reaches it, so an operator or an agent cannot. False if it was not pending."""
        async with self.store.write() as tx:
            moved = await tx.execute(
                "UPDATE approvals SET expires_at = ? WHERE id = ? AND status = 'pending'",
                (ts(now_utc()), approval_id),
            )
        if moved:
            await self.expiry.expire_due()
        return bool(moved)

    async def due(self, now: datetime) -> list[str]:
        """Ids of pending approvals whose time has come (the sweep expires them)."""
        rows = await self.store.fetchall(
            "SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= ?", (ts(now),)
        )
        return [str(r["id"]) for r in rows]

    async def end_of_session(self, tx: WriteTx, session_id: str, at: str) -> None:
        """The session is ending: its open approvals are cancelled (``approval.decided`` on its stream)
        and their waiting agents answered ``cancelled`` once the end is committed."""
        approvals = await tx.fetchall(
            "SELECT id FROM approvals WHERE session_id = ? AND status = 'pending'", (session_id,)
        )
        for approval in approvals:
            await tx.execute(
                "UPDATE approvals SET status = 'cancelled', resolved_at = ? WHERE id = ?",
                (at, approval["id"]),
            )
            await tx.emit(session_id, "approval.decided", approval=await approval_dict(tx, approval["id"]))
        # Registered now, run after the commit: after every event of the end (session.ended included).
        for approval in approvals:
            tx.after_commit(functools.partial(self._resolve, str(approval["id"]), "cancelled"))

    async def permission_check(self, rt: Runtime, req: PermissionCheckRequest) -> PermissionCheckResponse:
        """A tool call about to run: deliver pending notes on ``pre_tool_use``; on ``ask``, open an
        approval and block until a human decides, the approval expires, or the session ends."""
        operator_note: str | None = None
        if req.evaluation_phase == "pre_tool_use":
            pending = await self.notes.claim_notes(
                rt, PendingNotesRequest(channel="hook", event="pre_tool_use")
            )
            operator_note = pending.text
        if req.client_decision != "ask":
            if req.client_decision == "deny":
                return PermissionCheckResponse(decision="deny", reason="", operator_note=operator_note)
            reason = "" if req.client_decision == "allow" else "No central native rule requires approval"
            return PermissionCheckResponse(decision="allow", reason=reason, operator_note=operator_note)
        timeout = min(req.timeout_seconds or self.timeout_seconds, self.timeout_seconds)
        approval_id = str(uuid.uuid4())
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiters[approval_id] = fut
        try:
            by_rule = await self._open(rt, req, approval_id, timeout)
            if by_rule is not None:
                return PermissionCheckResponse(
                    decision="allow",
                    reason=f"Allowed without asking by the operator's rule {by_rule.id[:8]}",
                    request_id=approval_id,
                    operator_note=operator_note,
                )
            try:
                status = await asyncio.wait_for(asyncio.shield(fut), timeout + 0.5)
            except TimeoutError:
                async with self.store.write() as tx:
                    await self.finish(tx, approval_id, "expired", None, by=None)
                status = fut.result() if fut.done() else "expired"
        finally:
            self._waiters.pop(approval_id, None)
        row = await self.store.fetchone("SELECT approver_comment FROM approvals WHERE id = ?", (approval_id,))
        comment = (row["approver_comment"] if row else None) or ""
        if status == "approved":
            return PermissionCheckResponse(
                decision="allow", reason=comment, request_id=approval_id, operator_note=operator_note
            )
        return PermissionCheckResponse(
            decision="deny",
            reason=comment or _DENIED_BECAUSE.get(status, ""),
            request_id=approval_id,
            operator_note=operator_note,
            timed_out=status == "expired",
        )

    async def _open(
        self, rt: Runtime, req: PermissionCheckRequest, approval_id: str, wait_seconds: float
    ) -> AllowRule | None:
        """Store the pending approval and put it on the session's stream (409 if the session ended), or,
        when an ``allow`` rule covers the call, store it decided by that rule and return the rule."""
        now = now_utc()
        tool_args: dict[str, Any] = {}
        if req.cwd:
            tool_args["cwd"] = req.cwd
        tool_args.update(req.tool_input)
        if req.source:
            tool_args["_preloop_source"] = req.source
        shown = ", ".join(f"{k}={short(v)}" for k, v in tool_args.items() if not k.startswith("_"))
        summary = f"Allow {req.tool_name} with {shown}?" if shown else f"Allow {req.tool_name}?"
        risk = "danger" if req.tool_name in ("Bash", "Write", "Edit") else "caution"
        async with self.store.write() as tx:
            srow = await tx.fetchone("SELECT * FROM sessions WHERE id = ?", (rt.session_id,))
            if srow is None or srow["ended_at"] is not None:
                raise ApiError(409, "Runtime session has ended")
            rule = await self.rules.covering(
                tx,
                account_id=rt.account_id,
                session_id=rt.session_id,
                agent_id=srow["agent_id"],
                tool=req.tool_name,
                args=tool_args,
                risk=risk,
                now=now,
            )
            allowed = rule is not None and rule.mode == "allow"
            await tx.execute(
                "INSERT INTO approvals (id, account_id, session_id, agent_id, api_key_id, tool_name,"
                " tool_args, agent_reasoning, summary, status, requested_at, resolved_at, expires_at,"
                " risk_level, rule_id, rule_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    approval_id,
                    rt.account_id,
                    rt.session_id,
                    srow["agent_id"],
                    rt.api_key_id,
                    req.tool_name,
                    dumps(tool_args),
                    req.agent_reasoning,
                    summary,
                    "approved" if allowed else "pending",
                    ts(now),
                    ts(now) if allowed else None,
                    ts(now + timedelta(seconds=wait_seconds)),
                    risk,
                    rule.id if rule is not None else None,
                    req.rule_name,
                ),
            )
            if allowed:
                assert rule is not None
                await self.rules.count_use(tx, rule.id)
                # Decided already: the stream says so once (no request first, so nothing rings for it).
                await tx.emit(
                    rt.session_id, "approval.decided", approval=await approval_dict(tx, approval_id)
                )
                return rule
            await tx.emit(rt.session_id, "approval.requested", approval=await approval_dict(tx, approval_id))
            await tx.emit(rt.session_id, "session.updated", session=await session_dict(tx, rt.session_id))
            tx.after_commit(self.expiry.wake)
        return None
