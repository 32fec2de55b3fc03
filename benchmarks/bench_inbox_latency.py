"""Inbox latency: an approval raised on any of 50 live sessions → shown in the one attention inbox.

Three processes on loopback, as in real use: the control plane (``EmbeddedServer`` on 127.0.0.1, its own
process), the agents (50 sessions started through the harness API, each reporting a small event every
``--chatter`` seconds, its own process), and the operator's client (this process). For each sample the
agents process raises an approval the way a coding agent's hook does (a blocking ``permission_check``
with ``ask``) on a session picked at random, and notes ``time.monotonic()`` just before the harness call;
this process notes the moment the approval shows, on the same clock (``CLOCK_MONOTONIC`` is one clock for
every process of the machine). Printed, with median / p95 / p99 / max and the load average beside them:

1. pushed, client: the local server's attention stream (``Backend.watch_attention``) feeding a
   ``client.inbox.Inbox``; the time until ``Inbox.apply`` reports the approval as added;
2. pushed, TUI: the real ``PreloopApp`` headless (``run_test``) with the inbox screen open; the time until
   the frame that shows the approval's row has been painted (noticed by a 1 ms poll of the app's inbox
   table, then ``call_after_refresh``), and, beside it, when the 1 ms poll first saw the row;
3. polled: the same server seen by a client that does not use the push stream. The knob is the supported
   one: ``connect(Settings(..., server_kind="preloop"))``, whose ``watch_attention`` polls the REST
   approvals list every ``--poll-interval`` seconds (``client.backends.attention.poll_attention``, as for a
   Preloop server). The next approval is raised a random part of an interval after the previous one
   showed, so the samples fall anywhere in the poll cycle.

Every measured approval is approved by the operator (a REST call from this process) as soon as it shows,
so the agent's blocked call returns; the pushed passes wait until the inbox drops it again (the TUI pass
until that frame is painted too) and 20-80 ms more before the next sample. Beside them, ``--backlog``
approvals (10) are raised at the start and left pending for the whole run, so the inbox is never empty
(a realistic on-call queue rather than a pile-up); they are cancelled when the sessions end. The agents
process prints how every approval ended.

Targets (issue 11): pushed ≤ 100 ms on the local server; polled ≤ one poll interval.

    .venv/bin/python benchmarks/bench_inbox_latency.py [--sessions 50] [--approvals 100] [--polled 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.alerts import AlertSettings  # noqa: E402
from client.backends import connect  # noqa: E402
from client.backends.base import Backend, ServerKind  # noqa: E402
from client.config import Settings  # noqa: E402
from client.inbox import ApprovalAdded, Inbox, closing_feed  # noqa: E402
from client.models import Approval, AttentionSnapshot  # noqa: E402
from client.status import StreamStatus  # noqa: E402

PUSHED_TARGET_MS = 100.0
PROBE_KEY = "bench_probe"
"""The tool-argument key that carries a sample's marker, so both ends know which approval is which."""
PUSHED_WAIT_S = 10.0


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def marker_of(approval: Approval) -> str | None:
    """The sample's marker, if this approval is one of ours."""
    value = approval.tool_args.get(PROBE_KEY)
    return value if isinstance(value, str) else None


def load() -> str:
    """The 1/5/15-minute load averages, for reading the figures against."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------------------------ the server process


def serve(db: Path) -> None:
    """Child process: the control plane on 127.0.0.1; prints ``url token``, serves until stdin closes."""
    from server.embedded import EmbeddedServer

    server = EmbeddedServer(db, write_local_file=False, permission_timeout_seconds=3600)
    server.start()
    print(server.url, server.token, flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()


# ------------------------------------------------------------------------------------ the agents process


async def agents(url: str, token: str, sessions: int, backlog: int, chatter: float, seed: int) -> None:
    """Child process: ``sessions`` agent sessions over the harness API. Reads ``raise INDEX MARKER`` lines
    and answers ``raised MARKER T0`` (T0 taken just before the harness call); ``quit`` ends every session
    and answers how the approvals ended."""
    from server.harness_client import HarnessClient, HarnessSession

    rng = random.Random(seed)
    verdicts: Counter[str] = Counter()
    asks: set[asyncio.Task[None]] = set()
    talkers: list[asyncio.Task[None]] = []

    async def ask(session: HarnessSession, marker: str) -> None:
        try:
            verdict = await session.permission_check(
                "Bash",
                {"command": "make deploy", PROBE_KEY: marker},
                ask=True,
                reasoning="ship the fix",
                timeout_seconds=3600,
            )
            kind = "backlog" if marker.startswith("backlog") else "measured"
            outcome = "expired" if verdict.timed_out else verdict.decision
            verdicts[f"{kind} {outcome}"] += 1
        except Exception as exc:
            verdicts[f"error {type(exc).__name__}"] += 1

    def start_ask(session: HarnessSession, marker: str) -> None:
        task = asyncio.create_task(ask(session, marker))
        asks.add(task)
        task.add_done_callback(asks.discard)

    async def talk(session: HarnessSession) -> None:
        """A live agent: one small event every ``chatter`` seconds (its phase random)."""
        await asyncio.sleep(rng.uniform(0, chatter))
        while True:
            try:
                await session.delta("still working on it ", iteration=2)
            except Exception:
                return
            await asyncio.sleep(chatter)

    async with HarnessClient(url, token) as harness:
        live: list[HarnessSession] = []
        for i in range(sessions):
            session = await harness.start_session(agent_name=f"agent-{i:02d}", title=f"task {i}")
            await session.run_started(f"task {i}")
            await session.narrate(1, ["Reading the failing test first."])
            live.append(session)
        for k in range(backlog):
            start_ask(rng.choice(live), f"backlog-{k}")
        if chatter > 0:
            talkers = [asyncio.create_task(talk(s)) for s in live]
        loop = asyncio.get_running_loop()
        commands = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
        print("ready", flush=True)
        while line := (await commands.readline()).decode():
            words = line.split()
            if words[0] == "raise":
                session, marker = live[int(words[1])], words[2]
                t0 = time.monotonic()
                start_ask(session, marker)
                print(f"raised {marker} {t0!r}", flush=True)
            elif words[0] == "quit":
                break
        for talker in talkers:
            talker.cancel()
        await asyncio.gather(*talkers, return_exceptions=True)
        await asyncio.gather(*(s.end("bench over") for s in live), return_exceptions=True)
        if asks:
            await asyncio.wait(asks, timeout=30)
        print(json.dumps(dict(verdicts)), flush=True)


# ------------------------------------------------------------------------------------ this process


class Agents:
    """This process's end of the agents process's pipes."""

    def __init__(self, proc: asyncio.subprocess.Process, sessions: int, seed: int) -> None:
        self.proc = proc
        self.sessions = sessions
        self.rng = random.Random(seed)
        self.count = 0

    async def _line(self, seconds: float = 60.0) -> str:
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), seconds)).decode()
        if not line:
            raise SystemExit("the agents process stopped")
        return line.strip()

    async def ready(self) -> None:
        """Wait until every session is started and the backlog raised."""
        if await self._line(120) != "ready":
            raise SystemExit("the agents process did not start")

    async def raise_one(self) -> tuple[str, float]:
        """Raise an approval on a random session; returns its marker and the agent's start time."""
        assert self.proc.stdin is not None
        self.count += 1
        marker = f"m{self.count}"
        self.proc.stdin.write(f"raise {self.rng.randrange(self.sessions)} {marker}\n".encode())
        await self.proc.stdin.drain()
        answer = (await self._line()).split()
        if answer[:2] != ["raised", marker]:
            raise SystemExit(f"unexpected answer from the agents process: {answer}")
        return marker, float(answer[2])

    async def quit(self) -> dict[str, int]:
        """End every session; how the approvals ended."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"quit\n")
        await self.proc.stdin.drain()
        verdicts: dict[str, int] = json.loads(await self._line())
        await asyncio.wait_for(self.proc.wait(), 30)
        return verdicts


class Watched:
    """One ``Inbox`` fed by a backend's attention feed, noting when each sample's approval first shows."""

    def __init__(
        self,
        marker: Callable[[Approval], str | None] = marker_of,
        notes_window: timedelta = timedelta(hours=6),
    ) -> None:
        self.inbox = Inbox(notes_window=notes_window)
        self.marker = marker  # which sample an approval is (None: not one of ours)
        self.seen: dict[str, tuple[float, Approval]] = {}
        self.changed = asyncio.Event()

    def gone(self, approval_id: str) -> bool:
        """The approval is no longer pending in the inbox."""
        return self.inbox.get(approval_id) is None

    async def run(self, client: Backend, poll_interval: float) -> None:
        """Read the feed until cancelled (as the app's ``watch_inbox`` does)."""
        feed = client.watch_attention(notes_window=self.inbox.notes_window, poll_interval=poll_interval)
        async with closing_feed(feed):
            async for item in feed:
                if isinstance(item, AttentionSnapshot):
                    changes = self.inbox.reset(item)
                elif isinstance(item, StreamStatus):
                    continue
                else:
                    changes = self.inbox.apply(item)
                now = time.monotonic()
                for change in changes:
                    if isinstance(change, ApprovalAdded) and (marker := self.marker(change.approval)):
                        self.seen.setdefault(marker, (now, change.approval))
                self.changed.set()

    async def until(self, condition: Callable[[], bool], seconds: float, what: str) -> None:
        """Wait (at most ``seconds``) for the feed to make ``condition`` true."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while not condition():
            self.changed.clear()
            left = deadline - loop.time()
            if left <= 0:
                raise SystemExit(f"timed out after {seconds:g} s waiting for {what}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)


async def feed_pass(
    url: str,
    token: str,
    agents_: Agents,
    *,
    kind: ServerKind,
    samples: int,
    warmup: int,
    poll_interval: float,
) -> list[float]:
    """Raise approvals one at a time and time each until the client's inbox has it (ms)."""
    pushed = kind == "local"
    wait = PUSHED_WAIT_S if pushed else 3 * poll_interval + 10
    out: list[float] = []
    rng = random.Random(samples)
    async with await connect(Settings(url, token, server_kind=kind)) as client:
        watched = Watched()
        reader = asyncio.create_task(watched.run(client, poll_interval))
        try:
            await watched.until(lambda: watched.inbox.synced, 30, "the first snapshot")
            for i in range(warmup + samples):
                marker, t0 = await agents_.raise_one()
                await watched.until(partial(watched.seen.__contains__, marker), wait, f"approval {marker}")
                at, approval = watched.seen[marker]
                if i >= warmup:
                    out.append((at - t0) * 1000)
                await client.approve(approval.id, "go ahead")
                if pushed:
                    await watched.until(partial(watched.gone, approval.id), wait, "the approval to leave")
                    await asyncio.sleep(rng.uniform(0.02, 0.08))
                else:  # land anywhere in the next poll cycle
                    await asyncio.sleep(rng.uniform(0, poll_interval))
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    return out


async def tui_pass(
    url: str, token: str, agents_: Agents, *, samples: int, warmup: int
) -> list[tuple[float, float]]:
    """The same, to the painted row of the real inbox screen: (noticed, painted) in ms per sample."""
    from tui.app import PreloopApp
    from tui.screens.inbox import InboxScreen
    from widgets.inbox_view import InboxApprovals

    out: list[tuple[float, float]] = []
    rng = random.Random(samples + 1)
    loop = asyncio.get_running_loop()
    async with await connect(Settings(url, token, server_kind="local")) as client:
        app = PreloopApp(client, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
        async with app.run_test(size=(160, 48)) as pilot:

            async def until(condition: Callable[[], bool], what: str, step: float = 0.001) -> None:
                deadline = loop.time() + PUSHED_WAIT_S
                while not condition():
                    if loop.time() > deadline:
                        raise SystemExit(f"timed out waiting for {what}")
                    await asyncio.sleep(step)

            await until(lambda: app.inbox.synced, "the first snapshot", 0.05)
            await pilot.press("i")
            await until(lambda: isinstance(app.screen, InboxScreen), "the inbox screen", 0.05)
            table = app.screen.query_one(InboxApprovals)

            def row_of(marker: str) -> str | None:
                """The approval id of the marker's row in the inbox table, once it has one."""
                ids = {str(key.value) for key in table.rows}
                for approval in app.inbox.approvals:
                    if marker_of(approval) == marker and approval.id in ids:
                        return approval.id
                return None

            def has_row(marker: str) -> bool:
                return row_of(marker) is not None

            def row_gone(approval_id: str) -> bool:
                return approval_id not in {str(key.value) for key in table.rows}

            async def painted() -> float:
                """When the frame being prepared now has been painted (the screen has nothing left dirty)."""
                future: asyncio.Future[float] = loop.create_future()

                def stamp() -> None:
                    if not future.done():
                        future.set_result(time.monotonic())

                app.call_after_refresh(stamp)
                return await asyncio.wait_for(future, PUSHED_WAIT_S)

            for i in range(warmup + samples):
                marker, t0 = await agents_.raise_one()
                await until(partial(has_row, marker), f"the row of {marker}")
                noticed = time.monotonic()
                approval_id = row_of(marker)
                assert approval_id is not None
                at = await painted()
                if i >= warmup:
                    out.append(((noticed - t0) * 1000, (at - t0) * 1000))
                await client.approve(approval_id, "go ahead")
                await until(partial(row_gone, approval_id), "the row to leave")
                await painted()  # that frame painted too: the next sample starts on an idle screen
                await asyncio.sleep(rng.uniform(0.02, 0.08))
    return out


def report(label: str, values: list[float], target: float, extra: str = "") -> None:
    """One line: median / p95 / p99 / max, how many within the target, the load now."""
    within = sum(v <= target for v in values)
    median = statistics.median(values)
    print(
        f"  {label:<34} n={len(values):<4} median {median:7.1f}  p95 {pct(values, 0.95):7.1f}"
        f"  p99 {pct(values, 0.99):7.1f}  max {max(values):7.1f} ms   target <= {target:.0f} ms: "
        f"{within}/{len(values)} within{extra}   (load {load()})"
    )


async def measure(url: str, token: str, env: dict[str, str], opts: argparse.Namespace) -> None:
    """Start the agents, run the three passes, end the agents; print as it goes."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--agents",
        json.dumps({"url": url, "token": token}),
        "--sessions",
        str(opts.sessions),
        "--backlog",
        str(opts.backlog),
        "--chatter",
        str(opts.chatter),
        "--seed",
        str(opts.seed),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    agents_ = Agents(proc, opts.sessions, opts.seed)
    try:
        started = time.monotonic()
        await agents_.ready()
        talk = f"each reporting an event every {opts.chatter:g} s" if opts.chatter > 0 else "silent"
        took = time.monotonic() - started
        print(
            f"Inbox latency: {opts.sessions} live sessions ({talk}; started in {took:.1f} s),"
            f" {opts.backlog} approvals left pending, one inbox; load {load()}"
        )
        print(f"  clock: {time.get_clock_info('monotonic').implementation}, shared by the three processes")
        pushed = await feed_pass(
            url, token, agents_, kind="local", samples=opts.approvals, warmup=opts.warmup, poll_interval=3.0
        )
        report("pushed, client (SSE -> Inbox)", pushed, PUSHED_TARGET_MS)
        tui = await tui_pass(url, token, agents_, samples=opts.approvals, warmup=opts.warmup)
        noticed = statistics.median(n for n, _ in tui)
        report("pushed, TUI (inbox row painted)", [p for _, p in tui], PUSHED_TARGET_MS)
        print(f"  {'':<34} (row first seen by the 1 ms poll: median {noticed:.1f} ms)")
        polled = await feed_pass(
            url,
            token,
            agents_,
            kind="preloop",
            samples=opts.polled,
            warmup=0,
            poll_interval=opts.poll_interval,
        )
        report(
            f"polled every {opts.poll_interval:g} s (client)",
            polled,
            opts.poll_interval * 1000,
            f" (min {min(polled):.0f} ms)",
        )
    finally:
        if proc.returncode is None:
            try:
                verdicts = await agents_.quit()
                print("  approvals: " + ", ".join(f"{n} {what}" for what, n in sorted(verdicts.items())))
            except (SystemExit, TimeoutError, ConnectionError):
                proc.kill()
                await proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--approvals", type=int, default=100, help="samples per pushed pass")
    parser.add_argument("--polled", type=int, default=10, help="samples of the polled pass")
    parser.add_argument("--poll-interval", type=float, default=3.0, help="the polled client's interval (s)")
    parser.add_argument("--backlog", type=int, default=10, help="approvals left pending throughout")
    parser.add_argument(
        "--chatter", type=float, default=2.0, help="s between one session's events (0: silent)"
    )
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured samples before each pushed pass")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the server process
    parser.add_argument("--agents", help=argparse.SUPPRESS)  # the agents process
    opts = parser.parse_args()
    if opts.serve is not None:
        serve(opts.serve)
        return
    if opts.agents is not None:
        info = json.loads(opts.agents)
        asyncio.run(agents(info["url"], info["token"], opts.sessions, opts.backlog, opts.chatter, opts.seed))
        return
    with tempfile.TemporaryDirectory(prefix="bench-inbox-") as tmp:
        env = {**os.environ}
        for name in ("STATE", "CONFIG", "DATA"):
            env[f"PRELOOP_{name}_DIR"] = os.environ[f"PRELOOP_{name}_DIR"] = str(Path(tmp) / name.lower())
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(Path(tmp) / "cp.sqlite3")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert server.stdin is not None and server.stdout is not None
        try:
            url, token = server.stdout.readline().split()
            asyncio.run(measure(url, token, env, opts))
        finally:
            server.stdin.close()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


if __name__ == "__main__":
    main()
