"""Connection state values a live follower yields between events, for the UI to show.

``Client.follow()`` yields ``Event | StreamStatus``: events in sequence order, and one of these each time
the connection changes state. They are plain values (no I/O, no UI) so the TUI, the plain CLI and tests
all read the same thing.

A refused token is not a refusal: a token expires or is revoked mid-shift, and the operator logs in again
in another terminal. So a 401 is :class:`LoginNeeded`, a waiting state of its own (not ``Reconnecting``:
the operator has something to do, and is told once, not at every retry), and ``Refused`` is for what no
login fixes (403, 404).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Connecting:
    """A connection attempt is under way (``attempt`` counts from 1 since the last live period)."""

    attempt: int = 1


@dataclass(frozen=True, slots=True)
class Live:
    """Connected and receiving; ``last_seq`` is the newest event seen so far (0 if none).
    ``stored_through``: the newest event the server had stored when the stream opened, when it says (the
    local server does): what the stream replays up to there is a backlog, what comes after is live."""

    last_seq: int = 0
    stored_through: int | None = None


@dataclass(frozen=True, slots=True)
class Reconnecting:
    """The connection dropped; the next attempt starts in ``delay`` seconds."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class LoginNeeded:
    """The server refused the token (401) of a feed that keeps going: the next attempt, ``delay`` seconds
    from now, reads the token again (``preloop login`` in another terminal is enough) and resumes where
    the feed stopped. Yielded before every such attempt, ``attempt`` counting them: a UI says it once,
    when the first arrives, and that it is over at the next ``Live``."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class Ended:
    """The session ended; the stream is complete and the follower stops."""

    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class Refused:
    """The server refused the stream (403/404 or a websocket 44xx close, but 401: :class:`LoginNeeded`);
    not retried."""

    reason: str
    status: int | None = None


@dataclass(frozen=True, slots=True)
class Missed:
    """Events the server could not give back after a reconnect (Preloop websocket only)."""

    count: int


@dataclass(frozen=True, slots=True)
class Skipped:
    """A frame could not be decoded and was skipped; ``total`` counts all skipped so far."""

    reason: str
    total: int


StreamStatus = Connecting | Live | Reconnecting | LoginNeeded | Ended | Refused | Missed | Skipped
