"""Preloop, live (issue 24 §5) and its allow rules (issue 25 §4), against the fake Preloop over loopback.

The inbox feed takes approvals from the account-wide websocket (``/api/v1/ws/unified``) beside polling:
with the poll slowed to a minute, an approval still arrives (pushed, whole: its risk level is the REST
row's), a vote or an escalation updates it in place, a decision or an expiry settles it; with the socket
silent, polling still finds it. Allow rules are Preloop's approval bypasses: an agent or the account,
every tool; what Preloop cannot hold is refused with a sentence before any request, what it refuses
(a 403, a 422) comes back as the server said. The banner's standing read is the bypass status and the
kill switch.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, TypeVar

import pytest

from client.backends.preloop import PreloopBackend
from client.errors import PermissionDenied, UsageError, ValidationFailed
from client.events import ApprovalDecided, ApprovalRequested
from client.inbox import ApprovalAdded, ApprovalGone, Inbox
from client.models import AttentionSnapshot, RuleSpec
from client.rules import check_spec
from tests.fake_preloop import MAIN_SESSION, FakePreloop

AGENT = "2618a221-b8ee-48a3-a51a-f78dcb1c5af8"
_T = TypeVar("_T")


async def next_of(feed: AsyncIterator[Any], kind: type[_T], within: float = 20.0) -> _T:
    """The next item of ``kind`` the feed yields (others are skipped), or a failed test."""

    async def find() -> _T:
        async for item in feed:
            if isinstance(item, kind):
                return item
        raise AssertionError(f"the feed ended before a {kind.__name__}")

    return await asyncio.wait_for(find(), within)


async def _pushed_feed(client: PreloopBackend, fake: FakePreloop) -> tuple[AsyncIterator[Any], Inbox]:
    """The inbox feed with its poll slowed to a minute: whatever arrives after the first snapshot was
    pushed. Returns once the socket is attached and the first snapshot is in."""
    feed = client.watch_attention(notes_window=timedelta(hours=1), poll_interval=60.0).__aiter__()
    inbox = Inbox()
    inbox.reset(await next_of(feed, AttentionSnapshot))
    for _ in range(2000):
        if fake.unified_attached():
            break
        await asyncio.sleep(0.005)
    assert fake.unified_attached() == 1
    return feed, inbox


async def test_an_approval_is_pushed_whole_and_updated_in_place(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    feed, inbox = await _pushed_feed(client, fake)
    try:
        approval_id = fake.request_approval("git push origin main")
        asked = await next_of(feed, ApprovalRequested, within=5)  # the poll would take a minute
        assert asked.approval.id == approval_id
        assert asked.approval.risk_level == "danger"  # the REST row's, which the frame does not carry
        assert [type(c) for c in inbox.apply(asked)] == [ApprovalAdded]

        fake.vote(approval_id, approvals=1, required=2)
        voted = await next_of(feed, ApprovalRequested, within=5)
        assert voted.approval.votes is not None
        assert (voted.approval.votes.approvals, voted.approval.votes.required) == (1, 2)
        assert voted.approval.risk_level == "danger"  # kept from what was known
        assert inbox.apply(voted) == []  # an update in place, not a new arrival (no alert)
        assert inbox.get(approval_id) is not None and inbox.get(approval_id).votes == voted.approval.votes  # type: ignore[union-attr]

        deadline = fake.escalate(approval_id, minutes=9)
        escalated = await next_of(feed, ApprovalRequested, within=5)
        assert escalated.approval.escalated_at is not None
        assert escalated.approval.expires_at is not None
        assert escalated.approval.expires_at.replace(tzinfo=None).isoformat() == deadline
        assert inbox.apply(escalated) == [] and inbox.approvals[0].expires_at == escalated.approval.expires_at

        await client.decline(approval_id, "not today")
        decided = await next_of(feed, ApprovalDecided, within=5)
        assert decided.approval.status == "declined"
        (gone,) = inbox.apply(decided)
        assert isinstance(gone, ApprovalGone) and not inbox.approvals

        other = fake.request_approval("rm -rf build/")
        await next_of(feed, ApprovalRequested, within=5)
        fake.expire_approval(other)
        expired = await next_of(feed, ApprovalDecided, within=5)
        assert (expired.approval.id, expired.approval.status) == (other, "expired")
    finally:
        await feed.aclose()  # type: ignore[attr-defined]


async def test_polling_still_finds_an_approval_the_socket_never_tells(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    fake.unified_muted = True
    feed = client.watch_attention(notes_window=timedelta(hours=1), poll_interval=0.1).__aiter__()
    try:
        await next_of(feed, AttentionSnapshot)
        approval_id = fake.request_approval("make deploy")
        for _ in range(100):
            snap = await next_of(feed, AttentionSnapshot)
            if snap.approvals:
                break
        assert [a.id for a in snap.approvals] == [approval_id]
    finally:
        await feed.aclose()  # type: ignore[attr-defined]


async def test_a_snapshot_older_than_a_pushed_approval_does_not_drop_it(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    """A poll that began before the approval existed answers without it; the pushed approval stays (it
    would otherwise flicker out as "no longer pending" and back in)."""
    feed, inbox = await _pushed_feed(client, fake)
    try:
        approval_id = fake.request_approval("git status")
        inbox.apply(await next_of(feed, ApprovalRequested, within=5))
        from client.backends.preloop.unified import _Merge

        merge = _Merge(60.0)
        merge.seen(inbox.approvals[0])
        stale = AttentionSnapshot(approvals=[])
        assert [a.id for a in merge.snapshot(stale).approvals] == [approval_id]
    finally:
        await feed.aclose()  # type: ignore[attr-defined]


async def test_a_bypass_is_an_agent_rule_that_approves_and_names_itself(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    spec = RuleSpec(mode="allow", minutes=30, scope="agent", agent_id=AGENT, danger=True, reason="tests")
    check_spec(spec, client.capabilities, client.server_kind)
    rule = await client.create_rule(spec)
    assert (rule.scope, rule.agent_id, rule.mode, rule.danger, rule.set_by) == (
        "agent",
        AGENT,
        "allow",
        True,
        "you",
    )
    assert rule.expires_at - rule.created_at == timedelta(minutes=30)  # type: ignore[operator]
    standing = await client.standing()
    assert [r.id for r in standing.rules] == [rule.id]
    assert standing.halt is not None and not standing.halt.active

    feed, inbox = await _pushed_feed(client, fake)
    try:
        approval_id = fake.request_approval("pytest -q")
        decided = await next_of(feed, ApprovalDecided, within=5)  # announced approved only: it never waited
        assert decided.approval.id == approval_id and decided.approval.status == "approved"
        assert inbox.apply(decided) == []  # nothing rings for it
    finally:
        await feed.aclose()  # type: ignore[attr-defined]
    row = await client.get_approval(approval_id)
    assert row.auto_approved_reason == "bypass" and row.rule is not None and row.rule.id == rule.id
    [counted] = (await client.standing()).rules
    assert counted.allowed_count == 1

    revoked = await client.revoke_rule(rule.id)
    assert revoked.revoked_at is not None
    assert (await client.standing()).rules == []
    asked = fake.request_approval("pytest -q")
    assert (await client.get_approval(asked)).pending  # no bypass: it waits for a person


async def test_what_preloop_cannot_hold_is_refused_before_any_request(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    before = len(fake.requests)
    for spec, words in (
        (
            RuleSpec(mode="allow", minutes=30, scope="session", session_id=MAIN_SESSION, tool_name="Bash",
                     pattern="pytest *", danger=True),
            "cannot cover one session: they cover one agent or the whole account",
        ),
        (
            RuleSpec(mode="allow", minutes=30, scope="agent", agent_id=AGENT, tool_name="Bash",
                     pattern="pytest *", danger=True),
            "cannot be narrowed to an argument pattern",
        ),
        (RuleSpec(mode="allow", minutes=30, scope="account"), "danger-risk ones too: confirm that"),
        (RuleSpec(mode="mute", minutes=481, scope="account"), "1 minute to 8 hours"),
    ):  # fmt: skip
        with pytest.raises(UsageError) as refused:
            check_spec(spec, client.capabilities, client.server_kind)
        assert words in refused.value.hint
    assert len(fake.requests) == before


async def test_what_preloop_refuses_comes_back_in_its_words(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    with pytest.raises(ValidationFailed) as too_long:  # a client that skipped check_spec
        await client.create_rule(RuleSpec(mode="mute", minutes=600, scope="account"))
    assert "less than or equal to 480" in str(too_long.value)
    fake.can_decide = False
    with pytest.raises(PermissionDenied) as denied:
        await client.create_rule(RuleSpec(mode="mute", minutes=30, scope="account"))
    assert "Insufficient permissions. Required: decide_approvals" in str(denied.value)


async def test_standing_shows_the_kill_switch_and_revoke_all_ends_every_bypass(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    await client.create_rule(RuleSpec(mode="mute", minutes=60, scope="account"))
    await client.create_rule(RuleSpec(mode="allow", minutes=15, scope="agent", agent_id=AGENT, danger=True))
    fake.halt(("tools",), reason="runaway agent")
    standing = await client.standing()
    assert [r.mode for r in standing.rules] == ["allow", "mute"]  # the soonest to end first
    assert standing.halt is not None and standing.halt.active
    assert [(s.scope, s.activated_by_username, s.reason) for s in standing.halt.scopes] == [
        ("tools", "alice113619", "runaway agent")
    ]
    assert len(await client.revoke_all_rules()) == 2
    assert (await client.standing()).rules == []


async def test_the_apps_inbox_row_arrives_pushed_and_a_vote_and_an_escalation_update_it_in_place(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    from client.alerts import AlertSettings
    from tests.tui.test_inbox_pilot import inbox_rows
    from tests.tui.test_pilot import until
    from tui.app import PreloopApp
    from tui.screens.inbox import InboxScreen
    from widgets.inbox_view import InboxApprovals

    app = PreloopApp(
        client, refresh_interval=0, alert_settings=AlertSettings(enabled=False), attention_poll_interval=60.0
    )
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.inbox.synced, "the first snapshot")
        await until(pilot, lambda: fake.unified_attached() == 1, "the unified socket")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        approval_id = fake.request_approval("git push origin main")
        await until(pilot, lambda: len(inbox_rows(app)) == 1, "the row, pushed (the poll waits a minute)")
        table = app.screen.query_one(InboxApprovals)

        def cell(column: int) -> str:
            return str(table.get_row_at(0)[column])

        assert cell(2) == "Bash" and cell(3) == "danger"
        fake.vote(approval_id, approvals=1, required=2)
        await until(pilot, lambda: cell(2) == "Bash · 1 of 2 votes", "the vote in the row")
        before = cell(4)
        fake.escalate(approval_id, minutes=30)
        await until(pilot, lambda: cell(4).endswith("↑ escalated"), "the escalation in the row")
        assert cell(4) != before and cell(4).startswith(("29m", "30m"))  # the new deadline
        assert table.row_count == 1  # the same row, updated in place
        fake.expire_approval(approval_id)
        await until(pilot, lambda: inbox_rows(app) == [], "the expired row to leave")


async def test_every_screen_shows_the_kill_switch_and_a_bypass_while_they_hold(
    client: PreloopBackend, fake: FakePreloop
) -> None:
    from client.alerts import AlertSettings
    from tests.tui.test_pilot import until
    from tui.app import PreloopApp
    from tui.screens.inbox import InboxScreen
    from widgets.standing import StandingBanner

    fake.halt(("tools",), reason="runaway agent")
    app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))

    def shown() -> list[str]:
        return app.screen.query_one(StandingBanner).shown

    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: bool(shown()), "the banner on the sessions list")
        assert shown()[0].startswith("✗ kill switch: tools halted by alice113619")
        assert "“runaway agent”" in shown()[0]
        await client.create_rule(RuleSpec(mode="mute", minutes=60, scope="account"))
        app.refresh_standing()
        await until(pilot, lambda: len(shown()) == 2, "the bypass beside it")
        assert shown()[1].startswith("⊘ muted: every call of every agent until ")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen) and len(shown()) == 2, "on the inbox")
        fake.halt(())
        await client.revoke_all_rules()
        app.refresh_standing()
        await until(pilot, lambda: shown() == [], "gone once nothing holds")
