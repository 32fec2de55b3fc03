"""What every backend's mapping shares: reading loose wire values, and numbering the events it makes.

A server that does not speak our event vocabulary (Preloop, a Dendrux app) is read by its backend's
``mapping.py``: pure functions from the server's frames and rows to event *bodies* (dicts shaped like
:mod:`client.events`, without ``seq``), and one stateful mapper per follow that numbers them. The parts
that job has in common on every server live here, once:

* reading JSON that may hold anything: :func:`parse_time` (ISO with ``Z``, an offset, both, or no zone
  at all = UTC), :func:`as_str`, :func:`as_int`, :func:`as_dict` (``client.models.iso`` writes a time
  back);
* :func:`event_body`: the fields every event body carries (``type``, ``session_id``, ``at``);
* :class:`Sequencer`: numbers bodies with a contiguous local ``seq`` from 1, stamps each with the server's
  own identity of the fact it came from (``server_id`` / ``server_seq``), and validates them into
  events; a body that does not validate is counted in ``skipped``, never raised. Each backend's mapper
  (``PreloopMapper``, ``DendruxMapper``) is a Sequencer that knows its server.

The backends are independent of each other (an import-linter contract); this module is one of the few
they may share (with ``base``, ``rest``, ``client.streaming`` and ``client.connection``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from client.events import Event, EventDecodeError, event_from_dict
from client.models import iso

__all__ = [
    "RESERVED_FIELDS",
    "Sequencer",
    "as_dict",
    "as_int",
    "as_str",
    "event_body",
    "now",
    "parse_time",
]

RESERVED_FIELDS = frozenset({"type", "session_id", "at", "seq", "raw"})
"""Fields of an event body that a server's own fields must not overwrite (an unknown event keeps the
server's fields beside ours)."""


def parse_time(value: Any) -> datetime | None:
    """A server's timestamp as an aware UTC datetime, or None when it is not one.

    Accepts what the servers send: ISO text with ``Z``, with an offset, with an offset *and* a ``Z``
    (Dendrux's stream: ``...+00:00Z``), with a space for the ``T``, or with no zone at all (Preloop's
    naive columns, meaning UTC); a datetime passes through (made UTC)."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1]
            if not (len(text) > 6 and text[-6] in "+-" and text[-3] == ":"):
                text += "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def now() -> datetime:
    """The time a fact is given when its server sent none."""
    return datetime.now(UTC)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def as_int(value: Any) -> int | None:
    """``value`` as an int if it is a JSON number (a float is truncated; a bool is not a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return None


def as_count(value: Any) -> int | None:
    """A token count: a JSON number that is 0 or more (anything else, negatives included, is unknown)."""
    number = as_int(value)
    return number if number is not None and 0 <= number <= 2**53 else None


def as_usd(value: Any) -> float | None:
    """An amount of money: a finite JSON number that is 0 or more (anything else is unknown)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    amount = float(value)
    return amount if math.isfinite(amount) and 0 <= amount <= 1e9 else None


def event_body(kind: str, session_id: str, at: datetime, **payload: Any) -> dict[str, Any]:
    """One event's body without its ``seq``: the fields every event has, then its own."""
    return {"type": kind, "session_id": session_id, "at": iso(at), **payload}


class Sequencer:
    """Numbers a follow's event bodies with a contiguous local ``seq`` (from 1) and validates them.

    ``last_seq`` is the seq of the last event made (where a follower's ``Live``/``Ended`` point), and
    ``skipped`` how many bodies did not validate (a follower reports them as ``Skipped``)."""

    def __init__(self) -> None:
        self.last_seq = 0
        self.skipped = 0

    def number(
        self,
        bodies: Iterable[dict[str, Any]],
        *,
        server_id: str | None = None,
        server_seq: int | None = None,
    ) -> list[Event]:
        """Our events for ``bodies``, numbered in order; an invalid body is counted and left out (its
        number is not used, so the seq stays contiguous). ``server_id`` / ``server_seq`` name the server's
        own fact they came from (``client.events.BaseEvent``): a mark remembers it, not our seq, which
        another follow numbers differently."""
        origin: dict[str, Any] = {}
        if server_id is not None:
            origin["server_id"] = server_id
        if server_seq is not None:
            origin["server_seq"] = server_seq
        events: list[Event] = []
        for body in bodies:
            try:
                event = event_from_dict({**body, **origin, "seq": self.last_seq + 1})
            except EventDecodeError:
                self.skipped += 1
                continue
            self.last_seq += 1
            events.append(event)
        return events
