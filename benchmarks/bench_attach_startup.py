"""Attach start-up: ``preloop sessions attach ID`` on a pseudo-terminal, from the command's start to the
session's events on the screen, against a bare Textual app that paints one line and exits.

Both run as an operator runs them: a fresh process on a 160x48 pseudo-terminal (``TERM=xterm-256color``),
timed from its start (imports included) until a word it shows reaches the terminal (and, for the bare app,
until it has exited: the whole run of "an app that paints one line and exits"). The session is a live
one on a local server in its own process (``serverproc.ServerProcess``), with ``--events`` agent events
(default 200) and, newest, a final answer holding the word; the bare app is ``App`` with one ``Static``
holding it, leaving after its first refresh. The two take turns run by run, so a burst of load on a shared
machine hits both alike, and each runs once untimed first (bytecode written, files cached).

Target (issue 26, in its words): "``preloop sessions attach`` from the command's start to events on a
terminal <= 1.5x a bare Textual app that paints one line and exits", median against median. The headline
ratio is that one: attach, start to the session's newest event on the terminal, against the bare app's
whole run (start, its line painted, exited). The ratio to the bare app's line on screen alone (without its
exit) is printed after it, for reference. ``--checkout PATH`` also times
the attach of another checkout of this project (first on ``PYTHONPATH``; e.g. ``git archive main | tar -x
-C PATH``, the tree before a change) in the same runs.

    .venv/bin/python benchmarks/bench_attach_startup.py [--runs 9] [--events 200]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import fcntl
import os
import pty
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_attach_catchup import _terminal_output, agent_events  # noqa: E402
from serverproc import ServerProcess  # noqa: E402

MARKER = b"zebrafinch"
TARGET_RATIO = 1.5
BARE = "bare Textual app, one line"
ATTACH = "preloop sessions attach"
SIZE = (160, 48)

BARE_APP = f"""
from textual.app import App, ComposeResult
from textual.widgets import Static


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("{MARKER.decode()}")

    def on_mount(self) -> None:
        self.call_after_refresh(self.exit)


One().run()
"""


def _running(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:  # reaped already
        return False


def on_terminal(argv: list[str], env: dict[str, str], *, leaves: bool = False) -> tuple[float, float]:
    """Run ``argv`` on a fresh pseudo-terminal: ms from its start until :data:`MARKER` is on the terminal,
    and (``leaves``: it exits by itself) until it closed the terminal, else 0. A process still running then
    is asked to leave (SIGTERM, its output read until it closes the terminal)."""
    width, height = SIZE
    child_env = {**env, "TERM": "xterm-256color", "COLUMNS": str(width), "LINES": str(height)}
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command on the terminal
        os.execve(argv[0], argv, child_env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
    seen = b""
    shown_at = gone_at = 0.0
    try:
        output = _terminal_output(fd, seconds=30)
        for chunk in output:
            seen = seen[-256:] + chunk
            if MARKER in seen:
                shown_at = time.perf_counter()
                break
        if shown_at and leaves:
            for _ in output:
                pass
            gone_at = time.perf_counter()
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGTERM)  # the app leaves cleanly on SIGTERM, if what it writes is read
        for _ in _terminal_output(fd, seconds=10):
            pass
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    if not shown_at:
        raise SystemExit(f"{argv[:3]} never showed {MARKER!r}: {seen[-500:]!r}")
    return (shown_at - start) * 1000, (gone_at - start) * 1000 if gone_at else 0.0


async def seed(url: str, token: str, events: int) -> str:
    """One live session: ``events`` agent events, the newest a final answer holding the marker."""
    from server.harness_client import HarnessClient

    async with HarnessClient(url, token) as harness:
        agent = await harness.start_session(agent_name="start-up", title="attach start-up")
        batch = list(agent_events(events))
        batch.append(
            {
                "type": "model.step",
                "run_id": "last",
                "iteration": 10**6,
                "phase": "final_answer",
                "text": f"done: {MARKER.decode()}",
            }
        )
        for at in range(0, len(batch), 500):
            await agent.emit(*batch[at : at + 500])
        return str(agent.session_id)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--checkout", type=Path, help="also time the attach of this checkout")
    opts = parser.parse_args()
    for package in ("client", "widgets", "tui", "cli"):  # bytecode, as an installed package has it
        compileall.compile_dir(ROOT / package, quiet=1)
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp)) as server:
        session = asyncio.run(seed(server.url, server.token, opts.events))
        env = {**server.env, "PRELOOP_URL": server.url, "PRELOOP_TOKEN": server.token}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        preloop = str(Path(sys.executable).with_name("preloop"))
        attach = [preloop, "sessions", "attach", session, "--server-kind", "local"]
        cases = {BARE: ([sys.executable, "-c", BARE_APP], env), ATTACH: (attach, env)}
        if opts.checkout is not None:
            other = {**env, "PYTHONPATH": str(opts.checkout.resolve())}
            cases[f"({opts.checkout.name}) {ATTACH}"] = (attach, other)
        for label, (argv, case_env) in cases.items():
            on_terminal(argv, case_env, leaves=label == BARE)  # untimed: bytecode and file caches
        shown: dict[str, list[float]] = {label: [] for label in cases}
        bare_gone: list[float] = []
        for _ in range(opts.runs):
            for label, (argv, case_env) in cases.items():
                at, gone = on_terminal(argv, case_env, leaves=label == BARE)
                shown[label].append(at)
                if label == BARE:
                    bare_gone.append(gone)
        print(
            f"Attach start-up on a {SIZE[0]}x{SIZE[1]} pseudo-terminal, {opts.runs} runs each, "
            f"{opts.events} events in the session, load {os.getloadavg()[0]:.2f}"
        )
        medians = {label: statistics.median(values) for label, values in shown.items()}
        for label, values in shown.items():
            print(f"  {label:<40} median {medians[label]:7.1f} ms   max {max(values):7.1f} ms   (on screen)")
        gone = statistics.median(bare_gone)
        print(f"  {BARE + ', gone':<40} median {gone:7.1f} ms   max {max(bare_gone):7.1f} ms   (exited)")
        for label in [label for label in medians if label.endswith(ATTACH)]:
            on_screen, whole = medians[label] / medians[BARE], medians[label] / gone
            print(
                f"  {label}, start to events on the terminal: {whole:.2f}x a bare Textual app that paints "
                f"one line and exits   target <= {TARGET_RATIO:.2f}x"
                f"   (to its line on screen alone: {on_screen:.2f}x)"
            )


if __name__ == "__main__":
    main()
