"""The sessions list: what is running, what waits for a human, and the way into each session.

The table refreshes on a timer and is updated *in place by row key* (session id), so the cursor stays on
the session the user was looking at while counters move. ``/`` filters by id, agent or title; ``a``
toggles active-only (not ended and active in the last 10 minutes, as ``sessions list --active``); Enter
attaches. An empty list and an unreachable server are states with words (an empty-state line, a banner
carrying the client error's sentence and a retry key), never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
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

from client.backends.base import Backend
from client.costs import cost_words, row_cost
from client.errors import ClientError
from client.ids import short_id
from client.marks import News
from client.models import Session
from client.present import (
    ACTIVE_WINDOW_MINUTES,
    NARROW_DROP_ORDER,
    TITLE_WANTED,
    count_cell,
    fit_titles,
    kind_label,
    last_activity,
    relative_time,
    session_state,
    sort_sessions,
)
from client.present import session_title as title_of
from client.textsafe import safe_line
from widgets.badges import session_badge
from widgets.banner import Banner
from widgets.inbox_view import InboxBadge
from widgets.standing import StandingBanner

COLUMNS: list[tuple[str, str, str]] = [
    ("id", "ID", "ID"),
    ("agent", "AGENT", "AGENT"),
    ("started", "STARTED ↓", "STARTED ↓"),
    ("activity", "LAST ACTIVITY", "ACTIVE"),
    ("state", "STATE", "STATE"),
    ("tools", "TOOLS", "TOOLS"),
    ("model", "MODEL", "MODEL"),
    ("pending", "PENDING", "⚑"),
    ("cost", "COST", "COST"),
    ("new", "NEW", "NEW"),
    ("title", "TITLE", "TITLE"),
]
"""(key, header, narrow header). The headers are ``preloop sessions list``'s and mean the same: TOOLS counts
tool calls, MODEL names the model, COST what its model calls cost and how many tokens they used
(``client.costs``: shown only when some row's server says). ↓ marks the sort column
(``client.present.sort_sessions``). NEW is the
app's own (``client.marks.News``): for a session followed here, how many events came since the operator
last looked; for any session ✗ when something went wrong and ✉ when the agent read a note since."""

DROP_ORDER = NARROW_DROP_ORDER
"""Below ``WIDE_AT`` columns these go first, in this order, while the titles lack room: what tells sessions
apart (id, agent, title) and what needs a human (state, pending) stay. The CLI's table drops the same."""

WIDE_AT = 120

AGENT_WIDTHS = (24, 14, 10)
"""Longest agent name shown: wide, narrow, and narrow when the titles still lack room (longer names are
cut with an ellipsis)."""

LAST_RESORT = ("started", "agent")
"""On a very narrow terminal (60 columns) these go too, after the agent names were cut to 10: the sort
stays named in the status line, and a row still fits on one line."""

MODEL_WIDTH = 20
TIME_WIDTH = 8
"""A relative time is at most 8 cells ("just now", "100d ago"): the column never outgrows it later."""
NEW_WIDTH = 8
"""The NEW column keeps room for "+1,234 ✗" whatever it shows now (a count grows while followed)."""


MIN_TITLE = 12
CELL_PADDING = 2
SCROLLBAR = 2

PAGE = 100
"""How many sessions one refresh asks for (newest first)."""


@dataclass(frozen=True)
class ColumnLayout:
    """Which columns a terminal this wide shows, and how much of it the titles get."""

    keys: tuple[str, ...]
    narrow: bool
    title_width: int
    agent_width: int = AGENT_WIDTHS[0]


def session_cells(
    row: Session,
    now: datetime,
    *,
    agent_width: int = AGENT_WIDTHS[0],
    title_width: int = 120,
    title: str | None = None,
    keys: tuple[str, ...] | None = None,
    news: News | None = None,
    compact: bool = False,
) -> list[Text]:
    """The table cells of one session (pure: the snapshot tests and the refresh share it); ``compact``: a
    narrow layout's shorter cells (the cost alone, or the tokens when no cost is known).

    ``title`` is the already fitted title (:func:`client.present.fit_titles` over the page), else the
    session's own title cut to ``title_width``; ``news`` fills the NEW column (:func:`news_cell`).
    """
    pending = row.pending_approval_count or 0
    if pending > 0:
        pending_cell = Text(f"⚑ {pending}", style="bold reverse yellow")
    else:
        pending_cell = Text(count_cell(row.pending_approval_count), style="dim")
    cells = {
        "id": Text(short_id(row.id)),
        "agent": Text(agent_cell(row, agent_width)),
        "started": Text(relative_time(row.started_at, now)),
        "activity": Text(relative_time(last_activity(row), now)),
        "state": session_badge(session_state(row, now)),
        "tools": Text(count_cell(row.tool_call_count), justify="right"),
        "model": Text(safe_line(row.latest_model_alias or "-", MODEL_WIDTH)),
        "pending": pending_cell,
        "cost": cost_cell(row, compact=compact),
        "new": news_cell(news),
        "title": Text(title if title is not None else safe_line(title_of(row), title_width)),
    }
    return [cells[key] for key in keys or tuple(key for key, _, _ in COLUMNS)]


def cost_cell(row: Session, *, compact: bool = False) -> Text:
    """The COST column: ``$0.42 · 12k tok`` (the cost when the server gives one, then the tokens; compact:
    only the first of them), ``-`` for a row whose server says nothing (never ``$0.00``)."""
    words = cost_words(row_cost(row), split=False, unit=" tok")
    if words and compact:
        words = words.split(" · ")[0]
    return Text(words, justify="right") if words else Text("-", style="dim", justify="right")


def news_cell(news: News | None) -> Text:
    """The NEW column: ``+12`` entries new since the operator last looked at a session followed here
    (``client.marks.new_since``: the count the inbox and the timeline's rule share; ``·`` when nothing is
    new), ``new`` for one looked at before but not followed yet in this run (after a restart: the mark on
    disk and the row's last activity say something came, not how much), then ``✗`` when something went
    wrong and ``✉`` when the agent read a note since (glyphs as well as colour: ``NO_COLOR`` loses
    nothing); ``-`` when there is nothing to say."""
    out = Text()
    if news is not None and news.new is not None:
        out.append(f"+{news.new:,}" if news.new else "·", style="bold" if news.new else "dim")
    elif news is not None and news.looked:
        out.append("new" if news.changed else "·", style="bold" if news.changed else "dim")
    if news is not None and news.problem:
        out.append((" " if out else "") + "✗", style="bold red")
    if news is not None and news.note_read:
        out.append((" " if out else "") + "✉", style="bold green")
    return out if out else Text("-", style="dim")


def agent_cell(row: Session, width: int) -> str:
    """The agent column's text: its name, else its kind, cut to ``width``."""
    label = row.agent_label
    kind = row.agent_kind or row.session_source_type
    if kind and label == "?":
        label = kind_label(kind)
    return safe_line(label, width)


def plan_layout(rows: list[Session], width: int, now: datetime, *, news: bool = False) -> ColumnLayout:
    """The columns for a ``width``-column terminal: all of them when wide (a COST column widens what
    "wide" is); when narrow, drop the columns in ``DROP_ORDER`` while the titles lack room, so what tells
    sessions apart stays in view. NEW is shown only when some row has ``news`` to show (a session followed
    here, a problem, a note read): its room goes to the titles otherwise; COST only when some row's server
    says what it cost."""
    costs = [cost_cell(row).cell_len for row in rows if row_cost(row)]
    # All columns fit from WIDE_AT; a COST column needs its own room on top (narrower, its cells are short).
    narrow = width < WIDE_AT + (max(costs) + CELL_PADDING if costs else 0)
    keys = [key for key, _, _ in COLUMNS if (news or key != "new") and (costs or key != "cost")]
    labels = {key: (short if narrow else long) for key, long, short in COLUMNS}
    longest = max((len(title_of(row)) for row in rows), default=0)
    wanted = max(MIN_TITLE, min(TITLE_WANTED, longest))

    def widths(agent_width: int) -> dict[str, int]:
        found: dict[str, int] = {key: cell_len(label) for key, label in labels.items()}
        for row in rows:
            cells = session_cells(
                row, now, agent_width=agent_width, title="", keys=tuple(keys), compact=narrow
            )
            for key, cell in zip(keys, cells, strict=True):
                found[key] = max(found[key], cell.cell_len)
        for key in ("started", "activity"):  # "5s ago" now may read "just now" or "100d ago" later
            found[key] = max(cell_len(labels[key]), TIME_WIDTH)
        found["new"] = max(cell_len(labels["new"]), NEW_WIDTH)  # "+120 ✗ ✉" comes and goes
        return found

    def room(shown: list[str], sizes: dict[str, int]) -> int:
        others = sum(sizes[key] + CELL_PADDING for key in shown if key != "title")
        return width - others - CELL_PADDING - SCROLLBAR

    agent_width = AGENT_WIDTHS[1 if narrow else 0]
    sizes = widths(agent_width)
    if narrow:
        shown = list(keys)
        for key in DROP_ORDER:
            if room(shown, sizes) >= wanted:
                break
            if key in shown:
                shown.remove(key)
        if room(shown, sizes) < wanted:
            agent_width = AGENT_WIDTHS[2]
            sizes = widths(agent_width)
        for key in LAST_RESORT:
            if room(shown, sizes) >= min(wanted, 20):
                break
            shown.remove(key)
        keys = shown
    return ColumnLayout(tuple(keys), narrow, max(MIN_TITLE, room(keys, sizes)), agent_width)


class SessionTable(DataTable[Text]):
    """The sessions grid; its Enter binding is shown in the footer as "Attach"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Attach", id="sessions.attach", tooltip="Attach to this session"),
        # Movement as in less, vim and k9s (the arrows, PageUp/PageDown, Home/End work too).
        Binding("j", "cursor_down", "Down", show=False, id="sessions.down", tooltip="Next session"),
        Binding("k", "cursor_up", "Up", show=False, id="sessions.up", tooltip="Previous session"),
        Binding("g", "scroll_top", "First", show=False, id="sessions.first", tooltip="First session"),
        Binding("G", "scroll_bottom", "Last", show=False, id="sessions.last", tooltip="Last session"),
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
        pending: Callable[[], Mapping[str, int] | None] | None = None,
        news: Callable[[Session], News] | None = None,
        highlight: str | None = None,
    ) -> None:
        super().__init__()
        self._highlight = highlight
        """A session to put the cursor on once its row is listed (the one just left, when the list opens
        after an attach that ``preloop sessions attach ID`` opened)."""
        self.backend = backend
        self._pending = pending
        """Approvals waiting per session as the live inbox knows them (None until it knows): the PENDING
        column and the header's "⚑ n waiting" then say the same, not the list's last refresh."""
        self._news = news
        """Each row's NEW column (new events since last looked, a problem, a note read); None: no column."""
        self._shown_news: list[News] = []
        self._rows: list[Session] = []
        self._open_session = open_session
        self._clock = clock
        self.refresh_interval = refresh_interval
        self.sessions: list[Session] = []
        self.loaded = False
        self.more_on_server = False
        self.error: ClientError | None = None
        self.active_only = False
        self.filter_text = ""
        self.columns_layout: ColumnLayout | None = None
        self._restore_key: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="top-line"):  # the inbox count (all sessions) sits at the right
            yield Static("", id="status-line")
            yield InboxBadge(id="inbox-badge")
        yield StandingBanner(id="standing")
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
        """Pick the columns for the current width; True if they changed (the rows must be re-added).

        A column never narrows by itself in a ``DataTable``, so when the layout changes or the title's room
        shrinks (narrower terminal, a longer agent name) the columns are rebuilt; when the room grows the
        rows are merely re-cut.
        """
        rows = self.visible_sessions()
        news = self._news
        shown = news is not None and any(news(row).has_news for row in rows)
        layout = plan_layout(rows, self.app.size.width, self._clock(), news=shown)
        old = self.columns_layout
        same = old is not None and (layout.keys, layout.narrow, layout.agent_width) == (
            old.keys,
            old.narrow,
            old.agent_width,
        )
        if old is not None and same and layout.title_width >= old.title_width:
            self.columns_layout = layout
            return layout.title_width != old.title_width
        self.columns_layout = layout
        table = self.query_one(DataTable)
        self._restore_key = self._cursor_key()
        table.clear(columns=True)
        for key, long, short in COLUMNS:
            if key in layout.keys:
                table.add_column(short if layout.narrow else long, key=key)
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
            if self._gone():
                return
            self.error = exc
            hint = "r: retry · the rows below are from the last refresh" if self.sessions else "r: retry"
            self.query_one(Banner).show(str(exc), "error", hint=hint)
            # The last good rows stay, but their "20s ago" and live/idle keep ageing against the clock.
            self.apply_rows()
            return
        if self._gone():
            return
        self.error = None
        self.loaded = True
        self.query_one(Banner).clear()
        self._rows = page.items
        self.sessions = self._live_counts(page.items)
        self.more_on_server = page.has_more
        self.apply_rows()

    def _live_counts(self, rows: list[Session]) -> list[Session]:
        """The rows with the inbox's pending counts, where it knows them."""
        counts = self._pending() if self._pending is not None else None
        if counts is None:
            return rows
        return [
            row
            if row.pending_approval_count == counts.get(row.id, 0) or row.ended_at is not None
            else row.model_copy(update={"pending_approval_count": counts.get(row.id, 0)})
            for row in rows
        ]

    def on_screen_resume(self) -> None:
        """Shown again: what changed in the inbox meanwhile reaches the PENDING column."""
        self.inbox_changed()

    def inbox_changed(self) -> None:
        """The live inbox changed, or the screen is shown again: the PENDING and NEW columns follow it
        (a followed session's events kept coming meanwhile; only what differs is redrawn)."""
        rows = self._live_counts(self._rows)
        counts = [r.pending_approval_count for r in rows]
        if counts != [r.pending_approval_count for r in self.sessions] or self._news_moved():
            self.sessions = rows
            self.apply_rows()

    def _news_moved(self) -> bool:
        """Whether any visible row's NEW cell would now say something else than it shows."""
        news = self._news
        if news is None:
            return False
        return [news(row) for row in self.visible_sessions()] != self._shown_news

    def _gone(self) -> bool:
        """An answer that came back while the screen is being taken apart (the app exiting: its widgets
        are removed before its workers are cancelled) has nowhere to go."""
        return get_current_worker().is_cancelled or not self.query("#sessions-table")

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
        return sort_sessions(rows)

    def apply_rows(self) -> None:
        """Bring the table to the visible rows, in place when the order is unchanged, keeping the cursor."""
        self._set_columns()
        table = self.query_one(DataTable)
        now = self._clock()
        rows = self.visible_sessions()
        wanted = [s.id for s in rows]
        current = [str(key.value) for key in table.rows]
        highlight = self._highlight if self._highlight in wanted else None
        if highlight is not None:
            self._highlight = None
        cursor_key = highlight or self._cursor_key() or self._restore_key
        self._restore_key = None
        layout = self.columns_layout
        if layout is None:  # not mounted yet
            return
        titles = fit_titles([title_of(s) for s in rows], layout.title_width)

        news = self._news
        self._shown_news = [news(session) for session in rows] if news is not None else []
        told: list[News | None] = list(self._shown_news) if news is not None else [None] * len(rows)

        def cells(session: Session, title: str, said: News | None) -> list[Text]:
            return session_cells(
                session,
                now,
                agent_width=layout.agent_width,
                title=title,
                keys=layout.keys,
                news=said,
                compact=layout.narrow,
            )

        if wanted == current:
            for session, title, said in zip(rows, titles, told, strict=True):
                for column, cell in zip(layout.keys, cells(session, title, said), strict=True):
                    table.update_cell(session.id, column, cell, update_width=True)
            if highlight is not None:
                table.move_cursor(row=wanted.index(highlight), animate=False)
        else:
            table.clear()
            for session, title, said in zip(rows, titles, told, strict=True):
                table.add_row(*cells(session, title, said), key=session.id)
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
        line.append(f"  {shown} · {live} live · newest first")
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
