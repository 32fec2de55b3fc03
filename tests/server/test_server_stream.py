"""The SSE stream: framing, keepalives, resume without gaps or duplicates, and the end of a session."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from srv_helpers import Stream, auth, read_stream, subscribed

from client.events import SessionEnded, parse_event
from server.embedded import EmbeddedServer
from server.harness_client import HarnessClient


async def test_frames_carry_id_event_and_one_json_object_with_a_retry_hint(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="framing")
    await agent.run_started("check framing")
    await agent.delta("line one\nline two", iteration=1)
    stream = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: len(s.frames) >= 3
    )
    assert stream.status == 200
    assert stream.content_type.startswith("text/event-stream")
    assert stream.retry == [3000]
    assert stream.seqs == [1, 2, 3]
    assert stream.types == ["session.started", "run.started", "model.delta"]
    for frame in stream.frames:
        event = parse_event(json.dumps(frame.data), frame.event)
        assert (event.seq, event.type, event.session_id) == (frame.id, frame.event, agent.session_id)
    assert stream.frames[2].data["text"] == "line one\nline two"


async def test_idle_stream_sends_keepalive_comments(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="idle")
    stream = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: len(s.comments) >= 2, seconds=20
    )
    assert stream.comments[:2] == ["keepalive", "keepalive"]
    assert stream.seqs == [1]


async def test_live_events_arrive_while_connected(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="live")
    reader = asyncio.create_task(
        read_stream(live_server.url, live_server.token, agent.session_id, stop=lambda s: len(s.frames) >= 4)
    )
    await subscribed(live_server.server, agent.session_id)
    await agent.run_started("live task")
    await agent.delta("hello", iteration=1)
    await agent.delta(" world", iteration=1)
    stream = await asyncio.wait_for(reader, 30)
    assert stream.types == ["session.started", "run.started", "model.delta", "model.delta"]
    assert stream.seqs == [1, 2, 3, 4]


async def test_resume_after_disconnect_has_no_gap_and_no_duplicate(
    live_server, harness: HarnessClient
) -> None:
    agent = await harness.start_session(agent_name="resume")
    await agent.run_started("resume")

    async def produce() -> None:
        for i in range(60):
            await agent.delta(f"chunk {i} ", iteration=1)

    producer = asyncio.create_task(produce())
    first = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: len(s.frames) >= 10
    )
    resumed_header = await read_stream(
        live_server.url,
        live_server.token,
        agent.session_id,
        last_event_id=str(first.seqs[-1]),
        stop=lambda s: bool(s.seqs) and s.seqs[-1] >= 30,
    )
    await producer
    resumed_query = await read_stream(
        live_server.url,
        live_server.token,
        agent.session_id,
        after=resumed_header.seqs[-1],
        stop=lambda s: bool(s.seqs) and s.seqs[-1] >= 62,
    )
    seen = first.seqs + resumed_header.seqs + resumed_query.seqs
    assert seen == list(range(1, 63))


async def test_stream_ends_after_session_ended_which_is_last(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="ender")
    reader = asyncio.create_task(read_stream(live_server.url, live_server.token, agent.session_id))
    await subscribed(live_server.server, agent.session_id)
    await agent.run_started("short life")
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        note = await http.post(
            "/api/v1/operator-notes", json={"text": "never read", "runtime_session_id": agent.session_id}
        )
        assert note.status_code == 201
        await agent.end("done")
    stream = await asyncio.wait_for(reader, 30)
    assert stream.closed_by_server
    assert stream.types[-1] == "session.ended"
    assert "note.undeliverable" in stream.types
    ended = parse_event(json.dumps(stream.frames[-1].data))
    assert isinstance(ended, SessionEnded) and ended.reason == "done"
    assert ended.session.ended_at is not None
    # a stream opened later replays everything and closes at once; resuming past the end closes too
    again = await read_stream(live_server.url, live_server.token, agent.session_id, seconds=20)
    assert again.closed_by_server and again.seqs == stream.seqs
    past = await read_stream(
        live_server.url, live_server.token, agent.session_id, after=stream.seqs[-1], seconds=20
    )
    assert past.closed_by_server and past.frames == []


async def test_bad_last_event_id_is_a_clear_400(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="bad-id")
    stream = await read_stream(
        live_server.url, live_server.token, agent.session_id, last_event_id="abc", seconds=20
    )
    assert stream.status == 400


async def test_seq_is_contiguous_under_concurrent_writers(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="concurrent")
    other = await harness.start_session(agent_name="concurrent-2")

    async def burst(n: int) -> None:
        for i in range(n):
            await agent.delta(f"{i}", iteration=1)

    async def notes() -> None:
        async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
            for i in range(5):
                await http.post(
                    "/api/v1/operator-notes", json={"text": f"n{i}", "runtime_session_id": agent.session_id}
                )

    await asyncio.gather(burst(25), burst(25), notes(), other.delta("x", iteration=1))
    stream = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: s.seqs[-1:] == [1 + 50 + 10]
    )
    assert stream.seqs == list(range(1, 62))  # 1 start + 50 deltas + 5 x (note.created + session.updated)


async def test_a_reader_too_far_behind_is_cut_off_and_resumes_by_last_event_id_losing_nothing(
    isolated_dirs,
) -> None:
    """The live queue holds 64 KiB here; a commit of 100 events of 1 KiB overflows it at once. The
    reader's stream ends there (the server lets go of what was queued), and a reconnection with
    Last-Event-ID gets every event after it, once, in order; so does the client's own follower."""
    from client.backends import connect
    from client.config import Settings

    server = EmbeddedServer(
        isolated_dirs / "lag.sqlite3", keepalive_seconds=0.5, subscriber_queue_bytes=64 * 1024
    )
    server.start()
    try:
        async with HarnessClient(server.url, server.token) as harness:
            agent = await harness.start_session(agent_name="flood")
            first = asyncio.create_task(
                read_stream(server.url, server.token, agent.session_id, stop=lambda s: len(s.frames) >= 301)
            )
            follower_items: list[Any] = []

            async def follow() -> None:
                async with await connect(
                    Settings(server.url, server.token, server_kind="local"),
                    backoff_initial=0.05,
                    backoff_max=0.2,
                ) as client:
                    async for item in client.follow(agent.session_id):
                        follower_items.append(item)
                        if getattr(item, "seq", 0) == 301:
                            return

            follower = asyncio.create_task(follow())
            await subscribed(server, agent.session_id, count=2)
            text = "x" * 1000
            for start in range(0, 300, 100):  # 100 KiB per commit: more than the queue holds
                await agent.emit(
                    *(
                        {"type": "model.delta", "iteration": 1, "text": f"{start + i}:{text}"}
                        for i in range(100)
                    )
                )
            cut = await asyncio.wait_for(first, 15)
            assert cut.closed_by_server and len(cut.frames) < 301  # cut off, not ended
            assert server.plane.bus.subscriber_count(agent.session_id) <= 1  # only the follower's, if any
            resumed = await read_stream(
                server.url,
                server.token,
                agent.session_id,
                last_event_id=str(cut.seqs[-1]),
                stop=lambda s: bool(s.seqs) and s.seqs[-1] == 301,
            )
            await asyncio.wait_for(follower, 15)
    finally:
        server.stop()
    seen = cut.frames + resumed.frames
    assert [f.id for f in seen] == list(range(1, 302))
    assert [f.data["text"].split(":")[0] for f in seen[1:]] == [str(i) for i in range(300)]
    followed = [item.seq for item in follower_items if hasattr(item, "seq")]
    assert followed == list(range(1, 302))


async def test_a_client_that_goes_away_is_unsubscribed(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="leaver")
    plane = live_server.server.plane
    stream = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: bool(s.frames)
    )
    assert stream.seqs == [1]  # the reader has hung up
    for _ in range(600):  # noticed at the latest when the next keepalive cannot be written (0.5 s here)
        if plane.bus.subscriber_count(agent.session_id) == 0:
            break
        await asyncio.sleep(0.05)
    assert plane.bus.subscriber_count(agent.session_id) == 0


async def test_a_resume_point_beyond_the_newest_event_still_gets_new_events(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="stale-id")
    reader = asyncio.create_task(
        read_stream(
            live_server.url,
            live_server.token,
            agent.session_id,
            last_event_id="999",
            stop=lambda s: bool(s.frames),
        )
    )
    await subscribed(live_server.server, agent.session_id)
    await agent.run_started("after a reset")
    stream = await asyncio.wait_for(reader, 30)
    assert stream.types == ["run.started"] and stream.seqs == [2]


async def test_tail_replays_only_the_newest_events_and_says_where_they_start(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="long")
    await agent.run_started("a long one")
    for n in range(10):
        await agent.delta(f"chunk {n} ", 1)
    everything = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: len(s.frames) >= 12
    )
    assert everything.seqs == list(range(1, 13)) and everything.replay_after == "0"
    last = everything.seqs[-1]

    tail = await read_stream(
        live_server.url, live_server.token, agent.session_id, tail=3, stop=lambda s: len(s.frames) >= 3
    )
    assert tail.seqs == [last - 2, last - 1, last] and tail.replay_after == str(last - 3)
    # then live events follow, as on any stream (the server subscribes before it replays: once the tail
    # is in, the next event comes live; the readers above may still count as subscribers for a moment)
    replayed = asyncio.Event()

    def two_frames(stream: Stream) -> bool:
        if stream.frames:
            replayed.set()
        return len(stream.frames) >= 2

    reader = asyncio.create_task(
        read_stream(live_server.url, live_server.token, agent.session_id, tail=1, stop=two_frames)
    )
    await asyncio.wait_for(replayed.wait(), 30)
    await agent.delta("live ", 1)
    live = await asyncio.wait_for(reader, 30)
    assert live.seqs == [last, last + 1]


async def test_a_resume_point_wins_over_tail_and_a_long_tail_is_everything(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="resume")
    await agent.run_started("t")
    await agent.delta("a", 1)
    await agent.delta("b", 1)
    resumed = await read_stream(
        live_server.url,
        live_server.token,
        agent.session_id,
        after=1,
        tail=1,
        stop=lambda s: len(s.frames) >= 3,
    )
    assert resumed.seqs == [2, 3, 4] and resumed.replay_after == "1"
    by_header = await read_stream(
        live_server.url,
        live_server.token,
        agent.session_id,
        last_event_id="2",
        tail=1,
        stop=lambda s: len(s.frames) >= 2,
    )
    assert by_header.seqs == [3, 4]
    whole = await read_stream(
        live_server.url, live_server.token, agent.session_id, tail=1000, stop=lambda s: len(s.frames) >= 4
    )
    assert whole.seqs == [1, 2, 3, 4] and whole.replay_after == "0"


async def test_since_replays_only_the_events_stored_from_that_time(live_server, harness) -> None:
    """``?since=<ISO time>`` (our extension, for the digest): only the events stored at or after that time
    are sent, found by one index seek; ``Preloop-Stored-Through`` says where what is stored now ends."""
    agent = await harness.start_session(agent_name="since")
    await agent.run_started("an old task")
    await agent.delta("old ", 1)
    everything = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: len(s.frames) >= 3
    )
    assert everything.seqs == [1, 2, 3] and everything.stored_through == "3"
    await asyncio.sleep(0.05)
    cut = datetime.now(UTC)
    await asyncio.sleep(0.05)
    await agent.delta("new ", 1)
    await agent.delta("newer", 1)
    for spelled in (cut.isoformat(), cut.isoformat().replace("+00:00", "Z")):
        recent = await read_stream(
            live_server.url,
            live_server.token,
            agent.session_id,
            since=spelled,
            stop=lambda s: len(s.frames) >= 2,
        )
        assert recent.seqs == [4, 5] and recent.replay_after == "3" and recent.stored_through == "5"
        assert [f.data["text"] for f in recent.frames] == ["new ", "newer"]
    future = (cut + timedelta(hours=1)).isoformat()
    nothing = await read_stream(
        live_server.url, live_server.token, agent.session_id, since=future, seconds=1.5
    )
    assert nothing.seqs == [] and nothing.replay_after == "5"
    resumed = await read_stream(
        live_server.url,
        live_server.token,
        agent.session_id,
        since=future,
        after=3,
        stop=lambda s: len(s.frames) >= 2,
    )
    assert resumed.seqs == [4, 5]  # a resume point wins, as over tail
    bad = await read_stream(
        live_server.url, live_server.token, agent.session_id, since="yesterday", seconds=5
    )
    assert bad.status == 422


@pytest.mark.parametrize("tail", [0, -1, 10**7])
async def test_a_tail_out_of_range_is_a_422(live_server, harness, tail: int) -> None:
    agent = await harness.start_session(agent_name="bad-tail")
    stream = await read_stream(live_server.url, live_server.token, agent.session_id, tail=tail, seconds=20)
    assert stream.status == 422
