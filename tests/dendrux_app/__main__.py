"""``python -m tests.dendrux_app``: serve the test Dendrux app by hand (see tests/dendrux_app/server.py)."""

from __future__ import annotations

import argparse
import tempfile
import threading
from pathlib import Path

from tests.dendrux_app.server import DendruxAppServer


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.dendrux_app")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--token", default=None, help="require this bearer token (default: none)")
    args = parser.parse_args()
    db = args.db or Path(tempfile.mkdtemp(prefix="dendrux-app-")) / "dendrux.sqlite3"
    server = DendruxAppServer(db, port=args.port, token=args.token).start()
    print(f"Dendrux test app on {server.url} (database {db}); Ctrl+C stops it", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
