"""``preloop notes send | list | withdraw``."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta

from cli.commands.common import (
    check_uuid,
    connect,
    print_json,
    read_stdin_text,
    render_table,
    terminal_width,
    usage,
)
from cli.exits import EXIT_FAILED, EXIT_OK
from client.ids import require_note_id, resolve_session, short_id
from client.listing import session_notes
from client.models import Note
from client.notetext import NOTE_EMPTY, note_text_problem
from client.present import (
    cell,
    format_duration,
    note_author,
    parse_duration,
    relative_time,
    withdraw_outcome,
)
from client.textsafe import safe_line

TEXT_CELLS = 200
"""A note's text in the ``notes list`` table is cut to this (and, on a terminal, to its width), so a long
note (up to 4096 characters) leaves the table a table when piped too; ``--json`` keeps the whole text."""

MIN_EXPIRY = timedelta(seconds=60)
MAX_EXPIRY = timedelta(days=7)


def _expiry(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        delta = parse_duration(text)
    except ValueError as exc:
        raise usage(f"--expires-in: {exc}") from None
    if not MIN_EXPIRY <= delta <= MAX_EXPIRY:
        raise usage(f"--expires-in {text} is out of range: use between 60s and 7d")
    return int(delta.total_seconds())


async def send(args: argparse.Namespace) -> int:
    """Send one note to exactly one target; the body comes from the argument or standard input."""
    targets = [flag for flag, value in (("--session", args.session), ("--agent", args.agent),
               ("--execution", args.execution)) if value is not None]  # fmt: skip
    if len(targets) != 1:
        named = " and ".join(targets) if targets else "none"
        raise usage(f"give exactly one target: --session ID, --agent ID or --execution UUID (got {named})")
    expires = _expiry(args.expires_in)
    execution = check_uuid(args.execution, "--execution")
    if args.agent is not None and not args.agent.strip():
        raise usage("--agent is empty: give the agent's id")
    text = args.text
    if text is None or text == "-":
        text = read_stdin_text()
    problem = note_text_problem(text)
    if problem == NOTE_EMPTY:
        raise usage("the note is empty: give the text as an argument or on standard input")
    if problem is not None:
        raise usage(problem)
    from client.steering import Sent, Steering

    async with connect(args) as backend:
        session = await resolve_session(backend, args.session) if args.session is not None else None
        outcome = await Steering(backend).send_note(
            text,
            session_id=session,
            agent_id=args.agent.strip() if args.agent else None,
            execution_id=execution,
            expires_in_seconds=expires,
        )
    if not isinstance(outcome, Sent):
        raise outcome.error  # not sent, or not known: said as the error, exit 1
    note = outcome.note
    if session is not None:
        kind, target = "session", session
    elif execution is not None:
        kind, target = "execution", execution
    else:
        kind, target = "agent", args.agent.strip()
    if args.json:
        print_json({"note_id": note.note_id, "target": {"kind": kind, "id": target}})
        return EXIT_OK
    expiry = ""
    if note.expires_at is not None and note.created_at is not None:
        expiry = f"; expires in {format_duration(note.expires_at - note.created_at)} if not delivered"
    print(f"Sent note {cell(note.note_id)} to {kind} {cell(target)} ({safe_line(note.state)}{expiry}).")
    print(f"Withdraw it with: preloop notes withdraw {cell(note.note_id)}", file=sys.stderr)
    return EXIT_OK


def _note_row(note: Note, now: datetime, me: str | None) -> list[str]:
    when = note.delivered_at or note.cancelled_at or note.expired_at or note.undeliverable_at
    return [
        cell(note.note_id),
        cell(note.state),
        cell(note_author(note, me) or "-", 24),
        relative_time(note.created_at, now),
        relative_time(when, now) if when else "-",
        cell(note.text, TEXT_CELLS),
    ]


def _check_output(args: argparse.Namespace) -> None:
    if args.json and args.output == "id":
        raise usage("--json and -o id both choose the output: keep one of them")


def _print_scripted(args: argparse.Namespace, notes: list[Note]) -> bool:
    """The output for scripts, ``-o id`` or ``--json``; False when a table is wanted instead."""
    if args.output == "id":
        for note in notes:
            print(cell(note.note_id))
        return True
    if args.json:
        print_json({"total": len(notes), "notes": [n.model_dump(mode="json") for n in notes]})
        return True
    return False


async def list_notes(args: argparse.Namespace) -> int:
    """A session's notes, newest state first, so an operator sees what the agent has and has not read."""
    _check_output(args)
    now = datetime.now(UTC)
    async with connect(args, blocking=True) as backend:
        session = await resolve_session(backend, args.session)
        notes = await session_notes(backend, session, args.state)
        me = await backend.whoami() if args.output != "id" and not args.json else None
    if _print_scripted(args, notes):
        return EXIT_OK
    if not notes:
        state = f" in state {args.state}" if args.state else ""
        print(f"No notes{state} for session {short_id(session)}.")
        return EXIT_OK
    rows = [_note_row(n, now, me.id if me is not None else None) for n in notes]
    headers = ["NOTE", "STATE", "BY", "CREATED", "SETTLED", "TEXT"]
    for line in render_table(headers, rows, last_flexible=True, width=terminal_width(sys.stdout)):
        print(line)
    return EXIT_OK


async def withdraw(args: argparse.Namespace) -> int:
    """Withdraw a pending note; exit 1 (and say why) when it reached the agent or expired first; a note
    withdrawn before says so and exits 0: the state asked for holds (what ``--help`` says)."""
    require_note_id(args.note_id)  # a malformed id is a usage error before any request
    from client.ids import resolve_note
    from client.steering import Steering, TooLate, WithdrawFailed

    async with connect(args) as backend:
        session = await resolve_session(backend, args.session) if args.session else None
        note_id = await resolve_note(backend, args.note_id, session)
        outcome = await Steering(backend).withdraw(note_id)
    if isinstance(outcome, WithdrawFailed):
        raise outcome.error
    note = outcome.note
    # Not pending when asked: withdrawn before holds (exit 0); delivered, expired...: nothing changed, exit 1.
    withdrawn, sentence = withdraw_outcome(note, too_late=isinstance(outcome, TooLate))
    sentence = sentence[0].upper() + sentence[1:] + "."
    if args.json:
        print_json(note.model_dump(mode="json"))
        print(sentence, file=sys.stderr)
    else:
        print(sentence)
    return EXIT_OK if withdrawn else EXIT_FAILED
