"""``preloop serve``: the local control plane alone, in the foreground, until Ctrl-C."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from client import paths
from server.accounts import Accounts, mask_token
from server.embedded import EmbeddedServer
from server.store import Store


async def serve(
    host: str,
    port: int,
    db_path: Path | None,
    until_stopped: Callable[[Callable[[], bool]], Awaitable[None]],
) -> None:
    """Serve until ``until_stopped`` returns (the CLI waits for Ctrl+C or SIGTERM); prints the URL and a
    masked token (the full one is in the state file). The server runs on a thread of its own."""
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
    try:
        await until_stopped(lambda: server.running)
    finally:
        server.stop()
        print("Stopped.")


async def add_operator(db_path: Path, name: str) -> str:
    """Add a person named ``name`` to the first account of the database at ``db_path`` (created or upgraded
    as a start would) and return their new operator token; a running server on the same file sees them at
    once (SQLite, WAL). :class:`server.accounts.OperatorNameError` when the name cannot be used."""
    store = Store(db_path)
    await store.open()
    try:
        return await Accounts(store).add_operator(name)
    finally:
        await store.close()
