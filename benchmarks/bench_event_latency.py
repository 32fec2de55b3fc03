"""Event latency on loopback: harness POST → operator receives it over SSE. Prints median / p90 / p99 / max.

The control plane runs in its own process (as ``preloop serve`` would), on a fresh temporary database.
One SSE reader follows a session; a publisher POSTs one ``model.delta`` at a time to
``/api/v1/agents/events`` (a short pause between events, so this measures latency rather than queueing)
and notes the time just before each POST; the reader notes the time each frame is parsed. Both ends are
in this process, so they share one monotonic clock. A second pass sends the events back to back
(burst) to show the cost under load, and the POST round trip is printed too. Target: median ≤ 20 ms.

    .venv/bin/python benchmarks/bench_event_latency.py [--events 300] [--gap-ms 5] [--in-process]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.harness_client import HarnessClient  # noqa: E402

SERVER_SCRIPT = """
import sys, time
from pathlib import Path
from server.embedded import EmbeddedServer
server = EmbeddedServer(Path(sys.argv[1]), keepalive_seconds=15.0)
server.start()
print(server.url, server.token, flush=True)
try:
    sys.stdin.read()
finally:
    server.stop()
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def measure(url: str, token: str, events: int, gap_s: float) -> tuple[list[float], list[float]]:
    """Per event, in ms: POST start → SSE receipt, and the POST's own round trip."""
    sent: dict[int, float] = {}
    answered: dict[int, float] = {}
    received: dict[int, float] = {}
    async with HarnessClient(url, token) as harness:
        agent = await harness.start_session(agent_name="bench")
        ready = asyncio.Event()
        done = asyncio.Event()

        async def reader() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx.AsyncClient(base_url=url, timeout=None) as http,
                http.stream(
                    "GET", f"/api/v1/runtime-sessions/{agent.session_id}/events", headers=headers
                ) as resp,
            ):
                async for line in resp.aiter_lines():
                    if line.startswith("retry:"):
                        ready.set()
                    if not line.startswith("data:"):
                        continue
                    now = time.perf_counter()
                    data = json.loads(line[5:])
                    if data["type"] == "model.delta":
                        received[int(data["text"])] = now
                        if len(received) == events:
                            done.set()
                            return

        task = asyncio.create_task(reader())
        await asyncio.wait_for(ready.wait(), 10)
        for i in range(events):
            sent[i] = time.perf_counter()
            await agent.delta(str(i), iteration=1)
            answered[i] = time.perf_counter()
            if gap_s:
                await asyncio.sleep(gap_s)
        await asyncio.wait_for(done.wait(), 60)
        await task
        await agent.end()
    latency = [(received[i] - sent[i]) * 1000 for i in range(events)]
    return latency, [(answered[i] - sent[i]) * 1000 for i in range(events)]


def report(label: str, lat: list[float]) -> None:
    print(
        f"{label:<28} n={len(lat):<4} median={statistics.median(lat):6.2f} ms  p90={pct(lat, 0.90):6.2f} ms  "
        f"p99={pct(lat, 0.99):6.2f} ms  max={max(lat):6.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument(
        "--in-process", action="store_true", help="run the server on a thread of this process"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PRELOOP_STATE_DIR": tmp, "PRELOOP_CONFIG_DIR": tmp, "PRELOOP_DATA_DIR": tmp}
        os.environ.update(
            {k: env[k] for k in ("PRELOOP_STATE_DIR", "PRELOOP_CONFIG_DIR", "PRELOOP_DATA_DIR")}
        )
        db = Path(tmp) / "bench.sqlite3"
        proc = None
        embedded = None
        if args.in_process:
            from server.embedded import EmbeddedServer

            embedded = EmbeddedServer(db).start()
            url, token = embedded.url, embedded.token
        else:
            proc = subprocess.Popen(
                [sys.executable, "-c", SERVER_SCRIPT, str(db)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None
            url, token = proc.stdout.readline().split()
        try:
            where = "thread in this process" if args.in_process else "separate process"
            print(f"control plane: {url} ({where}), SQLite WAL at {db}")
            asyncio.run(measure(url, token, 30, 0.005))  # warm-up: connections, caches, first-query plans
            paced, paced_post = asyncio.run(measure(url, token, args.events, args.gap_ms / 1000))
            report(f"publish→receive, {args.gap_ms:g} ms gap", paced)
            burst, burst_post = asyncio.run(measure(url, token, args.events, 0.0))
            report("publish→receive, burst", burst)
            report("harness POST round trip", paced_post + burst_post)
            verdict = "meets" if statistics.median(paced) <= 20 else "MISSES"
            print(f"target median <= 20 ms: {verdict} ({statistics.median(paced):.2f} ms)")
        finally:
            if embedded is not None:
                embedded.stop()
            if proc is not None:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
