"""Headless attach: one line per event (or one JSON object per line), steering from standard input.

Used by ``preloop sessions attach`` with ``--plain`` / ``--json`` or when stdout is not a terminal, so an
attach can be piped into ``grep``, ``jq`` or ``head``. Standard output carries only events; connection
notices and the answers to typed commands go to standard error.

Typed lines (``cli.plain_input.parse_input``) are notes, except:

* a line ending in ``\\`` continues on the next line (multi-line notes);
* ``/approve [ID]``, ``/decline [ID] [COMMENT]``, ``/withdraw NOTE_ID``, ``/help``, ``/quit``;
* ``//text`` sends the note ``/text``;
* any other line starting with ``/`` is refused: a mistyped command is never sent to an agent as a note.

A decision typed without an id decides the one approval this attach has shown (printed or named on
attach), and only while it is the only one shown and is not of a risk that must be named
(``client.steering.NAME_RISKS``): otherwise, and for an approval that is no longer pending, the command
is refused by name and the error says what to type instead. Approving a call of ``ASK_RISKS`` asks
"approve <tool> <first line>? [y/N]" and reads the answer from the next line: anything but ``y`` / ``yes``
approves nothing.

Standard input is read with the event loop's reader (no thread), so a session that ends while nobody
types lets the command exit at once.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TextIO

from cli.exits import EXIT_FAILED, EXIT_OK
from cli.plain_input import (
    HELP,
    Command,
    Decide,
    LineJoiner,
    Quit,
    Refuse,
    SendNote,
    ShowHelp,
    Withdraw,
    parse_input,
)
from client.backends.base import Backend
from client.errors import ClientError
from client.events import (
    ApprovalRequested,
    Event,
    ModelDelta,
    ModelStep,
    SessionStarted,
    SessionUpdated,
    event_to_json,
)
from client.ids import resolve_approval, resolve_note, short_id
from client.models import Approval
from client.present import (
    clock,
    decision_words,
    event_line,
    format_duration,
    session_title,
    settled_line,
    withdraw_outcome,
)
from client.preview import approval_preview
from client.session import SessionCore
from client.status import (
    Connecting,
    Ended,
    Live,
    LoginNeeded,
    Missed,
    Reconnecting,
    Refused,
    Skipped,
    StreamStatus,
)
from client.steering import (
    ASK_RISKS,
    NAME_RISKS,
    AlreadySettled,
    Decided,
    DecisionFailed,
    NotSent,
    Sent,
    Steering,
    TooLate,
    Verb,
    WithdrawFailed,
    risk_of,
)
from client.stream_words import OutageLines, status_line
from client.textsafe import safe_line
from client.timeline import TextEntry, TextPhase, Timeline, TimelineChanges

_KIND_STYLE = {
    "text": "",
    "commentary": "dim",
    "answer": "bold green",
    "done": "bold green",
    "tool": "cyan",
    "approval": "bold yellow",
    "note": "blue",
    "failed": "bold red",
    "cancelled": "yellow",
    "session": "dim",
    "run": "bold",
    "unknown": "dim",
}


# -------------------------------------------------------------------------------------------- input


def _start_stdin_reader(queue: asyncio.Queue[str | None]) -> Callable[[], None]:
    """Feed stdin lines into ``queue`` (None at end of input); returns a function that stops reading."""
    loop = asyncio.get_running_loop()
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        queue.put_nowait(None)
        return lambda: None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buffer = ""

    def on_readable() -> None:
        nonlocal buffer
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            loop.remove_reader(fd)
            rest = buffer + decoder.decode(b"", final=True)
            buffer = ""
            if rest:
                queue.put_nowait(rest)
            queue.put_nowait(None)
            return
        buffer += decoder.decode(chunk)
        *lines, buffer = buffer.split("\n")
        for line in lines:
            queue.put_nowait(line)

    try:
        loop.add_reader(fd, on_readable)
    except (OSError, ValueError, NotImplementedError):
        # A regular file or /dev/null cannot be polled; it never blocks either, so read it whole now.
        data = sys.stdin.read()
        for line in data.split("\n")[:-1] if data.endswith("\n") else data.split("\n"):
            queue.put_nowait(line)
        queue.put_nowait(None)
        return lambda: None

    def stop() -> None:
        with contextlib.suppress(Exception):
            loop.remove_reader(fd)

    return stop


# -------------------------------------------------------------------------------------------- output


class _Printer:
    """Event lines on stdout (colour only on a terminal), notices on stderr.

    Model text is read from the session's timeline (``client.timeline``, which joins a step's deltas), as
    the digest and the export read it: one line per model step when the step ends, and a text that never
    ended (its run failed or was cancelled, the session or the stream ended) marked as cut off."""

    def __init__(self, out: TextIO, err: TextIO, json_lines: bool) -> None:
        from cli.commands.common import Style

        self.out, self.err, self.json_lines = out, err, json_lines
        self.style = Style(out)
        self.err_style = Style(err)
        self._title: str | None = None
        self.by_you: Callable[[Approval], bool] | None = None
        """Tells the approvals this operator decided (a decided line then says "by you")."""
        self._texts_shown: set[int] = set()

    def notice(self, text: str) -> None:
        print(self.err_style(f"-- {text}", "dim"), file=self.err, flush=True)

    def question(self, text: str) -> None:
        """A question the next typed line answers, on a line of its own (not a dim notice)."""
        print(self.err_style(text, "bold"), file=self.err, flush=True)

    def line(self, at: datetime | None, kind: str, text: str) -> None:
        when = self.style(clock(at), "dim")
        label = self.style(f"{kind:<10}", _KIND_STYLE.get(kind, ""))
        print(f"{when} {label} {text}".rstrip(), file=self.out, flush=True)

    def event(self, event: Event, timeline: Timeline, changes: TimelineChanges | None) -> None:
        """Print one event the timeline has applied (``changes``: what applying it changed)."""
        if self.json_lines:
            print(event_to_json(event), file=self.out, flush=True)
            return
        if isinstance(event, SessionUpdated):
            # Counters change on every step; a line is worth printing only when the title does.
            title = session_title(event.session)
            if title == self._title:
                return
            self._title = title
        elif isinstance(event, SessionStarted):
            self._title = session_title(event.session)
        if isinstance(event, ModelDelta):
            return  # shown as one line when its step ends (one line per model step)
        texts = self._settled(timeline, changes)
        if isinstance(event, ModelStep):
            step = next((t for t in texts if t.iteration == event.iteration), None)
            if step is not None and not event.text and step.text:
                event = event.model_copy(update={"text": step.text})
            texts = [t for t in texts if t is not step]
        for text in texts:  # what this event settled without a step of its own
            if text.phase is TextPhase.INTERRUPTED:
                self.cut_off(event.at, text)
            elif text.phase is TextPhase.COMMENTARY and text.text.strip():
                self.line(event.at, "commentary", safe_line(text.text))
            # (a final answer settled by run.completed is the "done" line itself)
        kind, line = event_line(event, by_you=self.by_you)
        self.line(event.at, kind, line)

    def cut_off(self, at: datetime | None, text: TextEntry) -> None:
        """Text of a step that never finished (run cut off) is still shown, marked as partial."""
        if text.text.strip():
            self.line(at, "text", safe_line(text.text) + " (cut off)")

    def stream_ended(self, timeline: Timeline) -> None:
        """The stream ended: texts still streaming were cut off by it."""
        if self.json_lines:
            return
        for entry in timeline:
            if isinstance(entry, TextEntry) and entry.phase is TextPhase.STREAMING:
                self.cut_off(None, entry)

    def _settled(self, timeline: Timeline, changes: TimelineChanges | None) -> list[TextEntry]:
        """The texts these changes settled (no longer streaming) that were not shown yet."""
        if changes is None:
            return []
        shown = self._texts_shown
        settled: list[TextEntry] = []
        for entry_id in (*changes.appended, *changes.updated):
            entry = timeline.get(entry_id)
            if (
                isinstance(entry, TextEntry)
                and entry.phase is not TextPhase.STREAMING
                and entry_id not in shown
            ):
                shown.add(entry_id)
                settled.append(entry)
        if len(shown) > 4 * timeline.max_entries:  # entries the timeline dropped are never shown again
            self._texts_shown = {i for i in shown if i >= changes.first_id}
        return settled


def status_text(status: StreamStatus) -> str:
    """A short sentence for a connection state change (``client.stream_words``: every front end's)."""
    return "session ended" if isinstance(status, Ended) else status_line(status)


# -------------------------------------------------------------------------------------------- steering


Ask = Callable[[str], Awaitable[str | None]]
"""Print a question and return the next typed line (None: input ended)."""


async def _no_answer(question: str) -> None:
    return None


def _call(approval: Approval, width: int = 80) -> str:
    """The call named in one line: its preview's first line (``client.preview``: the command, the file an
    edit changes and its +/- counts, else its first argument)."""
    return safe_line(approval_preview(approval).first_line, width)


def _past(verb: Verb) -> str:
    return "approved" if verb == "approve" else "declined"


class _Commands:
    """Carries out typed commands through ``client.steering``; the session's state (pending approvals,
    notes) is a ``client.session.SessionCore`` fed by the stream. Every outcome is reported on stderr."""

    def __init__(self, backend: Backend, session_id: str, printer: _Printer, ask: Ask = _no_answer) -> None:
        self.backend = backend
        self.session_id = session_id
        self.printer = printer
        self.ask = ask
        self.steering = Steering(backend)
        self.core = SessionCore(session_id, decisions=self.steering.decisions)
        self.shown: dict[str, Approval] = {}
        """The approvals this attach has shown the operator (a printed request, a name on attach), in
        order: a decision typed without an id may only mean the one shown, and only while it is alone."""

    def show(self, approval: Approval) -> None:
        """The operator has been shown this approval (its request printed, or named as waiting)."""
        self.shown.setdefault(approval.id, approval)

    async def run(self, command: Command) -> bool:
        """Carry out one command; False means quit."""
        try:
            match command:
                case SendNote(text=text):
                    await self._send(text)
                case Decide():
                    await self._decide(command)
                case Withdraw(note=note):
                    await self._withdraw(note)
                case ShowHelp():
                    print(HELP, file=self.printer.err, flush=True)
                case Quit():
                    return False
                case Refuse(reason=reason):
                    self.printer.notice(reason)
        except ClientError as exc:
            self.printer.notice(f"{exc.title}: {exc.hint}")
        return True

    async def _send(self, text: str) -> None:
        outcome = await self.steering.send_note(text, session_id=self.session_id)
        self.core.record(outcome)
        if isinstance(outcome, Sent):
            nid = short_id(outcome.note.note_id)
            self.printer.notice(f"note {nid} sent ({outcome.note.state}); /withdraw {nid}")
            return
        self.printer.notice(f"{outcome.error.title}: {outcome.error.hint}")
        if isinstance(outcome, NotSent):
            self.printer.notice("your note was NOT sent; it was:")
            print(safe_line(text) if "\n" not in text else text, file=self.printer.err)

    async def pending(self) -> list[Approval]:
        """The session's pending approvals: the server's list merged under what the stream said."""
        await self._pending_now()
        return list(self.core.pending.values())

    async def _pending_now(self) -> dict[str, Approval]:
        """The server's list of pending approvals as it answers now (merged into the core too)."""
        page = await self.backend.list_approvals(session_id=self.session_id, status="pending")
        self.core.lists_loaded((), page.items)
        return {a.id: a for a in page.items}

    async def _decide(self, command: Decide) -> None:
        verb = command.verb
        waiting = await self._pending_now()
        if command.approval is None:
            target_id = self._the_one_shown(command, waiting)
            if target_id is None:
                return
        else:
            known = [*self.shown, *self.core.timeline.approvals]
            target_id = await resolve_approval(self.backend, command.approval, self.session_id, known=known)
        approval = waiting.get(target_id) or await self.steering.current(target_id)
        sid = short_id(target_id)
        if approval is None:
            self.printer.notice(f"approval {sid} could not be read: nothing {_past(verb)}; try again")
            return
        if not approval.pending:
            self.core.lists_loaded((), [approval])
            said = settled_line(approval, you=self.steering.decisions.by_you(approval))
            if self.steering.decisions.here(approval.id):
                said += " (from here)"
            self.printer.notice(
                f"{said}: nothing {_past(verb)}. {self._instead(command, waiting, target_id)}"
            )
            return
        risk = risk_of(approval)
        tool = safe_line(approval.tool_name or "tool", 40)
        if command.approval is None and risk in NAME_RISKS:
            self.printer.notice(
                f"approval {sid} is a {risk}-risk {tool} call ({_call(approval, 60)}): nothing "
                f"{_past(verb)}; a {risk}-risk call is decided by its id: {self._how(command, target_id)}"
            )
            return
        if verb == "approve" and risk in ASK_RISKS:
            answer = await self.ask(f"approve {tool} {_call(approval)}? [y/N]")
            said = (answer or "").strip()
            if said.lower() not in ("y", "yes"):
                self.printer.notice(f"not approved: approval {sid} ({tool}) still waits")
                if said.lower() not in ("", "n", "no"):  # words, maybe meant as a note: say where they went
                    self.printer.notice(
                        f"the line {safe_line(said, 200)!r} answered the question; not sent as a note"
                    )
                return
        outcome = await self.steering.decide(target_id, verb, command.comment)
        self.core.record(outcome)
        if isinstance(outcome, Decided):
            self.printer.notice(f"approval {sid} {safe_line(outcome.approval.status)}")
        elif isinstance(outcome, AlreadySettled):
            said = decision_words(outcome.approval, you=outcome.by_you)
            self.printer.notice(f"approval {sid} was already {said}: nothing decided")
        elif isinstance(outcome, DecisionFailed):
            self.printer.notice(f"{outcome.error.title}: {outcome.error.hint}")

    def _the_one_shown(self, command: Decide, waiting: dict[str, Approval]) -> str | None:
        """The approval a decision typed without an id means: the one this attach has shown, when it is
        the only one; otherwise None, and a notice says which ids to type."""
        verb = command.verb
        if len(self.shown) == 1:
            return next(iter(self.shown))
        if not self.shown and not waiting:
            self.printer.notice(f"no approval is pending in this session: nothing {_past(verb)}")
            return None
        if self.shown:
            said = f"{len(self.shown)} approvals have been shown in this attach: name the one to {verb}"
        else:
            said = f"no approval has been shown in this attach yet: name the one to {verb}"
        self.printer.notice(f"{said}; nothing {_past(verb)}. {self._instead(command, waiting)}")
        return None

    def _how(self, command: Decide, approval_id: str) -> str:
        """The command to type: the same one, naming ``approval_id``."""
        comment = command.comment or ""
        said = "" if not comment else f" {safe_line(comment, 200)}" if "\n" not in comment else " COMMENT"
        return f"/{command.verb} {short_id(approval_id)}{said}"

    def _instead(self, command: Decide, waiting: dict[str, Approval], leave: str | None = None) -> str:
        """What to type instead: the approvals pending now (named by id, tool and first line)."""
        never = datetime.max.replace(tzinfo=UTC)
        rows = sorted(
            (a for a in waiting.values() if a.id != leave), key=lambda a: a.requested_at or never
        )  # oldest first: the longest-blocked
        if not rows:
            return "No approval is pending in this session now."
        listed = "; ".join(
            f"{short_id(a.id)} {safe_line(a.tool_name or 'tool', 40)}"
            + (f" [risk {safe_line(a.risk_level, 12)}]" if a.risk_level else "")
            + f": {_call(a, 50)}"
            for a in rows[:3]
        )
        more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
        return f"Pending now: {listed}{more}. Type e.g. {self._how(command, rows[0].id)}"

    async def _withdraw(self, prefix: str) -> None:
        note_id = await resolve_note(self.backend, prefix, self.session_id, known=self.core.notes)
        outcome = await self.steering.withdraw(note_id)
        self.core.record(outcome)
        if isinstance(outcome, WithdrawFailed):
            self.printer.notice(f"{outcome.error.title}: {outcome.error.hint}")
        else:
            self.printer.notice(withdraw_outcome(outcome.note, too_late=isinstance(outcome, TooLate))[1])


# -------------------------------------------------------------------------------------------- main loop


_ANNOUNCE_MAX = 5

DEFAULT_HISTORY = timedelta(minutes=5)
"""``attach --plain/--json`` without ``--since`` first prints what the session did in the five minutes up
to its last activity (like ``kubectl logs -f``), so attaching to an idle session is not a blank screen."""


async def _announce_pending(steer: _Commands, threshold: datetime, read_only: bool) -> None:
    """Approvals already waiting when we attach are older than the history shown, yet they are what the
    operator must act on: name them up front (on stderr, so ``--json`` output stays the stream's)."""
    try:
        waiting = await steer.pending()
    except ClientError:
        return  # the stream itself will report a server that refuses or fails
    # Requested inside the replayed window: its own line follows. Oldest first: the longest-blocked.
    hidden = sorted(
        (a for a in waiting if a.requested_at is None or a.requested_at < threshold),
        key=lambda a: a.requested_at or threshold,
    )
    for approval in hidden:
        steer.show(approval)  # named, or counted in "N more": either way the operator was told of it
    for approval in hidden[:_ANNOUNCE_MAX]:
        what = safe_line(approval.summary or approval.tool_name or "a tool call", 200)
        risk = f" [risk {safe_line(approval.risk_level, 12)}]" if approval.risk_level else ""
        sid = short_id(approval.id)
        how = "" if read_only else f" (/approve {sid} or /decline {sid})"
        steer.printer.notice(f"approval {sid} is waiting: {what}{risk}{how}")
    if len(hidden) > _ANNOUNCE_MAX:
        more = len(hidden) - _ANNOUNCE_MAX
        steer.printer.notice(
            f"and {more} more waiting: preloop approvals list --session {short_id(steer.session_id)}"
        )


async def follow_plain(
    backend: Backend,
    session_id: str,
    *,
    since: timedelta | None,
    json_lines: bool,
    read_only: bool,
    history_from: datetime | None = None,
    title: str | None = None,
    replay_all: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print the session's events until it ends; returns 0 when it ended, 1 when the stream was refused.

    History before ``history_from`` (else older than ``since``; all of it when neither is given, none with
    ``replay_all``) is not printed but still read, so the pending approvals and notes are known when the
    first live line appears.
    """
    printer = _Printer(out or sys.stdout, err or sys.stderr, json_lines)
    steer = _Commands(backend, session_id, printer)
    printer.by_you = steer.steering.decisions.by_you
    with contextlib.suppress(ClientError):
        await steer.steering.decisions.learn_me(backend)
    now = datetime.now(UTC)
    threshold: datetime | None = None if replay_all else now - (since or timedelta(0))
    if history_from is not None and not replay_all:
        threshold = history_from
    named = f"{session_id} ({title})" if title else session_id
    if replay_all:
        printer.notice(f"session {named} has ended; replaying its history")
    else:
        printer.notice(
            f"attached to session {named}"
            + ("" if read_only else "; type a note and press Enter, /help for commands")
        )
    if history_from is not None and not replay_all:
        printer.notice(
            f"showing its history from {clock(history_from)} "
            f"({format_duration(DEFAULT_HISTORY)} before its last activity); "
            "--since 2h shows more, --since 0s only what happens from now on"
        )
    if threshold is not None:
        await _announce_pending(steer, threshold, read_only)
    input_task: asyncio.Task[None] | None = None
    stop_reading: Callable[[], None] = lambda: None  # noqa: E731
    quit_event = asyncio.Event()
    if not read_only:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        stop_reading = _start_stdin_reader(queue)

        async def ask(question: str) -> str | None:
            printer.question(question)
            answer = await queue.get()
            if answer is None:
                queue.put_nowait(None)  # the end of input still ends the loop below
            return answer

        steer.ask = ask

        async def consume() -> None:
            joiner = LineJoiner()
            while True:
                line = await queue.get()
                if line is None:
                    # End of input in the middle of a continued note: send what was typed.
                    command = parse_input(joiner.flush())
                    if command is not None:
                        await steer.run(command)
                    return
                text = joiner.feed(line)
                if text is None:
                    continue
                command = parse_input(text)
                if command is not None and not await steer.run(command):
                    quit_event.set()
                    return

        input_task = asyncio.create_task(consume())

    async def pump() -> int:
        replaying = True
        outage = OutageLines()  # a lost stream or refused token is one line, not one per retry
        async for item in backend.follow(session_id):
            if isinstance(item, Connecting | Live | Reconnecting | LoginNeeded):
                said = outage.update(item, datetime.now(UTC))
                if said is not None:
                    printer.notice(said)
                continue
            if isinstance(item, Refused):
                printer.notice(status_text(item))
                return EXIT_FAILED
            if isinstance(item, Ended):
                printer.stream_ended(steer.core.timeline)
                printer.notice(status_text(item))
                return EXIT_OK
            if isinstance(item, Missed | Skipped):
                printer.notice(status_text(item))
                continue
            change = steer.core.apply_events((item,))
            if replaying and threshold is not None and item.at < threshold:
                continue
            replaying = False
            printer.event(item, steer.core.timeline, change.timeline)
            if isinstance(item, ApprovalRequested):
                steer.show(item.approval)
        return EXIT_OK

    pump_task = asyncio.create_task(pump())
    quit_wait = asyncio.create_task(quit_event.wait())
    try:
        done, _ = await asyncio.wait({pump_task, quit_wait}, return_when=asyncio.FIRST_COMPLETED)
        if pump_task in done:
            code = pump_task.result()
            if input_task is not None and not input_task.done():
                # Let a command typed just before the end finish, briefly.
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(input_task), 0.05)
            return code
        printer.notice("detached")
        return EXIT_OK
    finally:
        stop_reading()
        for task in (pump_task, quit_wait, input_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
