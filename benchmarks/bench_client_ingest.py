"""Client ingest rate: SSE bytes → the local backend's ``follow()`` → the session core → the timeline, in
events/s, beside httpx-sse's raw parse rate on the same bytes (the floor, measured in the same run).

The follower's whole path runs as the app runs it: ``client.backends.connect`` → ``LocalBackend.follow``
→ httpx-sse (``aconnect_sse`` + ``EventSource.aiter_sse``) → one event validated per frame → ordered →
the reconnect loop → ``SessionCore.follow``, which applies each event to the timeline as it arrives and
yields what it changed (the attach screen joins those once per frame: done here every 256 changes). The
bytes come from an in-memory transport in 64 KiB chunks, so the network is out of the picture. Beside it,
on the same bytes: httpx-sse's raw parse (text decoding, line splitting, field parsing; no JSON), and the
follower without the core (parse, validate, order).

Times are the process's CPU time (everything here runs in this process, on one thread), best of
``--repeat`` interleaved runs: on a shared machine the wall clock moves with other people's work.

Target (issue 26): the full path at >= 50 % of the raw parse rate.

    .venv/bin/python benchmarks/bench_client_ingest.py [--events 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import httpx
from httpx_sse import EventSource

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from client.backends import connect
from client.config import Settings
from client.session import SessionChange, SessionCore
from client.status import StreamStatus

SID = "5e55e55e-0000-4000-8000-000000000001"
CHUNK = 65_536
FRAME_CHANGES = 256
TARGET = 0.5
T = TypeVar("T")


def recorded_stream(n: int) -> bytes:
    """A realistic session: per iteration ~12 deltas, a step, a tool call pair; keep-alives in between."""
    out: list[str] = ["retry: 3000\n\n"]
    seq = 0
    iteration = 0
    at = "2026-11-30T12:00:00.123456Z"

    def emit(kind: str, **fields: object) -> None:
        nonlocal seq
        seq += 1
        body = {"seq": seq, "type": kind, "session_id": SID, "at": at, **fields}
        out.append(f"id: {seq}\nevent: {kind}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n")

    emit("run.started", run_id="run-1", task="Fix the failing tests in the parser module")
    while seq < n - 16:
        iteration += 1
        for i in range(12):
            emit("model.delta", run_id="run-1", iteration=iteration, text=f"Looking at step {i}: the parser ")
        emit("model.step", run_id="run-1", iteration=iteration, phase="commentary", tool_calls=1)
        call = f"call-{iteration}"
        emit(
            "tool.started",
            run_id="run-1",
            call_id=call,
            iteration=iteration,
            name="Bash",
            args_summary="pytest -q tests/parser",
            args={"command": "pytest -q tests/parser"},
        )
        emit(
            "tool.completed",
            run_id="run-1",
            call_id=call,
            name="Bash",
            status="ok",
            duration_ms=1234,
            result_summary="3 passed",
        )
        if iteration % 20 == 0:
            out.append(": keepalive\n\n")
    emit("session.ended", session={"id": SID}, reason="done")
    return "".join(out).encode()


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i in range(0, len(self.data), CHUNK):
            yield self.data[i : i + CHUNK]


def _response(data: bytes) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(data))


async def raw_httpx_sse(data: bytes) -> int:
    """httpx-sse alone: events with data parsed, nothing validated."""
    count = 0
    async for sse in EventSource(_response(data)).aiter_sse():
        count += bool(sse.data)
    return count


async def follow_path(data: bytes, with_core: bool) -> tuple[int, int]:
    """The local backend's follow() over the bytes; with the core, as the attach screen takes it."""
    transport = httpx.MockTransport(lambda request: _response(data))
    count = 0
    async with await connect(
        Settings("http://bench", "tok", server_kind="local"), transport=transport
    ) as backend:
        if not with_core:
            async for item in backend.follow(SID):
                count += not isinstance(item, StreamStatus.__args__)  # type: ignore[attr-defined]
            return count, 0
        core = SessionCore(SID)
        frame: list[SessionChange] = []
        async for change in core.follow(backend):
            if change.timeline is not None:
                count += change.timeline.applied
            frame.append(change)
            if len(frame) >= FRAME_CHANGES:
                SessionChange.join(frame)
                frame.clear()
        SessionChange.join(frame)
        return count, len(core.timeline)


def timed(fn: Callable[[], Awaitable[T]]) -> tuple[float, T]:
    start = time.process_time()
    result = asyncio.run(fn())  # type: ignore[arg-type]
    return time.process_time() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    data = recorded_stream(args.events)
    print(
        f"stream: {args.events:,} events, {len(data) / 1e6:.1f} MB, {CHUNK // 1024} KiB chunks; "
        f"the paths interleaved, best of {args.repeat}, process CPU time"
    )
    best = {"raw": float("inf"), "follow": float("inf"), "timeline": float("inf")}
    n_events = entries = 0
    for _ in range(args.repeat):
        t, n_events = timed(lambda: raw_httpx_sse(data))
        best["raw"] = min(best["raw"], t)
        t, _counts = timed(lambda: follow_path(data, with_core=False))
        best["follow"] = min(best["follow"], t)
        t, (_n, entries) = timed(lambda: follow_path(data, with_core=True))
        best["timeline"] = min(best["timeline"], t)
    raw_rate = n_events / best["raw"]
    rows = [
        ("httpx-sse raw parse (no JSON)", best["raw"]),
        ("LocalBackend.follow(): parse+validate+order", best["follow"]),
        (f"... + SessionCore.follow → timeline ({entries:,} kept)", best["timeline"]),
    ]
    for label, t in rows:
        rate = n_events / t
        share = rate / raw_rate
        print(f"{label:52s} {n_events:>8,} events  {t:6.3f} s  {rate:>10,.0f} events/s  {share:6.1%} of raw")
    share = best["raw"] / best["timeline"]
    verdict = "met" if share >= TARGET else "MISSED"
    print(f"full path: {share:.1%} of the raw parse rate (target >= {TARGET:.0%}): {verdict}")


if __name__ == "__main__":
    main()
