"""The attention inbox's data side: the pure ``Inbox`` model, our server's ``/attention`` snapshot and
stream, and ``Backend.watch_attention()`` (pushed on the local server, polled elsewhere) over loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from client.backends import connect
from client.backends.attention import AttentionItem, poll_attention
from client.backends.base import Backend
from client.config import Settings
from client.events import ApprovalDecided, ApprovalRequested, NoteEvent
from client.inbox import ApprovalAdded, ApprovalGone, Inbox, NoteFailed
from client.models import Approval, AttentionSnapshot, Note
from client.status import Live, LoginNeeded, Reconnecting
from client.steering import Decisions
from server.harness_client import HarnessClient, HarnessSession
from tests.client.faults import FreezingProxy
from tests.conftest import LiveServer

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def approval(n: int, *, status: str = "pending", minutes: int = 0) -> Approval:
    return Approval(
        id=f"00000000-0000-4000-8000-{n:012d}",
        tool_name="Bash",
        status=status,
        requested_at=T0 + timedelta(minutes=minutes),
        runtime_session_id="s1",
    )


def note(n: int, state: str = "expired", minutes: int = 0) -> Note:
    return Note(
        note_id=f"n{n}", state=state, text="run the tests", expired_at=T0 + timedelta(minutes=minutes)
    )


def requested(a: Approval) -> ApprovalRequested:
    return ApprovalRequested(seq=1, session_id="s1", at=T0, approval=a)


def decided(a: Approval, status: str = "approved") -> ApprovalDecided:
    return ApprovalDecided(seq=2, session_id="s1", at=T0, approval=a.model_copy(update={"status": status}))


# ------------------------------------------------------------------------------------------- the model


def test_first_snapshot_is_not_news_but_later_ones_are_diffed() -> None:
    inbox = Inbox()
    assert not inbox.synced
    assert (
        inbox.reset(AttentionSnapshot(approvals=[approval(2, minutes=5), approval(1)], notes=[note(1)])) == []
    )
    assert inbox.synced
    assert [a.id[-1] for a in inbox.approvals] == ["1", "2"]  # oldest first
    assert inbox.count == 2  # the note that failed before we looked is already "seen"
    changes = inbox.reset(
        AttentionSnapshot(approvals=[approval(2, minutes=5), approval(3)], notes=[note(1), note(2)])
    )
    kinds = sorted(type(c).__name__ for c in changes)
    assert kinds == ["ApprovalAdded", "ApprovalGone", "NoteFailed"]
    gone = next(c for c in changes if isinstance(c, ApprovalGone))
    assert gone.approval.id == approval(1).id and gone.elsewhere
    assert inbox.count == 3  # two approvals + one unseen note
    inbox.mark_seen()
    assert inbox.count == 2


def test_events_are_applied_once_and_a_decided_approval_never_comes_back() -> None:
    inbox = Inbox()
    inbox.reset(AttentionSnapshot())
    a = approval(1)
    assert inbox.apply(requested(a)) == [ApprovalAdded(a)]
    assert inbox.apply(requested(a)) == []  # a duplicate (snapshot and queue overlap) changes nothing
    gone = inbox.apply(decided(a))
    assert len(gone) == 1 and isinstance(gone[0], ApprovalGone) and gone[0].elsewhere
    assert gone[0].approval.status == "approved"
    assert inbox.apply(requested(a)) == []  # late echo of the request: stays gone
    assert inbox.approvals == []


def test_a_decision_made_here_is_not_reported_as_elsewhere() -> None:
    """Decided through this process's one record of decisions (client.steering.Decisions): its answer
    and its echo are "here"; one lost to another operator is "elsewhere", with the row that won."""
    decisions = Decisions()
    inbox = Inbox(decisions=decisions)
    inbox.reset(AttentionSnapshot(approvals=[approval(1), approval(2), approval(3)]))
    decisions.start(approval(1).id)
    decisions.finish(approval(1).id, decided=True)
    mine = inbox.decided(approval(1, status="declined"))
    assert mine == [ApprovalGone(approval(1, status="declined"), elsewhere=False)]
    assert inbox.apply(decided(approval(1), "declined")) == []  # the echo
    decisions.start(approval(2).id)  # on its way: its echo may come first
    echo = inbox.apply(decided(approval(2)))
    assert len(echo) == 1 and isinstance(echo[0], ApprovalGone) and not echo[0].elsewhere
    decisions.start(approval(3).id)
    decisions.finish(approval(3).id, decided=False)  # lost the race
    lost = inbox.decided(approval(3, status="approved"))
    assert lost == [ApprovalGone(approval(3, status="approved"), elsewhere=True)]


def test_failed_notes_count_until_seen_and_leave_with_the_window() -> None:
    inbox = Inbox(notes_window=timedelta(hours=1))
    inbox.reset(AttentionSnapshot())
    event = NoteEvent(type="note.undeliverable", seq=3, session_id="s1", at=T0, note=note(7, "undeliverable"))
    assert inbox.apply(event) == [NoteFailed(event.note)]
    assert inbox.apply(event) == []
    delivered = NoteEvent(type="note.delivered", seq=4, session_id="s1", at=T0, note=note(8, "delivered"))
    assert inbox.apply(delivered) == []
    assert inbox.count == 1
    inbox.mark_seen()
    assert inbox.count == 0 and len(inbox.notes) == 1
    assert not inbox.prune(T0 + timedelta(minutes=30))
    assert inbox.prune(T0 + timedelta(hours=2))
    assert inbox.notes == []


# ------------------------------------------------------------------------------------------- the server


async def ask(session: HarnessSession, command: str) -> asyncio.Task[Any]:
    """Start a blocking permission check (an approval) in the background."""
    return asyncio.create_task(session.permission_check("Bash", {"command": command}, ask=True))


async def wait_for(condition: Any, what: str, seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if await condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def test_snapshot_lists_every_sessions_pending_approvals_oldest_first_and_failed_notes(
    live_server: LiveServer, harness: HarnessClient, client: Backend
) -> None:
    one = await harness.start_session(agent_name="builder")
    two = await harness.start_session(agent_name="tester")
    first = await ask(one, "git push")

    async def pending(n: int) -> bool:
        return len((await client.list_approvals(status="pending")).items) >= n

    await wait_for(lambda: pending(1), "first approval")
    second = await ask(two, "rm -rf build")
    await wait_for(lambda: pending(2), "second approval")
    await client.send_note("run the linter", session_id=two.session_id)
    await two.end()  # the pending note becomes undeliverable; its approval is cancelled
    await second
    async with HarnessClient(live_server.url, live_server.other_token) as other:
        stranger = await other.start_session(agent_name="other")
        hidden = await ask(stranger, "secret")
        async with httpx.AsyncClient(base_url=live_server.url) as http:
            snap = None
            for _ in range(100):
                r = await http.get(
                    "/api/v1/attention", headers={"Authorization": f"Bearer {live_server.token}"}
                )
                assert r.status_code == 200
                snap = AttentionSnapshot.model_validate(r.json())
                if len(snap.notes) == 1:
                    break
                await asyncio.sleep(0.05)
            assert snap is not None
            assert [a.tool_args.get("command") for a in snap.approvals] == ["git push"]
            assert [(n.state, n.text) for n in snap.notes] == [("undeliverable", "run the linter")]
            bad = await http.get(
                "/api/v1/attention",
                params={"notes_since_minutes": 0},
                headers={"Authorization": f"Bearer {live_server.token}"},
            )
            assert bad.status_code == 422
            assert (await http.get("/api/v1/attention/events")).status_code == 401
        await stranger.end()
        await hidden
    await one.end()
    await first


async def next_of(feed: AsyncIterator[AttentionItem], kind: type, seconds: float = 30.0) -> Any:
    async with asyncio.timeout(seconds):
        async for item in feed:
            if isinstance(item, kind):
                return item
    raise AssertionError(f"feed ended before a {kind.__name__}")


async def test_watch_attention_pushes_approvals_of_any_session_and_resyncs_after_a_restart(
    live_server: LiveServer, harness: HarnessClient, client: Backend
) -> None:
    feed = client.watch_attention(notes_window=timedelta(hours=1)).__aiter__()
    inbox = Inbox()
    first = await next_of(feed, AttentionSnapshot)
    assert inbox.reset(first) == [] and inbox.approvals == []
    session = await harness.start_session(agent_name="builder")
    task = await ask(session, "git push origin main")
    event = await next_of(feed, ApprovalRequested)
    assert [type(c) for c in inbox.apply(event)] == [ApprovalAdded]
    await client.approve(event.approval.id, "go")
    done = await next_of(feed, ApprovalDecided)
    assert done.approval.status == "approved"
    assert [c.elsewhere for c in inbox.apply(done) if isinstance(c, ApprovalGone)] == [True]
    assert (await task).decision == "allow"

    waiting = await ask(session, "make deploy")
    await next_of(feed, ApprovalRequested)
    live_server.stop()  # the blocked check is released (denied) by the shutdown
    live_server.start()
    await next_of(feed, Reconnecting)
    again = await next_of(feed, AttentionSnapshot)  # a fresh snapshot after the reconnect
    inbox.reset(again)
    assert inbox.synced
    verdict = await waiting  # the old server released the blocked check when it stopped
    assert verdict.decision == "deny"
    await feed.aclose()


async def test_an_approval_decided_while_the_stream_was_away_comes_back_with_its_final_record(
    live_server: LiveServer, harness: HarnessClient, client: Backend
) -> None:
    """The push of a decision is lost with a dead connection; the fresh snapshot after the reconnect just
    lacks the approval. It went out as "gone" with the stale pending copy; the decided row is fetched, so
    the inbox says declined, with the comment."""
    host, port = live_server.url.removeprefix("http://").split(":")
    proxy = await FreezingProxy(host, int(port)).start()
    session = await harness.start_session(agent_name="builder")
    try:
        # the fixture's server sends a keep-alive every 0.5 s, so 1.5 s of silence is a stall
        async with await connect(
            Settings(proxy.url, live_server.token, server_kind="local"), stall_timeout=1.5, backoff_max=0.3
        ) as watching:
            feed = watching.watch_attention(notes_window=timedelta(hours=1)).__aiter__()
            inbox = Inbox()
            inbox.reset(await next_of(feed, AttentionSnapshot))
            task = await ask(session, "git push origin main")
            asked = await next_of(feed, ApprovalRequested)
            assert [type(c) for c in inbox.apply(asked)] == [ApprovalAdded]
            proxy.freeze_open_connections()  # the decision's push never arrives on this connection
            await client.decline(asked.approval.id, "not on a Friday")
            await next_of(feed, Reconnecting)
            decided = await next_of(feed, ApprovalDecided)
            assert decided.approval.id == asked.approval.id
            final = decided.approval
            assert (final.status, final.approver_comment) == ("declined", "not on a Friday")
            assert decided.approval.resolved_at is not None
            (gone,) = inbox.apply(decided)
            assert isinstance(gone, ApprovalGone) and gone.elsewhere and gone.approval.status == "declined"
            assert inbox.reset(await next_of(feed, AttentionSnapshot)) == []  # already settled
            await feed.aclose()  # type: ignore[attr-defined]
    finally:
        await proxy.close()
    assert (await task).decision == "deny"


async def test_a_bad_token_is_waited_out_not_a_refusal(live_server: LiveServer) -> None:
    async with await connect(
        Settings(live_server.url, "plo_not-a-token", server_kind="local"), backoff_initial=0.01
    ) as bad:
        feed = bad.watch_attention().__aiter__()
        first = await next_of(feed, LoginNeeded)
        second = await next_of(feed, LoginNeeded)
        await feed.aclose()  # type: ignore[attr-defined]
    assert (first.attempt, second.attempt) == (1, 2)
    assert "refused the token (401)" in first.reason


async def test_polling_feed_works_on_any_backend(harness: HarnessClient, client: Backend) -> None:
    session = await harness.start_session(agent_name="builder")
    await client.send_note("too late", session_id=session.session_id)
    task = await ask(session, "deploy")
    feed = poll_attention(client, timedelta(hours=1), interval=0.05).__aiter__()
    await next_of(feed, Live)
    snap: AttentionSnapshot = await next_of(feed, AttentionSnapshot)
    for _ in range(200):
        if snap.approvals:
            break
        snap = await next_of(feed, AttentionSnapshot)
    assert [a.tool_args.get("command") for a in snap.approvals] == ["deploy"]
    await session.end()
    await task
    for _ in range(400):
        snap = await next_of(feed, AttentionSnapshot)
        if not snap.approvals and snap.notes:
            break
    assert snap.approvals == []
    assert [n.text for n in snap.notes] == ["too late"]
    await feed.aclose()


async def test_polling_starts_a_round_every_interval_however_long_the_rounds_take(
    harness: HarnessClient, client: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poller whose server takes 0.4 s to list the approvals and 1.2 s more for the notes still starts a
    round every 3 s (it waits the interval minus the round, so a change shows within one interval, not one
    interval plus a round); in a notes round the approvals go out before the notes are asked for; a round
    longer than the interval is followed by the next one at once (never a negative wait)."""
    session = await harness.start_session(agent_name="builder")
    await client.send_note("run the linter", session_id=session.session_id)  # the notes round asks it
    clock = [0.0]
    looks: list[float] = []
    waits: list[float] = []
    look_takes = [0.4]

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock[0] += seconds
        await asyncio.sleep(0)

    list_approvals, list_notes = client.list_approvals, client.list_notes

    async def slow_approvals(**kwargs: Any) -> Any:
        looks.append(clock[0])
        clock[0] += look_takes[0]
        return await list_approvals(**kwargs)

    async def slow_notes(**kwargs: Any) -> Any:
        clock[0] += 0.4  # asked once per failed state: 1.2 s per notes round
        return await list_notes(**kwargs)

    monkeypatch.setattr(client, "list_approvals", slow_approvals)
    monkeypatch.setattr(client, "list_notes", slow_notes)
    feed = poll_attention(
        client, timedelta(hours=1), interval=3.0, notes_every=2, monotonic=lambda: clock[0], sleep=sleep
    )
    shown: list[float] = []
    async with aclosing(feed):
        async for item in feed:
            if isinstance(item, AttentionSnapshot):
                shown.append(clock[0])
                if len(looks) == 5:
                    look_takes[0] = 3.5  # from the 6th round on, a look takes longer than the interval
                if len(looks) == 7:
                    break
    assert looks == pytest.approx([0.0, 3.0, 6.0, 9.0, 12.0, 15.0, 18.5])
    # rounds 1 (with the notes: the first snapshot holds everything), 2, 3 (approvals, then notes), 4,
    # 5 (approvals, then notes), 6 (slow), 7 (slow, at once; approvals first)
    assert shown == pytest.approx([1.6, 3.4, 6.4, 7.6, 9.4, 12.4, 13.6, 18.5, 22.0])
    assert min(waits) == 0.0


async def test_a_polled_feed_says_its_connection_states_as_every_feed_does() -> None:
    """Polling runs on the one reconnect loop: a failed round is "reconnecting", each new attempt
    "connecting (attempt n)" as on a session's stream (the poller's own loop went from reconnecting
    straight to live), a refused token waits for a login, a 403 stops the feed."""
    answers = iter([503, 401, 200, 200, 403])
    asked: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/runtime-sessions"):  # the notes round: no session has notes
            return httpx.Response(200, json={"items": [], "total": 0, "has_more": False})
        status = next(answers)
        asked.append(f"{request.url.path.rsplit('/', 1)[-1]} {status}")
        if status == 200:
            return httpx.Response(200, json=[], headers={"X-Total-Count": "0"})
        return httpx.Response(status, json={"detail": "no"})

    settings = Settings("http://poll.test", "tok", server_kind="preloop")
    seen: list[str] = []
    async with await connect(settings, transport=httpx.MockTransport(server)) as backend:
        feed = poll_attention(backend, timedelta(hours=1), interval=0.01, backoff_max=0.02)
        async with aclosing(feed):
            async for item in feed:
                seen.append(type(item).__name__ + (f" {item.attempt}" if hasattr(item, "attempt") else ""))
    assert seen == [
        "Connecting 1",
        "Reconnecting 1",
        "Connecting 2",
        "LoginNeeded 2",
        "Connecting 3",
        "Live",
        "AttentionSnapshot",
        "AttentionSnapshot",
        "Refused",
    ]
    assert asked == [f"approval-requests {s}" for s in (503, 401, 200, 200, 403)]


def test_an_approval_crossing_the_last_minute_is_reported_once_and_an_arrival_that_close_is_not() -> None:
    """The inbox tells of an approval about to expire once, when it comes within a minute of expiring;
    one that arrives already that close was news by arriving (its own alert), not again a second later."""
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    inbox = Inbox()
    roomy = Approval(id="a1", status="pending", requested_at=now, expires_at=now + timedelta(seconds=90))
    tight = Approval(id="a2", status="pending", requested_at=now, expires_at=now + timedelta(seconds=30))
    inbox.reset(AttentionSnapshot(at=now, approvals=[roomy, tight]))
    assert inbox.expiring(now) == []  # first look: a1 has 90 s, a2 arrived with 30 s
    assert inbox.expiring(now + timedelta(seconds=10)) == []
    crossing = inbox.expiring(now + timedelta(seconds=40))  # a1: 50 s left
    assert [(e.approval.id, e.left) for e in crossing] == [("a1", timedelta(seconds=50))]
    assert inbox.expiring(now + timedelta(seconds=45)) == []  # once
