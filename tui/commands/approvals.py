"""``preloop approvals list | approve | decline``."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from client.backend import Backend
from client.errors import BadRequest, ClientError, Conflict
from client.ids import is_ulid, is_uuid
from client.models import Approval
from client.present import cell, looks_like_id_prefix, relative_time, short_id
from client.textsafe import safe_line
from tui.cli import EXIT_FAILED, EXIT_OK
from tui.commands.common import connect, print_json, render_table, resolve_session, terminal_width, usage


async def _all_approvals(backend: Backend, session: str | None, status: str | None) -> list[Approval]:
    items: list[Approval] = []
    skip = 0
    while True:
        page = await backend.list_approvals(session_id=session, status=status, limit=100, skip=skip)
        items.extend(page.items)
        skip += len(page.items)
        if len(page.items) < 100 or (page.total is not None and skip >= page.total) or skip >= 1000:
            return items


async def list_approvals(args: argparse.Namespace) -> int:
    """Approvals waiting for a person (or, with --status, decided ones), oldest first."""
    if args.json and args.output == "id":
        raise usage("--json and -o id both choose the output: keep one of them")
    now = datetime.now(UTC)
    status = None if args.status == "all" else args.status
    async with connect(args) as backend:
        session = await resolve_session(backend, args.session) if args.session else None
        items = await _all_approvals(backend, session, status)
    if args.output == "id":
        for approval in items:
            print(cell(approval.id))
        return EXIT_OK
    if args.json:
        print_json({"total": len(items), "items": [a.model_dump(mode="json") for a in items]})
        return EXIT_OK
    if not items:
        which = "pending " if status == "pending" else ""
        print(f"No {which}approvals" + (f" for session {short_id(session)}." if session else "."))
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
    for line in render_table(headers, rows, last_flexible=True, width=terminal_width(sys.stdout)):
        print(line)
    if status == "pending" and sys.stdout.isatty():
        print(
            f"Decide: preloop approvals approve {cell(items[0].id)}   "
            'preloop approvals decline ID --comment "..."'
        )
    return EXIT_OK


class ApprovalIdError(ClientError):
    """A short approval id that matches no pending approval, or several."""

    title = "no such approval"


async def _resolve_approval(backend: Backend, value: str) -> str:
    """A full id as given; a short one (4+ characters) matched against the pending approvals."""
    text = value.strip()
    if not text:
        raise usage("the approval id is empty")
    if is_uuid(text) or is_ulid(text):
        return text
    if not looks_like_id_prefix(text):
        raise usage(
            f"'{safe_line(text, 40)}' is not an approval id: give its UUID or its first 4+ hex characters "
            "(`preloop approvals list` shows them)"
        )
    pending = await _all_approvals(backend, None, "pending")
    matches = [a.id for a in pending if a.id.lower().startswith(text.lower())]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ApprovalIdError(
            f"no pending approval starts with '{safe_line(text, 40)}': `preloop approvals list` shows them"
        )
    shown = ", ".join(m[:8] for m in matches[:5])
    raise ApprovalIdError(
        f"'{safe_line(text, 40)}' matches {len(matches)} approvals ({shown}): type more characters"
    )


async def _decide(args: argparse.Namespace) -> int:
    async with connect(args) as backend:
        approval_id = await _resolve_approval(backend, args.approval_id)
        try:
            if args.decision == "approve":
                done = await backend.approve(approval_id, args.comment)
            else:
                done = await backend.decline(approval_id, args.comment)
        except (BadRequest, Conflict) as exc:
            # "Request already approved": say where to see what happened to it.
            print(
                f"preloop: {exc.title}: {exc.hint}; `preloop approvals list --status all` shows its decision",
                file=sys.stderr,
            )
            return EXIT_FAILED
    if args.json:
        print_json(done.model_dump(mode="json"))
        return EXIT_OK
    comment = f' with comment "{safe_line(done.approver_comment, 200)}"' if done.approver_comment else ""
    tool = f" ({safe_line(done.tool_name)})" if done.tool_name else ""
    print(f"Approval {cell(done.id)}{tool} {safe_line(done.status)}{comment}.")
    return EXIT_OK


async def approve(args: argparse.Namespace) -> int:
    """Let the waiting tool call go ahead."""
    return await _decide(args)


async def decline(args: argparse.Namespace) -> int:
    """Refuse the waiting tool call; the comment tells the agent why."""
    return await _decide(args)
