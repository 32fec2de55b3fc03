"""What every command shares: connecting to the server, printing errors, tables and JSON.

Errors are printed the same way everywhere: one line ``preloop: <title>: <what to do>`` on stderr (the
hint comes from ``client.errors``, which already carries the server's reason and never the token), exit
code 1 for a refused or failed request, 2 for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar, TextIO

from cli.exits import EXIT_FAILED, EXIT_USAGE, CliUsageError
from client.backends import connect as connect_backend
from client.backends import parse_server_kind
from client.backends.base import Backend, ServerKind
from client.cells import cell_len, fit, pad
from client.config import Settings, remember_server_kind, resolve_settings
from client.errors import AmbiguousId, ClientError, NoMatchingId, UsageError, ValidationFailed
from client.ids import is_uuid, require_uuid


def report_error(exc: ClientError, stream: TextIO | None = None) -> int:
    """Print a client error as one line (plus the rejected fields of a 422) and return its exit code."""
    out = stream or sys.stderr
    print(f"preloop: {exc.title}: {exc.hint}", file=out)
    if isinstance(exc, ValidationFailed) and len(exc.fields) > 1:
        for field in exc.fields:
            print(f"  - {field}", file=out)
    if isinstance(exc, UsageError) and not isinstance(exc, AmbiguousId | NoMatchingId):
        return EXIT_USAGE
    return EXIT_FAILED


def usage(message: str) -> CliUsageError:
    """A usage error (exit 2) for a bad flag or combination; ``message`` names the fix."""
    return CliUsageError(message)


def check_uuid(value: str | None, flag: str) -> str | None:
    """Refuse a malformed UUID flag before any request (a Preloop server answers it with a 500)."""
    if value is None:
        return None
    if not is_uuid(value.strip()):
        raise usage(f"{flag} needs a full UUID like 1a2b3c4d-0000-4000-8000-1234567890ab, not {value!r}")
    return require_uuid(value)


def server_kind_flag(args: argparse.Namespace) -> ServerKind | None:
    """``--server-kind auto`` means: ask the server (None); otherwise what the user said."""
    return parse_server_kind(getattr(args, "server_kind", "auto"))


@asynccontextmanager
async def opened(
    settings: Settings, flag: ServerKind | None, *, blocking: bool = False
) -> AsyncIterator[Backend]:
    """The backend for ``settings`` (``--server-kind`` wins), closed afterwards. A kind the server had to
    be asked for is remembered in the profile, so the next command does not ask again (a flag is never
    saved: it may be a one-off). ``blocking``: see :func:`connect`."""
    backend = await connect_backend(settings, server_kind=flag, blocking=blocking)
    try:
        if flag is None and settings.server_kind is None and settings.profile is not None:
            with contextlib.suppress(ClientError, OSError):  # a read-only config dir must not fail it
                remember_server_kind(settings.profile, backend.server_kind)
        yield backend
    finally:
        await backend.aclose()


@asynccontextmanager
async def connect(args: argparse.Namespace, *, blocking: bool = False) -> AsyncIterator[Backend]:
    """Open the backend the global flags, environment and profile point at; close it afterwards.

    ``blocking``: the command sends its requests one after another and follows no stream (``sessions
    list``, ``notes list``), so its connection's client is httpx's blocking one (``client.connection``)."""
    settings = resolve_settings(args.url, args.token, args.profile)
    async with opened(settings, server_kind_flag(args), blocking=blocking) as backend:
        yield backend


def is_tty(stream: TextIO) -> bool:
    """Whether to draw for a person (a closed or replaced stream, as in tests, counts as not a terminal)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def print_json(obj: Any, stream: TextIO | None = None) -> None:
    """Pretty JSON for people and ``jq`` alike; non-ASCII text kept as is."""
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str), file=stream or sys.stdout)


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    last_flexible: bool,
    width: int | None,
    fit_last: Callable[[list[str], int], list[str]] | None = None,
) -> list[str]:
    """Left-aligned columns two spaces apart; on a terminal the last column is cut to fit ``width``
    (by ``fit_last`` over the whole column when given, so cut values can stay told apart). Widths are
    terminal cells (``client.cells``), so a CJK or emoji title keeps the columns after it in line."""
    widths = [cell_len(h) for h in headers]
    for row in rows:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], cell_len(value))
    table = [list(headers), *[list(r) for r in rows]]
    if last_flexible and width is not None and table and len(headers) > 1:
        room = max(width - sum(widths[:-1]) - 2 * (len(headers) - 1), 8)
        lasts = [row[-1] for row in table[1:]]
        lasts = fit_last(lasts, room) if fit_last is not None else [fit(last, room) for last in lasts]
        for row, last in zip(table[1:], lasts, strict=True):
            row[-1] = last
    lines = []
    for row in table:
        cells = [pad(value, widths[i]) for i, value in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def terminal_width(stream: TextIO) -> int | None:
    """The terminal's width when writing to one; None (never cut) when piped."""
    if not is_tty(stream):
        return None
    return shutil.get_terminal_size((100, 24)).columns


def read_stdin_text() -> str:
    """All of standard input as text (a heredoc note keeps its lines); one trailing newline dropped."""
    if is_tty(sys.stdin):
        print("Type the note, then press Ctrl+D on a new line to send it (Ctrl+C cancels).", file=sys.stderr)
    data = sys.stdin.read()
    return data[:-1] if data.endswith("\n") else data


class Style:
    """ANSI colour for a stream, only when it is a terminal and NO_COLOR is not set."""

    CODES: ClassVar[dict[str, str]] = {
        "dim": "2",
        "bold": "1",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "cyan": "36",
    }

    def __init__(self, stream: TextIO) -> None:
        self.enabled = is_tty(stream) and not os.environ.get("NO_COLOR")

    def __call__(self, text: str, style: str) -> str:
        """Wrap already terminal-safe ``text`` in a colour; a no-op when colour is off."""
        if not self.enabled or not style:
            return text
        codes = ";".join(self.CODES[s] for s in style.split() if s in self.CODES)
        return f"\x1b[{codes}m{text}\x1b[0m" if codes else text
