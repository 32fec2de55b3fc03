"""Reconnect after a crash: how soon a follower is live again once the server is back, and what a dead
server costs meanwhile. Prints median / max over several crashes.

The real ``preloop serve`` of this checkout runs in its own process on loopback (``serverproc.py``). A
follower (the client's own ``Client.follow`` with its default backoff) follows a session; the server is
killed with SIGKILL, kept down ``--down`` seconds (long enough for the backoff to reach its cap), and
started again on the same port and database. Timed from the moment the port accepts connections again:
until the follower is ``Live``, and until it receives an event the agent sent at that moment. While the
server is down, the follower's connection attempts are counted (per minute).

    .venv/bin/python benchmarks/bench_reconnect.py [--restarts 5] [--down 8]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.serverproc import Reconnect, ServerProcess, crash_and_restart  # noqa: E402
from client.streaming.policy import BACKOFF_INITIAL, BACKOFF_MAX  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--down", type=float, default=8.0, help="seconds the server stays down each time")
    args = parser.parse_args()
    print(
        f"backoff: {BACKOFF_INITIAL:g} s doubling to {BACKOFF_MAX:g} s (jittered); "
        f"server down {args.down:g} s"
    )
    results: list[Reconnect] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp)).start()
        try:
            for n in range(args.restarts):
                result = asyncio.run(crash_and_restart(server, args.down))
                results.append(result)
                print(
                    f"  crash {n + 1}: live {result.to_live:5.2f} s, event {result.to_event:5.2f} s "
                    f"after the server was back; {result.attempts_while_down} attempts while down, "
                    f"longest wait {max(result.delays):.2f} s",
                    flush=True,
                )
        finally:
            server.stop()
    live = [r.to_live for r in results]
    event = [r.to_event for r in results]
    per_minute = [r.attempts_while_down * 60 / r.down for r in results]
    print(
        f"reconnect after restart → Live      median={statistics.median(live):5.2f} s  max={max(live):5.2f} s"
    )
    print(
        f"reconnect after restart → new event median={statistics.median(event):5.2f} s  "
        f"max={max(event):5.2f} s"
    )
    print(
        f"dead server: {statistics.median(per_minute):.0f} connection attempts a minute per follower "
        f"(max {max(per_minute):.0f}), each refused by the kernel"
    )
    target = 3.0
    verdict = "meets" if max(event) <= target else "MISSES"
    print(
        f"target: live again within {target:g} s of the server's return: {verdict} (max {max(event):.2f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
