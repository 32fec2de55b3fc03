"""The digest's cost on a long session: requests, bytes and time of ``preloop sessions digest``.

A local server (its own process, so its CPU is not counted as the client's) stores one session of N
events (100,000 by default: runs of streamed narration, tool calls and answers, as ``bench_attach_catchup``
stores them), then, after a pause, a "last half hour" of activity: a few tool calls (one failing), a note
the agent reads, an approval declined, a final answer. In this process the digest is read the way the
command reads it (``client.history.read_digest`` over a real backend on loopback), three ways:

* ``--since <time>``: the events stored since the pause (``?since=``: one index seek on the server);
* ``--since-last``: after a mark's place (``?after=<seq>``), the mark put just before the recent activity;
* the whole history, as a client without the extension would have to read it (``export`` reads this).

Printed per way: HTTP requests, bytes received (headers and bodies), events read, and wall time (best and
median of ``--runs``). The digest's own lines are printed once, so the figures can be checked against
what they buy.

    .venv/bin/python benchmarks/bench_digest.py [--events 100000] [--runs 5]
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
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_attach_catchup import BATCH, agent_events  # noqa: E402

PAUSE = 1.0
"""Seconds between the long history and the recent activity (what ``--since`` cuts at)."""


def serve(db: Path, count: int) -> None:
    """Child process: a server with one session of ``count`` events, a pause, then recent activity; say
    where (and where the pause was), then serve until stdin closes."""
    from client.backends import connect
    from client.config import Settings
    from server.embedded import EmbeddedServer
    from server.harness_client import HarnessClient

    server = EmbeddedServer(db_path=db)
    server.start()

    async def run() -> None:
        async with (
            HarnessClient(server.url, server.token) as harness,
            await connect(Settings(server.url, server.token)) as client,
        ):
            agent = await harness.start_session(agent_name="long-runner", title="100k events")
            pending: list[dict[str, Any]] = []
            for event in agent_events(count - 1):
                pending.append(event)
                if len(pending) == BATCH:
                    await agent.emit(*pending)
                    pending = []
            if pending:
                await agent.emit(*pending)
            await asyncio.sleep(PAUSE)
            cut = datetime.now(UTC)
            await asyncio.sleep(0.01)
            history = await client.history(agent.session_id, since=cut)
            assert not history, "events after the cut before the recent activity"
            marked = await client.history(agent.session_id)
            mark = marked[-1]
            await agent.run_started("the last half hour")
            await agent.narrate(1, ["Checking the parser once more."])
            ok = await agent.tool_started("Bash", {"command": "pytest -q"}, iteration=1)
            await agent.tool_completed(ok, "Bash", duration_ms=900, result_summary="41 passed")
            bad = await agent.tool_started("Bash", {"command": "make lint"}, iteration=1)
            await agent.tool_completed(bad, "Bash", status="error", result_summary="2 errors")
            await client.send_note("fix the lint errors first", session_id=agent.session_id)
            await agent.claim_notes()
            await agent.narrate(2, ["Fixing the lint errors first."])
            check = asyncio.create_task(agent.permission_check("Bash", {"command": "git push -f"}))
            for _ in range(1000):  # the check becomes a pending approval within milliseconds
                waiting = (await client.list_approvals(session_id=agent.session_id)).items
                if waiting:
                    break
                await asyncio.sleep(0.02)
            [approval] = waiting
            await client.decline(approval.id, "no force pushes")
            await check
            await agent.final_answer(3, "Lint fixed; pushed without force.")
            info = {
                "url": server.url,
                "token": server.token,
                "session": agent.session_id,
                "cut": cut.isoformat(),
                "mark": {"seq": mark.seq, "at": mark.at.isoformat()},
            }
            print(json.dumps(info), flush=True)
            await asyncio.to_thread(sys.stdin.read)

    try:
        asyncio.run(run())
    finally:
        server.stop()


class Counting(httpx.AsyncBaseTransport):
    """An httpx transport that counts requests and the bytes received (status line aside: headers and
    body as they came), around the real one."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0
        self.received = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        response = await self.inner.handle_async_request(request)
        self.received += sum(len(k) + len(v) + 4 for k, v in response.headers.raw)
        counter = self

        class Counted(httpx.AsyncByteStream):
            async def __aiter__(self) -> Any:
                async for chunk in response.stream:  # type: ignore[union-attr]
                    counter.received += len(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await response.aclose()

        return httpx.Response(
            response.status_code, headers=response.headers, stream=Counted(), extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


async def measure(url: str, token: str, read: Callable[[Any], Awaitable[Any]]) -> tuple[float, int, int, Any]:
    """(ms, requests, bytes, result) of one read on a fresh connection."""
    from client.backends import connect
    from client.config import Settings

    transport = Counting()
    async with await connect(Settings(url, token), server_kind="local", transport=transport) as backend:
        start = time.perf_counter()
        result = await read(backend)
        ms = (time.perf_counter() - start) * 1000
    return ms, transport.requests, transport.received, result


def main() -> None:
    """Start the server, read the digest the three ways, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from client.digest import Since, digest_lines
    from client.history import read_digest
    from client.timeline import Place, Timeline

    with tempfile.TemporaryDirectory() as tmp:
        env_dirs = {f"PRELOOP_{n}_DIR": str(Path(tmp) / n.lower()) for n in ("STATE", "CONFIG", "DATA")}
        os.environ.update(env_dirs)
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(Path(tmp) / "db.sqlite3"), str(args.events)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ},
        )
        assert child.stdout is not None and child.stdin is not None
        print(f"storing a session of {args.events:,} events, then recent activity ...", flush=True)
        info = json.loads(child.stdout.readline())
        try:
            url, token, sid = info["url"], info["token"], info["session"]
            cut = datetime.fromisoformat(info["cut"])
            mark = Place(
                str(info["mark"]["seq"]), datetime.fromisoformat(info["mark"]["at"]), info["mark"]["seq"]
            )
            now = datetime.now(UTC)

            async def by_time(backend: Any) -> Any:
                return await read_digest(backend, sid, Since(cut), now)

            async def by_mark(backend: Any) -> Any:
                return await read_digest(backend, sid, Since.mark(mark, cut), now)

            async def whole(backend: Any) -> Any:
                timeline = Timeline(max_entries=1_000_000, max_chars=500_000_000)
                events = await backend.history(sid)
                timeline.apply_many(events)
                return len(events)

            ways: list[tuple[str, Callable[[Any], Awaitable[Any]]]] = [
                ("--since <time> (?since=)", by_time),
                ("--since-last (?after=<seq>)", by_mark),
                ("the whole history (no filter)", whole),
            ]
            shown = False
            print(f"\nsession {sid[:8]}: {info['mark']['seq']:,} events before the cut, then the recent ones")
            print(f"{'read':32} {'requests':>8} {'bytes':>12} {'best ms':>9} {'median ms':>10}")
            for label, read in ways:
                times: list[float] = []
                requests = received = 0
                result: Any = None
                for _ in range(args.runs):
                    ms, requests, received, result = asyncio.run(measure(url, token, read))
                    times.append(ms)
                best, median = min(times), statistics.median(times)
                print(f"{label:32} {requests:>8} {received:>12,} {best:>9.1f} {median:>10.1f}")
                if not shown and not isinstance(result, int):
                    shown = True
                    lines = digest_lines(result)
            print("\nthe digest read by --since:")
            for line in lines:
                print(f"  {line}")
        finally:
            child.stdin.close()
            child.wait(timeout=60)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
