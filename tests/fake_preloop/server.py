"""Run the fake Preloop on 127.0.0.1 (a free port) in a background thread, like a fixture needs."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from tests.fake_preloop.app import FakePreloop, build_app


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # a thread cannot own signals
        pass


@contextmanager
def running_fake_preloop(fake: FakePreloop | None = None) -> Iterator[tuple[FakePreloop, str]]:
    """Serve a fake Preloop; yields it and its base URL (``http://127.0.0.1:PORT``). Stops on exit."""
    fake = fake or FakePreloop()
    config = uvicorn.Config(
        build_app(fake),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        ws="websockets-sansio",
        lifespan="off",
        ws_ping_interval=None,
        timeout_keep_alive=75,  # as server.embedded: longer than a client reuses an idle connection
    )
    server = _Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), name="fake-preloop", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the fake Preloop did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield fake, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
