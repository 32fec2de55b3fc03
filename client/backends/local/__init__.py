"""Our local control plane (``preloop serve``): Preloop-shaped REST plus our own SSE event stream.

Everything is supported; the live feed is :mod:`client.backends.local.feed`, the attention inbox's
:mod:`client.backends.local.attention`. Allow rules are ours (``/api/v1/allow-rules``): one session, agent
or the account, one tool, an argument pattern, applied by the server where an approval is raised
(docs/protocol.md).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from client.backends.base import Capabilities, RuleSupport, ServerKind
from client.backends.rest import PreloopRestApi
from client.ids import require_uuid, short_id
from client.models import AllowRule, AttentionSnapshot, RuleSpec, Session, Standing
from client.rules import RULE_MAX_MINUTES

if TYPE_CHECKING:  # the event vocabulary (pydantic models) is built only by a process that streams
    from client.events import Event
    from client.status import StreamStatus
    from client.timeline import Place

__all__ = ["LocalBackend"]


class LocalBackend(PreloopRestApi):
    """The backend for our own server: its REST answers are complete and its stream is numbered."""

    server_kind: ServerKind = "local"
    capabilities: Capabilities = Capabilities(
        rules=RuleSupport(
            name="this server's allow rules",
            scopes=frozenset({"session", "agent", "account"}),
            tools=True,
            patterns=True,
            max_minutes=RULE_MAX_MINUTES,
            risk_aware=True,
            can="a session, an agent or the account, one tool, an argument pattern",
        )
    )

    async def list_rules(self) -> list[AllowRule]:
        """The allow rules that hold now, the soonest to end first."""
        response = await self._request("GET", "/allow-rules")
        return self._rules(response)

    async def create_rule(self, spec: RuleSpec) -> AllowRule:
        """Make an allow rule; the server applies it to every approval raised from now on."""
        response = await self._request("POST", "/allow-rules", what="the allow rule", json=spec.body())
        return self.conn.parse(response, AllowRule)

    async def revoke_rule(self, rule_id: str) -> AllowRule:
        """End one rule now (one that had ended already comes back as it is)."""
        rid = require_uuid(rule_id, "rule id")
        response = await self._request("DELETE", f"/allow-rules/{rid}", what=f"rule {short_id(rid)}")
        return self.conn.parse(response, AllowRule)

    async def revoke_all_rules(self) -> list[AllowRule]:
        """End every rule that holds."""
        response = await self._request("POST", "/allow-rules/revoke-all")
        return self._rules(response)

    async def standing(self) -> Standing:
        """The rules that hold now (our server has no kill switch)."""
        return Standing(rules=await self.list_rules())

    async def get_session(self, session_id: str) -> Session:
        """The session detail as is: our server fills every counter (no list-row lookup needed)."""
        return await self._session_detail(session_id)

    def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncGenerator[Event | StreamStatus, None]:
        """Live events after seq ``after`` (or the newest ``tail`` first), in order, exactly once, with
        connection states between them (the feed's own generator: no layer of its own per event)."""
        from client.backends.local import feed  # streaming only: scripted commands never load it

        return feed.follow(self, require_uuid(session_id), after=after, tail=tail)

    async def history(
        self, session_id: str, *, since: datetime | None = None, after: Place | None = None
    ) -> list[Event]:
        """The stored events after ``after`` (by seq) or since ``since``, as of now: only those are read
        (``?after=`` / ``?since=`` on the event stream, see :func:`client.backends.local.feed.history`)."""
        from client.backends.local import feed

        return await feed.history(self, require_uuid(session_id), since=since, after=after)

    def watch_attention(
        self, *, notes_window: timedelta = timedelta(hours=6), poll_interval: float = 3.0
    ) -> AsyncGenerator[AttentionSnapshot | Event | StreamStatus, None]:
        """Every session's pending approvals and failed notes, pushed by the server
        (:mod:`client.backends.local.attention`)."""
        from client.backends.local.attention import follow_attention

        return follow_attention(self, notes_window, poll_interval=poll_interval)
