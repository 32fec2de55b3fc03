"""``preloop sessions export ID --format md|json [-o FILE]``: a session for the post-incident review.

The session's whole event history is read through the same follower the attach view uses (replayed from
the first event), applied to a :class:`client.timeline.Timeline`, and exported with the server's note and
approval lists (read like every listing, :mod:`client.listing`) by :mod:`client.export`. An ended
session's history is complete when the stream says ``Ended``; a session still running is exported as of
now: once the replay has gone quiet for ``QUIET_SECONDS`` the export is written (the document says the
session is still running).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli.commands.common import usage
from cli.exits import EXIT_OK
from client.backends.base import Backend
from client.errors import ConnectionLost, error_for_status
from client.export import build_export, to_json, to_markdown
from client.ids import resolve_session
from client.listing import all_approvals, session_notes, with_trails
from client.paths import replace_file
from client.status import Connecting, Ended, Live, LoginNeeded, Missed, Reconnecting, Refused, Skipped
from client.steering import Decisions
from client.timeline import Timeline

QUIET_SECONDS = 1.5
"""A live session's replay is taken as complete after this long with no new event."""

MAX_RECONNECTS = 3
"""Attempts to read the history before giving up with the stream's reason."""


async def read_history(backend: Backend, session_id: str, timeline: Timeline) -> bool:
    """Apply the session's history to ``timeline``; True when it is complete (the session ended)."""
    stream = backend.follow(session_id)
    live = False
    try:
        while True:
            try:
                async with asyncio.timeout(QUIET_SECONDS if live else None):
                    item = await anext(stream)
            except TimeoutError:
                return False  # still running: everything so far has been replayed
            except StopAsyncIteration:
                return True
            if isinstance(item, Ended):
                return True
            if isinstance(item, Live):
                live = True
            elif isinstance(item, Refused):
                raise error_for_status(
                    item.status or 403, {"detail": item.reason}, what=f"session {session_id[:8]}"
                )
            elif isinstance(item, LoginNeeded):  # a one-off command does not wait for a new token
                raise error_for_status(401, {"detail": item.reason})
            elif isinstance(item, Reconnecting) and item.attempt >= MAX_RECONNECTS:
                raise ConnectionLost(f"could not read the session's events ({item.reason}); try again")
            elif not isinstance(item, Connecting | Reconnecting | Missed | Skipped):
                timeline.apply(item)
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()  # type: ignore[attr-defined]


async def gather(backend: Backend, session_id: str, now: datetime) -> dict[str, Any]:
    """Everything the export needs from the server, as the export document: who decided each approval is
    read with it (``Backend.approval_trail``: Preloop names the person only in the approval's history)."""
    session = await backend.get_session(session_id)
    timeline = Timeline(max_entries=1_000_000, max_chars=500_000_000)
    await read_history(backend, session_id, timeline)
    notes = await session_notes(backend, session_id)
    approvals = await with_trails(backend, await all_approvals(backend, session_id))
    decisions = Decisions()
    await decisions.learn_me(backend)
    return build_export(
        session_id,
        timeline,
        session=timeline.session or session,
        notes=notes,
        approvals=approvals,
        exported_at=now,
        by_you=decisions.by_you,
        deciders_recorded=backend.capabilities.names_decider,
    )


def _format(args: argparse.Namespace) -> str:
    if args.format is not None:
        return str(args.format)
    if args.output and str(args.output).lower().endswith(".json"):
        return "json"
    return "md"


async def export(args: argparse.Namespace) -> int:
    """Print or write one session's export (Markdown by default, JSON with ``--format json``)."""
    fmt = _format(args)
    target = Path(args.output) if args.output and args.output != "-" else None
    if target is not None and target.expanduser().is_dir():
        raise usage(f"-o {args.output} is a folder: give a file name, e.g. -o incident.{fmt}")
    from cli.commands.common import connect

    async with connect(args) as backend:
        session_id = await resolve_session(backend, args.session)
        doc = await gather(backend, session_id, datetime.now(UTC))
    text = to_json(doc) if fmt == "json" else to_markdown(doc)
    if target is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        replace_file(target.expanduser(), text)
    except OSError as exc:
        print(f"preloop: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    running = "" if doc["session"]["ended_at"] else " (still running: exported as of now)"
    print(
        f"Exported session {session_id[:8]}{running} to {target} "
        f"({fmt}, {len(doc['timeline'])} events, {len(doc['notes'])} notes, "
        f"{len(doc['approvals'])} approvals).",
        file=sys.stderr,
    )
    return EXIT_OK


__all__ = ["export", "gather", "read_history"]
