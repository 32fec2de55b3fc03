"""The attention inbox's parts: the table of pending approvals, the failed notes, and the header badge.

Presentational only: they are given approvals, notes and the time, and never talk to a server. All
agent-supplied text (tool names, arguments, summaries, note text) goes through ``client.textsafe`` into
``rich.text.Text`` objects, never into markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from rich.text import Text
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowDoesNotExist

from client.inbox import ApprovalGone, note_ended_at
from client.models import Approval, Note
from client.present import relative_time, short_id
from client.textsafe import safe_line
from widgets.approvals_panel import args_text, visible_args
from widgets.badges import note_badge, until

APPROVAL_COLUMNS: list[tuple[str, str]] = [
    ("waiting", "WAITING"),
    ("session", "SESSION"),
    ("tool", "TOOL"),
    ("risk", "RISK"),
    ("expires", "EXPIRES IN"),
    ("args", "ARGUMENTS"),
]
URGENT = timedelta(seconds=60)
"""An approval expiring sooner than this is drawn in red."""


def session_label(agent: str | None, session_id: str | None) -> Text:
    """``builder 1a2b3c4d``: who and which session, both short (``session 1a2b3c4d`` when the agent is
    unknown)."""
    label = Text(safe_line(agent, 16) if agent else "session", style="bold" if agent else "dim")
    label.append(" " + short_id(session_id or ""), style="dim")
    return label


def countdown(expires_at: datetime | None, now: datetime) -> Text:
    """Time left before the approval expires; red under a minute, "expiring" once it is due."""
    if expires_at is None:
        return Text("—", style="dim")
    left = expires_at - now
    if left <= timedelta(0):
        return Text("expiring", style="bold red")
    return Text(until(expires_at, now), style="bold red" if left < URGENT else "")


def risk_cell(risk: str | None) -> Text:
    """The server's risk level; "danger"/"high" stand out."""
    if not risk:
        return Text("—", style="dim")
    word = safe_line(risk, 10)
    return Text(word, style="bold red" if word.lower() in ("danger", "high", "critical") else "yellow")


def args_cell(approval: Approval, width: int = 80) -> Text:
    """The arguments on one line (the summary when there are none), cut to ``width``; the server's own
    bookkeeping keys (``_preloop_source``) are left out."""
    args = visible_args(approval.tool_args)
    if args:
        flat = " ".join(line.strip() for line in args_text(args).splitlines())
    else:
        flat = approval.summary or approval.agent_reasoning or ""
    return Text(safe_line(flat, width), style="dim")


def agent_of(approval: Approval) -> str | None:
    """The agent's name, from whichever field the server filled in."""
    return approval.managed_agent_name or (approval.agent.name if approval.agent else None)


class InboxApprovals(DataTable[Text]):
    """Pending approvals of every session, oldest first, updated in place by approval id so the cursor
    stays on the approval the operator was reading while others come and go."""

    DEFAULT_CSS = """
    InboxApprovals { height: auto; max-height: 60%; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self._approvals: dict[str, Approval] = {}

    def on_mount(self) -> None:
        for key, label in APPROVAL_COLUMNS:
            self.add_column(label, key=key)

    @property
    def selected(self) -> Approval | None:
        """The highlighted approval, if any."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except RowDoesNotExist:
            return None
        return self._approvals.get(key or "")

    def show(self, approvals: Sequence[Approval], now: datetime) -> None:
        """Make the rows match ``approvals`` (in that order) without losing the cursor's approval."""
        current = self.selected
        wanted = [a.id for a in approvals]
        existing = [str(k.value) for k in self.rows]
        self._approvals = {a.id: a for a in approvals}
        if wanted != existing:
            self.clear()
            for approval in approvals:
                self.add_row(*self._cells(approval, now), key=approval.id)
            if current is not None and current.id in self._approvals:
                self.move_cursor(row=wanted.index(current.id))
        else:
            self.tick(now)

    def tick(self, now: datetime) -> None:
        """Redraw the waiting times and countdowns (called every second)."""
        for approval_id, approval in self._approvals.items():
            self.update_cell(approval_id, "waiting", Text(relative_time(approval.requested_at, now)))
            self.update_cell(approval_id, "expires", countdown(approval.expires_at, now))

    @staticmethod
    def _cells(approval: Approval, now: datetime) -> list[Text]:
        return [
            Text(relative_time(approval.requested_at, now)),
            session_label(agent_of(approval), approval.runtime_session_id),
            Text(safe_line(approval.tool_name or "tool", 24), style="bold"),
            risk_cell(approval.risk_level),
            countdown(approval.expires_at, now),
            args_cell(approval),
        ]


def failed_notes_text(notes: Sequence[Note], now: datetime, window: timedelta) -> Text:
    """One line per note that never reached its agent: state, session, when, the note's words."""
    hours = max(int(window.total_seconds() // 3600), 1)
    out = Text(f"Notes that did not reach their agent (last {hours} h)", style="bold")
    if not notes:
        out.append("\n  none", style="dim")
        return out
    for note in notes:
        out.append("\n  ")
        out.append_text(note_badge(note.state))
        out.append("  ")
        out.append_text(session_label(None, note.runtime_session_id))
        out.append(f"  {relative_time(note_ended_at(note), now)}  ", style="dim")
        if note.undeliverable_reason:
            out.append(f"({safe_line(note.undeliverable_reason, 24)}) ", style="dim")
        out.append(safe_line(note.text, 100))
    return out


def decided_elsewhere_text(gone: Sequence[ApprovalGone]) -> Text:
    """Approvals that left the inbox because someone (or something) else settled them."""
    out = Text()
    for i, change in enumerate(gone):
        approval = change.approval
        if i:
            out.append("\n")
        status = approval.status if not approval.pending else "gone"
        out.append("↷ ", style="dim")
        out.append(safe_line(approval.tool_name or "tool", 24), style="bold")
        out.append(" in ")
        out.append_text(session_label(agent_of(approval), approval.runtime_session_id))
        out.append(f" was {safe_line(status, 12)} elsewhere", style="italic")
        if approval.approver_comment:
            out.append(f': "{safe_line(approval.approver_comment, 60)}"', style="dim")
    return out


class InboxBadge(Static):
    """``⚑ 3 waiting [i]`` in a screen's header: how much waits across all sessions (hidden at zero).

    It follows the app's ``inbox_count`` reactive when the app has one, so every screen shows the same
    number without wiring.
    """

    DEFAULT_CSS = """
    InboxBadge { width: auto; height: 1; padding: 0 1; background: $warning 30%; text-style: bold; }
    InboxBadge.-empty { display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.count = 0

    def on_mount(self) -> None:
        self.set_count(0)
        if hasattr(self.app, "inbox_count"):
            self.watch(self.app, "inbox_count", self.set_count)

    def set_count(self, count: int) -> None:
        """Show ``count`` (the app calls this on every change)."""
        self.count = count
        self.set_class(count == 0, "-empty")
        label = Text(f"⚑ {count} waiting", style="bold")
        label.append(" [i]", style="dim")
        self.update(label)
