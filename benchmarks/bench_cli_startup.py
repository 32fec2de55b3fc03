"""CLI start-up: wall time of real ``preloop`` processes, against a local server on a temporary database.

Prints the median and max over N runs of: ``preloop --help`` (parsing only), ``preloop sessions list -o id``
(one HTTP round trip, 20 sessions on the server) and ``preloop notes list --session SHORT_ID --json`` (two:
the short id is looked up first), beside a bare ``python -c pass``, ``python -c "import textual.app"`` (the
full-screen app, which scripted commands must not pay for) and the floor of the one HTTP path,
``python -c "import httpx, client.models"``: every command sends its requests with httpx and reads the
answers into those models, as the app does. Target (issue 26): ``preloop sessions list -o id`` at most
1.25x that floor, median against median of the same interleaved runs; the ratio is printed last.

``import httpx`` also imports httpx's own command line (click, pygments, rich) wherever click is installed
(here, and with the ``server`` extra); ``preloop`` marks it absent before httpx loads (``cli.main``), the
floor above does not. So the same floor without it is timed too, and the ratio to it printed beside:
what the command costs beyond httpx and the models themselves.

The cases take turns run by run, so a burst of load on a shared machine hits them all alike, and each
runs once untimed first: that writes its bytecode cache as an installed package has one (even when
``PYTHONDONTWRITEBYTECODE`` is set here), so the figures are start-up, not compilation.

    .venv/bin/python benchmarks/bench_cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.embedded import EmbeddedServer  # noqa: E402
from server.harness_client import HarnessClient  # noqa: E402

PRELOOP = str(Path(sys.executable).parent / "preloop")


FLOOR = "python -c 'import httpx, client.models'"
BARE_FLOOR = "the same without httpx's command line"
SKIP_HTTPX_CLI = "import sys; sys.modules['httpx._main'] = None; "
TARGET = "preloop sessions list -o id"
TARGET_RATIO = 1.25


def _once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, check=False)
    took = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for name in ("STATE", "CONFIG", "DATA"):
            env[f"PRELOOP_{name}_DIR"] = os.environ[f"PRELOOP_{name}_DIR"] = str(Path(tmp) / name.lower())
        server = EmbeddedServer(db_path=Path(tmp) / "cp.sqlite3")
        server.start()
        try:

            async def seed() -> str:
                async with HarnessClient(server.url, server.token) as harness:
                    ids = [
                        (await harness.start_session(agent_name=f"agent{i}")).session_id for i in range(20)
                    ]
                return ids[0]

            first = asyncio.run(seed())
            sessions = [PRELOOP, "sessions", "list", "-o", "id"]
            notes = [PRELOOP, "notes", "list", "--session", first[:8], "--json"]
            cases: list[tuple[str, list[str]]] = [
                ("python -c pass", [sys.executable, "-c", "pass"]),
                ("python -c 'import textual.app'", [sys.executable, "-c", "import textual.app"]),
                (FLOOR, [sys.executable, "-c", "import httpx, client.models"]),
                (BARE_FLOOR, [sys.executable, "-c", SKIP_HTTPX_CLI + "import httpx, client.models"]),
                ("preloop --help", [PRELOOP, "--help"]),
                ("preloop sessions list -o id", sessions),
                ("preloop notes list --json", notes),
            ]
            for _, argv in cases:
                _once(argv, env)  # untimed: writes the bytecode cache
            times: dict[str, list[float]] = {label: [] for label, _ in cases}
            for _ in range(opts.runs):
                for label, argv in cases:
                    times[label].append(_once(argv, env))
            load = os.getloadavg()[0]
            print(f"CLI start-up, {opts.runs} runs each (wall time of a whole process), load {load:.2f}")
            medians = {label: statistics.median(times[label]) for label, _ in cases}
            for label, _ in cases:
                print(f"  {label:<42} median {medians[label]:7.1f} ms   max {max(times[label]):7.1f} ms")
            ratio = medians[TARGET] / medians[FLOOR]
            print(
                f"  {TARGET} / the floor: {medians[TARGET]:.1f} / {medians[FLOOR]:.1f} ms = {ratio:.2f}x"
                f"   target <= {TARGET_RATIO:.2f}x"
            )
            bare = medians[TARGET] / medians[BARE_FLOOR]
            print(f"  {TARGET} / the floor without httpx's command line: {bare:.2f}x")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
