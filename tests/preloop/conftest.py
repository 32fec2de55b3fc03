"""Fixtures for the Preloop backend tests: a fake Preloop on loopback and a client attached to it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from client.backends.preloop import PreloopBackend
from client.backends.preloop.feed import PreloopTiming
from client.connection import Connection
from client.events import BaseEvent, Event
from client.status import StreamStatus
from tests.fake_preloop import TOKEN, FakePreloop, running_fake_preloop

# Every interval shrunk so a whole scenario (polls, pings, reconnects) runs in about a second. A healthy
# connection is declared dead only after 10 s of silence (25 unanswered pings), which a loaded machine
# never produces by accident; the test of a dead connection shortens it on a fake that answers nothing.
FAST = PreloopTiming(
    ping_interval=0.2,
    dead_after=10.0,
    attach_timeout=5.0,
    note_poll=0.05,
    note_idle_poll=0.2,
    approval_poll=0.05,
    session_poll=0.3,
    backoff_initial=0.02,
    backoff_max=0.1,
    close_timeout=0.2,
)


@pytest.fixture
def fake_server() -> Iterator[tuple[FakePreloop, str]]:
    with running_fake_preloop() as served:
        yield served


@pytest.fixture
def fake(fake_server: tuple[FakePreloop, str]) -> FakePreloop:
    return fake_server[0]


@pytest.fixture
def base_url(fake_server: tuple[FakePreloop, str]) -> str:
    return fake_server[1]


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[PreloopBackend]:
    async with PreloopBackend(Connection(base_url, TOKEN)) as c:
        yield c


class Watch:
    """Runs a follower in the background and lets a test wait for what it yields."""

    def __init__(self, items: AsyncIterator[Event | StreamStatus]) -> None:
        self.items: list[Event | StreamStatus] = []
        self.finished = False
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._run(items))

    async def _run(self, items: AsyncIterator[Event | StreamStatus]) -> None:
        try:
            async for item in items:
                self.items.append(item)
                self._changed.set()
        finally:
            self.finished = True
            self._changed.set()

    @property
    def events(self) -> list[Event]:
        return [item for item in self.items if isinstance(item, BaseEvent)]

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def statuses(self, kind: type[Any]) -> list[Any]:
        return [item for item in self.items if isinstance(item, kind)]

    async def until(self, predicate: Callable[[Watch], bool], within: float = 30.0) -> None:
        """Wait until ``predicate`` holds; fail with everything seen so far if it never does (the deadline
        is generous for a loaded machine: a condition met sooner returns sooner)."""
        deadline = asyncio.get_running_loop().time() + within
        while not predicate(self):
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or (self.finished and not predicate(self)):
                if self._task.done() and self._task.exception() is not None:
                    raise self._task.exception()  # type: ignore[misc]
                pytest.fail(f"condition not met; follower yielded: {self.describe()}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def done(self, within: float = 30.0) -> None:
        """Wait for the follower to stop by itself (an end or a refusal)."""
        await self.until(lambda w: w.finished, within)

    def describe(self) -> str:
        return ", ".join(
            f"{item.seq}:{item.type}" if isinstance(item, BaseEvent) else type(item).__name__
            for item in self.items
        )

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@pytest.fixture
async def watch() -> AsyncIterator[Callable[[AsyncIterator[Event | StreamStatus]], Watch]]:
    """Start followers; every one still running is cancelled (its socket closed) at the end of the test."""
    started: list[Watch] = []

    def start(items: AsyncIterator[Event | StreamStatus]) -> Watch:
        w = Watch(items)
        started.append(w)
        return w

    yield start
    for w in started:
        await w.close()
