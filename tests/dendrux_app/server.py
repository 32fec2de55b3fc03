"""Serve the test Dendrux app on 127.0.0.1 from a background thread (its own loop), restartable.

    with DendruxAppServer(tmp / "dx.sqlite3") as app:
        run_id = app.start_run("refund: order A-17 arrived broken; refund it.")
        app.open_gate("g1")

By hand: ``python -m tests.dendrux_app [--port N] [--db PATH] [--token T]`` prints the URL and serves until
Ctrl+C; start a run with ``curl -X POST URL/_test/runs -H 'content-type: application/json' -d '{"input":
"refund: ..."}'`` and attach with ``preloop --url URL --server-kind dendrux sessions list``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tests.dendrux_app.app import create_app


class DendruxAppServer:
    """A real Dendrux app over loopback; ``stop()`` then ``start()`` restarts it on the same port and file."""

    def __init__(
        self, db_path: Path, *, port: int = 0, token: str | None = "dx-test-token", steer: bool = True
    ) -> None:
        self.db_path = Path(db_path)
        self.steer = steer
        self.port = port
        self.token = token
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> DendruxAppServer:
        """Bind (the same port after a restart), serve, return once it accepts connections."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        app = create_app(self.db_path, token=self.token, steer=self.steer)
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            ws="none",
            timeout_keep_alive=75,  # as server.embedded: longer than a client reuses an idle connection
        )
        config.timeout_graceful_shutdown = 1
        server = uvicorn.Server(config)
        self._server = server
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)

            async def main() -> None:
                task = asyncio.create_task(server.serve(sockets=[sock]))
                while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn has no event
                    await asyncio.sleep(0.005)
                ready.set()
                with contextlib.suppress(SystemExit):
                    await task

            try:
                loop.run_until_complete(main())
            finally:
                ready.set()
                sock.close()
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name=f"dendrux-app:{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or not server.started:
            self.stop()
            raise RuntimeError("the Dendrux test app did not start")
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """Stop serving (open SSE streams are cut) and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
        self._server = None

    def __enter__(self) -> DendruxAppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def start_run(self, text: str) -> str:
        """Start a run (in the app's loop) and return its id once Dendrux created it."""
        with httpx.Client(base_url=self.url, timeout=60) as http:
            response = http.post("/_test/runs", json={"input": text})
            response.raise_for_status()
            run_id: str = response.json()["run_id"]
            return run_id

    def open_gate(self, name: str) -> None:
        """Let the tools waiting on ``name`` finish."""
        with httpx.Client(base_url=self.url, timeout=30) as http:
            http.post(f"/_test/gates/{name}").raise_for_status()

    def get(self, path: str, **params: Any) -> Any:
        """GET a read-router path as JSON (tests use it to wait for a run's state)."""
        with httpx.Client(base_url=self.url, timeout=30, headers=self._headers()) as http:
            response = http.get(path, params=params)
            response.raise_for_status()
            return response.json()
