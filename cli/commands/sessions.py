"""``preloop sessions list`` and ``preloop sessions attach``."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from cli.commands.common import check_uuid, connect, print_json, render_table, terminal_width, usage
from cli.exits import EXIT_OK
from client.backends.base import Backend, SessionFilter
from client.cells import cell_len
from client.costs import cost_json, cost_words, row_cost
from client.ids import resolve_session, short_id
from client.listing import session_pages
from client.models import Session, SessionList
from client.present import (
    ACTIVE_WINDOW_MINUTES,
    NARROW_DROP_ORDER,
    SORT_DESCRIPTION,
    TITLE_WANTED,
    cell,
    count_cell,
    fit_titles,
    last_activity,
    normalize_kind,
    parse_duration,
    relative_time,
    session_state,
    session_title,
    sort_sessions,
    unique_titles,
)

PAGE_SIZE = 100


def _since(text: str) -> timedelta:
    """``--since``: a readable, non-zero duration (``0m`` would silently match nothing)."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise usage(f"--since: {exc}") from None
    if value <= timedelta(0):
        raise usage(f"--since {text} is no time at all: use e.g. 30m, 2h or 7d")
    return value


def _attach_since(text: str) -> timedelta:
    """``attach --since``: how much history first; ``0s`` (only what happens from now on) is allowed."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise usage(f"--since: {exc}") from None
    return value


def _list_filters(args: argparse.Namespace, now: datetime) -> SessionFilter:
    """Check every flag and combination before any request; a bad one is a usage error naming the fix."""
    if args.json and args.output == "id":
        raise usage("--json and -o id both choose the output: keep one of them")
    if args.wide and (args.json or args.output == "id"):
        raise usage("--wide only widens the table: drop --wide, or drop --json / -o id")
    start_date = None
    if args.since is not None:
        start_date = now - _since(args.since)
    kind = None
    if args.kind is not None:
        kind = normalize_kind(args.kind)
        if not kind:
            raise usage('--kind is empty: give an agent kind such as "claude_code"')
    if args.agent is not None and not args.agent.strip():
        raise usage("--agent is empty: give an agent id or name, or leave the flag out")
    return SessionFilter(
        status="active" if args.active else None,
        active_within_minutes=ACTIVE_WINDOW_MINUTES if args.active else None,
        agent=args.agent.strip() if args.agent else None,
        agent_kind=kind,
        start_date=start_date,
        parent_session_id=check_uuid(args.parent, "--parent"),
        flow_execution_id=check_uuid(args.execution, "--execution"),
    )


async def fetch_sessions(
    backend: Backend, filters: SessionFilter, limit: int
) -> tuple[list[Session], bool, int | None]:
    """Up to ``limit`` rows in pages of 100, following ``has_more`` (``total`` may be null).

    Returns the rows, whether more exist beyond them, and the server's total when it gave one.
    """
    read: list[SessionList] = []
    rows = [row async for row in session_pages(backend, filters, most=limit, size=PAGE_SIZE, read=read)]
    more = bool(read) and read[-1].has_more
    total = next((page.total for page in reversed(read) if page.total is not None), None)
    return rows, more, total


def session_json(row: Session, title: str, now: datetime) -> dict[str, Any]:
    """The row as the server sent it (every field this client knows), plus the computed title, state and
    ``cost`` (tokens in and out and the estimated cost, the same for every server kind; null when the
    server gives none)."""
    data: dict[str, Any] = row.model_dump(mode="json")
    data["display_title"] = title
    data["state"] = session_state(row, now)
    data["cost"] = cost_json(row_cost(row))
    return data


def _narrow_columns(
    keys: list[str], labels: dict[str, str], table: list[dict[str, str]], width: int
) -> list[str]:
    """On a narrow terminal, drop the columns the sessions screen drops first (``NARROW_DROP_ORDER``) while
    the titles lack room, and cut agent names to 10: what tells sessions apart stays."""
    longest = max((cell_len(row["title"]) for row in table), default=0)
    wanted = min(TITLE_WANTED, longest)

    def room(shown: list[str]) -> int:
        widths = [
            max(cell_len(labels[k]), *(cell_len(row[k]) for row in table)) for k in shown if k != "title"
        ]
        return width - sum(widths) - 2 * len(widths)

    shown = list(keys)
    for key in NARROW_DROP_ORDER:
        if room(shown) >= wanted:
            break
        if key in shown:
            shown.remove(key)
    if room(shown) < wanted:
        for row in table:
            row["agent"] = cell(row["agent"], 10)
    return shown


async def list_sessions(args: argparse.Namespace) -> int:
    """Print sessions as a table, ids (one per line, for scripts) or JSON."""
    now = datetime.now(UTC)
    filters = _list_filters(args, now)
    async with connect(args, blocking=True) as backend:
        rows, more, total = await fetch_sessions(backend, filters, args.limit)
    rows = sort_sessions(rows)  # the sessions screen's order too
    titles = unique_titles(rows)
    out = sys.stdout
    if args.json:
        known_total = total if total is not None else (None if more else len(rows))
        print_json(
            {
                "total": known_total,
                "has_more": more,
                "items": [session_json(r, t, now) for r, t in zip(rows, titles, strict=True)],
            }
        )
        return EXIT_OK
    if args.output == "id":
        for row in rows:
            print(cell(row.id), file=out)
        return EXIT_OK
    if not rows:
        print("No sessions match.", file=out)
        return EXIT_OK
    labels = {"id": "ID", "agent": "AGENT", "kind": "KIND", "started": "STARTED"}
    labels |= {"activity": "LAST ACTIVITY", "state": "STATE", "tools": "TOOLS", "model": "MODEL"}
    labels |= {"pending": "PENDING", "cost": "COST", "title": "TITLE"}
    costs = [row_cost(row) for row in rows]
    # A server that gives no tokens or cost for any row gets no COST column (never a column of "$0.00").
    keys = [key for key in labels if (key != "kind" or args.wide) and (key != "cost" or any(costs))]
    table: list[dict[str, str]] = []
    for row, title, cost in zip(rows, titles, costs, strict=True):
        table.append(
            {
                "id": cell(row.id) if args.wide else short_id(row.id),
                "agent": cell(row.agent_label, None if args.wide else 24),
                "kind": cell(row.agent_kind or row.session_source_type),
                "started": relative_time(row.started_at, now),
                "activity": relative_time(last_activity(row), now),
                "state": session_state(row, now),
                "tools": count_cell(row.tool_call_count),
                "model": cell(row.latest_model_alias, None if args.wide else 20),
                "pending": count_cell(row.pending_approval_count),
                "cost": cost_words(cost, split=args.wide, unit=" tok") or "-",
                "title": title,
            }
        )
    width = terminal_width(out)
    if width is not None and not args.wide:
        keys = _narrow_columns(keys, labels, table, width)
    headers = [labels[key] for key in keys]
    cells = [[row[key] for key in keys] for row in table]
    for line in render_table(headers, cells, last_flexible=True, width=width, fit_last=fit_titles):
        print(line, file=out)
    if more:
        shown = len(rows)
        hint = (
            f"pass --limit {min(1000, shown * 2)} or narrow the filters"
            if shown < 1000
            else "narrow the filters"
        )
        print(f"Showing {shown}{f' of {total}' if total else ''} sessions; more exist: {hint}.", file=out)
    if width is not None:
        first = short_id(next((r.id for r in rows if r.ended_at is None), rows[0].id))
        print(f"Sorted {SORT_DESCRIPTION}.", file=out)
        print(
            f"Attach: preloop sessions attach {first}   "
            f'Send a note: preloop notes send --session {first} "..."',
            file=out,
        )
    return EXIT_OK


async def find_execution_session(backend: Backend, execution_id: str) -> str:
    """The session of a flow execution (the live one, else the newest) for ``attach --execution``."""
    from client.errors import NotFound

    rows, _, _ = await fetch_sessions(backend, SessionFilter(flow_execution_id=execution_id), 100)
    if not rows:
        raise NotFound(404, "", f"no session belongs to flow execution {execution_id}")
    live = [r for r in rows if r.ended_at is None]
    pick = max(live or rows, key=lambda r: r.started_at or datetime.min.replace(tzinfo=UTC))
    if len(rows) > 1:
        print(
            f"preloop: flow execution {short_id(execution_id)} has {len(rows)} sessions; "
            f"attaching to {short_id(pick.id)}",
            file=sys.stderr,
        )
    return pick.id


async def attach(args: argparse.Namespace) -> int:
    """Follow one session: the full-screen app on a terminal, else plain lines or JSON lines."""
    if (args.session is None) == (args.execution is None):
        raise usage("give a session id, or --execution UUID (not both)")
    if args.plain and args.json:
        raise usage("--plain and --json both choose the output: keep one of them")
    since = _attach_since(args.since) if args.since is not None else None
    execution = check_uuid(args.execution, "--execution")
    # The app needs a terminal on both ends; `echo note | preloop sessions attach X` is plain mode.
    headless = args.plain or args.json or not sys.stdout.isatty() or not sys.stdin.isatty()
    if not headless and since is not None:
        print(
            "preloop: note: the full-screen app shows the newest 5,000 events; --since applies to "
            "--plain and --json",
            file=sys.stderr,
        )
    async with connect(args) as backend:
        if execution is not None:
            session_id = await find_execution_session(backend, execution)
        else:
            session_id = await resolve_session(backend, args.session)
        # A full id is taken as given: make sure it exists (404: exit 1) before anything opens.
        row = await backend.get_session(session_id)
        if not headless:
            from cli.commands.tui_entry import open_app

            print(f"Attaching to {short_id(session_id)}...", file=sys.stderr)
            return await open_app(backend, session_id=session_id, read_only=args.read_only)
        from cli.plain import DEFAULT_HISTORY, follow_plain

        # An ended session has nothing new to show: replay its whole history instead of nothing.
        replay_all = row.ended_at is not None and since is None
        history_from = None
        if since is None and not replay_all:
            history_from = (last_activity(row) or datetime.now(UTC)) - DEFAULT_HISTORY
        return await follow_plain(
            backend,
            session_id,
            since=since,
            history_from=history_from,
            json_lines=args.json,
            read_only=args.read_only or row.ended_at is not None,
            title=session_title(row),
            replay_all=replay_all,
        )
