"""A live stream's state in words (``client.stream_words``), the one vocabulary of the attach header and
banner, the inbox, ``--plain`` and ``approvals list --watch`` (issue 23 §6, issue 26 §3): never an
exception's name, readable at 80 columns, and for a line-oriented front end one line per outage rather
than one per retry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from client.connection import Connection
from client.status import Connecting, Live, LoginNeeded, Reconnecting, Refused
from client.stream_words import OutageLines, status_line, status_words

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)

_TRANSPORT_FAILURES = [
    httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
    httpx.ReadError(""),
    httpx.WriteError(""),
    httpx.ProxyError(""),
    httpx.LocalProtocolError(""),
    httpx.UnsupportedProtocol(""),
    httpx.ConnectError(""),
    httpx.ReadTimeout(""),
]


@pytest.mark.parametrize("exc", _TRANSPORT_FAILURES, ids=lambda e: type(e).__name__)
def test_a_broken_stream_is_said_in_words_not_by_the_exceptions_name(exc: Exception) -> None:
    """The trial read "connection lost (RemoteProtocolError)"."""
    why = Connection("http://127.0.0.1:8766", None).stream_failure(exc)
    assert why is not None and why.strip()
    assert type(exc).__name__ not in why and "Error" not in why
    line = status_line(Reconnecting(2, 4.0, why))
    assert type(exc).__name__ not in line


def test_every_state_fits_80_columns() -> None:
    far = "cannot reach https://control-plane.very-long-subdomain.example.internal:8443/api"
    states = [
        Connecting(7),
        Live(123_456),
        Reconnecting(12, 30.0, far),
        Refused("session 0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a does not exist or is not visible", 404),
    ]
    for state in states:
        line = status_line(state)
        assert len("preloop: " + line) <= 80, line
        assert line == status_line(state).strip()
    login = "the server refused the token (401): run `preloop login` in another terminal; everything here"
    assert status_line(LoginNeeded(3, 5.0, login)) == login  # what to do is never cut
    assert status_line(Reconnecting(12, 30.0, far)).startswith(
        "reconnecting in 30s (attempt 12): cannot reach"
    )
    assert status_words(Reconnecting(3, 4.0, "x"), retry_in=2) == "reconnecting in 2s (attempt 3)"


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends_not_one_per_retry() -> None:
    """Retries every 2 s for a minute and a half printed ~90 lines; now: the start, what changed, a
    reminder each minute, and the end."""
    lines = OutageLines()
    said: list[str] = [s for s in (lines.update(Connecting(1), T0), lines.update(Live(5), T0)) if s]
    assert said == ["connecting", "live (last event 5)"]
    lost = "the server closed the connection"
    down = "cannot reach http://127.0.0.1:8766"
    now = T0
    for attempt in range(1, 46):
        now += timedelta(seconds=2)
        for item in (Reconnecting(attempt, 2.0, lost if attempt == 1 else down), Connecting(attempt + 1)):
            if (text := lines.update(item, now)) is not None:
                said.append(text)
    back = lines.update(Live(9), now + timedelta(seconds=1))
    assert back is not None
    said.append(back)
    assert said[2] == "reconnecting in 2s (attempt 1): the server closed the connection"
    assert said[3] == "reconnecting in 2s (attempt 2): cannot reach http://127.0.0.1:8766"
    assert [s.startswith("still reconnecting after 1 min") for s in said[4:-1]] == [True]
    assert said[-1] == "live again (last event 9) after 1 min 29 s (attempt 46)"
    assert len(said) == 6
