"""The two rules every live feed follows when a connection fails: how long to wait, and when to stop.

* :func:`backoff_delay`: exponential backoff with jitter on every attempt, the first included, so clients
  dropped together by a server restart do not come back in lock step;
* :func:`refuses`: which answers mean "retrying cannot help" (stop with ``Refused``) rather than "try
  again later";
* :func:`needs_login`: among those, the one a login fixes (401, or a websocket's 4401): the feed waits
  for a token the server accepts (``LoginNeeded``), retrying at most every ``LOGIN_RETRY_MAX`` seconds.
"""

from __future__ import annotations

import random

__all__ = [
    "BACKOFF_INITIAL",
    "BACKOFF_MAX",
    "LOGIN_RETRY_MAX",
    "RETRYABLE_4XX",
    "backoff_delay",
    "login_reason",
    "needs_login",
    "refuses",
]

RETRYABLE_4XX = frozenset({408, 425, 429})
"""Client errors that are about timing, not about us: retried like a 5xx."""

LOGIN_RETRY_MAX = 5.0
"""While the token is refused, a feed tries again (reading the token again) at least this often: one
small request, so an operator who logged in again waits seconds, not the 30 s of a dead server's backoff."""


BACKOFF_INITIAL = 0.5
"""Seconds before the first reconnect (when the server gave no ``retry:``)."""

BACKOFF_MAX = 2.5
"""The longest wait between two reconnects. A server that comes back is followed again within this (the
promise is 3 s); a dead one costs 24-48 refused connections a minute per follower (one every 1.25-2.5 s),
no request reaching anything. At 30 s followers stayed away up to 20 s after a restart."""


def backoff_delay(attempt: int, *, initial: float, maximum: float, rng: random.Random | None = None) -> float:
    """Seconds to wait before reconnect ``attempt`` (1, 2, ...): drawn from ``[base, 2·base]`` with
    ``base = initial·2^(attempt-1)``, the top capped at ``maximum`` (then from its upper half), and never
    below ``initial`` (the server's ``retry:`` when it gave one) unless that is more than half of
    ``maximum``: the cap wins, and the draw stays jittered. The first attempt is jittered too."""
    floor = min(initial, maximum / 2)
    high: float = min(maximum, initial * (2.0 ** max(attempt, 1)))
    low = max(floor, high / 2)
    return (rng or random).uniform(low, high)


def refuses(status: int | None) -> bool:
    """Whether an answer ends a live feed for good: any 4xx but 408/425/429 (401, 403, 404, 422, ...).

    A websocket close code 4400-4499 carries an HTTP 4xx in its last three digits and reads the same way.
    """
    if status is None:
        return False
    if 4400 <= status <= 4499:
        status -= 4000
    return 400 <= status < 500 and status not in RETRYABLE_4XX


def needs_login(status: int | None) -> bool:
    """Whether a refusal is the token's (401, websocket close 4401): a new token fixes it, so a live feed
    waits for one instead of stopping."""
    return status in (401, 4401)


def login_reason(status: int | None) -> str:
    """What a feed waiting for a token says (once) to the operator."""
    code = 401 if status is None else status
    return (
        f"the server refused the token ({code}): run `preloop login` in another terminal; everything "
        "here is kept and resumes by itself"
    )
