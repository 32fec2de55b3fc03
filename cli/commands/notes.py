"""``preloop notes send | list | withdraw``."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta

from cli.commands.common import (
    check_uuid,
    connect,
    print_json,
    read_stdin_text,
    render_table,
    resolve_session,
    terminal_width,
    usage,
)
from cli.exits import EXIT_FAILED, EXIT_OK
from client.backend import Backend
from client.errors import ClientError
from client.ids import require_note_id
from client.models import Note
from client.notetext import NOTE_EMPTY, note_text_problem
from client.present import cell, format_duration, parse_duration, relative_time, short_id, withdraw_outcome
from client.textsafe import safe_line

NOTES_PAGE = 100
NOTES_MAX = 1000

FULL_NOTE_ID = 16
"""Note ids are 16 hex characters (Preloop and the local server); shorter hex is a prefix to look up."""

SEARCH_SESSIONS = 100
"""How many of the newest sessions a short note id is looked for in (without ``--session``)."""

_HEX = re.compile(r"^[0-9a-fA-F]+$")

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
    import uuid

    async with connect(args) as backend:
        session = await resolve_session(backend, args.session) if args.session is not None else None
        note = await backend.send_note(
            text,
            session_id=session,
            agent_id=args.agent.strip() if args.agent else None,
            execution_id=execution,
            expires_in_seconds=expires,
            correlation_id=uuid.uuid4().hex,
        )
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


def _note_row(note: Note, now: datetime) -> list[str]:
    when = note.delivered_at or note.cancelled_at or note.expired_at or note.undeliverable_at
    return [
        cell(note.note_id),
        cell(note.state),
        relative_time(note.created_at, now),
        relative_time(when, now) if when else "-",
        cell(note.text),
    ]


async def _session_notes(backend: Backend, session: str, state: str | None = None) -> list[Note]:
    """Up to 1,000 notes of one session, newest first, in pages of 100."""
    notes: list[Note] = []
    offset = 0
    while True:
        page = await backend.list_notes(session_id=session, state=state, limit=NOTES_PAGE, offset=offset)
        notes.extend(page.notes)
        offset += len(page.notes)
        if len(page.notes) < NOTES_PAGE or (page.total is not None and offset >= page.total):
            return notes
        if offset >= NOTES_MAX:
            return notes


async def list_notes(args: argparse.Namespace) -> int:
    """A session's notes, newest state first, so an operator sees what the agent has and has not read."""
    if args.json and args.output == "id":
        raise usage("--json and -o id both choose the output: keep one of them")
    now = datetime.now(UTC)
    async with connect(args, one_shot=True) as backend:
        session = await resolve_session(backend, args.session)
        notes = await _session_notes(backend, session, args.state)
    if args.output == "id":
        for note in notes:
            print(cell(note.note_id))
        return EXIT_OK
    if args.json:
        print_json({"total": len(notes), "notes": [n.model_dump(mode="json") for n in notes]})
        return EXIT_OK
    if not notes:
        state = f" in state {args.state}" if args.state else ""
        print(f"No notes{state} for session {short_id(session)}.")
        return EXIT_OK
    rows = [_note_row(n, now) for n in notes]
    headers = ["NOTE", "STATE", "CREATED", "SETTLED", "TEXT"]
    for line in render_table(headers, rows, last_flexible=True, width=terminal_width(sys.stdout)):
        print(line)
    return EXIT_OK


class NoteIdError(ClientError):
    """A short note id that matches no note, or several."""

    title = "no such note"


async def resolve_note(backend: Backend, value: str, session: str | None = None) -> str:
    """A full note id as given; a short one (4+ hex characters, as the CLI and the app print them) matched
    against the notes of ``session``, or of the newest sessions.

    Servers list notes only per target, so a short id is looked up session by session (a few at a time).
    """
    text = require_note_id(value)
    if len(text) >= FULL_NOTE_ID or not _HEX.match(text):
        return text
    if len(text) < 4:
        raise usage(f"note id '{text}' is too short: give at least 4 characters, or the full id")
    if session is not None:
        sessions = [session]
    else:
        page = await backend.list_sessions(limit=SEARCH_SESSIONS)
        sessions = [row.id for row in page.items]
    import asyncio

    gate = asyncio.Semaphore(4)

    async def ids_in(sid: str) -> list[str]:
        async with gate:
            return [n.note_id for n in await _session_notes(backend, sid)]

    found = await asyncio.gather(*(ids_in(sid) for sid in sessions))
    prefix = text.lower()
    matches = sorted({nid for ids in found for nid in ids if nid.lower().startswith(prefix)})
    if len(matches) == 1:
        return matches[0]
    where = f"session {short_id(session)}" if session else f"the newest {len(sessions)} sessions"
    if not matches:
        raise NoteIdError(
            f"no note of {where} starts with '{text}': give the full id "
            "(`preloop notes list --session ID` shows them)"
        )
    shown = ", ".join(m[:8] for m in matches[:5])
    raise NoteIdError(f"'{text}' matches {len(matches)} notes ({shown}): type more characters")


async def withdraw(args: argparse.Namespace) -> int:
    """Withdraw a pending note; exit 1 (and say why) when it was already past pending."""
    require_note_id(args.note_id)  # a malformed id is a usage error before any request
    async with connect(args) as backend:
        session = await resolve_session(backend, args.session) if args.session else None
        note_id = await resolve_note(backend, args.note_id, session)
        note = await backend.withdraw_note(note_id)
    withdrawn, sentence = withdraw_outcome(note)
    sentence = sentence[0].upper() + sentence[1:] + "."
    if args.json:
        print_json(note.model_dump(mode="json"))
        print(sentence, file=sys.stderr)
    else:
        print(sentence)
    return EXIT_OK if withdrawn else EXIT_FAILED
