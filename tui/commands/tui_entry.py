"""Opening the full-screen app (``preloop`` alone, ``preloop sessions attach`` on a terminal).

The app runs its own event loop, so these commands do their network checks inside the CLI's loop and
return a function that ``tui.cli.main`` calls after that loop has closed. Textual is imported only then.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from client.config import Settings, resolve_settings
from client.errors import TransportError
from client.ids import is_uuid
from client.present import short_id
from tui.commands.common import is_tty, known_kind, opened, resolve_session, server_kind_flag, usage


def launch(settings: Settings, kind_flag: str | None, *, session_id: str | None, read_only: bool) -> int:
    """Build a fresh backend (not yet bound to any loop) and hand it to the app, which closes it."""
    from client.backends import open_backend
    from tui.app import run_tui

    backend = open_backend(settings, server_kind=kind_flag)
    return run_tui(backend, session_id=session_id, read_only=read_only)


async def _prepare(
    args: argparse.Namespace, session: str | None, execution: str | None = None
) -> tuple[Settings, str | None]:
    """Check the server answers and the token works before the screen takes over the terminal."""
    from tui.commands.sessions import find_execution_session

    settings = resolve_settings(args.url, args.token, args.profile)
    async with opened(settings, server_kind_flag(args)) as client:
        kind = known_kind(client)
        if kind is not None and settings.server_kind is None:
            settings = settings._replace(server_kind=kind)  # the app's backend skips detection
        await client.list_sessions(limit=1)
        if execution is not None:
            return settings, await find_execution_session(client, execution)
        full = await resolve_session(client, session) if session is not None else None
        if full is not None and session is not None and is_uuid(session.strip()):
            await client.get_session(full)  # a full id is taken as given: make sure it exists (404 → exit 1)
    return settings, full


async def run_sessions_screen(args: argparse.Namespace) -> Callable[[], int]:
    """``preloop`` with no command: the sessions screen (it needs a terminal)."""
    if not (is_tty(sys.stdout) and is_tty(sys.stdin)):
        raise usage(
            "the sessions screen needs a terminal: use `preloop sessions list` in scripts, "
            "or `preloop --help` for all commands"
        )
    try:
        settings, _ = await _prepare(args, None)
    except TransportError:
        # Server down: the screen itself shows the reason in a banner and retries (r), so an operator who
        # starts the client before the server is up is not sent back to the shell.
        settings = resolve_settings(args.url, args.token, args.profile)
    return lambda: launch(settings, args.server_kind, session_id=None, read_only=False)


async def run_attach_screen(args: argparse.Namespace, execution: str | None) -> Callable[[], int]:
    """``preloop sessions attach ID`` on a terminal: the app, opened on that session."""
    settings, full = await _prepare(args, args.session, execution)
    if full is None:
        raise usage("give a session id, or --execution UUID")
    print(f"Attaching to {short_id(full)}...", file=sys.stderr)
    return lambda: launch(settings, args.server_kind, session_id=full, read_only=args.read_only)


async def run_sessions_group(args: argparse.Namespace) -> int | Callable[[], int]:
    """``preloop sessions`` alone: the sessions screen on a terminal, else the subcommand list."""
    if not (is_tty(sys.stdout) and is_tty(sys.stdin)):
        args.group_parser.print_help(sys.stderr)
        return 2
    return await run_sessions_screen(args)
