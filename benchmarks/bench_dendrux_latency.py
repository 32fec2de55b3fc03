"""Publish → client-event latency against a real Dendrux 0.4.1 app (tests/dendrux_app) on loopback.

"Publish" is the moment Dendrux committed the event (its ``created_at``, same machine clock); the client
side is the moment ``DendruxBackend.follow`` yields the mapped event. Dendrux's stream router polls the
database every 0.5 s, so the floor is ~0-500 ms (mean ~250 ms) by design; an ``llm.completed`` also waits
for one ``/traces`` fetch. Runs are ``parallel`` script runs (8 tools finishing together) so the gap
backfill is exercised too; lost/duplicated counts are printed.

    .venv/bin/python benchmarks/bench_dendrux_latency.py [--runs 20] [--tools 8] [--concurrency 1]

Target: p95 ≤ 600 ms (Dendrux's 0.5 s poll plus at most ~100 ms of ours), 0 lost, 0 duplicated. With
``--concurrency 5`` the database is busy, out-of-order commits happen and the backfill shows in the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.backends.dendrux import DendruxBackend  # noqa: E402
from client.backends.dendrux.feed import FeedStats, follow  # noqa: E402
from client.connection import Connection  # noqa: E402
from client.events import BaseEvent, ToolStarted  # noqa: E402
from tests.dendrux_app.server import DendruxAppServer  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def one_run(
    app: DendruxAppServer, backend: DendruxBackend, k: int, tools: int
) -> tuple[list[tuple[str, float]], int, int, int]:
    run_id = await asyncio.to_thread(app.start_run, f"parallel gate=b{k} n={tools}: check stock")
    stats = FeedStats()
    samples: list[tuple[str, float]] = []
    started = 0
    async for item in follow(backend, run_id, stats=stats):
        if not isinstance(item, BaseEvent):
            continue
        now = datetime.now(UTC)
        samples.append((item.type, (now - item.at).total_seconds() * 1000))
        if isinstance(item, ToolStarted):
            started += 1
            if started == tools:
                asyncio.create_task(asyncio.to_thread(app.open_gate, f"b{k}"))  # noqa: RUF006
    rest = await backend.get_json(f"/runs/{run_id}/events", params={"limit": 1000})
    expected = {i["sequence_index"] for i in rest["items"]}
    lost = len(expected - set(stats.released))
    dup = len(stats.released) - len(set(stats.released))
    return samples, lost, dup, stats.gaps


async def main(runs: int, tools: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, DendruxAppServer(Path(tmp) / "bench.sqlite3") as app:
        conn = Connection(app.url, app.token, backoff_initial=0.05, backoff_max=0.5)
        async with DendruxBackend(conn) as backend:
            t0 = time.perf_counter()
            samples: list[tuple[str, float]] = []
            lost = dup = gaps = 0
            gate = asyncio.Semaphore(concurrency)

            async def limited(k: int) -> tuple[list[tuple[str, float]], int, int, int]:
                async with gate:
                    return await one_run(app, backend, k, tools)

            for s, lo, du, ga in await asyncio.gather(*(limited(k) for k in range(runs))):
                samples += s
                lost, dup, gaps = lost + lo, dup + du, gaps + ga
            elapsed = time.perf_counter() - t0
    print(
        f"Dendrux latency, {runs} runs x {tools} parallel tools, {concurrency} at a time, "
        f"{len(samples)} events, {elapsed:.1f} s"
    )
    print(f"{'event type':<20} {'n':>5} {'p50 ms':>8} {'p90 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    kinds = sorted({k for k, _ in samples})
    for kind in [*kinds, "all"]:
        values = [v for k, v in samples if kind in ("all", k)]
        print(
            f"{kind:<20} {len(values):>5} {statistics.median(values):>8.0f} {pct(values, 0.9):>8.0f} "
            f"{pct(values, 0.95):>8.0f} {max(values):>8.0f}"
        )
    print(f"events lost {lost}, duplicated {dup}, stream gaps backfilled from REST {gaps}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tools", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=1, help="runs followed at once (5: gaps happen)")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.tools, args.concurrency))
