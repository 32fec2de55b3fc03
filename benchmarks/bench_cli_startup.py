"""CLI start-up: wall time of real ``preloop`` processes, against a local server on a temporary database.

Prints the median and max over N runs of: ``preloop --help`` (parsing only), ``preloop sessions list -o id``
and ``preloop notes list --json`` (one HTTP round trip each, 20 sessions on the server), beside a bare
``python -c pass`` and ``python -c "import textual.app"`` for scale: scripted commands must not pay for
the full-screen app.

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


def _time(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=env, check=False)
        times.append((time.perf_counter() - start) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ}
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
            cases = [
                ("python -c pass", [sys.executable, "-c", "pass"]),
                ("python -c 'import textual.app'", [sys.executable, "-c", "import textual.app"]),
                ("preloop --help", [PRELOOP, "--help"]),
                ("preloop sessions list -o id", [PRELOOP, "sessions", "list", "-o", "id"]),
                ("preloop notes list --json", [PRELOOP, "notes", "list", "--session", first[:8], "--json"]),
            ]
            print(f"CLI start-up, {opts.runs} runs each (wall time of the whole process)")
            for label, argv in cases:
                median, worst = _time(argv, opts.runs, env)
                print(f"  {label:<34} median {median:7.1f} ms   max {worst:7.1f} ms")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
