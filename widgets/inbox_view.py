"""The attention inbox's parts: the table of pending approvals, the failed notes, and the header badge.

Presentational only: they are given approvals, notes and the time, and never talk to a server. All
agent-supplied text (tool names, arguments, summaries, note text) goes through ``client.textsafe`` into
``rich.text.Text`` objects, never into markup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from rich.text import Text
from textual import events
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowDoesNotExist

from client.ids import short_id
from client.inbox import ApprovalGone
from client.marks import News
from client.models import Approval, Note, note_ended_at
from client.present import (
    NOT_RECORDED,
    decider_of,
    decision_words,
    relative_time,
    settled_phrase,
    unrecorded_decider,
    until,
)
from client.preview import approval_preview, visible_args
from client.textsafe import safe_line
from widgets.badges import note_badge

APPROVAL_COLUMNS: list[tuple[str, str]] = [
    ("waiting", "WAITING"),
    ("session", "SESSION"),
    ("tool", "TOOL"),
    ("risk", "RISK"),
    ("expires", "EXPIRES IN"),
    ("args", "CALL"),
]
MARKED = "●"
"""Before the waiting time of a row marked to be decided with others (space in the inbox)."""
DECIDING = "…"
"""Before the waiting time of a row whose decision is on its way."""
MARK_STYLES = {MARKED: "bold yellow", DECIDING: "bold"}
URGENT = timedelta(seconds=60)
"""An approval expiring sooner than this is drawn in red."""
ARGS_MIN = 12
"""The CALL column keeps at least this many cells, however narrow the terminal."""


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


def tool_cell(approval: Approval) -> Text:
    """The tool, and a quorum's progress while votes are being collected ("Bash · 1 of 2 votes")."""
    cell = Text(safe_line(approval.tool_name or "tool", 24), style="bold")
    votes = approval.votes
    if votes is not None and votes.required > 1:
        cell.append(f" · {votes.approvals} of {votes.required} votes", style="yellow")
        if votes.declines:
            cell.append(f", {votes.declines} no", style="yellow")
    return cell


def args_cell(approval: Approval, width: int = 80) -> Text:
    """The call in one line: its preview's first line (the command, the file edited and its +/− counts,
    else the first argument; ``client.preview``), the summary when it has no arguments; cut to ``width``
    cells with an ellipsis. The server's own bookkeeping keys (``_preloop_source``) are left out."""
    if visible_args(approval.tool_args):
        flat = approval_preview(approval).first_line
    else:
        flat = approval.summary or approval.agent_reasoning or ""
    text = Text(safe_line(flat), style="dim", no_wrap=True)
    text.truncate(max(width, 1), overflow="ellipsis")
    return text


def agent_of(approval: Approval) -> str | None:
    """The agent's name, from whichever field the server filled in."""
    return approval.managed_agent_name or (approval.agent.name if approval.agent else None)


def same_text(a: Text, b: Text) -> bool:
    """Whether two texts look the same (``Text ==`` ignores the base style, e.g. a countdown turning red),
    so a caller can skip an update that would repaint (and lay out) for nothing."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def update_static(widget: Static, content: Text, *, fixed_size: bool = False) -> bool:
    """Give ``widget`` new text only if it looks different (``Static.update`` repaints, and by default
    lays the screen out again, even for the same text); the layout is skipped when the widget's size
    cannot change (``fixed_size``) or its one unwrapped line keeps its width. Returns whether it was
    updated."""
    old = widget.content
    if isinstance(old, Text) and same_text(old, content):
        return False
    same_size = (  # one line, as wide as before, and not wrapped: the widget keeps its size
        isinstance(old, Text)
        and "\n" not in old.plain
        and "\n" not in content.plain
        and old.cell_len == content.cell_len <= widget.content_size.width
    )
    widget.update(content, layout=not (fixed_size or same_size))
    return True


class InboxApprovals(DataTable[Text]):
    """Pending approvals of every session, oldest first, updated in place by approval id so the cursor
    stays on the approval the operator was reading while others come and go.

    Every change touches only what changed: a new approval is one added row, a settled one one removed
    row, and a cell whose text is the same is left alone (a DataTable repaints all its rows after any
    change, so a change saved is a repaint saved). The CALL column takes the room the others leave
    and its text ends in "…" where it is cut (``x`` on the inbox shows all of it).
    """

    DEFAULT_CSS = """
    InboxApprovals { height: auto; max-height: 60%; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self._approvals: dict[str, Approval] = {}
        self._shown: dict[str, dict[str, Text]] = {}
        """The cells on screen, by approval id and column key."""
        self._order: list[str] = []
        """Approval ids in the order of the rows."""
        self._width = -1
        self._args_room = ARGS_MIN
        self._marks: dict[str, str] = {}
        """A glyph before the waiting time of some rows, by approval id (marked, being decided)."""

    def on_mount(self) -> None:
        for key, label in APPROVAL_COLUMNS:
            self.add_column(label, key=key)

    def _on_resize(self, event: events.Resize) -> None:
        # DataTable drops every rendered row on any resize, and this table's height follows its rows: each
        # arrival would draw the whole table twice (in the frame that shows the new row, then again after
        # its resize, for the same picture). The rows look the same at any height: only a new width
        # (columns, cropping) goes through to DataTable's handler.
        if event.size.width == self._width:
            event.prevent_default()
        else:
            self.call_after_refresh(self._fit_args)
        self._width = event.size.width

    def _fit_args(self) -> None:
        """Cut the CALL cells to the room the other columns leave (the table's width changed, or
        another column grew)."""
        others = sum(c.get_render_width(self) for key, c in self.columns.items() if key.value != "args")
        room = max(self.scrollable_content_region.width - others - 2 * self.cell_padding, ARGS_MIN)
        if room == self._args_room:
            return
        self._args_room = room
        for approval_id, approval in self._approvals.items():
            self._update(
                approval_id, self._shown[approval_id], {"args": args_cell(approval, room)}, update_width=True
            )

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
        """Make the rows match ``approvals`` (in that order) without losing the cursor's approval: rows
        that stay are kept (only their changed cells are redrawn), others are added or removed."""
        current = self.selected
        wanted = {a.id: a for a in approvals}
        order = list(wanted)
        for approval_id in [k for k in self._order if k not in wanted]:
            self._drop(approval_id)
        # Rows already in the right place stay; from the first one out of place (rare: an approval older
        # than one shown, after a reconnect) the rest are drawn again. New approvals usually come last.
        keep = 0
        while keep < len(self._order) and self._order[keep] == order[keep]:
            keep += 1
        for approval_id in self._order[keep:]:
            self._drop(approval_id)
        for approval_id, approval in wanted.items():
            shown = self._shown.get(approval_id)
            if shown is None:
                cells = self._cells(approval, now)
                self.add_row(*cells.values(), key=approval_id)
                self._shown[approval_id] = cells
                self._order.append(approval_id)
            elif self._approvals.get(approval_id) is approval:  # the same record: only the clock moved
                self._update(approval_id, shown, self._clock_cells(approval, now), update_width=False)
            else:
                self._update(approval_id, shown, self._cells(approval, now), update_width=True)
        self._approvals = wanted
        self._fit_args()
        if current is not None and current.id in wanted:
            row = order.index(current.id)
            if row != self.cursor_row:
                self.move_cursor(row=row)

    def set_marks(self, marks: Mapping[str, str], now: datetime) -> None:
        """Show ``marks`` (approval id -> one glyph: :data:`MARKED`, :data:`DECIDING`) before the waiting
        time of those rows; only the rows whose glyph changed are redrawn."""
        changed = {k for k in {*self._marks, *marks} if self._marks.get(k) != marks.get(k)}
        self._marks = dict(marks)
        for approval_id in changed:
            approval = self._approvals.get(approval_id)
            if approval is not None:
                self._update(
                    approval_id, self._shown[approval_id], self._clock_cells(approval, now), update_width=True
                )

    def tick(self, now: datetime) -> None:
        """Redraw the waiting times and countdowns (called every second) where their text changed."""
        for approval_id, approval in self._approvals.items():
            self._update(
                approval_id, self._shown[approval_id], self._clock_cells(approval, now), update_width=False
            )

    def _update(
        self, approval_id: str, shown: dict[str, Text], cells: dict[str, Text], *, update_width: bool
    ) -> None:
        for column, cell in cells.items():
            if not same_text(shown[column], cell):
                self.update_cell(approval_id, column, cell, update_width=update_width)
                shown[column] = cell

    def _drop(self, approval_id: str) -> None:
        self.remove_row(approval_id)
        del self._shown[approval_id]
        self._order.remove(approval_id)

    def _clock_cells(self, approval: Approval, now: datetime) -> dict[str, Text]:
        expires = countdown(approval.expires_at, now)
        if approval.escalated_at is not None:  # the deadline was extended once: say so beside it
            expires.append(" ↑ escalated", style="bold yellow")
        waiting = Text(relative_time(approval.requested_at, now))
        glyph = self._marks.get(approval.id)
        if glyph:
            waiting = Text.assemble((glyph, MARK_STYLES.get(glyph, "bold")), " ", waiting)
        return {"waiting": waiting, "expires": expires}

    def _cells(self, approval: Approval, now: datetime) -> dict[str, Text]:
        clocked = self._clock_cells(approval, now)
        return {
            "waiting": clocked["waiting"],
            "session": session_label(agent_of(approval), approval.runtime_session_id),
            "tool": tool_cell(approval),
            "risk": risk_cell(approval.risk_level),
            "expires": clocked["expires"],
            "args": args_cell(approval, self._args_room),
        }


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


def news_words(news: News) -> Text:
    """What a followed session holds for the operator, in words with glyphs: ``12 new · ⚑ 1 waiting · ✗ run
    error · ✉ the agent read a note`` (``nothing new`` when it holds nothing)."""
    out = Text()
    parts: list[tuple[str, str]] = []
    if news.new:
        parts.append((f"{news.new:,} new since you looked", "bold"))
    elif news.new is None and news.changed:
        parts.append(("new since you looked", "bold"))
    if news.waiting:
        parts.append((f"⚑ {news.waiting} waiting", "bold yellow"))
    if news.problem:
        parts.append((f"✗ {safe_line(news.problem, 40)}", "bold red"))
    if news.note_read:
        parts.append(("✉ the agent read a note", "bold green"))
    if not parts:
        return Text("nothing new", style="dim")
    for i, (words, style) in enumerate(parts):
        if i:
            out.append(" · ", style="dim")
        out.append(words, style=style)
    return out


def followed_text(followed: Sequence[tuple[str, str | None, News]]) -> Text:
    """The sessions followed in this app, each with what it holds since the operator last looked."""
    out = Text("Sessions you follow", style="bold")
    for session_id, agent, news in followed:
        out.append("\n  ")
        out.append_text(session_label(agent, session_id))
        out.append("  ")
        out.append_text(news_words(news))
    return out


def decided_elsewhere_text(
    gone: Sequence[ApprovalGone],
    by_you: Callable[[Approval], bool] | None = None,
    *,
    names_decider: bool = True,
) -> Text:
    """Approvals that left the inbox because someone (or something) else settled them, with who did it,
    when and their comment as the server says: "approved by dana 14:02: “looks fine”" (``by_you``: the
    ones this operator decided, from another terminal: "by you"); "expired 14:05 (nobody decided)".
    ``names_decider`` False (a server that keeps no decider, ``Capabilities.names_decider``): a decision
    nobody is named for says so ("was declined elsewhere (no decider recorded)")."""
    out = Text()
    for i, change in enumerate(gone):
        approval = change.approval
        if i:
            out.append("\n")
        out.append("↷ ", style="dim")
        out.append(safe_line(approval.tool_name or "tool", 24), style="bold")
        out.append(" in ")
        out.append_text(session_label(agent_of(approval), approval.runtime_session_id))
        you = by_you(approval) if by_you is not None else False
        if approval.status in ("approved", "declined") and (you or decider_of(approval) is not None):
            out.append(f" {decision_words(approval, you=you, comment=60)}", style="italic")
            continue
        out.append(f" {settled_phrase(approval.status, elsewhere=change.elsewhere)}", style="italic")
        if unrecorded_decider(approval, you=you, names_decider=names_decider):
            out.append(f" ({NOT_RECORDED})", style="dim")
        if approval.approver_comment:
            out.append(f': "{safe_line(approval.approver_comment, 60)}"', style="dim")
    return out


class InboxBadge(Static):
    """``⚑ 3 waiting [i]`` in a screen's header: how much waits across all sessions (hidden at zero).

    It follows the app's ``inbox_count`` when the app has one, so every screen shows the same number
    without wiring. A badge on a screen hidden under another one waits until its screen shows again:
    Textual repaints the top screen for any change on the screen under it.
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
            self.watch(self.app, "inbox_count", self._count_changed)
            self.app.screen_change_signal.subscribe(self, self._screen_changed)

    def set_count(self, count: int) -> None:
        """Show ``count``; the screen is laid out again only when the badge appears, disappears or
        changes width (9 → 10), not for every new number."""
        self.count = count
        self.set_class(count == 0, "-empty")
        label = Text(f"⚑ {count} waiting", style="bold")
        label.append(" [i]", style="dim")
        update_static(self, label)

    def _count_changed(self, count: int) -> None:
        if self._on_view():
            self.set_count(count)

    def _screen_changed(self, _screen: object) -> None:
        count = getattr(self.app, "inbox_count", self.count)
        if isinstance(count, int) and count != self.count and self._on_view():
            self.set_count(count)

    def _on_view(self) -> bool:
        """Whether the badge's screen can be seen: it is the top one, or all above it are see-through."""
        stack = self.app.screen_stack
        try:
            above = stack[stack.index(self.screen) + 1 :]
        except ValueError:
            return False
        return all(screen.styles.background.a < 1 for screen in above)
