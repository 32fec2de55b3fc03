"""``preloop sessions digest ID [--since 30m | --since-last]`` and ``sessions digest --all --since 8h``.

What changed in a session while the operator was away, or over a shift, computed by ``client.digest``
from what ``client.history`` reads (only the events since the time asked, where the server allows): the
lines the attach screen shows above its "new since you last looked" rule, or Markdown to paste into a
ticket (``--format md``: times with their zone), or JSON for scripts (``--json``).

``--since-last`` reads the mark the full-screen app keeps for the session in the state directory
(``client.marks``: where the operator last looked, on this machine) and never moves it: only looking moves
a mark.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from cli.commands.common import connect, print_json, usage
from cli.exits import EXIT_OK
from client.digest import (
    Since,
    digest_json,
    digest_lines,
    digest_markdown,
    handoff_json,
    handoff_lines,
    handoff_markdown,
)
from client.history import read_digest, read_handoff
from client.ids import resolve_session, short_id
from client.marks import MarkStore
from client.paths import state_dir
from client.present import parse_duration
from client.textsafe import safe_line


def _window(text: str) -> datetime:
    try:
        window = parse_duration(text)
    except ValueError as exc:
        raise usage(f"--since: {exc}") from None
    if window.total_seconds() <= 0:
        raise usage(f"--since {text} is no time at all: use e.g. 30m, 2h or 8h")
    return datetime.now(UTC) - window


def _check(args: argparse.Namespace) -> None:
    if args.json and args.format != "text":
        raise usage("--json and --format md both choose the output: keep one of them")
    if args.all:
        if args.session is not None:
            raise usage("--all reads every session: drop the session id, or drop --all")
        if args.since_last:
            raise usage("--all needs a window (--since 8h): each session's last look is its own")
        if args.since is None:
            raise usage("--all needs a window: e.g. preloop sessions digest --all --since 8h")
        return
    if args.session is None:
        raise usage("give a session id (or --all --since 8h for the shift handoff)")
    if args.since_last == (args.since is not None):
        raise usage("say since when: --since 30m, or --since-last (where you last looked)")


async def digest(args: argparse.Namespace) -> int:
    """Print one session's digest, or the shift handoff with ``--all``."""
    _check(args)
    now = datetime.now(UTC)
    start = _window(args.since) if args.since is not None else None
    async with connect(args) as backend:
        if args.all:
            assert start is not None
            handoff = await read_handoff(backend, start, now)
            if args.json:
                print_json(handoff_json(handoff))
            elif args.format == "md":
                sys.stdout.write(handoff_markdown(handoff))
            else:
                print("\n".join(handoff_lines(handoff)))
            return EXIT_OK
        session_id = await resolve_session(backend, args.session)
        if args.since_last:
            mark = MarkStore(state_dir() / "marks").get(session_id)
            if mark is None:
                raise usage(
                    f"no mark for {short_id(session_id)}: it was never looked at in the app on this machine"
                    " (marks are kept per machine); use --since 30m instead"
                )
            since = Since.mark(mark.place, mark.looked_at)
        else:
            assert start is not None
            since = Since(start)
        result = await read_digest(backend, session_id, since, now)
    if args.json:
        print_json(digest_json(result))
    elif args.format == "md":
        sys.stdout.write(digest_markdown(result))
    else:
        title = f" “{safe_line(result.title, 60)}”" if result.title else ""
        print(f"Session {short_id(session_id)} {safe_line(result.agent, 30)}{title}")
        print("\n".join(f"  {line}" for line in digest_lines(result)))
    return EXIT_OK


__all__ = ["digest"]
