"""A live stream's state in words, written once for every front end (pure: no I/O, no UI toolkit).

The attach header and banner, the inbox, ``--plain`` attach and ``approvals list --watch`` all say what a
follower's :mod:`client.status` values mean with these functions, so a lost connection reads the same
everywhere:

* :func:`failure_words` says why a transport broke in words ("the server closed the connection"), never
  by an exception's name (``RemoteProtocolError``);
* :func:`status_words` is the state alone ("reconnecting in 4s (attempt 3)"), for a header that counts
  down; :func:`status_line` the state and why, cut to fit an 80-column terminal after a "preloop: "
  prefix; :func:`lost_sentence` the banner's sentence;
* :class:`OutageLines` is what a line-oriented front end prints: a line when the stream is lost, another
  when why changes, a reminder once a minute, and one when it is live again, rather than two lines at
  every retry (the screen's header is the one line that updates in place).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from client.cells import cell_len, fit
from client.present import connection_lost, how_long
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
from client.textsafe import safe_line

__all__ = [
    "LINE_WIDTH",
    "OutageLines",
    "failure_words",
    "lost_sentence",
    "status_line",
    "status_words",
]

LINE_WIDTH = 71
"""A status line fits this many cells: 80 columns less a "preloop: " (or "-- ") prefix."""

REMIND_EVERY = timedelta(minutes=1)
"""A line-oriented front end says a lasting outage again at most this often."""

_TRANSPORT_WORDS: tuple[tuple[str, str], ...] = (
    ("RemoteProtocolError", "the server closed the connection"),
    ("LocalProtocolError", "the exchange with the server broke off"),
    ("ProxyError", "the proxy failed"),
    ("UnsupportedProtocol", "the server address is not http or https"),
    ("ConnectTimeout", "no answer to the connection attempt"),
    ("ConnectError", "the server cannot be reached"),
    ("ConnectionRefusedError", "the server refused the connection"),
    ("ConnectionResetError", "the server reset the connection"),
    ("ReadTimeout", "nothing received in time"),
    ("TimeoutException", "nothing received in time"),
    ("TimeoutError", "nothing received in time"),
    ("ReadError", "the connection broke while reading"),
    ("WriteError", "the connection broke while sending"),
)
"""Why a transport broke, by the name of the failure's class or one of its bases (most specific first)."""


def failure_words(exc: BaseException) -> str:
    """Why a connection broke, in words: what an operator reads, never the exception's name."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, words in _TRANSPORT_WORDS:
        if name in names:
            return words
    return "the connection broke"


def status_words(status: StreamStatus, *, retry_in: int | None = None) -> str:
    """The state alone, for a header next to an icon: "live", "connecting (attempt 2)", "reconnecting
    in 4s (attempt 3)" (``retry_in``: the seconds left, for a countdown), "token refused: waiting for a
    login", "ended", "refused"."""
    match status:
        case Connecting(attempt=n):
            return "connecting" + (f" (attempt {n})" if n > 1 else "")
        case Live():
            return "live"
        case Reconnecting(attempt=n, delay=d):
            seconds = round(d) if retry_in is None else retry_in
            when = f"in {seconds}s" if seconds >= 1 else "now"
            return f"reconnecting {when} (attempt {n})"
        case LoginNeeded():
            return "token refused: waiting for a login"
        case Ended():
            return "ended"
        case Refused():
            return "refused"
        case Missed(count=n):
            return f"{n} event(s) could not be recovered after reconnecting"
        case Skipped(total=n):
            return f"skipped an unreadable event ({n} so far)"
    return "?"


def status_line(status: StreamStatus, *, retry_in: int | None = None, width: int = LINE_WIDTH) -> str:
    """The state and why, on one line of at most ``width`` cells (the why is cut with "…"); a refused
    token's sentence says what to do, so it is whole."""
    match status:
        case Live(last_seq=seq):
            return f"live (last event {seq})" if seq else "live"
        case Reconnecting(reason=why):
            return _with_why(status_words(status, retry_in=retry_in), why, width)
        case LoginNeeded(reason=why):  # what to do, whole: never cut
            return safe_line(why)
        case Refused(reason=why, status=code):
            return _with_why(f"refused ({code})" if code else "refused", why, width)
        case Skipped(reason=why, total=n):
            return _with_why(f"skipped an unreadable event ({n} so far)", why, width)
    return fit(status_words(status, retry_in=retry_in), width)


def _with_why(head: str, why: str, width: int) -> str:
    said = safe_line(why).strip()
    if not said:
        return fit(head, width)
    room = width - cell_len(head) - 2
    return f"{head}: {fit(said, room)}" if room >= 8 else fit(head, width)


def lost_sentence(status: Reconnecting) -> str:
    """The banner's sentence while the stream reconnects (the header counts down)."""
    return (
        f"{connection_lost(status.reason)}. Reconnecting (attempt {status.attempt}); the stream "
        "resumes where it stopped, nothing is missed."
    )


class OutageLines:
    """What a line-oriented front end prints for a follower's states (feed every state to
    :meth:`update`; print what it returns): the first connection and going live; an outage (reconnecting,
    or a refused token waiting for a login) once when it starts, again when why changes and at most once a
    minute while it lasts; and once when the stream is live again, how long it took."""

    def __init__(self) -> None:
        self._down_since: datetime | None = None
        self._why = ""
        self._said_at: datetime | None = None
        self._attempt = 0

    @property
    def down(self) -> bool:
        """Whether an outage is going on (said, not over)."""
        return self._down_since is not None

    def update(self, status: StreamStatus, now: datetime) -> str | None:
        """The line to print for ``status`` at ``now``, or None (nothing new to say)."""
        if isinstance(status, Connecting):
            self._attempt = status.attempt
            return None if self.down else status_line(status)
        if isinstance(status, Live):
            if self._down_since is None:
                return status_line(status)
            took = how_long(now - self._down_since, to_the_second=True)
            self._down_since = self._said_at = None
            self._why = ""
            back = "live again" + (f" (last event {status.last_seq})" if status.last_seq else "")
            attempt = f" (attempt {self._attempt})" if self._attempt > 1 else ""
            return fit(f"{back} after {took}{attempt}", LINE_WIDTH)
        if isinstance(status, Reconnecting | LoginNeeded):
            why = status.reason
            if self._down_since is None or why != self._why:
                self._down_since = self._down_since or now
                self._why, self._said_at = why, now
                return status_line(status)
            if self._said_at is not None and now - self._said_at >= REMIND_EVERY:
                self._said_at = now
                doing = "reconnecting" if isinstance(status, Reconnecting) else "waiting for a login"
                lasted = how_long(now - self._down_since, to_the_second=True)
                head = f"still {doing} after {lasted} (attempt {status.attempt})"
                return _with_why(head, why, LINE_WIDTH)
            return None
        return status_line(status)
