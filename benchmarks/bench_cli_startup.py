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

``--checkout PATH`` also times both commands of another checkout of this project (put first on
``PYTHONPATH``; e.g. ``git archive main | tar -x -C PATH``, the tree before a change) in the same runs.

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
    parser.add_argument("--checkout", type=Path, help="also time the commands of this checkout")
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
            cases: list[tuple[str, list[str], dict[str, str]]] = [
                ("python -c pass", [sys.executable, "-c", "pass"], env),
                ("python -c 'import textual.app'", [sys.executable, "-c", "import textual.app"], env),
                (FLOOR, [sys.executable, "-c", "import httpx, client.models"], env),
                (BARE_FLOOR, [sys.executable, "-c", SKIP_HTTPX_CLI + "import httpx, client.models"], env),
                ("preloop --help", [PRELOOP, "--help"], env),
                ("preloop sessions list -o id", sessions, env),
                ("preloop notes list --json", notes, env),
            ]
            if opts.checkout is not None:
                other = {**env, "PYTHONPATH": str(opts.checkout.resolve())}
                name = opts.checkout.name
                cases += [
                    (f"({name}) {TARGET}", sessions, other),
                    (f"({name}) notes list --json", notes, other),
                ]
            for _, argv, case_env in cases:
                _once(argv, case_env)  # untimed: writes the bytecode cache
            times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
            for _ in range(opts.runs):
                for label, argv, case_env in cases:
                    times[label].append(_once(argv, case_env))
            load = os.getloadavg()[0]
            print(f"CLI start-up, {opts.runs} runs each (wall time of a whole process), load {load:.2f}")
            medians = {label: statistics.median(values) for label, values in times.items()}
            for label, values in times.items():
                print(f"  {label:<42} median {medians[label]:7.1f} ms   max {max(values):7.1f} ms")
            for label in [label for label in medians if label.endswith(TARGET)]:
                ratio = medians[label] / medians[FLOOR]
                bare = medians[label] / medians[BARE_FLOOR]
                print(
                    f"  {label} / the floor: {medians[label]:.1f} / {medians[FLOOR]:.1f} ms = {ratio:.2f}x"
                    f" (target <= {TARGET_RATIO:.2f}x); without httpx's command line {bare:.2f}x"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
