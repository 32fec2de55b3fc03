"""Fan-out: many SSE clients follow one session; publish → receive latency across all of them, events lost
or duplicated (both must be 0), and the server's memory. Prints median / p95 / max.

The control plane is ``preloop serve`` of a checkout (this one by default, ``--checkout`` another) in its
own process on 127.0.0.1 (``serverproc.py``). ``--clients`` readers (default 200) follow one session over
plain SSE (``GET /runtime-sessions/{id}/events``), spread over ``--procs`` reader processes so the readers'
own parsing does not become what is measured. Once every reader has its stream open, a publisher posts
``--events`` ``model.delta`` events one at a time through the harness API (``POST /agents/events``, a
``--gap-ms`` pause between them) and notes the time just before each POST; every reader notes when each
frame arrives. All processes read the same monotonic clock (``time.monotonic``: CLOCK_MONOTONIC, system
wide). The session is ended at the end, so each stream closes after ``session.ended``.

    .venv/bin/python benchmarks/bench_fanout.py [--clients 200] [--events 200] [--gap-ms 20] [--procs 4]
                                                [--checkout PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.serverproc import CHECKOUT, ServerProcess  # noqa: E402

API = "/api/v1"


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _readers(url: str, token: str, session_id: str, count: int, ready: Any) -> list[Any]:
    """``count`` SSE readers in this process; each returns ``[(event index, receive time), ...]``."""
    opened = 0
    all_open = asyncio.Event()

    async def one(http: httpx.AsyncClient) -> list[tuple[int, float]]:
        nonlocal opened
        got: list[tuple[int, float]] = []
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        async with http.stream("GET", f"{API}/runtime-sessions/{session_id}/events", headers=headers) as resp:
            assert resp.status_code == 200, resp.status_code
            counted = False
            async for line in resp.aiter_lines():
                if not counted and line.startswith("retry:"):
                    counted = True
                    opened += 1
                    if opened == count:
                        all_open.set()
                if not line.startswith("data:"):
                    continue
                now = time.monotonic()
                data = json.loads(line[5:])
                if data["type"] == "model.delta":
                    got.append((int(data["text"]), now))
                elif data["type"] == "session.ended":
                    break
        return got

    limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=count + 10)
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30, read=120), limits=limits) as http:
        tasks = [asyncio.create_task(one(http)) for _ in range(count)]
        await asyncio.wait_for(all_open.wait(), 60)
        ready.put(count)
        return list(await asyncio.gather(*tasks))


def _reader_process(url: str, token: str, session_id: str, count: int, ready: Any, out: Any) -> None:
    """A reader process: its share of the readers, results sent back on ``out``."""
    results = asyncio.run(_readers(url, token, session_id, count, ready))
    out.put(results)


async def _publish(url: str, token: str, events: int, gap_s: float) -> tuple[str, Any]:
    """Mint a session; returns its id and a coroutine function that publishes and ends it."""
    http = httpx.AsyncClient(base_url=url, timeout=30)
    minted = await http.post(
        f"{API}/auth/runtime-sessions/token",
        headers={"Authorization": f"Bearer {token}"},
        json={"runtime_principal_name": "fanout", "title": "Fan-out benchmark"},
    )
    minted.raise_for_status()
    body = minted.json()
    runtime = {"Authorization": f"Bearer {body['token']}"}

    async def run() -> dict[int, float]:
        sent: dict[int, float] = {}
        try:
            for i in range(events):
                sent[i] = time.monotonic()
                answer = await http.post(
                    f"{API}/agents/events",
                    headers=runtime,
                    json={"events": [{"type": "model.delta", "iteration": 1, "text": str(i)}]},
                )
                answer.raise_for_status()
                if gap_s:
                    await asyncio.sleep(gap_s)
            (await http.post(f"{API}/agents/session-end", headers=runtime, json={})).raise_for_status()
        finally:
            await http.aclose()
        return sent

    return str(body["runtime_session_id"]), run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=20.0)
    parser.add_argument("--procs", type=int, default=4, help="reader processes the clients are spread over")
    parser.add_argument("--checkout", type=Path, default=CHECKOUT, help="serve this checkout's server")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp), checkout=args.checkout.resolve()).start()
        try:
            idle = server.memory()

            async def prepare() -> tuple[str, Any]:
                return await _publish(server.url, server.token, args.events, args.gap_ms / 1000)

            loop = asyncio.new_event_loop()
            session_id, publish = loop.run_until_complete(prepare())
            ready, out = ctx.Queue(), ctx.Queue()
            base, extra = divmod(args.clients, args.procs)
            shares = [base + (1 if n < extra else 0) for n in range(args.procs)]
            procs = [
                ctx.Process(
                    target=_reader_process, args=(server.url, server.token, session_id, share, ready, out)
                )
                for share in shares
                if share
            ]
            for proc in procs:
                proc.start()
            opened = sum(ready.get(timeout=120) for _ in procs)
            following = server.memory()
            cpu = server.cpu_seconds()
            sent = loop.run_until_complete(publish())
            cpu = server.cpu_seconds() - cpu
            loop.close()
            readers: list[list[tuple[int, float]]] = []
            for _ in procs:
                readers.extend(out.get(timeout=300))
            for proc in procs:
                proc.join(30)
            after = server.memory()
        finally:
            server.stop()
    latencies: list[float] = []
    lost = duplicated = 0
    for got in readers:
        indices = [i for i, _ in got]
        duplicated += len(indices) - len(set(indices))
        lost += args.events - len(set(indices))
        latencies.extend((t - sent[i]) * 1000 for i, t in got if i in sent)
    print(
        f"control plane: {args.checkout} (own process, loopback); {opened} SSE clients on one session, "
        f"{args.events} events {args.gap_ms:g} ms apart, {args.procs} reader processes"
    )
    print(
        f"publish→receive across all clients  n={len(latencies)}  "
        f"median={statistics.median(latencies):7.2f} ms  p95={pct(latencies, 0.95):7.2f} ms  "
        f"max={max(latencies):7.2f} ms"
    )
    print(f"events lost: {lost}, duplicated: {duplicated} (both must be 0)")
    deliveries = args.events * opened
    print(
        f"server CPU while publishing: {cpu:.2f} s for {deliveries:,} deliveries "
        f"({cpu * 1e6 / max(deliveries, 1):.0f} µs each)"
    )
    print(
        f"server RSS: {idle.rss_mib:.1f} MiB idle, {following.rss_mib:.1f} MiB with {opened} streams open, "
        f"{after.rss_mib:.1f} MiB after (peak while publishing {after.peak_mib:.1f} MiB)"
    )
    return 0 if lost == duplicated == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
