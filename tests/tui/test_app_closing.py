"""The app's own workers while it closes and while it runs (real local server, real streams).

* The inbox feed runs on while the app closes, after its screens are gone: what it brings then is dropped
  quietly. (A fresh-clone CI run failed once on ``ScreenStackError`` at the end of a Dendrux test: the feed
  polled once more in that window.) The window is too short to hit on demand, so the feed here is the real
  one, with one status added once the screens are gone. Before that, the app closes the screens part by part:
  a status in that window, while the inbox screen is still mounted with its table gone, is dropped too.
* The standing (allow rules, a kill switch) is read once per interval: a read that changes it does not
  start another read at once (the reader was named like the standing's watcher, so Textual ran it again on
  every change).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from client.backends.base import Backend
from client.models import AttentionSnapshot, RuleSpec, Standing
from client.status import Connecting, Live, StreamStatus
from server.harness_client import HarnessClient
from tests.conftest import until
from tui.app import PreloopApp
from tui.screens.inbox import InboxScreen
from tui.screens.sessions import SessionsScreen
from widgets.inbox_view import InboxApprovals


class ClosingFeed:
    """The real backend; its attention feed adds one ``Connecting`` once the app has no screen left."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.app: PreloopApp | None = None
        self.fed = False
        self.said_after_close = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def watch_attention(self, **kwargs: Any) -> AsyncGenerator[AttentionSnapshot | Any | StreamStatus]:
        feed = self._backend.watch_attention(**kwargs)
        first = await anext(feed)
        yield first
        self.fed = True
        assert self.app is not None
        while self.app.screen_stack:  # noqa: ASYNC110 (Textual signals no "screens gone": look each tick)
            await asyncio.sleep(0)
        self.said_after_close = True
        yield Connecting(attempt=1)
        await asyncio.Event().wait()


async def test_what_the_inbox_feed_brings_while_the_app_closes_is_dropped(client: Backend) -> None:
    backend = ClosingFeed(client)
    app = PreloopApp(backend, refresh_interval=0)
    backend.app = app
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        await until(pilot, lambda: backend.fed, "the inbox's first snapshot")
    # run_test re-raises what a worker raised: reaching here is the app closing cleanly
    assert backend.said_after_close


class CountedStanding:
    """The real backend, counting the standing reads."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def standing(self) -> Standing:
        self.reads += 1
        return await self._backend.standing()


async def test_a_standing_that_changed_is_not_read_again_before_its_interval(
    client: Backend, harness: HarnessClient
) -> None:
    agent = await harness.start_session(agent_name="builder", title="Build")
    await client.create_rule(RuleSpec(mode="allow", minutes=30, scope="session", session_id=agent.session_id))
    backend = CountedStanding(client)
    app = PreloopApp(backend, refresh_interval=0, standing_interval=60)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: bool(app.standing.rules), "the rule in the banner")
        for _ in range(20):  # a read the change started would come within these frames
            await pilot.pause()
        assert backend.reads == 1


class ClosingInboxFeed:
    """The real backend; its attention feed says ``Live`` once the app is closing while the inbox screen
    is still on the stack (mounted) with its parts already taken down: a run on a busy machine failed on
    ``NoMatches: InboxApprovals`` in that window, at the end of an inbox test."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.app: PreloopApp | None = None
        self.fed = False
        self.said_while_taken_down = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def _inbox_taken_down(self) -> bool:
        assert self.app is not None
        screens = [s for s in self.app.screen_stack if isinstance(s, InboxScreen)]
        return not self.app.is_running and bool(screens) and not screens[0].query(InboxApprovals)

    async def watch_attention(self, **kwargs: Any) -> AsyncGenerator[AttentionSnapshot | Any | StreamStatus]:
        feed = self._backend.watch_attention(**kwargs)
        yield await anext(feed)
        self.fed = True
        assert self.app is not None
        while self.app.screen_stack and not self._inbox_taken_down():  # noqa: ASYNC110 (look each tick)
            await asyncio.sleep(0)
        self.said_while_taken_down = self._inbox_taken_down()
        yield Live(last_seq=0)
        await asyncio.Event().wait()


async def test_the_inbox_feed_while_the_inbox_screen_is_taken_down_is_dropped(client: Backend) -> None:
    backend = ClosingInboxFeed(client)
    app = PreloopApp(backend, refresh_interval=0)
    backend.app = app
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: backend.fed, "the inbox's first snapshot")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
    # run_test re-raises what a worker raised: reaching here is the app closing cleanly
    assert backend.said_while_taken_down
