"""Connection state values a live follower yields between events, for the UI to show.

``Client.follow()`` yields ``Event | StreamStatus``: events in sequence order, and one of these each time
the connection changes state. They are plain values (no I/O, no UI) so the TUI, the plain CLI and tests
all read the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Connecting:
    """A connection attempt is under way (``attempt`` counts from 1 since the last live period)."""

    attempt: int = 1


@dataclass(frozen=True, slots=True)
class Live:
    """Connected and receiving; ``last_seq`` is the newest event seen so far (0 if none)."""

    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class Reconnecting:
    """The connection dropped; the next attempt starts in ``delay`` seconds."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class Ended:
    """The session ended; the stream is complete and the follower stops."""

    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class Refused:
    """The server refused the stream (401/403/404 or a websocket 44xx close); not retried."""

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


StreamStatus = Connecting | Live | Reconnecting | Ended | Refused | Missed | Skipped
