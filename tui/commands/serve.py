"""``preloop serve`` and ``preloop demo``: the local control plane, alone or with demo agents.

Both run synchronously after the CLI's event loop has closed (the server has its own loop on a thread,
and the demo's full-screen app runs its own loop), so the handlers only check their flags and return the
function that does the work.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from tui.cli import EXIT_OK
from tui.commands.common import usage


def _db(value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_dir():
        raise usage(f"--db {value} is a directory: give a file path, e.g. {path / 'control-plane.sqlite3'}")
    if not path.parent.exists():
        raise usage(f"--db {value}: the directory {path.parent} does not exist; create it first")
    return path


async def serve(args: argparse.Namespace) -> Callable[[], int]:
    """Run the local server in the foreground until Ctrl+C."""
    db_path = _db(args.db)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        import sys

        print(
            f"preloop: warning: binding {args.host} exposes the control plane beyond this machine",
            file=sys.stderr,
        )

    def run() -> int:
        from server.main import serve as serve_forever

        try:
            serve_forever(args.host, args.port, db_path)
        except OSError as exc:
            import sys

            print(f"preloop: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        return EXIT_OK

    return run
