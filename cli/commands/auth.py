"""``preloop login``, ``preloop logout`` and ``preloop auth status``. The token is never printed."""

from __future__ import annotations

import argparse
import getpass
import sys

from cli.commands.common import is_tty, report_error, server_kind_flag, usage
from cli.exits import EXIT_FAILED, EXIT_OK
from client.backends import connect
from client.backends.base import ServerKind
from client.config import (
    Settings,
    credentials_file,
    delete_token,
    keyring_status,
    load_config,
    resolve_settings,
    save_profile,
    store_token,
)
from client.errors import ClientError, NoKeyring


async def _check(url: str, token: str | None, kind: ServerKind | None) -> ServerKind:
    """Prove the server answers and accepts the token (one cheap authenticated call); its kind."""
    async with await connect(Settings(url, token, server_kind=kind)) as backend:
        await backend.list_sessions(limit=1)
        return backend.server_kind


def _read_token(args: argparse.Namespace, url: str) -> str:
    if args.token:
        return str(args.token).strip()
    if args.with_token:
        return sys.stdin.readline().strip()
    if not is_tty(sys.stdin):
        raise usage("standard input is not a terminal: pipe the token in with --with-token")
    return getpass.getpass(f"Token for {url} (input hidden): ").strip()


async def login(args: argparse.Namespace) -> int:
    """Check a token against the server, then keep it (keyring, or the 0600 file when asked)."""
    # `--url U --profile NEW` creates the profile NEW (what the "no profile named" error tells people to do)
    new_profile = args.url is not None and args.profile not in load_config().profiles
    settings = resolve_settings(args.url, None, None if new_profile else args.profile)
    token = _read_token(args, settings.url)
    if not token:
        raise usage("no token given: paste it at the prompt, or pipe it in with --with-token")
    kind = await _check(settings.url, token, server_kind_flag(args) or settings.server_kind)
    try:
        where = store_token(settings.url, token, allow_file=args.store == "file")
    except NoKeyring as exc:
        report_error(exc)
        print(
            f"To keep it in {credentials_file()} (readable only by you), run the same command with "
            "--store file. Nothing was stored.",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if settings.url_source in ("flag", "env", "profile"):
        save_profile(args.profile or settings.profile or "default", settings.url, server_kind=kind)
    place = "the OS keyring" if where == "keyring" else f"{credentials_file()} (mode 0600)"
    print(f"Logged in to {settings.url} ({kind} server). The token is stored in {place}.")
    return EXIT_OK


async def logout(args: argparse.Namespace) -> int:
    """Forget the stored token for the server (flags, environment and local server are not touched)."""
    settings = resolve_settings(args.url, None, args.profile)
    removed = delete_token(settings.url)
    if removed:
        places = " and ".join(
            "the OS keyring" if r == "keyring" else str(credentials_file()) for r in removed
        )
        print(f"Logged out of {settings.url}: removed the token from {places}.")
    else:
        print(f"No token was stored for {settings.url}; nothing to remove.")
    return EXIT_OK


_SOURCES = {
    "flag": "the --token flag",
    "env": "PRELOOP_TOKEN",
    "keyring": "the OS keyring",
    "file": "the credentials file",
    "local-server": "the local server's file",
}
_URL_SOURCES = {
    "flag": "the --url flag",
    "env": "PRELOOP_URL",
    "profile": "the profile",
    "local-server": "the local server's file",
}


async def status(args: argparse.Namespace) -> int:
    """Say which server and token would be used and whether they work, without showing the token."""
    settings = resolve_settings(args.url, args.token, args.profile)
    print(f"Server:   {settings.url} (from {_URL_SOURCES.get(settings.url_source or '', '?')})")
    if settings.profile:
        print(f"Profile:  {settings.profile}")
    if settings.token:
        print(f"Token:    set (from {_SOURCES.get(settings.token_source or '', '?')}; not shown)")
    else:
        print("Token:    none: run `preloop login`, or set PRELOOP_TOKEN")
    works, description = keyring_status()
    print(f"Keyring:  {description}" if works else f"Keyring:  unavailable: {description}")
    try:
        kind = await _check(settings.url, settings.token, server_kind_flag(args) or settings.server_kind)
    except ClientError as exc:
        print(f"Status:   not working: {exc.title}: {exc.hint}")
        return EXIT_FAILED
    print(f"Status:   ok, {kind} server accepts the token")
    return EXIT_OK
