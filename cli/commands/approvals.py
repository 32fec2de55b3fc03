"""``preloop approvals list | show | approve | decline``: what waits, what was decided and by whom, why an
approval is asked and what its call will change; approve and decline take one id or many (one decision for
all, each id told on its own line: ``client.steering.Steering.decide_many``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from datetime import UTC, datetime
from typing import Any

from cli.commands.common import connect, is_tty, print_json, render_table, terminal_width, usage
from cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from client.errors import AmbiguousId, ClientError, NoMatchingId
from client.ids import ApprovalIds, is_full_id, is_prefix, resolve_approval, resolve_session, short_id
from client.inbox import ApprovalAdded, ApprovalGone, Inbox, InboxChange, NoteFailed, closing_feed
from client.listing import all_approvals, with_trails
from client.models import Approval, AttentionSnapshot, Note
from client.present import (
    NO_DECIDER,
    cell,
    clock,
    decided_by,
    decider_of,
    decider_words,
    decision_words,
    describe_session,
    relative_time,
    settled_line,
    trail_rows,
    until,
)
from client.preview import approval_preview
from client.status import Connecting, Live, LoginNeeded, Reconnecting, Refused, StreamStatus
from client.steering import (
    AlreadyDeciding,
    AlreadySettled,
    Decided,
    DecideOutcome,
    DecisionFailed,
    Decisions,
    Steering,
    final_record,
)
from client.stream_words import OutageLines
from client.textsafe import safe_line
from client.why import redaction, why_rows


async def list_approvals(args: argparse.Namespace) -> int:
    """Approvals waiting for a person, oldest first (or, with --status, those in that status; with
    --decided, every settled one, the latest decision first: who decided, when, with which comment)."""
    if args.json and args.output == "id":
        raise usage("--json and -o id both choose the output: keep one of them")
    if args.all_sessions and args.session:
        raise usage("--all-sessions and --session contradict each other: keep one of them")
    if args.decided and args.status != "pending":
        raise usage("--decided lists every settled approval: drop --status, or drop --decided")
    if args.watch:
        if args.status != "pending" or args.output == "id" or args.decided:
            raise usage("--watch follows pending approvals: it takes neither --status, --decided nor -o id")
        return await watch_approvals(args)
    now = datetime.now(UTC)
    status = None if args.status == "all" or args.decided else args.status
    decisions = Decisions()
    async with connect(args) as backend:
        session = await resolve_session(backend, args.session, confirm=True) if args.session else None
        items = await all_approvals(backend, session, status)
        if args.decided:
            items = [a for a in items if not a.pending]
        settled = status != "pending"
        if settled and args.output != "id":
            items = await with_trails(backend, items)
            await decisions.learn_me(backend)
        recorded = backend.capabilities.names_decider
    if args.decided:
        epoch = datetime.min.replace(tzinfo=UTC)
        items.sort(key=lambda a: a.resolved_at or a.requested_at or epoch, reverse=True)
    if args.output == "id":
        for approval in items:
            print(cell(approval.id))
        return EXIT_OK
    if args.json:
        print_json(
            {
                "total": len(items),
                "deciders_recorded_by_server": recorded,
                "items": [
                    {
                        **a.model_dump(mode="json"),
                        "decided_by": decided_by(a, you=decisions.by_you(a)),
                    }
                    for a in items
                ],
            }
        )
        return EXIT_OK
    if not items:
        which = {"pending": "pending ", None: "decided " if args.decided else ""}.get(status, f"{status} ")
        print(f"No {which}approvals" + (f" for session {short_id(session)}." if session else "."))
        return EXIT_OK
    width = terminal_width(sys.stdout)
    if settled:
        for line in _settled_table(items, decisions, recorded, width):
            print(line)
        return EXIT_OK
    rows = [
        [
            cell(a.id),
            short_id(a.runtime_session_id),
            cell(a.status),
            relative_time(a.requested_at, now),
            cell(a.tool_name, 24),
            cell(a.summary or a.agent_reasoning or ""),
        ]
        for a in items
    ]
    headers = ["ID", "SESSION", "STATUS", "REQUESTED", "TOOL", "SUMMARY"]
    for line in render_table(headers, rows, last_flexible=True, width=width):
        print(line)
    if status == "pending" and sys.stdout.isatty():
        print(
            f"Decide: preloop approvals approve {cell(items[0].id)}   "
            'preloop approvals decline ID --comment "..."'
        )
    return EXIT_OK


def _settled_table(
    items: list[Approval], decisions: Decisions, recorded: bool, width: int | None
) -> list[str]:
    """Settled approvals: what became of each, who decided and when, and the comment (a server that keeps
    no decider is said to, once, below the table)."""
    rows = []
    for a in items:
        you = decisions.by_you(a)
        decider = decider_of(a)
        when = (decider.at if decider is not None and decider.at else None) or a.resolved_at
        rows.append(
            [
                cell(a.id),
                short_id(a.runtime_session_id),
                cell(a.tool_name, 24),
                cell(a.status),
                cell(decider_words(a, you=you) or "-", 40),
                clock(when) if when is not None else "-",
                cell(a.approver_comment or "-"),
            ]
        )
    headers = ["ID", "SESSION", "TOOL", "OUTCOME", "BY", "AT", "COMMENT"]
    lines = render_table(headers, rows, last_flexible=True, width=width)
    if not recorded:
        lines.append(f"({NO_DECIDER}: the BY column stays empty)")
    return lines


def _approval_id_syntax(value: str) -> str:
    """The id as typed, refused (exit 2, before any request) when it cannot be an approval id."""
    text = value.strip()
    if not text:
        raise usage("the approval id is empty")
    if not (is_full_id(text, "approval") or is_prefix(text)):
        raise usage(
            f"'{safe_line(text, 40)}' is not an approval id: give its UUID or its first 4+ hex characters "
            "(`preloop approvals list` shows them)"
        )
    return text


async def show(args: argparse.Namespace) -> int:
    """One approval: why it is asked, who decided it and who looked (as far as the server says), and what
    its call will change, every line (``--original``: the call's arguments before the server redacted
    them; ``--json``: all of it for scripts)."""
    text = _approval_id_syntax(args.approval_id)
    decisions = Decisions()
    original: dict[str, Any] | None = None
    async with connect(args) as backend:
        approval = await backend.get_approval(await resolve_approval(backend, text))
        approval = await backend.approval_trail(approval)
        await decisions.learn_me(backend)
        names_decider = backend.capabilities.names_decider
        if args.original:
            original = await backend.original_args(approval.id)
    you = decisions.by_you(approval)
    call = approval_preview(approval)
    hidden = redaction(approval)
    if args.json:
        doc: dict[str, Any] = {
            "approval": approval.model_dump(mode="json"),
            "why": {
                "reasoning": approval.agent_reasoning,
                "summary": approval.summary,
                "rule": approval.rule_context,
                "redacted": None
                if hidden is None
                else {
                    "types": dict(hidden.types),
                    "reference_only": hidden.reference_only,
                    "originals_kept": hidden.originals_kept,
                },
            },
            "decided_by": decided_by(approval, you=you),
            "deciders_recorded_by_server": names_decider,
            "preview": call.to_json(),
        }
        if original is not None:
            doc["original_args"] = original
            doc["original_preview"] = approval_preview(_with_args(approval, original)).to_json()
        print_json(doc)
        return EXIT_OK
    for line in show_lines(approval, datetime.now(UTC), you=you, names_decider=names_decider):
        print(line)
    if original is not None:
        print()
        print("Original arguments, before the server redacted them (kept only until it is decided):")
        for line in approval_preview(_with_args(approval, original)).text_lines():
            print(line)
    return EXIT_OK


def _with_args(approval: Approval, args: dict[str, Any]) -> Approval:
    """The approval with the arguments the server kept apart (its originals) in place of the redacted ones."""
    return approval.model_copy(update={"tool_args": args})


def show_lines(
    approval: Approval, now: datetime, *, you: bool = False, names_decider: bool = True
) -> list[str]:
    """``approvals show`` as plain lines: who asks for what and its status; why it is asked (the agent's
    reasoning, the server's summary, the rule, what was redacted); who decided and who looked; then the
    call's whole preview."""
    agent = approval.managed_agent_name or (approval.agent.name if approval.agent else None)
    tool = safe_line(approval.tool_name or "tool", 60)
    risk = f"  (risk {safe_line(approval.risk_level, 12)})" if approval.risk_level else ""
    if approval.pending:
        status = f"pending, requested {relative_time(approval.requested_at, now)}"
        if approval.expires_at is not None:
            status += f", expires in {until(approval.expires_at, now)}"
    else:
        status = safe_line(approval.status, 20)
    lines = [
        f"Approval  {cell(approval.id)}",
        f"Session   {describe_session(approval.runtime_session_id, agent)}",
        f"Tool      {tool}{risk}",
        f"Status    {status}",
    ]
    for label, words in [
        *why_rows(approval, key="--original"),
        *trail_rows(approval, you=you, names_decider=names_decider),
    ]:
        lines.append(f"{label:<9} {words}")
    return [*lines, "", *approval_preview(approval).text_lines()]


async def _decide(args: argparse.Namespace) -> int:
    """One decision for every id given: resolved first (a short id that names no approval, or several,
    is a usage error and nothing is decided), then decided through ``client.steering`` in one batch, each
    id told on its own line (stdout: decided; stderr: not). Exit 0 only when every id was decided here."""
    typed = list(dict.fromkeys(_approval_id_syntax(value) for value in args.approval_ids))
    async with connect(args) as backend:
        if args.decision == "approve" and args.comment and not backend.capabilities.approve_comment:
            # Checked before any request: the server would take the approval and drop the comment.
            raise usage(
                f"a {backend.server_kind} server takes no comment with an approval (a decline's comment "
                "reaches the agent): approve without --comment, or send it with `preloop notes send`"
            )
        # Short ids are matched against every approval, decided ones too: re-approving one is then told
        # as "already approved", as with its full id, not as "no such approval".
        ids = ApprovalIds(backend)
        resolved: list[str] = []
        unresolved: list[ClientError] = []
        for text in typed:
            try:
                resolved.append(await ids.resolve(text))
            except (AmbiguousId, NoMatchingId) as exc:
                unresolved.append(exc)
        if unresolved:
            for error in unresolved:
                print(f"preloop: {error.title}: {error.hint}", file=sys.stderr)
            print(f"preloop: nothing was {args.decision}d", file=sys.stderr)
            return EXIT_USAGE
        batch = await Steering(backend).decide_many(resolved, args.decision, args.comment, known=ids.rows)
    for outcome in batch.outcomes:
        _tell(outcome, args)
    missed = len(batch.outcomes) - len(batch.decided)
    if missed and len(batch.outcomes) > 1:
        print(
            f"preloop: {len(batch.decided)} of {len(batch.outcomes)} {args.decision}d here; "
            f"{missed} not (said above)",
            file=sys.stderr,
        )
    return EXIT_OK if batch.all_decided else EXIT_FAILED


def _tell(outcome: DecideOutcome, args: argparse.Namespace) -> None:
    """One id's line: what this command did with it (stdout), or why it did not (stderr); with ``--json``
    its object on stdout (NDJSON) as well."""
    verb: str = args.decision
    if isinstance(outcome, Decided):
        done = outcome.approval
        if not args.json:
            said = done.approver_comment
            comment = f' with comment "{safe_line(said, 200)}"' if said else ""
            tool = f" ({safe_line(done.tool_name)})" if done.tool_name else ""
            print(f"Approval {cell(done.id)}{tool} {verb}d{comment}.")
    elif isinstance(outcome, AlreadySettled):
        done = outcome.approval
        you = outcome.by_you
        print(f"preloop: already {safe_line(done.status)}: {settled_line(done, you=you)}", file=sys.stderr)
    elif isinstance(outcome, DecisionFailed):
        error = outcome.error
        print(
            f"preloop: approval {short_id(outcome.approval_id)} not {verb}d: {error.title}: {error.hint}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(outcome_record(outcome), ensure_ascii=False), flush=True)


def outcome_record(outcome: DecideOutcome) -> dict[str, Any]:
    """One id's outcome as JSON: ``result`` decided / already_settled / already_deciding / failed, the
    approval's status and row where known, who decided it (``client.present.decided_by``), the error."""
    if isinstance(outcome, Decided | AlreadySettled):
        row = outcome.approval
        return {
            "id": row.id,
            "result": "decided" if isinstance(outcome, Decided) else "already_settled",
            "status": row.status
            if not row.pending
            else ("approved" if outcome.verb == "approve" else "declined"),
            "decided_by": decided_by(row, you=isinstance(outcome, Decided) or outcome.by_you),
            "error": None,
            "approval": row.model_dump(mode="json"),
        }
    if isinstance(outcome, AlreadyDeciding):
        return {
            "id": outcome.approval_id,
            "result": "already_deciding",
            "status": "pending",
            "decided_by": None,
            "error": None,
            "approval": None,
        }
    error = outcome.error
    return {
        "id": outcome.approval_id,
        "result": "failed",
        "status": None,
        "decided_by": None,
        "error": {"title": error.title, "hint": error.hint, "status": getattr(error, "status", None)},
        "approval": None,
    }


async def approve(args: argparse.Namespace) -> int:
    """Let the waiting tool call go ahead."""
    return await _decide(args)


async def decline(args: argparse.Namespace) -> int:
    """Refuse the waiting tool call; the comment tells the agent why."""
    return await _decide(args)


# ---------------------------------------------------------------------------------------------- --watch

STATUS_TYPES = tuple(StreamStatus.__args__)


def _approval_line(approval: Approval, head: str, now: datetime, *, you: bool = False) -> str:
    """One human line for an approval: time, what happened, ids, agent, tool, what it wants, then its
    expiry, or who decided it, when and with which comment."""
    agent = approval.managed_agent_name or (approval.agent.name if approval.agent else None) or "agent"
    args = {k: v for k, v in approval.tool_args.items() if not str(k).startswith("_")}
    what = approval.summary or " ".join(f"{k}={v}" for k, v in args.items()) or ""
    expires = ""
    if approval.pending and approval.expires_at:
        expires = f"  expires in {until(approval.expires_at, now)}"
    settled = "" if approval.pending else f"  {decision_words(approval, you=you, comment=80)}"
    return (
        f"{clock(now)}  {head}  {cell(approval.id)}  session {short_id(approval.runtime_session_id)}"
        f"  {safe_line(agent, 24)}  {safe_line(approval.tool_name or 'tool', 24)}  {safe_line(what, 100)}"
        f"{expires}{settled}"
    )


def _note_line(note: Note) -> str:
    reason = f" ({safe_line(note.undeliverable_reason, 30)})" if note.undeliverable_reason else ""
    return (
        f"{clock(datetime.now(UTC))}  ✗ note {safe_line(note.state, 16)}{reason}  {cell(note.note_id)}"
        f"  session {short_id(note.runtime_session_id)}  {safe_line(note.text, 100)}"
    )


def _record(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "at": datetime.now(UTC).isoformat(), **fields}, ensure_ascii=False)


def _gone_head(approval: Approval, elsewhere: bool) -> str:
    """How an approval that left is told: decided here or elsewhere, expired (no one's decision), or no
    longer pending when even its record could not say."""
    status = safe_line(approval.status, 16)
    if status in ("approved", "declined"):
        return f"✓ {status} ({'elsewhere' if elsewhere else 'here'})"
    if status == "expired":
        return "⌛ expired"
    return "? no longer pending" if approval.pending else f"✗ {status}"


async def _emit(
    args: argparse.Namespace, change: InboxChange, session: str | None, steering: Steering
) -> None:
    """Print one inbox change (NDJSON with --json), flushed at once so a pipe sees it now. An approval
    that left without its final record (a poll or a reconnect only saw it go) is read once first, so
    its real status is told rather than "gone"."""
    now = datetime.now(UTC)
    if isinstance(change, ApprovalAdded | ApprovalGone):
        approval = change.approval
        if session and approval.runtime_session_id != session:
            return
        if isinstance(change, ApprovalAdded):
            line = (
                _record("approval.pending", approval=approval.model_dump(mode="json"))
                if args.json
                else _approval_line(approval, "⚑ pending ", now)
            )
        else:
            with contextlib.suppress(ClientError):  # unread, it is said to be gone
                approval = await final_record(steering.backend, approval.id) or approval
            decision = approval.status in ("approved", "declined")
            you = steering.decisions.by_you(approval)
            line = (
                _record(
                    "approval.resolved",
                    status=approval.status if not approval.pending else "gone",
                    elsewhere=change.elsewhere if decision else None,
                    decided_by=decided_by(approval, you=you),
                    approval=approval.model_dump(mode="json"),
                )
                if args.json
                else _approval_line(approval, _gone_head(approval, change.elsewhere), now, you=you)
            )
    else:
        note = change.note
        if session and note.runtime_session_id != session:
            return
        line = _record("note.failed", note=note.model_dump(mode="json")) if args.json else _note_line(note)
    print(line, flush=True)


def _notice(item: StreamStatus, outage: OutageLines) -> None:
    """Connection states go to stderr (stdout stays data only): a lost feed or a refused token once when
    it starts (and as ``client.stream_words.OutageLines`` says while it lasts), live again once; the
    first connection says nothing."""
    if isinstance(item, Connecting | Live | Reconnecting | LoginNeeded):
        was_down = outage.down
        said = outage.update(item, datetime.now(UTC))
        if said is not None and (was_down or outage.down):
            print(f"preloop: {said}", file=sys.stderr)
    elif isinstance(item, Refused):
        print(f"preloop: the attention feed was refused: {safe_line(item.reason, 200)}", file=sys.stderr)


async def watch_approvals(args: argparse.Namespace) -> int:
    """Follow every session's pending approvals (and notes that never arrived) until Ctrl+C: the current
    ones first, then each change as it happens. Pushed by our server, polled from others."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    interrupted = False

    def _on_sigint() -> None:  # end the feed cleanly (its connection closed), then report Ctrl+C
        nonlocal interrupted
        interrupted = True
        if task is not None:
            task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, _on_sigint)
    try:
        return await _watch(args)
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


async def _watch(args: argparse.Namespace) -> int:
    inbox = Inbox()
    outage = OutageLines()
    async with connect(args) as backend:
        steering = Steering(backend, inbox.decisions)
        await steering.decisions.learn_me(backend)
        session = await resolve_session(backend, args.session, confirm=True) if args.session else None
        if not args.json and is_tty(sys.stderr):
            print("Watching every session's approvals; Ctrl+C stops.", file=sys.stderr)
        feed = backend.watch_attention(notes_window=inbox.notes_window)
        # closed here, in this task, also when printing fails (a closed pipe) or Ctrl+C cancels us
        async with closing_feed(feed):
            async for item in feed:
                if isinstance(item, AttentionSnapshot):
                    first = not inbox.synced
                    changes = inbox.reset(item)
                    if first:
                        changes = [ApprovalAdded(a) for a in inbox.approvals]
                        changes += [NoteFailed(n) for n in reversed(inbox.notes)]
                elif isinstance(item, STATUS_TYPES):
                    _notice(item, outage)
                    if isinstance(item, Refused):
                        return EXIT_FAILED
                    continue
                else:
                    changes = inbox.apply(item)  # type: ignore[arg-type]
                for change in changes:
                    await _emit(args, change, session, steering)
    return EXIT_OK
