"""The one reconnect loop every live feed runs: it owns Connecting / Live / Reconnecting / LoginNeeded /
Refused.

A backend supplies only one connection's worth of work, ``connect(link)``: open the channel, read it,
map what arrives to events, and yield them (plus ``Live`` once open, ``Ended`` when the session is over,
``Missed``/``Skipped`` as they happen). It ends a connection by raising:

* :class:`Retry`: connect again after the backoff (``immediate=True``: at once, e.g. to fill a gap);
* :class:`Refusal`: stop for good with ``Refused`` (the backend decides with
  :func:`client.streaming.policy.refuses`), except a refused token (401, 4401: ``needs_login``), which
  waits with ``LoginNeeded`` and tries again (backoff capped at ``LOGIN_RETRY_MAX``) until the
  connection's token is accepted: each attempt's request reads the token again on its 401
  (:class:`client.connection.Connection`), and ``link.token_refused`` tells a channel that does not go
  through it (a websocket) to read it first;
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

from client.status import Connecting, Ended, LoginNeeded, Reconnecting, Refused, StreamStatus
from client.streaming.policy import LOGIN_RETRY_MAX, backoff_delay, login_reason, needs_login

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
    token_refused: bool = False
    """The last attempt ended on a refused token: read it again before connecting."""

    def alive(self) -> None:
        """The connection works: the next failure starts the backoff afresh."""
        self.failures = 0
        self.token_refused = False


_T = TypeVar("_T")
Classify = Callable[[Exception], "str | Refusal | None"]


async def reconnecting(
    connect: Callable[[Link], AsyncGenerator[_T | StreamStatus, None]],
    *,
    backoff_initial: float,
    backoff_max: float,
    classify: Classify,
) -> AsyncGenerator[_T | StreamStatus, None]:
    """Run ``connect`` until the session ends or the server refuses (a refused token is waited out),
    reconnecting with backoff between."""
    link = Link()
    while True:
        yield Connecting(link.failures + 1)
        immediate = False
        verdict: str | Refusal
        try:
            async with aclosing(connect(link)) as items:  # closed here, not whenever GC gets to it
                async for item in items:
                    yield item
                    if isinstance(item, Ended):
                        return
            verdict = "connection closed"
        except Refusal as refusal:
            verdict = refusal
        except Retry as retry:
            verdict, immediate = retry.reason, retry.immediate
        except Exception as exc:
            classified = classify(exc)
            if classified is None:
                raise
            verdict = classified
        login = isinstance(verdict, Refusal) and needs_login(verdict.status)
        if isinstance(verdict, Refusal) and not login:
            yield Refused(verdict.reason, verdict.status)
            return
        link.failures += 1
        link.token_refused = login
        delay = 0.0
        if not immediate:
            # ``retry: 0`` cannot be grown from (0·2^n stays 0: a busy loop against a dead server), so a
            # zero falls back to our own start like no ``retry:`` at all.
            initial = link.retry_hint or backoff_initial
            maximum = min(backoff_max, LOGIN_RETRY_MAX) if login else backoff_max
            delay = backoff_delay(link.failures, initial=min(initial, maximum), maximum=maximum)
        if isinstance(verdict, Refusal):
            yield LoginNeeded(link.failures, delay, login_reason(verdict.status))
        else:
            yield Reconnecting(link.failures, delay, verdict)
        if delay:
            await asyncio.sleep(delay)
