"""The attach screen's two-line header: which session, what it is doing, and how the stream is doing.

Line one names the session (short id, agent, title); line two carries the pending-approval count (first
and bold when something waits for a human), read-only, the session state, the connection state
(live / connecting / reconnecting in Ns, attempt n / token refused: waiting for a login / ended /
refused), what the run has cost so far when the server says (``$0.42 · 12k tokens (9.8k in / 2.2k
out)``, ``client.costs``: nothing at all when it does not). Until the session's lists have answered
(``client.session.ListsState``) the count is not known: it says "approvals loading…" (or "approvals not
loaded"), never "no approvals pending". The connection's words are ``client.stream_words.status_words``,
as everywhere. All server text goes through
``client.present`` / ``client.textsafe`` and is appended to ``rich.text.Text`` objects, never
interpolated into markup.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from rich.text import Text
from textual.widgets import Static

from client.costs import Cost, cost_words
from client.ids import short_id
from client.models import Session
from client.present import agent_state, kind_label, session_title
from client.session import ListsState
from client.status import Connecting, Ended, Live, LoginNeeded, Reconnecting, Refused, StreamStatus
from client.stream_words import status_words
from client.textsafe import safe_line
from widgets.badges import session_badge

SPLIT_AT = 110
"""From this many columns the header says the run's tokens in and out, not only their sum."""

_LOOK: dict[type, tuple[str, str]] = {
    Live: ("⇄", "bold green"),
    Connecting: ("…", "yellow"),
    Reconnecting: ("↻", "bold yellow"),
    LoginNeeded: ("⚠", "bold yellow"),
    Ended: ("■", "dim"),
    Refused: ("✗", "bold red"),
}
"""Icon and style per connection state; the words are ``client.stream_words`` (every front end's)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SessionHeader(Static):
    """Re-renders whenever the session row, the stream state or the pending count changes."""

    DEFAULT_CSS = """
    SessionHeader {
        height: 2;
        padding: 0 1;
        background: $panel;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(
        self,
        session_id: str,
        *,
        read_only: bool = False,
        clock: Callable[[], datetime] = _utcnow,
        id: str | None = None,
    ) -> None:
        super().__init__("", id=id)
        self.session_id = session_id
        self.session: Session | None = None
        self.status: StreamStatus = Connecting()
        self.pending_approvals = 0
        self.cost: Cost | None = None
        self.lists: ListsState = "loaded"
        """Whether the session's pending approvals are known yet (the attach screen says)."""
        self.read_only = read_only
        self._clock = clock
        self._retry_at: datetime | None = None

    def on_mount(self) -> None:
        self._render_header()
        # The reconnect countdown and "quiet for 3m" move by themselves: re-render once a second.
        self.set_interval(1.0, self._tick)

    def on_resize(self) -> None:
        """What fits depends on the width (tokens in / out from ``SPLIT_AT``): drawn again as soon as the
        width is known or changes, not at the next tick."""
        self._render_header()

    def _tick(self) -> None:
        self._render_header()

    def set_session(self, session: Session) -> None:
        """A fresh session row (detail, ``session.updated`` or ``session.ended``) arrived."""
        self.session = session
        self._render_header()

    def set_status(self, status: StreamStatus) -> None:
        """A connection state change from the follower; Missed/Skipped do not change the state shown."""
        if isinstance(status, Connecting | Live | Reconnecting | LoginNeeded | Ended | Refused):
            if isinstance(status, Connecting) and isinstance(self.status, LoginNeeded):
                return  # a retry while the token is refused: the state shown is still "token refused"
            self.status = status
            if isinstance(status, Reconnecting):
                self._retry_at = self._clock() + timedelta(seconds=status.delay)
            self._render_header()

    def set_cost(self, cost: Cost | None) -> None:
        """What the run has cost so far (None: the server says nothing, and nothing is shown)."""
        if cost != self.cost:
            self.cost = cost
            self._render_header()

    def set_pending(self, count: int) -> None:
        """How many approvals of this session wait for a decision."""
        self.pending_approvals = count
        self._render_header()

    def set_lists(self, lists: ListsState) -> None:
        """Whether the pending approvals asked for on attach have answered."""
        self.lists = lists
        if self.is_mounted:
            self._render_header()

    def retry_in(self) -> int:
        """Whole seconds until the next reconnect attempt (0 once it is due)."""
        if self._retry_at is None:
            return 0
        return max(round((self._retry_at - self._clock()).total_seconds()), 0)

    def connection_text(self) -> Text:
        """The connection state as icon + words, e.g. ``↻ reconnecting in 4s (attempt 3)``."""
        status = self.status
        look = _LOOK.get(type(status))
        if look is None:
            return Text("?")
        icon, style = look
        return Text(f"{icon} {status_words(status, retry_in=self.retry_in())}", style=style)

    def _render_header(self) -> None:
        session = self.session
        line1 = Text()
        line1.append(short_id(self.session_id), style="bold")
        if session is not None:
            line1.append("  ")
            line1.append(safe_line(session.agent_label, 40), style="bold cyan")
            kind = session.agent_kind or session.session_source_type
            if kind:
                line1.append(f" ({kind_label(kind)})", style="dim")
            line1.append("  ")
            line1.append(session_title(session))

        # Something waiting for a human comes first, so a narrow terminal cuts the least important part
        # (the reconnect attempt number, which the banner repeats) and never the approvals count.
        parts: list[Text] = []
        count = self.pending_approvals
        state, words = agent_state(session, count, self._clock()) if session is not None else ("", "")
        if count and state != "ended":
            # The agent is blocked on a human: one phrase says both what it does and how many wait.
            parts.append(Text(f"⚑ agent waiting for approval ({count} pending)", style="bold reverse yellow"))
        elif count:
            noun = "approval" if count == 1 else "approvals"
            parts.append(Text(f"⚑ {count} {noun} pending", style="bold reverse yellow"))
        if self.read_only:
            parts.append(Text("read-only", style="bold magenta"))
        if session is not None and not (count and state != "ended"):
            parts.append(Text("agent ").append_text(session_badge(state, words)))
        parts.append(Text("stream ").append_text(self.connection_text()))
        spent = cost_words(self.cost, split=self.size.width >= SPLIT_AT)  # tokens in / out: when it fits
        if spent:
            parts.append(Text(spent, style="bold"))
        if not count and self.lists == "loading":
            parts.append(Text("approvals loading…", style="dim italic"))
        elif not count and self.lists == "failed":
            parts.append(Text("approvals not loaded", style="yellow"))
        elif not count:
            parts.append(Text("no approvals pending", style="dim"))
        line2 = Text(" · ").join(parts)
        both = Text("\n").join([line1, line2])
        both.no_wrap = True
        both.overflow = "ellipsis"
        self.update(both)
