"""Preloop, live: an approval created on a Preloop server → its row in the client's inbox (issue 24 §5).

Two processes on loopback: the fake Preloop (``tests/fake_preloop``, uvicorn in its own process, shaped
as Preloop 0.17.1: the approval row stored, then ``approval_created`` broadcast on the account-wide
websocket ``/api/v1/ws/unified``) and this process, the operator's client. For each sample this process
asks the server process to create an approval; the server notes ``time.monotonic()`` just before it
creates it (``CLOCK_MONOTONIC`` is one clock for every process of the machine), and this process notes
when the approval shows. Printed, with median / p95 / max and the load average beside them:

1. pushed, client: ``PreloopBackend.watch_attention`` (the unified socket beside the attention poll,
   ``client.backends.preloop.unified``) feeding a ``client.inbox.Inbox``: the time until the inbox reports
   the approval added (its REST row read on the push, so with its risk level);
2. pushed, TUI: the real ``PreloopApp`` headless (``run_test``) with the inbox screen open: the time until
   the frame showing the approval's row has been painted (a 1 ms poll of the inbox table, then
   ``call_after_refresh``);
3. polled (the client before this change, and the fallback): the same feed with the server's approval
   broadcasts switched off (``unified_muted``), so only the attention poll (every ``--poll-interval``
   seconds, 3 as in the app) finds the approval; each sample is raised a random part of an interval
   after the previous one showed, so samples fall anywhere in the poll cycle.

Every measured approval is approved as soon as it shows (a REST call), and the next waits until it left.
Target (issue 24 §5): ≤ 1 s after the server created it.

    .venv/bin/python benchmarks/bench_preloop_push.py [--samples 50] [--tui 30] [--polled 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_inbox_latency import Watched  # noqa: E402

from client.alerts import AlertSettings  # noqa: E402
from client.backends import connect  # noqa: E402
from client.config import Settings  # noqa: E402
from client.models import Approval  # noqa: E402

TARGET_MS = 1000.0
TOKEN = "alice-test-token"  # the fake Preloop's


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def marker_of(approval: Approval) -> str | None:
    command = approval.tool_args.get("command")
    if isinstance(command, str) and command.startswith("make deploy m"):
        return command.rsplit(" ", 1)[-1]
    return None


# ------------------------------------------------------------------------------------ the server process


def serve() -> None:
    """Child process: the fake Preloop; prints its URL, then reads ``raise MARKER`` (answers ``raised
    MARKER T0``), ``mute 0|1`` and ``quit``."""
    from tests.fake_preloop import running_fake_preloop

    with running_fake_preloop() as (fake, url):
        print(url, flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words or words[0] == "quit":
                break
            if words[0] == "raise":
                t0 = time.monotonic()
                fake.request_approval(f"make deploy {words[1]}")
                print(f"raised {words[1]} {t0!r}", flush=True)
            elif words[0] == "mute":
                fake.unified_muted = words[1] == "1"
                print("ok", flush=True)


class Server:
    """This process's end of the fake Preloop's pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.count = 0

    async def _line(self, seconds: float = 60.0) -> str:
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), seconds)).decode()
        if not line:
            raise SystemExit("the fake Preloop stopped")
        return line.strip()

    async def _say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{text}\n".encode())
        await self.proc.stdin.drain()

    async def raise_one(self) -> tuple[str, float]:
        self.count += 1
        marker = f"m{self.count}"
        await self._say(f"raise {marker}")
        answer = (await self._line()).split()
        if answer[:2] != ["raised", marker]:
            raise SystemExit(f"unexpected answer from the fake Preloop: {answer}")
        return marker, float(answer[2])

    async def mute(self, muted: bool) -> None:
        await self._say(f"mute {int(muted)}")
        await self._line()

    async def quit(self) -> None:
        await self._say("quit")
        await asyncio.wait_for(self.proc.wait(), 30)


# ------------------------------------------------------------------------------------ this process


async def feed_pass(
    url: str, server: Server, *, samples: int, poll_interval: float, pushed: bool
) -> list[float]:
    """Raise approvals one at a time and time each until the client's inbox has it (ms)."""
    await server.mute(not pushed)
    out: list[float] = []
    rng = random.Random(samples)
    wait = 10.0 if pushed else 3 * poll_interval + 10
    async with await connect(Settings(url, TOKEN, server_kind="preloop")) as client:
        watched = Watched(marker_of, notes_window=timedelta(hours=1))
        reader = asyncio.create_task(watched.run(client, poll_interval))
        try:
            await watched.until(lambda: watched.inbox.synced, 30, "the first snapshot")
            await asyncio.sleep(0.5)  # the socket attaches
            for i in range(samples + 2):
                marker, t0 = await server.raise_one()
                await watched.until(partial(watched.seen.__contains__, marker), wait, f"approval {marker}")
                at, approval = watched.seen[marker]
                if i >= 2:  # two warm-up samples
                    out.append((at - t0) * 1000)
                await client.approve(approval.id, "go ahead")
                await watched.until(partial(watched.gone, approval.id), wait, "it to leave")
                await asyncio.sleep(rng.uniform(0.02, 0.08) if pushed else rng.uniform(0, poll_interval))
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    return out


async def tui_pass(url: str, server: Server, *, samples: int) -> tuple[list[float], list[float]]:
    """The real app with its inbox open: raised → row seen by a 1 ms poll, and → that frame painted."""
    from tui.app import PreloopApp
    from tui.screens.inbox import InboxScreen
    from widgets.inbox_view import InboxApprovals

    await server.mute(False)
    seen_ms: list[float] = []
    painted_ms: list[float] = []
    async with await connect(Settings(url, TOKEN, server_kind="preloop")) as client:
        app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
        async with app.run_test(size=(140, 40)) as pilot:
            while not app.inbox.synced:
                await pilot.pause(0.01)
            await pilot.press("i")
            while not isinstance(app.screen, InboxScreen):
                await pilot.pause(0.01)
            await asyncio.sleep(0.5)
            table = app.screen.query_one(InboxApprovals)
            loop = asyncio.get_running_loop()

            async def until(condition: Callable[[], bool], what: str, step: float = 0.001) -> None:
                deadline = loop.time() + 10
                while not condition():
                    if loop.time() > deadline:
                        raise SystemExit(f"timed out waiting for {what}")
                    await asyncio.sleep(step)

            def has_row(marker: str) -> bool:
                return any(marker_of(a) == marker for a in table._approvals.values())

            for i in range(samples + 2):
                marker, t0 = await server.raise_one()
                await until(partial(has_row, marker), f"the row of {marker}")
                seen = time.monotonic()
                painted = asyncio.get_running_loop().create_future()
                app.call_after_refresh(lambda f=painted: f.done() or f.set_result(time.monotonic()))
                at = await painted
                if i >= 2:
                    seen_ms.append((seen - t0) * 1000)
                    painted_ms.append((at - t0) * 1000)
                approval = next(a for a in table._approvals.values() if marker_of(a) == marker)
                await client.approve(approval.id, "go ahead")
                await until(lambda a=approval: a.id not in table._approvals, "the row to leave", 0.005)
                await asyncio.sleep(0.05)
    return seen_ms, painted_ms


def line(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:<40} (no samples)"
    return (
        f"{name:<40} median {statistics.median(values):7.1f} ms  p95 {pct(values, 0.95):7.1f} ms  "
        f"max {max(values):7.1f} ms  n={len(values)}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50, help="pushed samples, client feed")
    parser.add_argument("--tui", type=int, default=30, help="pushed samples, painted in the app")
    parser.add_argument("--polled", type=int, default=20, help="samples with the broadcasts off")
    parser.add_argument("--poll-interval", type=float, default=3.0, help="the attention poll (the app's 3 s)")
    args = parser.parse_args()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve-fake", cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    server = Server(proc)
    url = await server._line(60)
    print(f"fake Preloop at {url}; load {load()}")
    try:
        pushed = await feed_pass(
            url, server, samples=args.samples, poll_interval=args.poll_interval, pushed=True
        )
        print(line("pushed, client inbox", pushed), f"load {load()}")
        if args.tui:
            seen, painted = await tui_pass(url, server, samples=args.tui)
            print(line("pushed, app: row in the inbox table", seen), f"load {load()}")
            print(line("pushed, app: that frame painted", painted), f"load {load()}")
        if args.polled:
            polled = await feed_pass(
                url, server, samples=args.polled, poll_interval=args.poll_interval, pushed=False
            )
            print(line(f"polled every {args.poll_interval:g} s (no broadcast)", polled), f"load {load()}")
        verdict = "met" if pushed and pct(pushed, 0.95) <= TARGET_MS else "missed"
        print(f"target: ≤ {TARGET_MS:.0f} ms after the server created it (pushed p95: {verdict})")
    finally:
        await server.quit()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve-fake"]:
        serve()
    else:
        asyncio.run(main())
