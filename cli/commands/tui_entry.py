"""Opening the full-screen app (``preloop`` alone, ``preloop sessions attach`` on a terminal).

The app runs in the command's own event loop on the backend the command opened and checked (Textual's
``run_async``): one loop, one connection, and the command closes it when the app is done. Textual is
imported only here, when the app opens.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys

from cli.commands.common import connect, is_tty, usage
from client.backends.base import Backend
from client.errors import TransportError


async def open_app(backend: Backend, *, session_id: str | None = None, read_only: bool = False) -> int:
    """Run the app on ``backend`` until the user quits; the exit code (``tui.app.run_app``)."""
    # Start-up allocates much and frees little: no collection runs while Textual and the screens are
    # imported (a full one took 10-25 ms of it here), and what they built is frozen before collection
    # resumes (``tui.app.settle_imports``).
    gc.disable()
    try:
        from tui.app import run_app, settle_imports

        settle_imports()
    finally:
        gc.enable()
    return await run_app(backend, session_id=session_id, read_only=read_only)


async def run_sessions_screen(args: argparse.Namespace) -> int:
    """``preloop`` with no command: the sessions screen (it needs a terminal)."""
    if not (is_tty(sys.stdout) and is_tty(sys.stdin)):
        raise usage(
            "the sessions screen needs a terminal: use `preloop sessions list` in scripts, "
            "or `preloop --help` for all commands"
        )
    async with connect(args) as backend:
        # A refused token is reported here, before the screen; a server that is down is not: the screen
        # shows why in a banner and retries (r).
        with contextlib.suppress(TransportError):
            await backend.list_sessions(limit=1)
        return await open_app(backend)


async def run_sessions_group(args: argparse.Namespace) -> int:
    """``preloop sessions`` alone: the sessions screen on a terminal, else the subcommand list."""
    if not (is_tty(sys.stdout) and is_tty(sys.stdin)):
        args.group_parser.print_help(sys.stderr)
        return 2
    return await run_sessions_screen(args)
