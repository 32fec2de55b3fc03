"""A follower whose server crashed is following again soon after the server is back, and waits cheaply
while it is down. The real ``preloop serve`` runs in its own process and is killed with SIGKILL
(``benchmarks/serverproc.py``; ``benchmarks/bench_reconnect.py`` prints the same figures over several
restarts); the follower is the client's own, with its default backoff."""

from __future__ import annotations

from pathlib import Path

from benchmarks.serverproc import ServerProcess, crash_and_restart
from client.streaming.policy import BACKOFF_MAX

DOWN_SECONDS = 6.0
"""Long enough for the backoff to reach its cap (0.5 s doubling to 2.5 s)."""


async def test_a_follower_is_live_within_the_backoff_cap_after_a_crashed_server_is_back(
    tmp_path: Path,
) -> None:
    server = ServerProcess(tmp_path).start()
    try:
        result = await crash_and_restart(server, DOWN_SECONDS)
    finally:
        server.stop()
    # a dead server costs little: the follower never waits longer than the cap, nor much less
    assert result.delays and max(result.delays) <= BACKOFF_MAX, result
    assert result.attempts_while_down <= result.down / (BACKOFF_MAX / 2) + 2, result
    # back within the cap (the 30 s cap let it stay away up to 20 s); the margin is for a loaded machine
    assert result.to_live <= BACKOFF_MAX + 2.0, result
    assert result.to_event <= BACKOFF_MAX + 3.0, result
