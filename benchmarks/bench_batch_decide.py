"""Many approvals at once: 50 approvals across 5 sessions decided in one go from the inbox (issue 25 §3).

Three processes on loopback, as in real use: the control plane (``preloop serve`` of this checkout,
``benchmarks/serverproc.py``), the agents (5 sessions through the harness API, each raising 10 approvals as
a coding agent's hook does: blocking ``permission_check`` calls with ``ask``; their own process), and the
operator's client (this process). Each round the agents raise 50 approvals; the real ``PreloopApp`` runs
headless (``run_test``) with the inbox open; once all 50 rows are shown, ``M`` marks them, ``a`` opens
the dialog and, after the dialog's half second (``tui.typeahead``), ``y`` approves all 50. Measured from
the ``y`` key press to the painted frame in which the last row has left the table and the results are
listed (noticed by a 1 ms poll of the screen, then ``call_after_refresh``). Printed per round and as
median / max, beside:

* the quiet window a letter command waits before it runs (``tui.keypace.QUIET_SECONDS``, 0.3 s: the
  ``y`` is run only once no other key followed it, by design), included in the figure above;
* the batch call itself (``Steering.decide_many``: one ``decide-batch`` request and the server deciding
  each approval on its own), timed inside the app;
* the agents' side: the time from the key press until the last of the 50 blocked calls was answered;
* how many times the inbox screen was redrawn meanwhile and the time that took (the app applies each
  approval's ``approval.decided`` echo from the attention feed as it comes, one redraw each).

Then, without the TUI, the wire alone for the same 50 (``Steering.decide_many``) and, for comparison, the
same 50 decided one request each (``Steering.decide`` in a loop, as before the batch existed).

    .venv/bin/python benchmarks/bench_batch_decide.py [--sessions 5] [--per-session 10] [--rounds 5]
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
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from serverproc import ServerProcess  # noqa: E402

from client.alerts import AlertSettings  # noqa: E402
from client.backends import connect  # noqa: E402
from client.config import Settings  # noqa: E402
from client.steering import Steering  # noqa: E402

WAIT_S = 60.0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------------------------ the agents process


async def agents(url: str, token: str, sessions: int, per_session: int) -> None:
    """Child process: on each ``raise`` line, every session asks ``per_session`` approvals at once and
    the process answers ``raised``; once every call returned it prints ``answered T`` (the monotonic time
    the last one returned) and how they ended. ``quit`` ends the sessions."""
    from server.harness_client import HarnessClient

    async with HarnessClient(url, token) as harness:
        people = [await harness.start_session(agent_name=f"agent-{n}") for n in range(sessions)]
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := (await reader.readline()).decode().strip():
            if line == "quit":
                break
            calls = [
                asyncio.create_task(
                    s.permission_check("Bash", {"command": f"make part-{n}", "cwd": "/repo"}, ask=True)
                )
                for s in people
                for n in range(per_session)
            ]
            print("raised", flush=True)
            verdicts = await asyncio.gather(*calls)
            last = time.monotonic()
            counts: dict[str, int] = {}
            for v in verdicts:
                counts[v.decision] = counts.get(v.decision, 0) + 1
            print("answered", last, json.dumps(counts), flush=True)
        for session in people:
            await session.end()


class Agents:
    def __init__(self, url: str, token: str, sessions: int, per_session: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--agents", url, token, str(sessions), str(per_session)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    async def raise_all(self) -> None:
        self._send("raise")
        said = await asyncio.to_thread(self._read)
        assert said == "raised", said

    async def answered(self) -> tuple[float, dict[str, int]]:
        said = await asyncio.to_thread(self._read)
        word, at, counts = said.split(" ", 2)
        assert word == "answered", said
        return float(at), json.loads(counts)

    def close(self) -> None:
        self._send("quit")
        self.proc.wait(60)


# ------------------------------------------------------------------------------------ the operator


async def tui_rounds(
    url: str, token: str, agents_: Agents, total: int, rounds: int
) -> list[dict[str, float]]:
    """Each round: 50 raised, all marked, ``a`` then ``y``: timed from the ``y`` to the painted frame."""
    from tui.app import PreloopApp
    from tui.keypace import QUIET_SECONDS
    from tui.screens.confirm import ConfirmScreen
    from tui.screens.inbox import InboxScreen
    from widgets.inbox_view import InboxApprovals

    out: list[dict[str, float]] = []
    loop = asyncio.get_running_loop()
    async with await connect(Settings(url, token, server_kind="local")) as client:
        app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
        calls: list[float] = []
        decide_many = app.steering.decide_many

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return await decide_many(*args, **kwargs)
            finally:
                calls.append(time.monotonic() - started)

        app.steering.decide_many = timed  # type: ignore[method-assign]
        async with app.run_test(size=(160, 60)) as pilot:

            async def until(condition: Callable[[], bool], what: str, step: float = 0.001) -> None:
                deadline = loop.time() + WAIT_S
                while not condition():
                    if loop.time() > deadline:
                        raise SystemExit(f"timed out waiting for {what}")
                    await asyncio.sleep(step)

            await until(lambda: app.inbox.synced, "the first snapshot", 0.05)
            await pilot.press("i")
            await until(lambda: isinstance(app.screen, InboxScreen), "the inbox screen", 0.05)
            screen = app.screen
            assert isinstance(screen, InboxScreen)
            table = screen.query_one(InboxApprovals)
            redraws: list[float] = []
            refresh_view = screen.refresh_view

            def counted() -> None:
                started = time.monotonic()
                try:
                    refresh_view()
                finally:
                    redraws.append(time.monotonic() - started)

            screen.refresh_view = counted  # type: ignore[method-assign]
            for _ in range(rounds):
                await agents_.raise_all()
                await until(lambda: table.row_count == total, f"{total} rows", 0.01)
                await asyncio.sleep(0.6)  # the inbox's own half second, as a person reads it
                before = screen.last_batch
                await pilot.press("M")
                await until(lambda: len(screen.marked) == total, "all marked", 0.01)
                await pilot.press("a")
                await until(lambda: isinstance(app.screen, ConfirmScreen), "the dialog", 0.01)
                await asyncio.sleep(0.6)  # the dialog ignores its yes for half a second
                redraws.clear()
                t0 = time.monotonic()
                await pilot.press("y")
                await until(
                    lambda b=before: screen.last_batch is not b and table.row_count == 0, "the last row to go"
                )
                noticed = time.monotonic()
                painted: asyncio.Future[float] = loop.create_future()
                app.call_after_refresh(partial(_stamp, painted))
                at = await asyncio.wait_for(painted, WAIT_S)
                answered, counts = await agents_.answered()
                assert counts == {"allow": total}, counts
                batch = screen.last_batch
                assert batch is not None and len(batch.decided) == total
                out.append(
                    {
                        "painted": (at - t0) * 1000,
                        "noticed": (noticed - t0) * 1000,
                        "quiet": QUIET_SECONDS * 1000,
                        "call": calls[-1] * 1000,
                        "agents": (answered - t0) * 1000,
                        "redraws": float(len(redraws)),
                        "redraw_ms": sum(redraws) * 1000,
                    }
                )
                await asyncio.sleep(0.3)
    return out


async def wire_rounds(
    url: str, token: str, agents_: Agents, total: int, rounds: int
) -> tuple[list[float], list[float]]:
    """The same 50 through ``Steering`` only: one batch, then (for comparison) one request each."""
    batch_ms: list[float] = []
    single_ms: list[float] = []
    async with await connect(Settings(url, token, server_kind="local")) as client:

        async def pending() -> list[str]:
            deadline = time.monotonic() + WAIT_S
            while True:
                items = (await client.list_approvals(status="pending", limit=500)).items
                if len(items) == total:
                    return [a.id for a in items]
                if time.monotonic() > deadline:
                    raise SystemExit("the approvals never all showed")
                await asyncio.sleep(0.02)

        for _ in range(rounds):
            await agents_.raise_all()
            ids = await pending()
            t0 = time.monotonic()
            batch = await Steering(client).decide_many(ids, "approve")
            batch_ms.append((time.monotonic() - t0) * 1000)
            assert batch.all_decided
            await agents_.answered()

            await agents_.raise_all()
            ids = await pending()
            steering = Steering(client)
            t0 = time.monotonic()
            for approval_id in ids:
                await steering.decide(approval_id, "approve")
            single_ms.append((time.monotonic() - t0) * 1000)
            await agents_.answered()
    return batch_ms, single_ms


def _stamp(future: asyncio.Future[float]) -> None:
    if not future.done():
        future.set_result(time.monotonic())


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):7.1f} ms   max {max(values):7.1f} ms"


async def main(args: argparse.Namespace) -> None:
    total = args.sessions * args.per_session
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp)) as server:
        agents_ = Agents(server.url, server.token, args.sessions, args.per_session)
        try:
            print(
                f"{total} approvals across {args.sessions} sessions, decided in one go; "
                f"{args.rounds} rounds; load {load()}"
            )
            rows = await tui_rounds(server.url, server.token, agents_, total, args.rounds)
            print("\nTUI, from the y key press (the dialog's yes for all of them):")
            for i, r in enumerate(rows, 1):
                print(
                    f"  round {i}: last row updated and painted {r['painted']:7.1f} ms "
                    f"(seen {r['noticed']:7.1f}; of it the key's quiet window {r['quiet']:.0f}, "
                    f"the batch call {r['call']:6.1f}); agents all answered {r['agents']:7.1f} ms; "
                    f"{r['redraws']:.0f} inbox redraws took {r['redraw_ms']:6.1f} ms"
                )
            print(f"  key press -> last row painted: {summary([r['painted'] for r in rows])}")
            print(f"  of which after the quiet window: {summary([r['painted'] - r['quiet'] for r in rows])}")
            print(f"  the batch call alone:           {summary([r['call'] for r in rows])}")
            batch_ms, single_ms = await wire_rounds(server.url, server.token, agents_, total, args.rounds)
            print(f"\nWire only (Steering), {total} approvals:")
            print(f"  one batch (decide-batch):      {summary(batch_ms)}")
            print(f"  one request each (decide):     {summary(single_ms)}")
            print(f"load {load()}")
        finally:
            agents_.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--agents":
        url, token, sessions, per = sys.argv[2:6]
        asyncio.run(agents(url, token, int(sessions), int(per)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--per-session", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
