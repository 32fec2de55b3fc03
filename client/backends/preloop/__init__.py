"""A Preloop 0.17.1 server: Preloop's REST, its websocket for the live feed, polling for the rest.

The REST calls are the shared Preloop-shaped ones (:mod:`client.backends.rest`), plus the approval's
history, the one place Preloop names who decided (:mod:`client.backends.preloop.trail`); the live feed is
:mod:`client.backends.preloop.feed` (websocket + activity replay + polls) mapping Preloop's messages with
:mod:`client.backends.preloop.mapping`. Preloop pushes no note or approval changes, so a change made
through this backend *nudges* its own live followers of that session to poll at once. A note for a session
that has ended is refused here before it is sent (Preloop would accept it and leave it pending for ever).

The inbox is pushed: :mod:`client.backends.preloop.unified` reads the account-wide websocket's approval
frames beside the attention poll. Allow rules are Preloop's approval bypasses (``/approval-bypasses``,
mapped by :mod:`client.backends.preloop.bypasses`: one agent or the account, every tool, 1-480 minutes),
and the banner's standing read is the bypass status plus the account's kill switch
(``/account/kill-switch/status``). An approval a bypass approved names it (``Approval.rule``) once the
bypass has been seen here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from client.backends.base import Capabilities, RuleSupport, ServerKind
from client.backends.preloop import feed
from client.backends.preloop.bypasses import MAX_MINUTES, bypass_body, kill_switch, rules_of_bypasses
from client.backends.preloop.feed import PreloopTiming
from client.backends.preloop.trail import apply_history
from client.backends.rest import PreloopRestApi
from client.connection import Connection
from client.errors import ApiError, ClientError, InvalidResponse, SessionEnded
from client.events import Event
from client.ids import require_uuid, short_id
from client.models import AllowRule, Approval, AttentionSnapshot, KillSwitch, RuleSpec, Standing
from client.status import StreamStatus

if TYPE_CHECKING:
    from client.timeline import Place

__all__ = ["PreloopBackend", "PreloopTiming"]


class PreloopBackend(PreloopRestApi):
    """The backend for a Preloop server. ``timing`` sets the live feed's intervals (tests shorten them)."""

    server_kind: ServerKind = "preloop"
    capabilities: Capabilities = Capabilities(
        rules=RuleSupport(
            name="Preloop's approval bypasses",
            scopes=frozenset({"agent", "account"}),
            tools=False,
            patterns=False,
            max_minutes=MAX_MINUTES,
            risk_aware=False,
            can=(
                "they cover one agent or the whole account, every tool and every argument, "
                "for 1 minute to 8 hours"
            ),
        ),
        halts=True,
    )

    def __init__(self, conn: Connection, *, timing: PreloopTiming | None = None) -> None:
        super().__init__(conn)
        self.timing = timing
        self._nudges: dict[str, set[asyncio.Event]] = {}
        self._me: str | None = None
        """This token's user id, once a bypass of one's own told it (a bypass applies to its maker)."""
        self._bypasses: dict[str, AllowRule] = {}
        """Every bypass seen, by id: an approval a bypass approved is told with it."""

    def nudge(self, session_id: str) -> None:
        """Make this backend's live followers of a session poll notes and approvals now: Preloop pushes
        neither, so without it a change shows only at the follower's next timer."""
        for event in self._nudges.get(session_id, set()):
            event.set()

    def watch(self, session_id: str, event: asyncio.Event) -> None:
        """Register a follower's wake-up for :meth:`nudge` (the follower calls :meth:`unwatch` when done)."""
        self._nudges.setdefault(session_id, set()).add(event)

    def unwatch(self, session_id: str, event: asyncio.Event) -> None:
        """Forget a follower's wake-up."""
        waiting = self._nudges.get(session_id)
        if waiting is not None:
            waiting.discard(event)
            if not waiting:
                del self._nudges[session_id]

    # ------------------------------------------------------------------ approval bypasses

    def _seen(self, items: list[object], *, mine: bool = False) -> list[AllowRule]:
        if mine:
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("user_id"), str):
                    self._me = item["user_id"]
        rules = rules_of_bypasses(items, me=self._me)
        self._bypasses.update((rule.id, rule) for rule in rules)
        return rules

    async def _json(self, method: str, path: str, *, what: str = "", json: object = None) -> object:
        response = await self._request(method, path, what=what, json=json)
        try:
            body: object = response.json()
        except ValueError:
            raise InvalidResponse(f"the answer to {method} {path} is not JSON") from None
        return body

    async def list_rules(self) -> list[AllowRule]:
        """Every approval bypass of the account that holds now (a colleague's too), soonest to end first."""
        body = await self._json("GET", "/approval-bypasses")
        return self._seen(body if isinstance(body, list) else [])

    async def create_rule(self, spec: RuleSpec) -> AllowRule:
        """Open an approval bypass for this token's user (``client.rules.check_spec`` first: Preloop has
        no session, tool or pattern scope)."""
        body = await self._json(
            "POST", "/approval-bypasses", what="the approval bypass", json=bypass_body(spec)
        )
        rules = self._seen([body], mine=True)
        if not rules:
            raise InvalidResponse("the answer to POST /approval-bypasses is not a bypass")
        return rules[0]

    async def revoke_rule(self, rule_id: str) -> AllowRule:
        """Revoke one bypass (any user who may decide approvals may, also a colleague's)."""
        bid = require_uuid(rule_id, "bypass id")
        body = await self._json("DELETE", f"/approval-bypasses/{bid}", what=f"bypass {short_id(bid)}")
        rules = self._seen([body])
        if not rules:
            raise InvalidResponse(f"the answer to DELETE /approval-bypasses/{bid} is not a bypass")
        return rules[0]

    async def revoke_all_rules(self) -> list[AllowRule]:
        """Revoke every bypass of the account ("panic off")."""
        body = await self._json("POST", "/approval-bypasses/revoke-all")
        return self._seen(body if isinstance(body, list) else [])

    async def standing(self) -> Standing:
        """This user's bypasses that hold now (``/approval-bypasses/status``, made for a banner and
        readable by everyone) and the account's kill switch, asked together."""
        status, halt = await asyncio.gather(
            self._json("GET", "/approval-bypasses/status"), self._halt(), return_exceptions=True
        )
        if isinstance(status, BaseException):
            raise status
        items = status.get("bypasses") if isinstance(status, dict) else None
        rules = self._seen(items if isinstance(items, list) else [], mine=True)
        return Standing(rules=rules, halt=halt if isinstance(halt, KillSwitch) else None)

    async def _halt(self) -> KillSwitch | None:
        try:
            return kill_switch(await self._json("GET", "/account/kill-switch/status"))
        except ApiError as exc:
            if exc.status in (403, 404):  # an older server, or a build without it: nothing to show
                return None
            raise

    async def get_approval(self, approval_id: str) -> Approval:
        """One approval request; one a bypass approved names the bypass when it has been seen here."""
        return self.with_bypass(await super().get_approval(approval_id))

    def with_bypass(self, approval: Approval) -> Approval:
        """The approval naming the bypass that approved it, when that bypass has been seen here."""
        rule = self._bypasses.get(approval.auto_approval_bypass_id or "")
        if rule is None or approval.rule is not None:
            return approval
        return approval.model_copy(update={"rule": rule})

    def _changed(self, session_id: str | None) -> None:
        if session_id:
            self.nudge(session_id)

    async def approval_trail(self, approval: Approval) -> Approval:
        """The approval with who decided it, how many voted and who has viewed it, from its history
        (``client.backends.preloop.trail``); as given when the history cannot be read. Reading the
        history does not count as a view (the detail ``GET /approval-requests/{id}`` does)."""
        try:
            aid = require_uuid(approval.id, "approval id")
            response = await self._request(
                "GET", f"/approval-requests/{aid}/history", what=f"approval {short_id(aid)}"
            )
            entries = response.json()
        except (ClientError, ValueError):
            return approval
        if not isinstance(entries, list):
            return approval
        try:
            return apply_history(approval, entries)
        except (InvalidResponse, ValueError):  # a history this client cannot read: the row as it was
            return approval

    async def _before_note(self, session_id: str) -> None:
        """Read the session row first: Preloop accepts a note for an ended session and leaves it pending
        for ever (capture 117), so its sender would believe it was sent."""
        if (await self._session_detail(session_id)).ended:
            raise SessionEnded(f"session {short_id(session_id)}")

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncGenerator[Event | StreamStatus, None]:
        """Live events of one session after local seq ``after`` (seq is numbered here, contiguous). The
        whole activity replay is read (``tail`` is not offered by Preloop); the view keeps the newest."""
        async with aclosing(
            feed.follow(self, require_uuid(session_id), after=after, timing=self.timing)
        ) as items:
            async for item in items:
                yield item

    async def history(
        self, session_id: str, *, since: datetime | None = None, after: Place | None = None
    ) -> list[Event]:
        """Everything the server can tell about the session now (its activity list is one newest-first
        request without a time filter: ``since`` and ``after`` are the caller's to apply)."""
        return await feed.history(self, require_uuid(session_id), timing=self.timing)

    def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        """Every session's pending approvals and failed notes: approvals pushed over the account-wide
        websocket as they happen, polling beside it (``client.backends.preloop.unified``)."""
        from client.backends.preloop import unified

        return unified.watch(self, notes_window, poll_interval=poll_interval, timing=self.timing)
