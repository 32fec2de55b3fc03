"""A local control plane in its own process, from the checkout this file lives in, and what it costs.

The benchmarks and the memory tests share it, so a figure printed by a benchmark and a bound asserted by a
test are measured the same way::

    with ServerProcess(tmp) as server:          # `preloop serve --port 0` of this checkout, on loopback
        before = server.memory()                # VmRSS now; the peak is reset (see :meth:`memory`)
        ...
        after = server.memory()                 # after.peak_mib - before.rss_mib: the worst growth

It runs the command line's ``main(["serve", ...])`` with this checkout first on ``sys.path`` (whatever
is installed in the virtualenv), its directories (``PRELOOP_STATE_DIR`` and friends) and database in
``workdir``, and reads the URL from its first line and the token from the local-server file it writes, as
a client does.
``kill()`` is a crash (SIGKILL); ``start()`` again serves the same database on the same port.

Memory is read from ``/proc/<pid>/status`` (Linux): ``VmRSS`` (resident now) and ``VmHWM`` (the peak),
whose peak is reset through ``/proc/<pid>/clear_refs`` so a transient spike between two readings shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent

_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
try:
    from cli.main import main
except ImportError:  # a checkout from before the command line moved to cli/
    from tui.cli import main
sys.exit(main(["serve", "--port", sys.argv[2], "--db", sys.argv[3]]))
"""


@dataclass(frozen=True)
class Memory:
    """One reading of the server's memory, in MiB: resident now, and the peak since the last reading."""

    rss_mib: float
    peak_mib: float


class ServerProcess:
    """``preloop serve`` of this checkout as a child process on 127.0.0.1 (see the module docstring)."""

    def __init__(self, workdir: Path, *, port: int = 0, checkout: Path = CHECKOUT) -> None:
        self.workdir = Path(workdir)
        self.port = port
        self.checkout = checkout
        self.db_path = self.workdir / "data" / "control-plane.sqlite3"
        self.url = ""
        self.token = ""
        self.proc: subprocess.Popen[str] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment a client of this server uses (its state directory has the local-server file)."""
        dirs = {
            f"PRELOOP_{name}_DIR": str(self.workdir / name.lower()) for name in ("STATE", "CONFIG", "DATA")
        }
        return {**os.environ, **dirs}

    @property
    def python(self) -> str:
        """The checkout's own interpreter when it has a ``.venv`` (an editable install of another checkout
        would shadow its packages), else this one."""
        own = self.checkout / ".venv" / "bin" / "python"
        return str(own) if own.exists() else sys.executable

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start (again on the same port and database after a stop or a kill); returns once it serves."""
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [self.python, "-c", _SCRIPT, str(self.checkout), str(self.port), str(self.db_path)],
            cwd=self.checkout,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.proc = proc
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(proc.stdout.readline() if proc.stdout else ""))
        reader.start()
        reader.join(timeout)
        match = re.search(r"http://127\.0\.0\.1:(\d+)", first[0] if first else "")
        if match is None:
            self.kill()
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"the server did not start: {(first or [''])[0]!r} {err[-2000:]}")
        self.url = match.group(0)
        self.port = int(match.group(1))
        # drain stdout so the child never blocks on a full pipe
        threading.Thread(target=lambda: proc.stdout and proc.stdout.read(), daemon=True).start()
        local = json.loads((self.workdir / "state" / "local-server.json").read_text())
        self.token = str(local["token"])
        return self

    @property
    def pid(self) -> int:
        """The server's process id."""
        if self.proc is None:
            raise RuntimeError("not started")
        return self.proc.pid

    def memory(self) -> Memory:
        """Resident memory now and its peak since the previous call (which resets the peak)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        fields = {k: v for k, _, v in (line.partition(":") for line in status.splitlines())}

        def mib(name: str) -> float:
            return int(fields[name].split()[0]) / 1024

        reading = Memory(mib("VmRSS"), mib("VmHWM"))
        # reset VmHWM to the current RSS; on an older kernel the peak covers the whole run (an overestimate)
        with contextlib.suppress(OSError):
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        return reading

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (user + system, all its threads)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop it the way Ctrl+C does (SIGINT), and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.proc = None

    def kill(self) -> None:
        """Crash it (SIGKILL): no clean shutdown, open streams just break."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until_accepting(port: int, timeout: float = 30.0) -> float:
    """Block until something accepts TCP connections on 127.0.0.1:``port``; returns that moment
    (``time.monotonic()``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return time.monotonic()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def send_huge_header(port: int, size: int, *, token: str = "") -> int | None:
    """Send one request whose ``X-Padding`` header is ``size`` bytes long; return the status the server
    answered (None if it answered nothing). The answer is read while sending, so a server that refuses
    early and closes is heard even though the rest of the header can no longer be sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    answer = bytearray()

    def read() -> None:
        try:
            while chunk := sock.recv(65536):
                answer.extend(chunk)
                if b"\r\n\r\n" in answer:
                    return
        except OSError:
            return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    auth = f"Authorization: Bearer {token}\r\n".encode() if token else b""
    try:
        sock.sendall(b"GET /api/v1/runtime-sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + b"X-Padding: ")
        block = b"a" * 65536
        sent = 0
        while sent < size:
            sock.sendall(block[: min(len(block), size - sent)])
            sent += len(block)
        sock.sendall(b"\r\n\r\n")
    except OSError:
        pass  # the server refused early and closed: its answer is what counts
    reader.join(30)
    sock.close()
    match = re.match(rb"HTTP/1\.[01] (\d{3})", bytes(answer))
    return int(match.group(1)) if match else None


def stalled_reader(port: int, token: str, session_id: str) -> socket.socket:
    """Follow a session's event stream and never read a byte of it (close the socket to hang up). The
    receive buffer is kept small, as a client on a slow or frozen link would have it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"GET /api/v1/runtime-sessions/{session_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    return sock


@dataclass(frozen=True)
class Reconnect:
    """What a follower did around one crash and restart of the server (seconds; see
    :func:`crash_and_restart`)."""

    down: float
    """From the kill to the restarted server accepting connections."""
    attempts_while_down: int
    """Connection attempts the follower made meanwhile."""
    delays: tuple[float, ...]
    """The waits it announced between attempts (``Reconnecting.delay``), after the crash."""
    to_live: float
    """From the moment the restarted server accepted connections to the follower being ``Live``."""
    to_event: float
    """From that moment to the follower receiving an event the agent sent right then."""


async def crash_and_restart(server: ServerProcess, down_seconds: float) -> Reconnect:
    """Follow a session with the client's defaults, SIGKILL the server, keep it down ``down_seconds``,
    start it again on the same port and database, and time the follower's return."""
    import asyncio

    from client.backends import connect
    from client.config import Settings
    from client.events import ModelDelta
    from client.status import Connecting, Live, Reconnecting
    from server.harness_client import HarnessClient

    seen: list[tuple[float, object]] = []
    following = asyncio.Event()
    async with HarnessClient(server.url, server.token) as harness:
        agent = await harness.start_session(agent_name="survivor")
        async with await connect(Settings(server.url, server.token, server_kind="local")) as client:

            async def follow() -> None:
                async for item in client.follow(agent.session_id):
                    seen.append((time.monotonic(), item))
                    if isinstance(item, Live):
                        following.set()
                    if isinstance(item, ModelDelta) and item.text == "after the restart":
                        return

            follower = asyncio.create_task(follow())
            try:
                await asyncio.wait_for(following.wait(), 30)
                server.kill()
                down = time.monotonic()
                await asyncio.sleep(down_seconds)
                accepting = asyncio.create_task(asyncio.to_thread(wait_until_accepting, server.port))
                await asyncio.to_thread(server.start)
                back = await accepting
                await agent.delta("after the restart", iteration=1)
                await asyncio.wait_for(follower, 60)
            finally:
                follower.cancel()
    after_crash = [(t, item) for t, item in seen if t >= down]
    live = next(t for t, item in after_crash if isinstance(item, Live) and t >= back)
    event = next(t for t, item in after_crash if isinstance(item, ModelDelta))
    return Reconnect(
        down=back - down,
        attempts_while_down=sum(1 for t, item in after_crash if isinstance(item, Connecting) and t < back),
        delays=tuple(item.delay for _, item in after_crash if isinstance(item, Reconnecting)),
        to_live=live - back,
        to_event=event - back,
    )
