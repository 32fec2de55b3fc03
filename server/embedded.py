"""Run the control plane inside this process: uvicorn on a background thread with its own event loop.

Used by ``preloop demo``, by the test fixture ``live_server`` and by the benchmarks::

    server = EmbeddedServer(db_path=tmp / "cp.sqlite3")
    server.start()                 # returns once the socket accepts connections
    print(server.url, mask_token(server.token))
    server.stop()
    server.start()                 # same port, same database: sessions, events, notes survive

The server thread owns its loop, so a caller's own loop (pytest-asyncio, Textual) never blocks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Literal, TypeVar

import uvicorn

from client import paths
from server.app import create_app
from server.bus import MAX_QUEUED_BYTES
from server.control import ControlPlane
from server.http_input import MAX_HEAD_BYTES

T = TypeVar("T")

KEEP_ALIVE_SECONDS = 75
"""How long an idle HTTP connection stays open. Longer than any client keeps one for reuse (httpx: 5 s), so
a client never sends a request on a connection the server is closing: with uvicorn's 5 s, equal to
httpx's, a request sent as the server closed its idle connection failed ("connection lost", a ReadError
for an agent), most often on a loaded machine, where a client reads an answer (and starts its 5 s) late."""


StartedBy = Literal["serve", "demo"]
"""Which command runs a local server: ``preloop serve`` or ``preloop demo``."""


def write_local_server_file(
    url: str, token: str, path: Path | None = None, *, started_by: StartedBy = "serve"
) -> Path:
    """Tell clients on this machine where the local server is and which command started it (so a client
    that cannot reach it names the command that brings it back); owner-readable only, written
    atomically."""
    target = path or paths.local_server_file()
    paths.replace_file(target, json.dumps({"url": url, "token": token, "started_by": started_by}))
    return target


class EmbeddedServer:
    """A real HTTP control plane on 127.0.0.1, started and stopped from synchronous code."""

    def __init__(
        self,
        db_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        keepalive_seconds: float = 15.0,
        permission_timeout_seconds: float = 300.0,
        write_local_file: bool = True,
        subscriber_queue_bytes: int = MAX_QUEUED_BYTES,
        started_by: StartedBy = "serve",
    ) -> None:
        self.db_path = Path(db_path) if db_path is not None else paths.default_db_path()
        self.host = host
        self.port = port
        self.keepalive_seconds = keepalive_seconds
        self.permission_timeout_seconds = permission_timeout_seconds
        self.write_local_file = write_local_file
        self.started_by: StartedBy = started_by
        """Recorded in the local-server file (see :func:`write_local_server_file`)."""
        self.subscriber_queue_bytes = subscriber_queue_bytes
        self.token: str = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: uvicorn.Server | None = None
        self._plane: ControlPlane | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Base URL (no trailing slash), e.g. ``http://127.0.0.1:43117``."""
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """True while the server thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def plane(self) -> ControlPlane:
        """The running control plane (for :meth:`call` and tests that need its internals)."""
        if self._plane is None:
            raise RuntimeError("server is not running")
        return self._plane

    def start(self, timeout: float = 15.0) -> EmbeddedServer:
        """Bind (the same port again after a restart), serve, and return once accepting connections."""
        if self.running:
            return self
        # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on sockets whose proto says TCP, and
        # without it every small response waits ~40 ms for a delayed ACK (Nagle).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        ready = threading.Event()

        def on_ready(plane: ControlPlane) -> None:
            """Capture the control plane and its token once the lifespan has started it."""
            self._plane = plane
            self.token = plane.operator_token or ""

        app = create_app(
            self.db_path,
            keepalive_seconds=self.keepalive_seconds,
            permission_timeout_seconds=self.permission_timeout_seconds,
            subscriber_queue_bytes=self.subscriber_queue_bytes,
            on_ready=on_ready,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            ws="none",
            # h11, not httptools: only h11 bounds a request's head while it arrives (a 64 MiB header is
            # refused after MAX_HEAD_BYTES instead of buffered whole; see server.http_input)
            http="h11",
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
        server = uvicorn.Server(config)
        self._server = server
        self._error = None

        serving: list[asyncio.Task[None]] = []

        def run() -> None:
            """The server thread: its own loop, serving until asked to exit."""
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)

            async def main() -> None:
                """Serve, and signal start() once uvicorn accepts connections."""
                task = asyncio.create_task(server.serve(sockets=[sock]))
                serving.append(task)
                while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn has no event
                    await asyncio.sleep(0.005)
                ready.set()
                with contextlib.suppress(SystemExit):  # uvicorn exits this way when startup fails
                    await task

            try:
                loop.run_until_complete(main())
            except BaseException as exc:  # reported by start()
                self._error = exc
                for task in serving:  # uvicorn's SystemExit escaped the loop; mark it as seen
                    if task.done() and not task.cancelled():
                        task.exception()
            finally:
                ready.set()
                sock.close()
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
                self._loop = None

        self._thread = threading.Thread(target=run, name=f"control-plane:{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or not server.started:
            self.stop()
            startup_error = getattr(app.state, "startup_error", None)
            if isinstance(startup_error, Exception):
                raise startup_error  # e.g. SchemaTooNewError, PermissionError on the database file
            raise RuntimeError(f"local control plane did not start: {self._error!r}")
        if self.write_local_file:
            write_local_server_file(self.url, self.token, started_by=self.started_by)
        return self

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run a coroutine on the server's loop from another thread (e.g. create a second account)."""
        if self._loop is None:
            coro.close()
            raise RuntimeError("server is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def create_account(self, name: str = "other", display: str = "Other Operator") -> str:
        """A second account's operator token: its sessions are invisible to the first (tests use it)."""
        return self.call(self.plane.accounts.create_account(name, display))

    def stop(self, timeout: float = 15.0) -> None:
        """Close live streams, stop accepting, and wait for the thread; safe to call twice."""
        server, loop, thread = self._server, self._loop, self._thread
        if server is not None and loop is not None and self._plane is not None:
            plane = self._plane
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(plane.begin_shutdown)
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
        self._thread = None
        self._server = None
        self._plane = None

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
