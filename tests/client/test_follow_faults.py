"""The follower under faults the real server cannot produce on demand (scripted transport).

Resume across a real server restart and real refusals are in test_live_server.py.
"""

from __future__ import annotations

import json
import random

from client.backends import connect
from client.config import Settings
from client.events import Event, ModelDelta, SessionEnded, UnknownEvent
from client.status import Connecting, Ended, Live, Missed, Reconnecting, Refused, Skipped, StreamStatus
from client.streaming.order import EventOrderer
from client.streaming.policy import backoff_delay
from tests.client.faults import SID, Hang, Pause, Script, ScriptedSSE, event_json, frame


async def run(
    scripts: list[Script], *, after: int = 0, **options: float
) -> tuple[list[Event | StreamStatus], ScriptedSSE]:
    transport = ScriptedSSE(scripts)
    opts = {"backoff_initial": 0.01, "backoff_max": 0.05, "stall_timeout": 5.0} | options
    items: list[Event | StreamStatus] = []
    async with await connect(
        Settings("http://test", "tok", server_kind="local"), transport=transport, **opts
    ) as client:
        async for item in client.follow(SID, after=after):
            items.append(item)
            if len(items) > 200:
                break
    return items, transport


def seqs(items: list[Event | StreamStatus]) -> list[int]:
    return [
        i.seq
        for i in items
        if not isinstance(i, Connecting | Live | Reconnecting | Ended | Refused | Missed | Skipped)
    ]


async def test_frames_split_across_chunks_arrive_whole_and_in_order() -> None:
    stream = b"".join([frame(1), frame(2), frame(3, "session.ended")])
    cut = [stream[i : i + 7] for i in range(0, len(stream), 7)]  # cuts inside lines and inside "✓"
    items, _ = await run([Script(steps=list(cut))])
    assert seqs(items) == [1, 2, 3]
    deltas = [i for i in items if isinstance(i, ModelDelta)]
    assert [d.text for d in deltas] == ["chunk 1 ✓", "chunk 2 ✓"]
    assert isinstance(items[0], Connecting) and isinstance(items[1], Live)
    assert items[-1] == Ended(3)
    assert isinstance(items[-2], SessionEnded)


async def test_malformed_json_is_skipped_counted_and_the_stream_continues() -> None:
    bad = b'id: 2\nevent: model.delta\ndata: {"seq": 2, "type": \n\n'
    wrong_shape = b'id: 4\nevent: tool.started\ndata: {"seq": 4, "type": "tool.started"}\n\n'
    items, transport = await run(
        [Script(steps=[frame(1), bad, frame(3), wrong_shape, frame(5, "session.ended")])]
    )
    assert seqs(items) == [1, 3, 5]
    skipped = [i for i in items if isinstance(i, Skipped)]
    assert [s.total for s in skipped] == [1, 2]
    assert "not JSON" in skipped[0].reason
    assert "invalid tool.started" in skipped[1].reason
    assert len(transport.requests) == 1  # a skipped seq is not a gap: no reconnect


async def test_a_gap_is_filled_before_later_events_are_released() -> None:
    first = Script(steps=[frame(1), frame(3), frame(4), Hang()])
    refill = Script(steps=[frame(2), frame(3), frame(4), frame(5, "session.ended")])
    items, transport = await run([first, refill])
    assert seqs(items) == [1, 2, 3, 4, 5]
    assert transport.last_event_ids == [None, "1"]
    reconnects = [i for i in items if isinstance(i, Reconnecting)]
    assert len(reconnects) == 1 and reconnects[0].reason.startswith("gap: events 2-2 missing")
    assert reconnects[0].delay == 0.0


async def test_a_gap_that_never_fills_is_reported_missed_then_released() -> None:
    scripts = [Script(steps=[frame(1), frame(3), Hang()]) for _ in range(4)]
    scripts.append(Script(steps=[frame(4, "session.ended")]))
    items, _ = await run(scripts, stall_timeout=0.2)
    assert seqs(items) == [1, 3, 4]
    assert Missed(1) in items


async def test_a_stall_is_a_reconnect_that_resumes_after_the_last_seq() -> None:
    first = Script(steps=[b": hello\n\n", frame(1), frame(2), Hang()])
    second = Script(steps=[frame(2), frame(3, "session.ended")])
    items, transport = await run([first, second], stall_timeout=0.2)
    assert seqs(items) == [1, 2, 3]  # the replayed 2 is dropped as a duplicate
    assert transport.last_event_ids == [None, "2"]
    assert transport.requests[1].url.params.get("after") == "2"
    (reconnect,) = [i for i in items if isinstance(i, Reconnecting)]
    assert reconnect.reason == "stalled: nothing received for 0.2 s"


async def test_keepalives_keep_a_slow_stream_alive() -> None:
    steps: list[bytes | Hang | Pause] = [frame(1)]
    for _ in range(4):
        steps += [Pause(0.1), b": keep-alive\n\n"]
    steps.append(frame(2, "session.ended"))
    items, transport = await run([Script(steps=steps)], stall_timeout=0.25)
    assert seqs(items) == [1, 2]
    assert len(transport.requests) == 1


async def test_5xx_and_a_dropped_stream_are_retried_with_backoff() -> None:
    scripts = [
        Script(status=503, body=b'{"detail": "restarting"}'),
        Script(steps=[frame(1)]),  # closes without the end event
        Script(status=502),
        Script(steps=[frame(1), frame(2, "session.ended")]),
    ]
    items, transport = await run(scripts, after=0)
    assert seqs(items) == [1, 2]
    reasons = [i.reason for i in items if isinstance(i, Reconnecting)]
    assert reasons == ["the server answered 503", "the server closed the stream", "the server answered 502"]
    attempts = [i.attempt for i in items if isinstance(i, Reconnecting)]
    assert attempts == [1, 1, 2]  # reset once bytes flowed again
    assert transport.last_event_ids == [None, None, "1", "1"]


async def test_servers_retry_field_is_the_first_delay() -> None:
    scripts = [Script(steps=[b"retry: 300\n\n", frame(1)]), Script(steps=[frame(2, "session.ended")])]
    items, _ = await run(scripts, backoff_max=1.0)
    (reconnect,) = [i for i in items if isinstance(i, Reconnecting)]
    assert 0.3 <= reconnect.delay <= 1.0  # the server asked for 300 ms, more than our 10 ms start


async def test_refusals_stop_the_follower_with_the_reason() -> None:
    """(A refused token is not a refusal: it is waited out, see test_token_refused.py.)"""
    items, transport = await run([Script(status=404, body=b'{"detail": "Runtime session not found"}')])
    assert len(transport.requests) == 1
    last = items[-1]
    assert isinstance(last, Refused) and last.status == 404 and "Runtime session not found" in last.reason


async def test_not_an_event_stream_is_retried_not_parsed() -> None:
    scripts = [
        Script(steps=[b"<html>proxy login</html>"], content_type="text/html"),
        Script(steps=[frame(1, "session.ended")]),
    ]
    items, _ = await run(scripts)
    assert seqs(items) == [1]
    assert any(isinstance(i, Reconnecting) and "text/html" in i.reason for i in items)


async def test_unknown_event_types_are_kept() -> None:
    body = json.dumps(
        {"seq": 1, "type": "agent.mood", "session_id": SID, "at": "2026-11-30T12:00:00", "mood": "ok"}
    )
    odd = f"id: 1\nevent: agent.mood\ndata: {body}\n\n".encode()
    items, _ = await run([Script(steps=[odd, frame(2, "session.ended")])])
    assert seqs(items) == [1, 2]
    unknown = items[2]
    assert isinstance(unknown, UnknownEvent)
    assert unknown.type == "agent.mood" and unknown.raw["mood"] == "ok"
    assert unknown.at.tzinfo is not None  # a zone-less time is read as UTC


def _delta(seq: int) -> Event:
    from client.events import event_from_dict

    return event_from_dict(event_json(seq))


def test_orderer_releases_in_order_once() -> None:
    order = EventOrderer(after=0)
    from client.events import event_from_dict

    ev = {n: event_from_dict(event_json(n)) for n in range(1, 6)}
    assert order.push(2, ev[2]) == []
    assert order.push(4, ev[4]) == []
    assert order.missing == (1, 1)
    assert order.push(1, ev[1]) == [ev[1], ev[2]]
    assert order.push(2, ev[2]) == []
    assert order.push(3, None) == [ev[4]]  # an undecodable 3 still closes the gap
    assert order.last_seq == 4 and not order.gap


def test_backoff_grows_with_jitter_and_caps() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(n, initial=1.0, maximum=30.0, rng=rng) for n in range(1, 10)]
    assert all(1.0 <= d <= 30.0 for d in delays)
    assert delays[0] <= 2.0 and delays[-1] >= 15.0
    assert len({round(d, 6) for d in delays}) == len(delays)


def test_the_first_reconnect_is_jittered_too() -> None:
    """Regression: ``backoff_delay(1, initial=3)`` was always exactly 3.0, so every client dropped by a
    server restart came back in the same instant. It stays at or above the server's ``retry:``."""
    rng = random.Random(11)
    firsts = [backoff_delay(1, initial=3.0, maximum=30.0, rng=rng) for _ in range(50)]
    assert all(3.0 <= d <= 6.0 for d in firsts)
    assert len({round(d, 6) for d in firsts}) == 50
    assert max(firsts) - min(firsts) > 1.0  # spread over the window, not bunched at one end


def test_a_retry_hint_above_the_cap_is_capped_and_still_jittered() -> None:
    """Our server asks for 3 s (``retry: 3000``), more than the 2.5 s cap: the cap wins (a follower is back
    within it), and the waits stay spread so followers dropped together do not return in lock step."""
    rng = random.Random(5)
    waits = [backoff_delay(n, initial=3.0, maximum=2.5, rng=rng) for n in (1, 1, 2, 5, 9) * 10]
    assert all(1.25 <= d <= 2.5 for d in waits)
    assert max(waits) - min(waits) > 0.8


async def test_a_reopened_stream_that_starts_with_its_retry_line_still_fills_the_gap() -> None:
    """Regression: our server writes ``retry:`` in a chunk of its own before the events. A gap refill whose
    first chunk held no event was taken as "still missing", reconnected at once, and after three such
    refills gave the gap up: 48 events reported missed although the server was about to send them."""
    first = Script(steps=[frame(1), frame(50), Hang()])
    refill = Script(
        steps=[b"retry: 1000\n\n", b"".join(frame(n) for n in range(2, 51)), frame(51, "session.ended")]
    )
    items, transport = await run([first, *[refill for _ in range(4)]])
    assert seqs(items) == list(range(1, 52))
    assert not [i for i in items if isinstance(i, Missed)]
    assert transport.last_event_ids == [None, "1"]  # one refill was enough
    assert items[-1] == Ended(51)


async def test_an_absurd_seq_never_becomes_the_cursor_nor_hides_later_events() -> None:
    """Regression: one frame numbered 10**12 was held as a gap, the gap was given up, the cursor jumped to
    10**12 and every later event, ``session.ended`` included, looked like a duplicate: attach never
    exited. The far-off frame is set aside; the real events and the end still come through."""
    absurd = frame(10**12)
    quiet = Script(steps=[b": keepalive\n\n", Hang()])
    scripts = [
        Script(steps=[frame(1), absurd, Hang()]),
        quiet,
        quiet,
        quiet,
        quiet,
        Script(steps=[frame(2), frame(3), absurd, Hang()]),
        Script(steps=[absurd, Hang()]),
        Script(steps=[absurd, Hang()]),
        Script(steps=[absurd, Hang()]),
        Script(steps=[frame(4), frame(5, "session.ended")]),
    ]
    items, transport = await run(scripts, stall_timeout=0.2)
    assert seqs(items) == [1, 2, 3, 4, 5]
    assert items[-1] == Ended(5)
    assert all(not (i.isdigit() and int(i) > 5) for i in transport.last_event_ids if i is not None)


def test_an_orderer_sets_far_off_seqs_aside_when_giving_up_a_gap() -> None:
    order = EventOrderer()
    ev = {n: _delta(n) for n in (1, 2, 3, 10**12)}
    assert order.push(1, ev[1]) == [ev[1]]
    assert order.push(10**12, ev[10**12]) == []
    assert order.give_up_gap() == (0, [], 1)
    assert order.last_seq == 1 and not order.gap
    assert order.push_many([ev[2], ev[3]]) == [ev[2], ev[3]]


def test_an_orderer_can_count_from_zero() -> None:
    order = EventOrderer(first_seq=0)
    ev = {n: _delta(n) for n in (0, 1, 2)}
    assert order.push_many([ev[0], ev[1]]) == [ev[0], ev[1]]
    assert order.push(0, ev[0]) == []  # a duplicate
    assert order.push(2, ev[2]) == [ev[2]] and order.last_seq == 2


async def test_other_client_errors_refuse_but_rate_limits_retry() -> None:
    items, transport = await run([Script(status=400, body=b'{"detail": "Last-Event-ID must be an integer"}')])
    assert items[-1] == Refused("Last-Event-ID must be an integer", 400)
    assert len(transport.requests) == 1
    items, _ = await run(
        [Script(status=429, body=b'{"detail": "slow down"}'), Script(steps=[frame(1, "session.ended")])]
    )
    assert seqs(items) == [1]
    assert any(isinstance(i, Reconnecting) and i.reason == "the server answered 429" for i in items)


async def test_an_undecodable_frame_without_id_still_counts_its_seq_from_the_body() -> None:
    no_id = b'event: model.delta\ndata: {"seq": 2, "type": "model.delta"}\n\n'  # fields missing
    items, transport = await run([Script(steps=[frame(1), no_id, frame(3, "session.ended")])])
    assert seqs(items) == [1, 3]
    assert [i.total for i in items if isinstance(i, Skipped)] == [1]
    assert len(transport.requests) == 1  # seq 2 was seen (though skipped): no gap, no refetch


async def test_a_zero_retry_field_does_not_make_reconnects_a_busy_loop() -> None:
    scripts = [
        Script(steps=[b"retry: 0\n\n", frame(1)]),  # then closes
        Script(status=503),
        Script(status=503),
        Script(steps=[frame(2, "session.ended")]),
    ]
    items, _ = await run(scripts, backoff_initial=0.01, backoff_max=0.05)
    assert seqs(items) == [1, 2]
    delays = [i.delay for i in items if isinstance(i, Reconnecting)]
    assert len(delays) == 3
    assert all(d >= 0.01 for d in delays)  # before the fix every delay was 0: reconnects back to back


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


async def test_any_line_ending_and_any_cut_give_the_same_events() -> None:
    """What the old decoder's tests covered, through the public path: CRLF and lone-CR line ends, a BOM, a
    comment, a lone ``retry:``, one event's JSON over two ``data:`` lines, each stream cut at every byte
    offset (inside lines, inside a CRLF pair, inside a multi-byte character): the same events, in order."""
    two_lines = event_json(2)
    split = json.dumps(two_lines, ensure_ascii=False).replace(", ", ",\ndata: ", 1)
    stream = (
        b"\xef\xbb\xbf: keep-alive\r\n"
        + b"retry: 2500\r\n\r\n"
        + _crlf(frame(1))
        + f"id: 2\nevent: model.delta\ndata: {split}\n\n".encode()
        + frame(3).replace(b"\n", b"\r")
        + frame(4, "session.ended")
    )
    offsets = range(1, len(stream))
    transport = ScriptedSSE([Script(steps=[stream[:cut], stream[cut:]]) for cut in offsets])
    settings = Settings("http://test", "tok", server_kind="local")
    async with await connect(settings, transport=transport, backoff_initial=0.01) as client:
        for cut in offsets:
            items = [item async for item in client.follow(SID)]
            assert seqs(items) == [1, 2, 3, 4], cut
            assert [i.text for i in items if isinstance(i, ModelDelta)] == [f"chunk {n} ✓" for n in (1, 2, 3)]
            assert not [i for i in items if isinstance(i, Reconnecting | Skipped)], cut


async def test_comments_alone_keep_a_quiet_stream_open() -> None:
    """A stream resumed at its end sends only keep-alive comments (no event, no id yet): that is a live
    stream, not a stall, however long it lasts (the stall is the stream's read timeout: bytes, not
    events)."""
    steps: list[bytes | Hang | Pause] = []
    for _ in range(6):
        steps += [b": keep-alive\n\n", Pause(0.1)]
    steps.append(frame(1, "session.ended"))
    items, transport = await run([Script(steps=steps)], stall_timeout=0.25)
    assert seqs(items) == [1]
    assert len(transport.requests) == 1 and not any(isinstance(i, Reconnecting) for i in items)
