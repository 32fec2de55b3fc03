"""``preloop serve`` and ``preloop demo``: the local control plane, alone or with demo agents.

The control plane is an install extra (``pip install 'preloop-steer[server]'``): without it both commands
exit 2 naming the extra. The server runs on a thread of its own (``server.embedded``); the command waits
for Ctrl+C or SIGTERM in the CLI's one event loop, where the demo's full-screen app runs too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from cli.commands.common import usage
from cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from client.config import DEMO_PORT


def _quiet_startup_tracebacks() -> None:
    """uvicorn logs a failed start-up as a full traceback; the CLI says it in one line instead.

    ``PRELOOP_DEBUG=1`` keeps the traceback. The filter sits on the logger object, so uvicorn's own
    logging set-up (which replaces handlers, not filters) keeps it.
    """
    import logging
    import os

    if os.environ.get("PRELOOP_DEBUG"):
        return

    def drop(record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return not (text.startswith("Traceback") or text.startswith("Application startup failed"))

    logging.getLogger("uvicorn.error").addFilter(drop)


def startup_failure(exc: BaseException, db_path: Path | None) -> str:
    """One line for a server that could not start, naming what to do (not a traceback)."""
    import sqlite3

    from server.store import SchemaTooNewError

    reason = str(exc) or type(exc).__name__
    if isinstance(exc, SchemaTooNewError):
        return f"{reason}: upgrade preloop, or pass --db with another file"
    if isinstance(exc, sqlite3.DatabaseError):
        where = db_path or "the database file"
        return f"{where} is not a usable SQLite database ({reason}): pass --db with another file"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or reason}: pass --db with a file you can write"
    return f"{type(exc).__name__}: {reason}"


SERVER_EXTRA = ("fastapi", "uvicorn", "aiosqlite")
"""What the ``server`` extra installs; a base install of the client has none of them."""


def require_server_extra() -> None:
    """Refuse (exit 2) to run the control plane on an install without it, naming what to install."""
    import importlib.util

    missing = [name for name in SERVER_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise usage(
            "the local control plane is an install extra: pip install 'preloop-steer[server]' "
            f"(missing: {', '.join(missing)})"
        )


async def until_stopped(alive: Callable[[], bool]) -> int | None:
    """Wait for Ctrl+C or SIGTERM (or until ``alive()`` turns false), in the command's event loop.

    Returns the signal that stopped the wait (None when ``alive()`` turned false): a command stopped by
    Ctrl+C exits 130 after its clean shutdown, as every other command does (see ``exit_code``)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[int] = []
    handled = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, on_signal, signum)
            handled.append(signum)
    try:
        while alive() and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
    return received[0] if received else None


def exit_code(stopped_by: int | None) -> int:
    """The exit code of a command that ran until stopped: 130 for Ctrl+C (the shell's convention, as
    every other command exits on it), 0 for SIGTERM or an end of its own."""
    return EXIT_INTERRUPTED if stopped_by == signal.SIGINT else EXIT_OK


def _db(value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_dir():
        raise usage(f"--db {value} is a directory: give a file path, e.g. {path / 'control-plane.sqlite3'}")
    if not path.parent.exists():
        raise usage(f"--db {value}: the directory {path.parent} does not exist; create it first")
    return path


async def add_operator(db_path: Path, name: str, url: str) -> int:
    """``--add-operator NAME``: a person of their own on the server's database, with a token printed once
    (only its hash is stored, so it cannot be shown again); a name that cannot be used exits 2."""
    from server.accounts import OperatorNameError
    from server.main import add_operator as add

    try:
        token = await add(db_path, name)
    except OperatorNameError as exc:
        raise usage(f"--add-operator: {exc}") from None
    shown = " ".join(name.split())
    print(f"Operator {shown!r} added to {db_path}.")
    print("Their token, shown this once (only its hash is kept): hand it to them privately.")
    print(f"  {token}")
    print("They sign in with it on their machine:")
    print(f"  preloop login --url {url} --with-token    (paste the token on standard input)")
    print(f"Their approvals, declines and notes are shown as {shown!r}.", flush=True)
    return EXIT_OK


async def serve(args: argparse.Namespace) -> int:
    """Run the local server in the foreground until Ctrl+C (or, with ``--add-operator``, add a person)."""
    require_server_extra()
    db_path = _db(args.db)
    if args.add_operator is not None:
        from client import paths

        host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        return await add_operator(
            db_path or paths.default_db_path(), args.add_operator, f"http://{host}:{args.port}"
        )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"preloop: warning: binding {args.host} exposes the control plane beyond this machine",
            file=sys.stderr,
        )
    from server.main import serve as serve_until_stopped

    _quiet_startup_tracebacks()
    stopped_by: list[int | None] = []

    async def wait(alive: Callable[[], bool]) -> None:
        stopped_by.append(await until_stopped(alive))

    try:
        await serve_until_stopped(args.host, args.port, db_path, wait)
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
            print(
                f"preloop: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}; "
                "pick another --port (0 = any free port)",
                file=sys.stderr,
            )
            return EXIT_FAILED
        print(f"preloop: the local server did not start: {startup_failure(exc, db_path)}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # start-up refused (database too new, not a database, ...)
        cause = exc.__cause__ if isinstance(exc, RuntimeError) and exc.__cause__ else exc
        print(f"preloop: the local server did not start: {startup_failure(cause, db_path)}", file=sys.stderr)
        return EXIT_FAILED
    return exit_code(stopped_by[0] if stopped_by else None)


async def _wait_for_session(url: str, token: str, seconds: float = 10.0) -> str | None:
    """The first demo session's id, so the printed curl line can be pasted as is."""
    import time

    from client.backends import connect
    from client.config import Settings

    async with await connect(Settings(url, token, server_kind="local")) as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            page = await client.list_sessions(limit=1)
            if page.items:
                return page.items[0].id
            await asyncio.sleep(0.2)
    return None


async def _print_watch_help(url: str, token: str) -> None:
    from client import paths
    from client.ids import short_id

    session = await _wait_for_session(url, token)
    sid = session or "SESSION_ID"
    state = paths.local_server_file()
    print(f"Demo control plane on {url} with three demo agents.")
    print(f"The operator token is in {state} (readable only by you); preloop commands find it there.")
    print()
    print("Watch a session:")
    print(f"  preloop sessions list --active\n  preloop sessions attach {short_id(sid)} --plain")
    print("Or with curl:")
    print(f'  TOKEN=$(python3 -c \'import json; print(json.load(open("{state}"))["token"])\')')
    print(f'  curl -N -H "Authorization: Bearer $TOKEN" {url}/api/v1/runtime-sessions/{sid}/events')
    print("Send a note the agent reads at its next turn:")
    print(f'  preloop notes send --session {short_id(sid)} "please explain your plan first"')
    print()
    print("Press Ctrl+C to stop. Stopped or crashed? Run `preloop demo` again: same address, every")
    print(
        "session and note kept, and attached clients reconnect (`preloop demo --fresh` starts over).",
        flush=True,
    )


def demo_db_path() -> Path:
    """Where the demo keeps its data between runs (the state directory: it is the demo's, not yours)."""
    from client import paths

    return paths.state_dir() / "demo.sqlite3"


def _lock(db_path: Path) -> object | None:
    """Hold ``<db>.lock`` for this process's lifetime (released by the OS even on a crash); None when
    another demo holds it. Two demos on one database would both drive its sessions."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        return object()
    handle = open(db_path.with_name(db_path.name + ".lock"), "a")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def _fresh(db_path: Path) -> None:
    """``--fresh``: the database and its WAL files go, so the demo starts with no sessions."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)


def restart_hint(db_path: Path) -> str:
    """What to do after a stop or a crash (printed when the demo stops)."""
    return (
        f"Run `preloop demo` again to carry on: its sessions and notes are kept in {db_path} "
        "(`preloop demo --fresh` starts over)."
    )


def _demo_url(port: int | None) -> str:
    """The demo's URL to sign in at: ``--port`` when given, else the one the running (or last) demo wrote
    to the local-server file (it takes a free port when its usual one is taken), else its usual port."""
    if port is None:
        from client.config import local_server_url

        written = local_server_url("demo")
        if written is not None:
            return written
    return f"http://127.0.0.1:{DEMO_PORT if port is None else port}"


async def demo(args: argparse.Namespace) -> int:
    """A local server on a stable port plus demo agents; the sessions screen (or instructions) on top."""
    from cli.commands.common import is_tty

    require_server_extra()
    db_path = _db(args.db) or demo_db_path()
    if args.add_operator is not None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        return await add_operator(db_path, args.add_operator, _demo_url(args.port))
    use_tui = not args.no_tui and is_tty(sys.stdout) and is_tty(sys.stdin)
    from server.demo import start_demo

    db_path.parent.mkdir(parents=True, exist_ok=True)
    lock = _lock(db_path)
    if lock is None:
        print(
            f"preloop: another `preloop demo` is running on {db_path}: open it with `preloop` "
            "(it finds the demo by itself), or stop it first",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.fresh:
        _fresh(db_path)
    _quiet_startup_tracebacks()
    port = DEMO_PORT if args.port is None else args.port
    try:
        try:
            running = start_demo(db_path, port=port, pace=args.pace, seed=args.seed)
        except OSError as exc:
            if args.port is not None or exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
            # Something else has the usual port: any free one will do; clients find it in the
            # local-server file, but ones still attached to the old address will not follow.
            print(f"preloop: port {DEMO_PORT} is taken; the demo uses a free port instead", file=sys.stderr)
            running = start_demo(db_path, port=0, pace=args.pace, seed=args.seed)
    except Exception as exc:  # start-up refused (port taken, database too new, not a database, ...)
        if isinstance(exc, OSError) and exc.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
            print(
                f"preloop: cannot serve the demo on port {port}: {exc.strerror or exc}; "
                "pick another --port (0 = any free port)",
                file=sys.stderr,
            )
            return EXIT_FAILED
        cause = exc.__cause__ if isinstance(exc, RuntimeError) and exc.__cause__ else exc
        print(f"preloop: the demo server did not start: {startup_failure(cause, db_path)}", file=sys.stderr)
        return EXIT_FAILED
    try:
        if use_tui:
            from cli.commands.tui_entry import open_app
            from client.backends import connect
            from client.config import Settings

            async with await connect(Settings(running.url, running.token, server_kind="local")) as backend:
                return await open_app(backend)
        await _print_watch_help(running.url, running.token)
        stopped_by = await until_stopped(lambda: running.agents.running)
        if stopped_by is None and not running.agents.running:
            print("preloop: the demo agents stopped", file=sys.stderr)
            return EXIT_FAILED
        return exit_code(stopped_by)
    finally:
        running.stop()
        print("Demo stopped.", restart_hint(db_path), file=sys.stderr)
