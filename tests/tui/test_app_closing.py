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
from collections.abc import AsyncGenerator, Callable
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
    """The real backend; its attention feed adds one ``status`` once ``when(app)`` holds while the app
    closes (or, at the latest, once it has no screen left); ``said`` tells whether it came in that window."""

    def __init__(self, backend: Backend, when: Callable[[PreloopApp], bool], status: StreamStatus) -> None:
        self._backend = backend
        self.when, self.status = when, status
        self.app: PreloopApp | None = None
        self.fed = False
        self.said = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def watch_attention(self, **kwargs: Any) -> AsyncGenerator[AttentionSnapshot | Any | StreamStatus]:
        feed = self._backend.watch_attention(**kwargs)
        yield await anext(feed)
        self.fed = True
        app = self.app
        assert app is not None
        while app.screen_stack and not self.when(app):  # noqa: ASYNC110 (Textual signals neither: look each tick)
            await asyncio.sleep(0)
        self.said = self.when(app)
        yield self.status
        await asyncio.Event().wait()


def no_screen_left(app: PreloopApp) -> bool:
    return not app.screen_stack


def inbox_taken_down(app: PreloopApp) -> bool:
    """Closing, with the inbox screen still on the stack (mounted) and its parts already taken down: a run
    on a busy machine failed on ``NoMatches: InboxApprovals`` in that window, at the end of an inbox test."""
    screens = [s for s in app.screen_stack if isinstance(s, InboxScreen)]
    return not app.is_running and bool(screens) and not screens[0].query(InboxApprovals)


async def test_what_the_inbox_feed_brings_while_the_app_closes_is_dropped(client: Backend) -> None:
    backend = ClosingFeed(client, no_screen_left, Connecting(attempt=1))
    app = PreloopApp(backend, refresh_interval=0)
    backend.app = app
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        await until(pilot, lambda: backend.fed, "the inbox's first snapshot")
    # run_test re-raises what a worker raised: reaching here is the app closing cleanly
    assert backend.said


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


async def test_the_inbox_feed_while_the_inbox_screen_is_taken_down_is_dropped(client: Backend) -> None:
    backend = ClosingFeed(client, inbox_taken_down, Live(last_seq=0))
    app = PreloopApp(backend, refresh_interval=0)
    backend.app = app
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: backend.fed, "the inbox's first snapshot")
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
    # run_test re-raises what a worker raised: reaching here is the app closing cleanly
    assert backend.said
