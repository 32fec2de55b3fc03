"""``preloop serve``: the local control plane alone, in the foreground, until Ctrl-C."""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path

from client import paths
from server.accounts import mask_token
from server.embedded import EmbeddedServer


def serve(host: str = "127.0.0.1", port: int = 0, db_path: Path | None = None) -> None:
    """Serve until interrupted; prints the URL and a masked token (the full one is in the state file)."""
    server = EmbeddedServer(db_path=db_path, host=host, port=port)
    server.start()
    print(f"Preloop local control plane on {server.url}")
    print(f"  database: {server.db_path}")
    print(f"  operator token: {mask_token(server.token)} (full token in {paths.local_server_file()})")
    print(
        "  follow a session: curl -N -H 'Authorization: Bearer TOKEN' "
        f"{server.url}/api/v1/runtime-sessions/SESSION_ID/events"
    )
    print("Press Ctrl-C to stop.", flush=True)
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with contextlib.suppress(KeyboardInterrupt):
            while not stop.wait(0.5):
                if not server.running:
                    break
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.stop()
        print("Stopped.")
