"""Token refused mid-shift: how soon a follower is live again once a new token can be read, and what the
wait costs the server.

The real control plane (``EmbeddedServer`` on 127.0.0.1, in a thread) and a client made as ``preloop``
makes it (``connect(resolve_settings())``, default backoff: 0.5 s growing to 2.5 s, at most every 5 s
while the token is refused), following one
session whose agent reports an event every 0.2 s. Each round: the operator token is rotated server-side
and the server restarted (every stream drops, the client's token is refused from then on); after a
random 0-``--wait`` seconds the new token is written where the client looks (the local server's file:
what ``preloop login`` does for the keyring), and the time until the follower yields ``Live`` is taken.
Printed: that time (median / p95 / max), how many refused attempts the follower made per minute of
waiting (each is one request to the server), and whether every event the agent reported arrived once.

    .venv/bin/python benchmarks/bench_token_resume.py [--rounds 10] [--wait 12]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.backends import connect  # noqa: E402
from client.config import resolve_settings  # noqa: E402
from client.events import BaseEvent, ModelDelta  # noqa: E402
from client.status import Live, LoginNeeded  # noqa: E402
from server.accounts import hash_token, new_token  # noqa: E402
from server.embedded import EmbeddedServer, write_local_server_file  # noqa: E402
from server.harness_client import HarnessClient  # noqa: E402


def rotate(server: EmbeddedServer, old: str) -> str:
    """Revoke ``old`` and issue a new token for the same user (the tokens table keeps only hashes)."""
    new = new_token("plo_")

    async def swap() -> None:
        async with server.plane.store.write() as tx:
            await tx.execute(
                "UPDATE tokens SET token_hash = ? WHERE token_hash = ?", (hash_token(new), hash_token(old))
            )

    server.call(swap())
    return new


async def main(rounds: int, wait: float) -> None:
    server = EmbeddedServer(
        db_path=Path(os.environ["PRELOOP_DATA_DIR"]) / "cp.sqlite3", keepalive_seconds=1.0
    )
    server.start()
    token = server.token
    backend = await connect(resolve_settings(), server_kind="local")
    resumes: list[float] = []
    attempts_per_minute: list[float] = []
    texts: list[str] = []
    said: list[str] = []
    try:
        async with HarnessClient(server.url, token) as harness:
            agent = await harness.start_session(agent_name="night-shift")
            live = asyncio.Event()
            refused = asyncio.Event()
            waits = 0

            async def follow() -> None:
                nonlocal waits
                async for item in backend.follow(agent.session_id):
                    if isinstance(item, Live):
                        live.set()
                    elif isinstance(item, LoginNeeded):
                        waits += 1
                        refused.set()
                    elif isinstance(item, ModelDelta):
                        texts.append(item.text)
                    elif isinstance(item, BaseEvent):
                        pass

            async def chatter() -> None:
                n = 0
                while True:
                    await agent.narrate(1, [f"{n} "])
                    said.append(f"{n} ")
                    n += 1
                    await asyncio.sleep(0.2)

            follower = asyncio.create_task(follow())
            talker = asyncio.create_task(chatter())
            await asyncio.wait_for(live.wait(), 30)
            for _ in range(rounds):
                token = await asyncio.to_thread(rotate, server, token)
                await asyncio.to_thread(server.stop)
                await asyncio.to_thread(server.start)
                live.clear()
                refused.clear()
                await asyncio.wait_for(refused.wait(), 60)
                waits = 0
                pause = random.uniform(0, wait)
                await asyncio.sleep(pause)
                attempts_per_minute.append(waits / pause * 60 if pause > 1 else float("nan"))
                write_local_server_file(server.url, token)
                start = time.monotonic()
                await asyncio.wait_for(live.wait(), 60)
                resumes.append(time.monotonic() - start)
                print(f"  waited {pause:4.1f} s, {waits} refused attempt(s); live after {resumes[-1]:.2f} s")
            talker.cancel()
            await asyncio.sleep(1.5)  # the last events arrive
            follower.cancel()
            await asyncio.gather(follower, talker, return_exceptions=True)
    finally:
        await backend.aclose()
        server.stop()
    resumes.sort()
    rates = [r for r in attempts_per_minute if r == r]
    print(f"\n{rounds} rounds, default backoff (0.5 s growing to 2.5 s; 5 s while refused)")
    print(
        f"new token → live: median {statistics.median(resumes):.2f} s, "
        f"p95 {resumes[int(0.95 * (len(resumes) - 1))]:.2f} s, max {resumes[-1]:.2f} s"
    )
    if rates:
        print(f"refused attempts while waiting: {statistics.median(rates):.1f} per minute (median)")
    got = "".join(texts)
    print(f"events: {len(said)} reported, all arrived once in order: {got == ''.join(said)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--wait", type=float, default=12.0, help="longest wait before the new token (s)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        for name in ("STATE", "CONFIG", "DATA"):
            os.environ[f"PRELOOP_{name}_DIR"] = str(Path(home) / name.lower())
        os.environ.pop("PRELOOP_TOKEN", None)
        os.environ.pop("PRELOOP_URL", None)
        asyncio.run(main(options.rounds, options.wait))
