"""The Dendrux feed under faults a real app cannot produce on demand, over a scripted transport that
answers the read router's REST from the recorded captures and the stream from recorded bytes cut as a
test likes: frames split mid-line, a corrupted frame, a keep-alive, a stall, and the resume with
``Last-Event-ID``. (The real app's own faults, a restart and parallel tools, are in
test_dendrux_live.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from client.errors import NotFound
from client.events import Event, ModelStep, NoteEvent, RunCompleted, SessionEnded
from client.ids import resolve_session
from client.status import Ended, Reconnecting, Skipped, StreamStatus
from tests.client.faults import Hang, Script, ScriptedBody

CAPTURES = Path(__file__).parent / "captures"
RUN = json.loads((CAPTURES / "rest_run.json").read_text())
RUN_ID = RUN["run_id"]


def _recorded_stream() -> bytes:
    """The stream's bytes as the app sent them (the capture prefixes each line with its receive time)."""
    lines = (CAPTURES / "run_stream_raw_full_replay.txt").read_text().splitlines()
    return "".join(line.split("\t", 1)[1] + "\n" for line in lines if "\t" in line).encode()


def _frames(stream: bytes) -> list[bytes]:
    return [part + b"\n\n" for part in stream.split(b"\n\n") if part.strip()]


class ScriptedDendrux(httpx.AsyncBaseTransport):
    """The read router's REST from the captures; ``/events/stream`` serves ``streams`` one per request."""

    def __init__(self, streams: list[Script]) -> None:
        self.streams = list(streams)
        self.stream_requests: list[httpx.Request] = []
        self.events = json.loads((CAPTURES / "rest_events.json").read_text())["items"]
        self.traces = json.loads((CAPTURES / "rest_traces.json").read_text())["items"]
        notes = json.loads((CAPTURES / "notes.json").read_text())
        self.notes = [{**n, "state": "delivered"} for n in notes]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        params = request.url.params
        body: Any
        if path == f"/runs/{RUN_ID}":
            body = RUN
        elif path == f"/runs/{RUN_ID}/notes":
            body = {"notes": self.notes, "run_status": RUN["status"]}
        elif path == f"/runs/{RUN_ID}/traces":
            body = {"items": self.traces[int(params.get("offset", "0")) :]}
        elif path == f"/runs/{RUN_ID}/events":
            after = int(params.get("after", "-1"))
            body = {"items": [e for e in self.events if e["sequence_index"] > after]}
        elif path == f"/runs/{RUN_ID}/events/stream":
            self.stream_requests.append(request)
            script = self.streams.pop(0)
            read_timeout = request.extensions.get("timeout", {}).get("read")
            return httpx.Response(
                200,
                headers={"content-type": "text/event-stream; charset=utf-8"},
                stream=ScriptedBody(script.steps, read_timeout),
                request=request,
            )
        else:
            return httpx.Response(404, json={"detail": "Not Found"})
        return httpx.Response(200, json=body)


async def _follow(transport: ScriptedDendrux, **options: float) -> list[Event | StreamStatus]:
    conn = Connection("http://dendrux.test", "tok", transport=transport, backoff_initial=0.01, **options)
    async with DendruxBackend(conn, trace_wait=0.0, gap_wait=0.2) as backend:
        return [item async for item in backend.follow(RUN_ID)]


def _events(items: list[Event | StreamStatus]) -> list[Event]:
    return [i for i in items if not isinstance(i, StreamStatus.__args__)]  # type: ignore[attr-defined]


async def test_frames_cut_mid_line_then_a_stall_resume_after_the_last_index_with_nothing_twice() -> None:
    frames = _frames(_recorded_stream())
    first = b"".join(frames[:7]) + b": keepalive\n\n"  # up to run.paused (index 6), then silence
    cut = [first[i : i + 7] for i in range(0, len(first), 7)]  # inside lines, JSON and "id: "
    second = b"".join(frames[5:])  # the app resends from the cursor: 5 and 6 are duplicates here
    transport = ScriptedDendrux([Script(steps=[*cut, Hang()]), Script(steps=[second])])
    items = await _follow(transport, stall_timeout=0.3)

    events = _events(items)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [r.headers.get("last-event-id") for r in transport.stream_requests] == [None, "6"]
    (stall,) = [i for i in items if isinstance(i, Reconnecting)]
    assert stall.reason == "stalled: nothing received for 0.3 s"
    steps = [(e.phase, e.text) for e in events if isinstance(e, ModelStep)]
    assert steps[0] == ("commentary", "Let me look up order A-17 first.")
    assert [n.note.text for n in events if isinstance(n, NoteEvent)] == [
        "Customer is a VIP, be polite.",
        "Also add a $5 voucher.",
    ]
    assert isinstance(events[-2], RunCompleted) and isinstance(events[-1], SessionEnded)
    assert items[-1] == Ended(events[-1].seq)


async def test_a_corrupted_frame_is_skipped_counted_and_the_stream_goes_on() -> None:
    frames = _frames(_recorded_stream())
    broken = frames[3].replace(b'"event_type"', b'"event_type', 1)  # the note delivery, not JSON now
    transport = ScriptedDendrux([Script(steps=[*frames[:3], broken, *frames[4:]])])
    items = await _follow(transport)

    skipped = [i for i in items if isinstance(i, Skipped)]
    assert len(skipped) == 1 and skipped[0].total == 1 and "not JSON" in skipped[0].reason
    assert len(transport.stream_requests) == 1  # its index was seen: no gap, no reconnect
    events = _events(items)
    assert [n.note.text for n in events if isinstance(n, NoteEvent)] == ["Also add a $5 voucher."]
    assert isinstance(events[-1], SessionEnded)


class RunAppearsLate(httpx.AsyncBaseTransport):
    """``GET /runs/{id}`` answers 404 for the first ``misses`` asks (the run not visible yet, as right after
    a run starts: the recorded stream's first line is such a 404), then the run; ``GET /runs`` lists
    nothing yet."""

    def __init__(self, misses: int) -> None:
        self.misses = misses
        self.asked = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/runs":
            return httpx.Response(200, json={"items": [], "total": 0, "limit": 100, "offset": 0})
        if request.url.path == f"/runs/{RUN_ID}":
            self.asked += 1
            if self.asked <= self.misses:
                return httpx.Response(404, json={"detail": f"Run '{RUN_ID}' not found."})
            return httpx.Response(200, json=RUN)
        return httpx.Response(404, json={"detail": "Not Found"})


async def test_a_full_run_id_not_visible_yet_is_waited_for_then_refused_as_not_found() -> None:
    """`sessions attach <full run id>` right after the run started exited 2 with "no run id starts with":
    the full id's 404 fell through to prefix matching. A full id is used as given (any case) and its run
    is waited for the grace period when it is read, then refused as not found (exit 1), never as a typo."""
    late = RunAppearsLate(misses=3)
    async with DendruxBackend(Connection("http://dendrux.test", "tok", transport=late), run_grace=5) as b:
        assert await resolve_session(b, RUN_ID.lower()) == RUN_ID
        assert late.asked == 0  # a full id is not looked up to be resolved
        assert (await b.get_session(RUN_ID)).id == RUN_ID
        assert late.asked == 4
    never = RunAppearsLate(misses=10**6)
    async with DendruxBackend(Connection("http://dendrux.test", "tok", transport=never), run_grace=0.3) as b:
        with pytest.raises(NotFound) as refused:
            await b.get_session(await resolve_session(b, RUN_ID.lower()))
    assert f"run {RUN_ID}" in refused.value.hint and "does not exist" in refused.value.hint
    assert never.asked > 2


class LateThenFailing(ScriptedDendrux):
    """``/events`` while the stream skipped 3 and 4: the first ask has only 3 (4 not committed yet), the
    second answers 500, later ones have everything."""

    def __init__(self, streams: list[Script]) -> None:
        super().__init__(streams)
        self.backfills = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/runs/{RUN_ID}/events":
            self.backfills += 1
            if self.backfills == 1:
                return httpx.Response(
                    200, json={"items": [e for e in self.events if e["sequence_index"] == 3]}
                )
            if self.backfills == 2:
                return httpx.Response(500, json={"detail": "Internal Server Error"})
        return await super().handle_async_request(request)


async def test_what_a_backfill_released_before_rest_failed_is_shown_after_the_reconnect() -> None:
    """The backfill found index 3 (a note's delivery), then its next ask failed: 3 had left the orderer and
    the reconnect resumes after it, so it used to be lost."""
    frames = _frames(_recorded_stream())
    transport = LateThenFailing([Script(steps=[*frames[:3], frames[5]]), Script(steps=frames[4:])])
    items = await _follow(transport)

    assert transport.backfills == 2
    assert [r.headers.get("last-event-id") for r in transport.stream_requests] == [None, "3"]
    assert any(isinstance(i, Reconnecting) and "500" in i.reason for i in items)
    events = _events(items)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [n.note.text for n in events if isinstance(n, NoteEvent)] == [
        "Customer is a VIP, be polite.",
        "Also add a $5 voucher.",
    ]
    assert isinstance(events[-1], SessionEnded) and items[-1] == Ended(events[-1].seq)
