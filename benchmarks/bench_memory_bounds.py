"""What hostile clients can make the server hold: the two memory bounds, in MiB of the server's RSS.

1. One request with a 64 MiB header (no token): the server's peak growth, its growth still resident
   afterwards, and its answer. (httptools buffered it whole before answering 401; the h11 parser with a
   16 KiB bound answers 400 at once.)
2. Two readers follow a session and never read while 12,000 events of 16 KiB are published: the peak
   growth while publishing, and what is still resident after they hang up. The same publishing with no
   reader at all is measured first: that much is storage's own cost (SQLite's caches), not the readers'.

The control plane is ``preloop serve`` of a checkout (this one by default, ``--checkout`` another) in its
own process on 127.0.0.1 (``serverproc.py``); memory is read from ``/proc/<pid>/status`` (VmRSS, and
VmHWM reset before each measurement so the peak is the measurement's own).

    .venv/bin/python benchmarks/bench_memory_bounds.py [--header-mib 64] [--events 12000] [--checkout PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.serverproc import CHECKOUT, Memory, ServerProcess, send_huge_header, stalled_reader  # noqa: E402
from server.harness_client import HarnessClient  # noqa: E402

EVENT_BYTES = 16 * 1024


def huge_header(server: ServerProcess, mib: int) -> None:
    """Bound 1: one request whose header is ``mib`` MiB."""
    send_huge_header(server.port, 100, token=server.token)  # warm up the request path
    before = server.memory()
    started = time.monotonic()
    status = send_huge_header(server.port, mib * 1024 * 1024)
    took = time.monotonic() - started
    peak = server.memory()
    time.sleep(0.5)
    after = server.memory()
    print(
        f"{mib} MiB header: answered {status} after {took:.2f} s; server RSS "
        f"+{peak.peak_mib - before.rss_mib:.1f} MiB at the peak, "
        f"+{after.rss_mib - before.rss_mib:.1f} MiB still resident"
    )


async def flood(server: ServerProcess, events: int, readers: int) -> tuple[Memory, Memory, Memory, float]:
    """Publish ``events`` events of 16 KiB (100 per request) with ``readers`` readers that never read."""
    async with HarnessClient(server.url, server.token) as harness:
        agent = await harness.start_session(agent_name=f"flood-{readers}")
        stalled = [stalled_reader(server.port, server.token, agent.session_id) for _ in range(readers)]
        await asyncio.sleep(0.5)
        before = server.memory()
        started = time.monotonic()
        text = "x" * (EVENT_BYTES - 100)
        for first in range(0, events, 100):
            batch = min(100, events - first)
            await agent.emit(*({"type": "model.delta", "iteration": 1, "text": text} for _ in range(batch)))
        took = time.monotonic() - started
        during = server.memory()
        for sock in stalled:
            sock.close()
        await asyncio.sleep(2.0)
        return before, during, server.memory(), took


def stalled_readers(checkout: Path, events: int) -> None:
    """Bound 2: with no reader (storage's own cost), then with two readers that never read."""
    total = events * EVENT_BYTES / (1024 * 1024)
    for readers in (0, 2):
        with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp), checkout=checkout) as server:
            before, during, after, took = asyncio.run(flood(server, events, readers))
        who = "no reader" if readers == 0 else f"{readers} readers that never read"
        print(
            f"{events:,} events of 16 KiB ({total:.0f} MiB) published in {took:.1f} s with {who}: server RSS "
            f"+{during.peak_mib - before.rss_mib:.1f} MiB at the peak, "
            f"+{after.rss_mib - before.rss_mib:.1f} MiB after they hung up"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--header-mib", type=int, default=64)
    parser.add_argument("--events", type=int, default=12_000)
    parser.add_argument("--checkout", type=Path, default=CHECKOUT, help="serve this checkout's server")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    print(f"control plane: {checkout} (preloop serve in its own process, loopback)")
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp), checkout=checkout) as server:
        huge_header(server, args.header_mib)
    stalled_readers(checkout, args.events)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
