"""The sessions list: what is running, what waits for a human, and the way into each session.

The table refreshes on a timer and is updated *in place by row key* (session id), so the cursor stays on
the session the user was looking at while counters move. ``/`` filters by id, agent or title; ``a``
toggles active-only (not ended and active in the last 10 minutes, as ``sessions list --active``); Enter
attaches. An empty list and an unreachable server are states with words (an empty-state line, a banner
carrying the client error's sentence and a retry key), never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from client.backend import Backend
from client.errors import ClientError
from client.models import Session
from client.present import (
    ACTIVE_WINDOW_MINUTES,
    count_cell,
    kind_label,
    last_activity,
    relative_time,
    session_state,
    short_id,
)
from client.present import session_title as title_of
from client.textsafe import safe_line
from widgets.badges import session_badge
from widgets.banner import Banner
from widgets.inbox_view import InboxBadge

COLUMNS: list[tuple[str, str]] = [
    ("id", "ID"),
    ("agent", "AGENT"),
    ("started", "STARTED"),
    ("activity", "LAST ACTIVITY"),
    ("state", "STATE"),
    ("tools", "TOOL CALLS"),
    ("model", "MODEL CALLS"),
    ("pending", "PENDING"),
    ("title", "TITLE"),
]
"""Columns on a wide terminal (key, header)."""

COMPACT_COLUMNS: list[tuple[str, str]] = [
    ("id", "ID"),
    ("agent", "AGENT"),
    ("activity", "ACTIVE"),
    ("state", "STATE"),
    ("tools", "TOOLS"),
    ("model", "MODEL"),
    ("pending", "⚑"),
    ("title", "TITLE"),
]
"""Below ``WIDE_AT`` columns the start time goes and the agent is cut, so the title stays in view."""

WIDE_AT = 120

AGENT_WIDTH = {True: 14, False: 24}
"""Longest agent name shown, compact and wide (longer ones are cut with an ellipsis)."""

RESERVED = {True: 64, False: 107}
"""Columns the other cells take at most (agent at ``AGENT_WIDTH``, cell padding, the scrollbar), compact
and wide: the title gets the rest, cut with an ellipsis, so no row runs off the right edge. Shorter agent
names leave their spare columns to the title."""

PAGE = 100
"""How many sessions one refresh asks for (newest first)."""


def session_cells(
    row: Session, now: datetime, *, compact: bool = False, title_width: int = 120
) -> list[Text]:
    """The table cells of one session (pure: the snapshot tests and the refresh share it)."""
    pending = row.pending_approval_count or 0
    if pending > 0:
        pending_cell = Text(f"⚑ {pending}", style="bold reverse yellow")
    else:
        pending_cell = Text(count_cell(row.pending_approval_count), style="dim")
    cells = {
        "id": Text(short_id(row.id)),
        "agent": Text(agent_cell(row, compact=compact)),
        "started": Text(relative_time(row.started_at, now)),
        "activity": Text(relative_time(last_activity(row), now)),
        "state": session_badge(session_state(row, now)),
        "tools": Text(count_cell(row.tool_call_count), justify="right"),
        "model": Text(count_cell(row.total_requests), justify="right"),
        "pending": pending_cell,
        "title": Text(safe_line(title_of(row), title_width)),
    }
    return [cells[key] for key, _ in (COMPACT_COLUMNS if compact else COLUMNS)]


def agent_cell(row: Session, *, compact: bool) -> str:
    """The agent column's text: its name, else its kind, cut to ``AGENT_WIDTH``."""
    label = row.agent_label
    kind = row.agent_kind or row.session_source_type
    if kind and label == "?":
        label = kind_label(kind)
    return safe_line(label, AGENT_WIDTH[compact])


def title_room(rows: list[Session], width: int, *, compact: bool) -> int:
    """Columns left for the title on a ``width``-column terminal, given the agent names shown."""
    agent = max([len("AGENT"), *(cell_len(agent_cell(row, compact=compact)) for row in rows)])
    return max(16, width - RESERVED[compact] + AGENT_WIDTH[compact] - agent)


class SessionTable(DataTable[Text]):
    """The sessions grid; its Enter binding is shown in the footer as "Attach"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Attach", id="sessions.attach", tooltip="Attach to this session"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter is offered only when there is a row to attach to."""
        if action == "select_cursor":
            return self.row_count > 0
        return True


class SessionsScreen(Screen[None]):
    """Lists sessions; posts nothing, pushes the attach screen through the ``open_session`` callback."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="sessions.filter", tooltip="Filter by id, agent or title"),
        Binding(
            "a",
            "toggle_active",
            "Active only",
            id="sessions.active",
            tooltip=f"Only sessions active in the last {ACTIVE_WINDOW_MINUTES} minutes",
        ),
        Binding("r", "refresh", "Refresh", id="sessions.refresh", tooltip="Ask the server again now"),
        Binding(
            "escape",
            "clear_filter",
            "Clear filter",
            show=False,
            id="sessions.clear_filter",
            tooltip="Close the filter box and drop its text",
        ),
        Binding("question_mark", "app.help", "Help", id="sessions.help", tooltip="All keys"),
        Binding("q", "app.quit", "Quit", id="sessions.quit", tooltip="Leave the app"),
    ]

    AUTO_FOCUS = "#sessions-table"

    DEFAULT_CSS = """
    SessionsScreen #filter { display: none; height: 3; }
    SessionsScreen #filter.-shown { display: block; }
    SessionsScreen DataTable { height: 1fr; }
    SessionsScreen #empty { display: none; padding: 1 2; color: $text-muted; height: auto; }
    SessionsScreen #empty.-shown { display: block; }
    SessionsScreen #top-line { height: 1; background: $panel; }
    SessionsScreen #status-line {
        height: 1; width: 1fr; padding: 0 1; color: $text-muted; background: $panel;
    }
    """

    def __init__(
        self,
        backend: Backend,
        *,
        open_session: Callable[[str], None],
        clock: Callable[[], datetime],
        refresh_interval: float = 5.0,
    ) -> None:
        super().__init__()
        self.backend = backend
        self._open_session = open_session
        self._clock = clock
        self.refresh_interval = refresh_interval
        self.sessions: list[Session] = []
        self.loaded = False
        self.more_on_server = False
        self.error: ClientError | None = None
        self.active_only = False
        self.filter_text = ""
        self.compact: bool | None = None
        self.title_width = 120
        self._restore_key: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="top-line"):  # the inbox count (all sessions) sits at the right
            yield Static("", id="status-line")
            yield InboxBadge(id="inbox-badge")
        yield Banner(id="banner")
        yield Input(placeholder="filter: id, agent or title (Enter keeps, Escape clears)", id="filter")
        yield SessionTable(cursor_type="row", zebra_stripes=True, id="sessions-table")
        yield Static("", id="empty")
        yield Footer()

    def on_mount(self) -> None:
        self._set_columns()
        self._show_status()
        self.load()
        if self.refresh_interval > 0:
            self.set_interval(self.refresh_interval, self.load)

    def on_resize(self) -> None:
        if self._set_columns():
            self.apply_rows()

    def _set_columns(self) -> bool:
        """Pick the column set for the current width; True if it changed (the rows must be re-added).

        A column never narrows by itself in a ``DataTable``, so when the title's room shrinks (narrower
        terminal, a longer agent name) the columns are rebuilt; when it grows the rows are merely re-cut.
        """
        width = self.app.size.width
        compact = width < WIDE_AT
        title_width = title_room(self.visible_sessions(), width, compact=compact)
        if compact == self.compact and title_width >= self.title_width:
            changed = title_width != self.title_width
            self.title_width = title_width
            return changed
        self.compact = compact
        self.title_width = title_width
        table = self.query_one(DataTable)
        self._restore_key = self._cursor_key()
        table.clear(columns=True)
        for key, label in COMPACT_COLUMNS if compact else COLUMNS:
            table.add_column(label, key=key)
        return True

    def _cursor_key(self) -> str | None:
        """The session id under the cursor, if any."""
        table = self.query_one(DataTable)
        if table.row_count == 0 or not 0 <= table.cursor_row < table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return None if row_key.value is None else str(row_key.value)

    # ------------------------------------------------------------------ loading

    @work(exclusive=True, group="sessions-load")
    async def load(self) -> None:
        """Fetch the newest sessions; a failure becomes the banner, the last good rows stay."""
        try:
            page = await self.backend.list_sessions(limit=PAGE)
        except ClientError as exc:
            if get_current_worker().is_cancelled:
                return
            self.error = exc
            hint = "r: retry · the rows below are from the last refresh" if self.sessions else "r: retry"
            self.query_one(Banner).show(str(exc), "error", hint=hint)
            # The last good rows stay, but their "20s ago" and live/idle keep ageing against the clock.
            self.apply_rows()
            return
        self.error = None
        self.loaded = True
        self.query_one(Banner).clear()
        self.sessions = page.items
        self.more_on_server = page.has_more
        self.apply_rows()

    def visible_sessions(self) -> list[Session]:
        """The rows after the active-only toggle and the filter text, newest session first."""
        now = self._clock()
        rows = self.sessions
        if self.active_only:
            recent = now - timedelta(minutes=ACTIVE_WINDOW_MINUTES)
            rows = [
                s
                for s in rows
                if s.ended_at is None and (seen := last_activity(s)) is not None and seen >= recent
            ]
        needle = self.filter_text.strip().lower()
        if needle:
            rows = [
                s
                for s in rows
                if needle in s.id.lower() or needle in s.agent_label.lower() or needle in title_of(s).lower()
            ]
        # Newest first by start time: a stable order, so rows do not jump about as agents work.
        epoch = datetime.min.replace(tzinfo=now.tzinfo)
        return sorted(rows, key=lambda s: s.started_at or last_activity(s) or epoch, reverse=True)

    def apply_rows(self) -> None:
        """Bring the table to the visible rows, in place when the order is unchanged, keeping the cursor."""
        self._set_columns()
        table = self.query_one(DataTable)
        now = self._clock()
        rows = self.visible_sessions()
        wanted = [s.id for s in rows]
        current = [str(key.value) for key in table.rows]
        cursor_key = self._cursor_key() or self._restore_key
        self._restore_key = None
        compact = bool(self.compact)
        columns = COMPACT_COLUMNS if compact else COLUMNS
        if wanted == current:
            for session in rows:
                for (column, _), cell in zip(
                    columns,
                    session_cells(session, now, compact=compact, title_width=self.title_width),
                    strict=True,
                ):
                    table.update_cell(session.id, column, cell, update_width=True)
        else:
            table.clear()
            for session in rows:
                cells = session_cells(session, now, compact=compact, title_width=self.title_width)
                table.add_row(*cells, key=session.id)
            if cursor_key is not None and cursor_key in wanted:
                table.move_cursor(row=wanted.index(cursor_key), animate=False)
        self._show_status()
        self._show_empty()
        self.refresh_bindings()

    def _show_empty(self) -> None:
        empty = self.query_one("#empty", Static)
        table = self.query_one(DataTable)
        if self.error is not None and not self.sessions:
            message = "Could not load sessions. Is the server running? (`preloop serve`, or `preloop demo`)"
        elif not self.loaded:
            message = "Loading sessions…"
        elif not self.sessions:
            message = "No sessions yet. Start an agent against this server, or run `preloop demo`."
        elif table.row_count == 0:
            message = (
                "No session matches the filter."
                if self.filter_text
                else f"No session was active in the last {ACTIVE_WINDOW_MINUTES} minutes (a: show all)."
            )
        else:
            message = ""
        empty.update(Text(message))
        empty.set_class(bool(message), "-shown")
        table.display = table.row_count > 0

    def _show_status(self) -> None:
        now = self._clock()
        live = sum(1 for s in self.sessions if session_state(s, now) == "live")
        waiting = sum(s.pending_approval_count or 0 for s in self.sessions)
        line = Text("Sessions", style="bold")
        shown = f"newest {len(self.sessions)} shown" if self.more_on_server else f"{len(self.sessions)} total"
        line.append(f"  {shown} · {live} live")
        if waiting:
            noun = "approval" if waiting == 1 else "approvals"
            line.append(f" · ⚑ {waiting} {noun} pending", style="bold yellow")
        if self.active_only:
            line.append(" · active only", style="bold")
        if self.filter_text:
            line.append(" · filter: ")
            line.append(safe_line(self.filter_text, 30), style="bold")
        self.query_one("#status-line", Static).update(line)

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Attach needs a row; Escape (clear filter) is offered only while there is a filter to clear."""
        if action == "attach":
            return self.query_one(DataTable).row_count > 0
        if action == "clear_filter":
            return bool(self.filter_text) or self.query_one("#filter", Input).has_class("-shown")
        return True

    def action_attach(self) -> None:
        """Open the highlighted session."""
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        if row_key.value is not None:
            self._open_session(str(row_key.value))

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self._open_session(str(event.row_key.value))

    def action_filter(self) -> None:
        """Show the filter box and put the cursor in it."""
        box = self.query_one("#filter", Input)
        box.add_class("-shown")
        box.focus()
        self.refresh_bindings()

    def action_clear_filter(self) -> None:
        """Drop the filter and go back to the table."""
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("-shown")
        self.filter_text = ""
        self.apply_rows()
        self.query_one(DataTable).focus()
        self.refresh_bindings()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.apply_rows()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value:
            event.input.remove_class("-shown")
        self.query_one(DataTable).focus()

    def action_toggle_active(self) -> None:
        """Hide or show ended sessions."""
        self.active_only = not self.active_only
        self.apply_rows()

    def action_refresh(self) -> None:
        """Ask the server now (after it was down, or to skip the timer)."""
        self.load()
