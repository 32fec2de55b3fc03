"""What hostile clients can make the server hold in memory, measured on a real server process.

The server runs as ``preloop serve`` in its own process (``benchmarks/serverproc.py``, which the memory
benchmark uses too) and its resident memory is read from ``/proc``: the peak between two readings is what
an attack costs, however briefly it is held.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.serverproc import Memory, ServerProcess, send_huge_header, stalled_reader

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """``preloop serve`` of this checkout in its own process, on a fresh database."""
    with ServerProcess(tmp_path) as served:
        yield served


def test_a_64_mib_header_is_refused_before_it_is_buffered(server: ServerProcess) -> None:
    assert send_huge_header(server.port, 100, token=server.token) == 200  # warm: the path works
    before = server.memory()
    status = send_huge_header(server.port, 64 * 1024 * 1024)
    after = server.memory()
    assert status in (400, 431)
    # httptools buffered all of it: +128 MiB at the peak, +64 MiB still resident afterwards
    assert after.peak_mib - before.rss_mib < 8, (before, after)
    assert send_huge_header(server.port, 100, token=server.token) == 200  # and it still serves


def test_stalled_readers_hold_a_bounded_amount_and_release_it_when_they_hang_up(
    server: ServerProcess,
) -> None:
    """Two readers follow a session and never read while 5,000 events of 16 KiB (78 MiB) are published.
    With a queue bounded by count (10,000 events) the server held all of them (+80 MiB), and still did
    after the readers hung up; bounded in bytes, each reader costs at most its bound (8 MiB; the same
    events are shared), and the stream ends so the reader resumes by Last-Event-ID."""
    import asyncio

    from server.harness_client import HarnessClient

    async def flood() -> tuple[Memory, Memory, Memory]:
        async with HarnessClient(server.url, server.token) as harness:
            agent = await harness.start_session(agent_name="flood")
            readers = [stalled_reader(server.port, server.token, agent.session_id) for _ in range(2)]
            await asyncio.sleep(0.5)
            before = server.memory()
            text = "x" * (16 * 1024 - 100)
            for _ in range(50):
                await agent.emit(*({"type": "model.delta", "iteration": 1, "text": text} for _ in range(100)))
            during = server.memory()
            for reader in readers:
                reader.close()
            await asyncio.sleep(1.0)
            return before, during, server.memory()

    before, during, after = asyncio.run(flood())
    # storing the events costs ~10 MiB with no reader at all (SQLite's caches, the WAL index)
    assert during.peak_mib - before.rss_mib < 40, (before, during)
    assert after.rss_mib - before.rss_mib < 40, (before, after)
