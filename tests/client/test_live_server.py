"""The Backend against the real local control plane over loopback: every method and every error it can
produce, and the live stream (order, resume across a server restart, refusals)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from client.backends import connect
from client.backends.base import Backend, SessionFilter
from client.config import Settings
from client.errors import (
    AuthError,
    BadRequest,
    InvalidResponse,
    NoMatchingId,
    NoteOutcomeUnknown,
    NotFound,
    RateLimited,
    ServerUnreachable,
    UsageError,
    ValidationFailed,
)
from client.events import Event, ModelDelta, SessionEnded, SessionStarted
from client.ids import resolve_session
from client.status import (
    Connecting,
    Ended,
    Live,
    LoginNeeded,
    Missed,
    Reconnecting,
    Refused,
    Skipped,
    StreamStatus,
)
from server.harness_client import HarnessClient, HarnessSession
from tests.client.faults import FreezingProxy
from tests.conftest import LiveServer


class CountingTransport(httpx.AsyncHTTPTransport):
    """The real transport, counting requests (to prove a bad id never reaches the server)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return await super().handle_async_request(request)


class LoseTheAnswer(httpx.AsyncHTTPTransport):
    """The request reaches the real server and is processed; then the answer is lost (a read timeout)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        await response.aread()
        await response.aclose()
        raise httpx.ReadTimeout("answer lost", request=request)


async def new_session(harness: HarnessClient, name: str = "agent-a", **kw: Any) -> HarnessSession:
    return await harness.start_session(agent_name=name, **kw)


async def collect(
    client: Backend, session_id: str, *, after: int = 0, until_ended: bool = True, limit: int = 500
) -> list[Event | StreamStatus]:
    items: list[Event | StreamStatus] = []
    async for item in client.follow(session_id, after=after):
        items.append(item)
        if len(items) >= limit:
            break
    return items


def event_seqs(items: list[Event | StreamStatus]) -> list[int]:
    return [i.seq for i in items if hasattr(i, "seq")]


# ------------------------------------------------------------------------------------------------ basics


async def test_connecting_asks_the_kind_once_and_never_shows_the_token(
    client: Backend, live_server: LiveServer
) -> None:
    """Settings that do not say which kind of server it is: connecting asks /health, once."""
    assert client.server_kind == "local"
    health = await client.health()
    assert health.server_kind == "local"
    assert live_server.token not in repr(client)


async def test_sessions_list_filters_paging_detail_and_end(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    a = await new_session(harness, "alpha", cwd="/work/a")
    b = await new_session(harness, "beta")
    c = await new_session(harness, "gamma")
    await b.end()

    page = await client.list_sessions(limit=1)
    assert len(page.items) == 1 and page.has_more
    ids = [s.id async for s in client.iter_sessions(page_size=1)]
    assert sorted(ids) == sorted([a.session_id, b.session_id, c.session_id])
    assert [s.id async for s in client.iter_sessions(max_items=2, page_size=1)] == ids[:2]

    active = {s.id for s in (await client.list_sessions(SessionFilter(status="active"))).items}
    assert active == {a.session_id, c.session_id}
    ended = {s.id for s in (await client.list_sessions(SessionFilter(status="ended"))).items}
    assert ended == {b.session_id}

    detail = await client.get_session(a.session_id.upper())
    assert detail.id == a.session_id and detail.cwd == "/work/a" and not detail.ended
    assert detail.started_at is not None and detail.started_at.tzinfo is not None

    finished = await client.end_session(a.session_id)
    assert finished.ended
    assert (await client.get_session(a.session_id)).ended


async def test_every_session_filter_reaches_the_server(client: Backend, harness: HarnessClient) -> None:
    parent = await new_session(harness, "lead", agent_kind="codex")
    child = await new_session(
        harness, "helper", parent_session_id=parent.session_id, flow_execution_id="flow-7"
    )
    other = await new_session(harness, "loner")

    async def ids(**kw: Any) -> set[str]:
        return {s.id for s in (await client.list_sessions(SessionFilter(**kw), limit=100)).items}

    everyone = {parent.session_id, child.session_id, other.session_id}
    assert await ids(agent="helper") == {child.session_id}
    assert await ids(agent_kind="codex") == {parent.session_id}
    assert await ids(parent_session_id=parent.session_id) == {child.session_id}
    assert await ids(flow_execution_id="flow-7") == {child.session_id}
    assert await ids(active_within_minutes=5) == everyone
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    assert await ids(start_date=hour_ago) == everyone
    assert await ids(start_date=hour_ago + timedelta(hours=2)) == set()
    assert await ids(status="all", agent="nobody") == set()


async def test_short_ids_resolve_across_pages(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    sessions = [await new_session(harness, f"agent-{n}") for n in range(3)]
    for s in sessions:
        assert await resolve_session(client, s.session_id[:8], page_size=1) == s.session_id
    assert await resolve_session(client, sessions[0].session_id) == sessions[0].session_id
    taken = {s.session_id[:4] for s in sessions}
    free = next(p for p in (f"{n:04x}" for n in range(65536)) if p not in taken)
    with pytest.raises(NoMatchingId, match=f"no session starts with '{free}'"):
        await resolve_session(client, free)
    with pytest.raises(UsageError, match="at least 4 of its first characters"):
        await resolve_session(client, "ab")


async def test_activity_shows_tool_calls(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    await agent.run_started("list files")
    call = await agent.tool_started("Bash", {"command": "ls"}, iteration=1)
    await agent.tool_completed(call, "Bash", duration_ms=12)
    items = await client.session_activity(agent.session_id)
    assert any(i.activity_type == "tool_call" and i.tool_name == "Bash" for i in items)


# ------------------------------------------------------------------------------------------------ notes


async def test_notes_send_list_get_withdraw(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    note = await client.send_note("Run the tests first.", session_id=agent.session_id)
    assert note.state == "pending" and note.correlation_id  # always attached
    assert (await client.get_note(note.note_id)).text == "Run the tests first."
    listed = await client.list_notes(session_id=agent.session_id)
    assert [n.note_id for n in listed.notes] == [note.note_id]

    cancelled = await client.withdraw_note(note.note_id)
    assert cancelled.state == "cancelled"
    again = await client.withdraw_note(note.note_id)  # 200 with the note as it is: caller reads state
    assert again.state == "cancelled"

    delivered = await client.send_note("Use staging.", session_id=agent.session_id)
    await agent.claim_notes()
    after = await client.withdraw_note(delivered.note_id)
    assert after.state == "delivered"  # too late to withdraw: the state says so


async def test_same_correlation_id_returns_the_same_note(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    cid = uuid.uuid4().hex
    first = await client.send_note("once", session_id=agent.session_id, correlation_id=cid)
    second = await client.send_note("once", session_id=agent.session_id, correlation_id=cid)
    assert second.note_id == first.note_id
    assert len((await client.list_notes(session_id=agent.session_id)).notes) == 1


async def test_lost_answer_is_outcome_unknown_and_a_deliberate_retry_finds_the_note(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    async with await connect(
        Settings(live_server.url, live_server.token, server_kind="local"), transport=LoseTheAnswer()
    ) as flaky:
        with pytest.raises(NoteOutcomeUnknown) as info:
            await flaky.send_note("did this arrive?", session_id=agent.session_id)
    err = info.value
    assert "unknown, check the list" in str(err)
    notes = (await client.list_notes(session_id=agent.session_id)).notes
    assert len(notes) == 1 and notes[0].correlation_id == err.correlation_id  # it did arrive, once
    retried = await client.send_note(
        "did this arrive?", session_id=agent.session_id, correlation_id=err.correlation_id
    )
    assert retried.note_id == notes[0].note_id
    assert len((await client.list_notes(session_id=agent.session_id)).notes) == 1


async def test_note_to_a_dead_server_says_not_sent(harness: HarnessClient, live_server: LiveServer) -> None:
    agent = await new_session(harness)
    url, token = live_server.url, live_server.token
    await asyncio.to_thread(live_server.stop)
    async with await connect(Settings(url, token, server_kind="local")) as c:
        with pytest.raises(ServerUnreachable, match="the note was not sent"):
            await c.send_note("hello", session_id=agent.session_id)
        with pytest.raises(ServerUnreachable, match=r"is `preloop serve --port \d+` running\?"):
            await c.health()  # the command that started the last local server there, named


# ------------------------------------------------------------------------------------------------ approvals


async def wait_for_pending(client: Backend, session_id: str, count: int) -> list[str]:
    for _ in range(1500):
        page = await client.list_approvals(session_id=session_id)
        if len(page.items) >= count:
            assert page.total == len(page.items)
            return [a.id for a in page.items]
        await asyncio.sleep(0.02)
    raise AssertionError("approval never appeared")


async def test_approve_and_decline_with_comments(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    check = asyncio.create_task(agent.permission_check("Bash", {"command": "git push"}, reasoning="ship it"))
    (approval_id,) = await wait_for_pending(client, agent.session_id, 1)
    pending = await client.get_approval(approval_id)
    assert pending.pending and pending.tool_name == "Bash" and pending.tool_args["command"] == "git push"
    decided = await client.approve(approval_id, comment="ok, go ahead")
    assert decided.status == "approved" and decided.approver_comment == "ok, go ahead"
    assert (await check).decision == "allow"
    with pytest.raises(BadRequest, match="Request already approved"):
        await client.approve(approval_id)

    check = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf build"}))
    (second,) = await wait_for_pending(client, agent.session_id, 1)
    declined = await client.decline(second, comment="keep the build dir")
    assert declined.status == "declined"
    assert (await check).decision != "allow"
    decided_page = await client.list_approvals(session_id=agent.session_id, status=None)
    assert {a.status for a in decided_page.items} == {"approved", "declined"}
    assert (await client.list_approvals(session_id=agent.session_id, status="approved", skip=1)).items == []


# ------------------------------------------------------------------------------------------------ errors


async def test_bad_or_missing_token_is_an_auth_error_without_the_token(live_server: LiveServer) -> None:
    secret = "definitely-not-valid-" + uuid.uuid4().hex
    async with await connect(Settings(live_server.url, secret)) as c:
        with pytest.raises(AuthError) as info:
            await c.list_sessions()
    assert info.value.status == 401
    assert "run `preloop login`" in str(info.value) and secret not in str(info.value)
    async with await connect(Settings(live_server.url, None)) as c:
        with pytest.raises(AuthError, match="PRELOOP_TOKEN"):
            await c.list_sessions()


async def test_unknown_and_foreign_sessions_are_not_found(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    with pytest.raises(NotFound, match="session 00000000-0000-4000-8000-000000000000 does not exist"):
        await client.get_session("00000000-0000-4000-8000-000000000000")
    agent = await new_session(harness)
    async with await connect(Settings(live_server.url, live_server.other_token)) as other:
        with pytest.raises(NotFound):
            await other.get_session(agent.session_id)
        with pytest.raises(NotFound):
            await other.session_activity(agent.session_id)
    with pytest.raises(NotFound, match="Note not found"):
        await client.get_note("doesnotexist")
    with pytest.raises(NotFound):
        await client.approve(str(uuid.uuid4()))


async def test_malformed_ids_never_reach_the_server(live_server: LiveServer) -> None:
    transport = CountingTransport()
    async with await connect(
        Settings(live_server.url, live_server.token, server_kind="local"), transport=transport
    ) as c:
        for call in (
            c.get_session("not-a-uuid"),
            c.session_activity("1234"),
            c.end_session("x" * 36),
            c.get_approval("nope"),
            c.get_note("../runtime-sessions"),
            c.send_note("hi", session_id="abc"),
            c.send_note("hi"),
            c.send_note("   ", session_id=str(uuid.uuid4())),
        ):
            with pytest.raises(UsageError):
                await call
    assert transport.count == 0


async def test_422_carries_the_field_messages(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    with pytest.raises(ValidationFailed) as info:
        await client.send_note("hi", session_id=agent.session_id, expires_in_seconds=5)
    err = info.value
    assert err.status == 422
    assert [f.field for f in err.fields] == ["expires_in_seconds"]
    assert "greater than or equal to 60" in err.fields[0].message


async def test_400_for_a_note_list_without_target(client: Backend) -> None:
    with pytest.raises(BadRequest, match="Name an agent_id, runtime_session_id or execution_id"):
        await client.list_notes()


async def test_21st_note_in_an_hour_is_rate_limited_with_the_servers_sentence(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    for n in range(20):
        await client.send_note(f"probe {n}", session_id=agent.session_id)
    with pytest.raises(RateLimited) as info:
        await client.send_note("probe 21", session_id=agent.session_id)
    assert info.value.status == 429
    assert str(info.value).startswith("rate limited: Rate limit reached: 20 notes per hour")


async def test_an_unreadable_answer_is_invalid_response_not_a_traceback() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/health"):
            return httpx.Response(200, text="<html>captive portal</html>")
        if request.url.path.endswith("/operator-notes"):
            return httpx.Response(
                301, headers={"location": "https://user:pw@secure.example/api/v1/operator-notes"}
            )
        return httpx.Response(200, json={"items": [{"id": 42, "started_at": "yesterday"}]})

    async with await connect(
        Settings("http://test", "t", server_kind="local"), transport=httpx.MockTransport(handler)
    ) as c:
        with pytest.raises(
            InvalidResponse, match=r"answer to GET /api/v1/health could not be read \(not JSON\)"
        ):
            await c.health()
        with pytest.raises(InvalidResponse, match="field error"):
            await c.list_sessions()
        with pytest.raises(InvalidResponse, match=r"redirects .* to https://secure\.example/") as info:
            await c.list_notes(session_id=str(uuid.uuid4()))
        assert "pw" not in str(info.value)


# ------------------------------------------------------------------------------------------------ stream


async def test_follow_delivers_a_live_session_in_order_then_ends(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    items: list[Event | StreamStatus] = []

    async def consume() -> None:
        async for item in client.follow(agent.session_id):
            items.append(item)

    task = asyncio.create_task(consume())
    await agent.run_started("say hello")
    await agent.narrate(1, ["Hel", "lo"], tool_calls=1)
    call = await agent.tool_started("Bash", {"command": "echo hi"}, iteration=1)
    await agent.tool_completed(call, "Bash", duration_ms=5)
    await agent.final_answer(2, "Hello!")
    await agent.end()
    await asyncio.wait_for(task, 15)

    assert isinstance(items[0], Connecting) and isinstance(items[1], Live)
    seqs = event_seqs(items)
    assert seqs == list(range(1, len(seqs) + 1))
    assert isinstance(items[2], SessionStarted)
    assert [i.text for i in items if isinstance(i, ModelDelta)] == ["Hel", "lo", "Hello!"]
    assert isinstance(items[-2], SessionEnded) and items[-1] == Ended(seqs[-1])


async def test_follow_after_skips_what_was_seen(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    await agent.run_started("t")
    await agent.narrate(1, ["a", "b", "c"])
    await agent.end()
    everything = event_seqs(await collect(client, agent.session_id))
    assert everything == list(range(1, len(everything) + 1))
    tail = event_seqs(await collect(client, agent.session_id, after=3))
    assert tail == everything[3:]


async def test_follow_with_a_tail_starts_at_the_newest_events_without_calling_the_rest_a_gap(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    """Attaching to a long session reads only its newest events: the first ones are no gap to refill,
    nothing is reported missed, and after a reconnect it resumes where it was (no second tail)."""
    agent = await new_session(harness)
    await agent.run_started("long")
    for n in range(30):
        await agent.delta(f"{n} ", 1)
    last = 32  # session.started, run.started, 30 deltas
    items: list[Event | StreamStatus] = []
    seen_live = asyncio.Event()

    async def consume() -> None:
        async for item in client.follow(agent.session_id, tail=5):
            items.append(item)
            if any(isinstance(i, ModelDelta) and i.text == "after restart" for i in items):
                seen_live.set()

    task = asyncio.create_task(consume())
    for _ in range(100):
        if len(event_seqs(items)) >= 5:
            break
        await asyncio.sleep(0.05)
    assert event_seqs(items) == list(range(last - 4, last + 1))
    opened = next(i for i in items if isinstance(i, Live))
    assert opened.stored_through == last  # the replay ends there: what comes after is live
    await asyncio.to_thread(live_server.stop)
    await asyncio.to_thread(live_server.start)  # same port, same database
    await agent.delta("after restart", 1)
    await asyncio.wait_for(seen_live.wait(), 20)
    task.cancel()
    assert event_seqs(items) == list(range(last - 4, last + 2))  # resumed after 32, not a new tail
    assert not any(isinstance(i, Missed | Skipped) for i in items)
    assert any(isinstance(i, Reconnecting) for i in items)


async def test_resume_after_a_server_restart_mid_stream_loses_and_repeats_nothing(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    items: list[Event | StreamStatus] = []
    got = asyncio.Event()

    async def consume() -> None:
        async for item in client.follow(agent.session_id):
            items.append(item)
            if len(event_seqs(items)) >= 6:
                got.set()

    task = asyncio.create_task(consume())
    await agent.run_started("before restart")
    for n in range(4):
        await agent.delta(f"before {n} ", 1)
    await asyncio.wait_for(got.wait(), 30)

    await asyncio.to_thread(live_server.stop)
    await asyncio.to_thread(live_server.start)  # same port, same database

    for n in range(4):
        await agent.delta(f"after {n} ", 1)
    await agent.end()
    await asyncio.wait_for(task, 30)

    seqs = event_seqs(items)
    assert seqs == list(range(1, len(seqs) + 1)), seqs  # every event exactly once, in order
    texts = [i.text for i in items if isinstance(i, ModelDelta)]
    assert texts == [f"before {n} " for n in range(4)] + [f"after {n} " for n in range(4)]
    assert any(isinstance(i, Reconnecting) for i in items)
    assert items[-1] == Ended(seqs[-1])


async def test_follow_refusals_stop_with_the_reason(
    harness: HarnessClient, client: Backend, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    items = await collect(client, "00000000-0000-4000-8000-000000000000")
    assert items[-1] == Refused(items[-1].reason, 404)  # type: ignore[union-attr]
    assert "does not exist" in items[-1].reason  # type: ignore[union-attr]

    # A refused token is not a refusal: the follower waits for one the server accepts, trying again.
    async with await connect(
        Settings(live_server.url, "wrong-token", server_kind="local"), backoff_initial=0.01
    ) as bad:
        items = await collect(bad, agent.session_id, limit=4)
    assert [type(i) for i in items] == [Connecting, LoginNeeded, Connecting, LoginNeeded]
    assert "refused the token (401): run `preloop login` in another terminal" in items[1].reason  # type: ignore[union-attr]

    async with await connect(
        Settings(live_server.url, live_server.other_token, server_kind="local")
    ) as other:
        last = (await collect(other, agent.session_id))[-1]
    assert isinstance(last, Refused) and last.status == 404

    with pytest.raises(UsageError):
        await collect(client, "not-a-uuid")


async def test_following_an_ended_session_from_its_end_just_ends(
    client: Backend, harness: HarnessClient
) -> None:
    agent = await new_session(harness)
    await agent.end()
    everything = await collect(client, agent.session_id)
    last = event_seqs(everything)[-1]
    items = await collect(client, agent.session_id, after=last, limit=10)
    assert items == [Connecting(1), Live(last, stored_through=last), Ended(last)]


async def test_server_errors_never_carry_credentials_from_the_url(live_server: LiveServer) -> None:
    url = live_server.url.replace("http://", "http://user:hunter2@")
    await asyncio.to_thread(live_server.stop)
    with pytest.raises(ServerUnreachable) as info:  # its kind unknown: asked on connecting
        await connect(Settings(url + "/?key=abc", "tok"))
    assert "hunter2" not in str(info.value) and "abc" not in str(info.value)


async def test_a_dead_server_is_retried_with_growing_backoff_until_it_returns(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    agent = await new_session(harness)
    await agent.end()
    await asyncio.to_thread(live_server.stop)
    items: list[Event | StreamStatus] = []
    three_failures = asyncio.Event()

    async def consume() -> None:
        async for item in client.follow(agent.session_id):
            items.append(item)
            if sum(isinstance(i, Reconnecting) for i in items) >= 3:
                three_failures.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three_failures.wait(), 30)
    await asyncio.to_thread(live_server.start)
    await asyncio.wait_for(task, 15)

    failures = [i for i in items if isinstance(i, Reconnecting)]
    assert [f.attempt for f in failures[:3]] == [1, 2, 3]
    assert all(f.reason.startswith("cannot reach http://127.0.0.1:") for f in failures)
    assert all(0.05 <= f.delay <= 0.5 for f in failures)
    seqs = event_seqs(items)
    assert seqs == list(range(1, len(seqs) + 1)) and items[-1] == Ended(seqs[-1])


async def test_a_stalled_connection_to_the_real_server_is_detected_and_resumed(
    harness: HarnessClient, live_server: LiveServer
) -> None:
    host, port = live_server.url.removeprefix("http://").split(":")
    proxy = await FreezingProxy(host, int(port)).start()
    agent = await new_session(harness)
    items: list[Event | StreamStatus] = []
    three = asyncio.Event()
    try:
        # the fixture's server sends a keep-alive every 0.5 s, so 1.5 s of silence is a stall
        async with await connect(
            Settings(proxy.url, live_server.token, server_kind="local"), stall_timeout=1.5, backoff_max=0.5
        ) as c:

            async def consume() -> None:
                async for item in c.follow(agent.session_id):
                    items.append(item)
                    if len(event_seqs(items)) >= 3:
                        three.set()

            task = asyncio.create_task(consume())
            await agent.run_started("stall me")
            await agent.delta("one ", 1)
            await asyncio.wait_for(three.wait(), 30)
            proxy.freeze_open_connections()
            await agent.delta("two ", 1)
            await agent.delta("three", 1)
            await agent.end()
            await asyncio.wait_for(task, 20)
    finally:
        await proxy.close()

    seqs = event_seqs(items)
    assert seqs == list(range(1, len(seqs) + 1))
    assert [i.text for i in items if isinstance(i, ModelDelta)] == ["one ", "two ", "three"]
    stalls = [i for i in items if isinstance(i, Reconnecting)]
    assert stalls and all(s.reason == "stalled: nothing received for 1.5 s" for s in stalls)
    assert proxy.connections == 1 + len(stalls)
    assert items[-1] == Ended(seqs[-1])


async def test_real_frames_cut_into_tiny_pieces_and_a_corrupted_one_over_loopback(
    harness: HarnessClient, live_server: LiveServer
) -> None:
    host, port = live_server.url.removeprefix("http://").split(":")
    # 7-byte pieces cut every line, JSON value and multi-byte character; one frame's JSON is broken on the way
    proxy = await FreezingProxy(host, int(port), split_every=7, corrupt=(b'BREAK ME"', b"BREAK ME!")).start()
    agent = await new_session(harness)
    await agent.run_started("pieces")
    for text in ("caf\u00e9 \u2713 ", "BREAK ME", "\U0001f600 after"):
        await agent.delta(text, 1)
    await agent.end()
    try:
        async with await connect(Settings(proxy.url, live_server.token, server_kind="local")) as c:
            items = await collect(c, agent.session_id)
    finally:
        await proxy.close()
    assert [i.text for i in items if isinstance(i, ModelDelta)] == ["caf\u00e9 \u2713 ", "\U0001f600 after"]
    skipped = [i for i in items if isinstance(i, Skipped)]
    assert len(skipped) == 1 and skipped[0].total == 1 and "not JSON" in skipped[0].reason
    assert not any(isinstance(i, Reconnecting) for i in items)  # the skipped seq is not a gap
    seqs = event_seqs(items)
    assert seqs == sorted(seqs) and len(seqs) == seqs[-1] - 1  # every seq but the broken one, once
    assert items[-1] == Ended(seqs[-1])
