"""The one reconnect loop every live feed runs: it owns Connecting / Live / Reconnecting / Refused.

A backend supplies only one connection's worth of work, ``connect(link)``: open the channel, read it,
map what arrives to events, and yield them (plus ``Live`` once open, ``Ended`` when the session is over,
``Missed``/``Skipped`` as they happen). It ends a connection by raising:

* :class:`Retry`: connect again after the backoff (``immediate=True``: at once, e.g. to fill a gap);
* :class:`Refusal`: stop for good with ``Refused`` (the backend decides with
  :func:`client.streaming.policy.refuses`);
* any other exception: ``classify(exc)`` turns it into a reason to retry, a :class:`Refusal`, or
  ``None`` (a bug: re-raised).

It calls ``link.alive()`` when the connection proved itself (bytes flowed, a replay completed), which
restarts the backoff, and may set ``link.retry_hint`` (a server's ``retry:``) as the backoff's floor.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TypeVar

from client.status import Connecting, Ended, Reconnecting, Refused, StreamStatus
from client.streaming.policy import backoff_delay

__all__ = ["Link", "Refusal", "Retry", "reconnecting"]


class Retry(Exception):
    """This connection is over: connect again (at once when ``immediate``)."""

    def __init__(self, reason: str, *, immediate: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.immediate = immediate


class Refusal(Exception):
    """The server refused the feed (retrying cannot help): the loop ends with ``Refused``."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass
class Link:
    """What one follow's connections tell the loop: failures in a row and the server's retry hint."""

    failures: int = 0
    retry_hint: float | None = None
    """Seconds the server asked us to wait (SSE ``retry:``); 0 or None: our own ``backoff_initial``."""

    def alive(self) -> None:
        """The connection works: the next failure starts the backoff afresh."""
        self.failures = 0


_T = TypeVar("_T")
Classify = Callable[[Exception], "str | Refusal | None"]


async def reconnecting(
    connect: Callable[[Link], AsyncGenerator[_T | StreamStatus, None]],
    *,
    backoff_initial: float,
    backoff_max: float,
    classify: Classify,
) -> AsyncGenerator[_T | StreamStatus, None]:
    """Run ``connect`` until the session ends or the server refuses, reconnecting with backoff between."""
    link = Link()
    while True:
        yield Connecting(link.failures + 1)
        immediate = False
        try:
            async with aclosing(connect(link)) as items:  # closed here, not whenever GC gets to it
                async for item in items:
                    yield item
                    if isinstance(item, Ended):
                        return
            reason = "connection closed"
        except Refusal as refusal:
            yield Refused(refusal.reason, refusal.status)
            return
        except Retry as retry:
            reason, immediate = retry.reason, retry.immediate
        except Exception as exc:
            verdict = classify(exc)
            if verdict is None:
                raise
            if isinstance(verdict, Refusal):
                yield Refused(verdict.reason, verdict.status)
                return
            reason = verdict
        link.failures += 1
        delay = 0.0
        if not immediate:
            # ``retry: 0`` cannot be grown from (0·2^n stays 0: a busy loop against a dead server), so a
            # zero falls back to our own start like no ``retry:`` at all.
            initial = link.retry_hint or backoff_initial
            delay = backoff_delay(link.failures, initial=initial, maximum=backoff_max)
        yield Reconnecting(link.failures, delay, reason)
        if delay:
            await asyncio.sleep(delay)
