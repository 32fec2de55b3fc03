"""The expiry timer: notes and approvals expire on time, not only when someone reads (unlike Preloop).

The timer owns no rules: it runs a *sweep* (``ControlPlane.expire_due``, which expires whatever is due and
says when the next thing is due), sleeps until then, and wakes early when a desk creates something that may
be due sooner (:meth:`ExpiryTimer.wake`, called after the commit). Reads run the same sweep first, so a
read never shows a note as pending after its time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from server.store import now_utc

Sweep = Callable[[], Awaitable[datetime | None]]


class ExpiryTimer:
    """One background task that runs the sweep whenever something is due."""

    def __init__(self, sweep: Sweep) -> None:
        self._sweep = sweep
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def expire_due(self) -> datetime | None:
        """Expire what is due now (reads call this first); returns when the next thing is due."""
        return await self._sweep()

    def wake(self) -> None:
        """Something new may be due sooner than the timer's current sleep: look again."""
        self._wake.set()

    def start(self) -> None:
        """Start the background task (on the server's loop, once storage is open)."""
        self._task = asyncio.create_task(self._loop(), name="note-expiry")

    async def stop(self) -> None:
        """Cancel the background task and wait for it, so storage can close under it."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                due = await self._sweep()
            except Exception:  # storage hiccup: try again shortly rather than die silently
                due = now_utc() + timedelta(seconds=1)
            timeout = None if due is None else max(0.0, (due - now_utc()).total_seconds()) + 0.005
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
