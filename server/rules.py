"""Allow rules: "allow (or mute) calls like this for 30 minutes", kept with who made them and applied
where an approval is raised.

A rule is one row of ``allow_rules``: its operator (who made it, by name), its mode (``allow`` decides
matching calls, ``mute`` silences their alerts and still asks), its scope (a session, an agent or the
account), optionally one tool and an argument pattern (``client.rules``: the same parser and matcher the
command line and the screens use), whether it also covers danger-risk calls (made with a second
confirmation), its reason, and an expiry that is required and at most ``client.rules.RULE_MAX_MINUTES``
away: there is no rule without an end. Rules live in the database, so they survive a restart; an expired
or revoked one is kept (it decided calls that the record still names) but covers nothing.

:meth:`Rules.covering` is asked by :meth:`server.approvals.Approvals.permission_check` inside the write
that opens the approval: an ``allow`` rule decides it there and then (the agent gets its answer at once,
the approval is stored approved, naming the rule), a ``mute`` rule is attached to the pending approval so
clients raise no alert for it.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, Literal

from client.models import AllowRule
from client.rules import covers
from server.accounts import Operator
from server.errors import ApiError
from server.rows import RULE_SELECT, own_row, parse_uuid, rule_of
from server.shapes import rule_model
from server.store import Store, WriteTx, now_utc, ts

RuleMode = Literal["allow", "mute"]
RuleScope = Literal["session", "agent", "account"]


class Rules:
    """The allow-rules desk: make, list, revoke, and find the rule that covers a call."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(
        self,
        op: Operator,
        *,
        mode: RuleMode,
        minutes: int,
        scope: RuleScope,
        session_id: str | None,
        agent_id: str | None,
        tool_name: str | None,
        pattern: str | None,
        danger: bool,
        reason: str | None,
    ) -> dict[str, Any]:
        """Store a rule made by ``op`` (the HTTP layer checked its shape); a session or an agent of
        another account is a 404, as for every other id."""
        now = now_utc()
        rule_id = str(uuid.uuid4())
        async with self.store.write() as tx:
            if scope == "session":
                row = await own_row(tx, "sessions", session_id or "", op.account_id)
                session_id, agent_id = str(row["id"]), None
            elif scope == "agent":
                key = parse_uuid(agent_id or "")
                agent = await tx.fetchone(
                    "SELECT id FROM agents WHERE id = ? AND account_id = ?", (key, op.account_id)
                )
                if agent is None:
                    raise ApiError(404, "Agent not found")
                session_id, agent_id = None, str(agent["id"])
            else:
                session_id = agent_id = None
            await tx.execute(
                "INSERT INTO allow_rules (id, account_id, created_by_user_id, created_by_display, mode,"
                " scope, session_id, agent_id, tool_name, pattern, danger, reason, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rule_id,
                    op.account_id,
                    op.user_id,
                    op.display,
                    mode,
                    scope,
                    session_id,
                    agent_id,
                    tool_name,
                    pattern,
                    int(danger),
                    reason,
                    ts(now),
                    ts(now + timedelta(minutes=minutes)),
                ),
            )
            made = await rule_of(tx, rule_id)
        assert made is not None
        return made.model_dump(mode="json")

    async def list_rules(self, op: Operator, *, ended: bool = False) -> list[dict[str, Any]]:
        """The account's rules that hold now, the soonest to end first (``ended``: the others too, the
        newest first)."""
        if ended:
            rows = await self.store.fetchall(
                f"{RULE_SELECT} WHERE r.account_id = ? ORDER BY r.created_at DESC LIMIT 500", (op.account_id,)
            )
        else:
            rows = await self.store.fetchall(
                f"{RULE_SELECT} WHERE r.account_id = ? AND r.revoked_at IS NULL AND r.expires_at > ?"
                " ORDER BY r.expires_at, r.id",
                (op.account_id, ts(now_utc())),
            )
        return [rule_model(row).model_dump(mode="json") for row in rows]

    async def revoke(self, op: Operator, rule_id: str) -> dict[str, Any]:
        """End one rule now (any operator of the account may: tightening is always safe); one that had
        ended already is answered as it is."""
        key = parse_uuid(rule_id)
        async with self.store.write() as tx:
            row = None
            if key is not None:
                row = await tx.fetchone(
                    "SELECT id FROM allow_rules WHERE id = ? AND account_id = ?", (key, op.account_id)
                )
            if row is None:
                raise ApiError(404, "Allow rule not found")
            await self._end(tx, op, "id = ?", (key,))
            made = await rule_of(tx, str(row["id"]))
        assert made is not None
        return made.model_dump(mode="json")

    async def revoke_all(self, op: Operator) -> list[dict[str, Any]]:
        """End every rule of the account that holds now; the answer lists them."""
        async with self.store.write() as tx:
            now = ts(now_utc())
            rows = await tx.fetchall(
                "SELECT id FROM allow_rules WHERE account_id = ? AND revoked_at IS NULL AND expires_at > ?",
                (op.account_id, now),
            )
            ids = [str(r["id"]) for r in rows]
            for rule_id in ids:
                await self._end(tx, op, "id = ?", (rule_id,))
            ended = [await rule_of(tx, rule_id) for rule_id in ids]
        return [rule.model_dump(mode="json") for rule in ended if rule is not None]

    @staticmethod
    async def _end(tx: WriteTx, op: Operator, where: str, params: tuple[Any, ...]) -> None:
        now = ts(now_utc())
        await tx.execute(
            f"UPDATE allow_rules SET revoked_at = ?, revoked_by_display = ? WHERE {where}"
            " AND revoked_at IS NULL AND expires_at > ?",
            (now, op.display, *params, now),
        )

    async def covering(
        self,
        tx: WriteTx,
        *,
        account_id: str,
        session_id: str,
        agent_id: str | None,
        tool: str,
        args: dict[str, Any],
        risk: str | None,
        now: datetime,
    ) -> AllowRule | None:
        """The rule that decides (``allow``) or silences (``mute``) this call now, if any: an ``allow``
        rule wins over a ``mute`` one, the one made first among equals."""
        rows = await tx.fetchall(
            f"{RULE_SELECT} WHERE r.account_id = ? AND r.revoked_at IS NULL AND r.expires_at > ?"
            " ORDER BY CASE r.mode WHEN 'allow' THEN 0 ELSE 1 END, r.created_at, r.id",
            (account_id, ts(now)),
        )
        for row in rows:
            rule = rule_model(row)
            if covers(
                rule, tool=tool, args=args, session_id=session_id, agent_id=agent_id, risk=risk, now=now
            ):
                return rule
        return None

    @staticmethod
    async def count_use(tx: WriteTx, rule_id: str) -> None:
        """One more call decided by the rule (the banner's "3 allowed")."""
        await tx.execute("UPDATE allow_rules SET allowed_count = allowed_count + 1 WHERE id = ?", (rule_id,))
