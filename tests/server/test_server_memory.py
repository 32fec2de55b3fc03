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

from benchmarks.serverproc import ServerProcess, send_huge_header

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
