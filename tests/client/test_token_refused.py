"""A token that stops working mid-shift, against the real local server: the operator token is revoked
server-side (``LiveServer.rotate_token``) while the client follows a session, and the client carries on
once a valid token can be read again, without a restart and without losing an event.

The client is made as the CLI and the app make it (``connect(resolve_settings())``), so the token it
reads again is the one in the local server's file, exactly what a restarted server or ``preloop login``
(the keyring) changes under a running app.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from client.backends import connect
from client.backends.base import Backend
from client.config import read_local_server, resolve_settings, token_reader
from client.errors import AuthError
from client.events import ModelDelta
from client.models import AttentionSnapshot
from client.status import Live, LoginNeeded, Refused
from server.embedded import write_local_server_file
from tests.conftest import LiveServer

REASON = (
    "the server refused the token (401): run `preloop login` in another terminal; everything here is kept "
    "and resumes by itself"
)


class CountingSource:
    """The real token source of the settings, counting how often the client reads the token again."""

    def __init__(self, read: Callable[[], str | None]) -> None:
        self.read = read
        self.calls = 0

    def __call__(self) -> str | None:
        self.calls += 1
        return self.read()


@pytest.fixture
def source(live_server: LiveServer) -> CountingSource:
    settings = resolve_settings()
    assert settings.token_source == "local-server"  # found as a user's shell finds it after `preloop serve`
    return CountingSource(token_reader(settings))


@pytest.fixture
async def backend(live_server: LiveServer, source: CountingSource) -> AsyncIterator[Backend]:
    backend = await connect(
        resolve_settings(), server_kind="local", backoff_initial=0.05, backoff_max=0.2, token_source=source
    )
    async with backend:
        yield backend


class Follow:
    """Collects what a follower yields, in the background, until closed."""

    def __init__(self, items: AsyncIterator[Any]) -> None:
        self.items: list[Any] = []
        self._task = asyncio.create_task(self._run(items))

    async def _run(self, items: AsyncIterator[Any]) -> None:
        async for item in items:
            self.items.append(item)

    async def until(self, check: Callable[[list[Any]], bool], what: str, seconds: float = 20) -> None:
        async with asyncio.timeout(seconds):
            while not check(self.items):
                assert not self._task.done() or self._task.exception() is None, self._task.exception()
                await asyncio.sleep(0.02)
        assert check(self.items), what

    async def close(self) -> None:
        self._task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self._task


def restart_with_the_old_token_refused(live_server: LiveServer) -> str:
    """Rotate the operator token and restart the server (which drops every open stream): the client's
    token is refused from its next request on. Returns the new token (not yet where the client looks)."""
    old = live_server.token
    new = live_server.rotate_token()
    live_server.stop()
    live_server.start()
    assert read_local_server() == (live_server.url, old)  # the client still finds only the old one
    return new


async def test_a_revoked_token_waits_reading_the_token_again_and_resumes_with_no_event_lost(
    live_server: LiveServer, backend: Backend, source: CountingSource
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="night-shift")
        follow = Follow(backend.follow(agent.session_id).__aiter__())
        try:
            await follow.until(lambda items: any(isinstance(i, Live) for i in items), "live")
            await agent.narrate(1, ["before "])
            await follow.until(lambda items: any(isinstance(i, ModelDelta) for i in items), "the first text")

            new = await asyncio.to_thread(restart_with_the_old_token_refused, live_server)
            await agent.narrate(1, ["while ", "refused "])  # the agent works on while the operator logs in
            waits = lambda items: [i for i in items if isinstance(i, LoginNeeded)]  # noqa: E731
            await follow.until(lambda items: len(waits(items)) >= 3, "three attempts with the token refused")
            attempts = [w.attempt for w in waits(follow.items)]
            assert attempts == list(range(attempts[0], attempts[0] + len(attempts)))  # one after another
            assert {w.reason for w in waits(follow.items)} == {REASON}
            assert all(w.delay <= 0.2 for w in waits(follow.items))
            assert not any(isinstance(i, Refused) for i in follow.items)  # never a dead end
            assert source.calls >= 3  # each attempt read the token again

            write_local_server_file(live_server.url, new)  # the new token where the client looks
            await agent.narrate(1, ["after"])
            texts = lambda items: "".join(i.text for i in items if isinstance(i, ModelDelta))  # noqa: E731
            await follow.until(lambda items: texts(items) == "before while refused after", "every text")
            after_wait = follow.items[follow.items.index(waits(follow.items)[-1]) :]
            assert any(isinstance(i, Live) for i in after_wait)
            seqs = [i.seq for i in follow.items if hasattr(i, "seq")]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # nothing lost, nothing twice
        finally:
            await follow.close()


async def test_the_attention_feed_waits_too_and_resumes(
    live_server: LiveServer, backend: Backend, source: CountingSource
) -> None:
    follow = Follow(backend.watch_attention().__aiter__())
    try:
        await follow.until(lambda items: any(isinstance(i, Live) for i in items), "live")
        new = await asyncio.to_thread(restart_with_the_old_token_refused, live_server)
        await follow.until(
            lambda items: sum(isinstance(i, LoginNeeded) for i in items) >= 2, "two attempts refused"
        )
        assert not any(isinstance(i, Refused) for i in follow.items)
        write_local_server_file(live_server.url, new)
        seen = len(follow.items)
        await follow.until(lambda items: any(isinstance(i, Live) for i in items[seen:]), "live again")
        await follow.until(
            lambda items: any(isinstance(i, AttentionSnapshot) for i in items[seen:]), "a fresh snapshot"
        )
    finally:
        await follow.close()


async def test_a_request_refused_401_is_sent_again_once_with_the_token_read_again(
    live_server: LiveServer, backend: Backend, source: CountingSource
) -> None:
    """No restart: the token is revoked under a running client, whose next note goes out with the new
    token; without a new token it is refused with the login sentence."""
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="night-shift")
    new = live_server.rotate_token()
    with pytest.raises(AuthError, match="run `preloop login`"):
        await backend.send_note("refused", session_id=agent.session_id)
    assert source.calls == 1
    write_local_server_file(live_server.url, new)
    note = await backend.send_note("sent with the new token", session_id=agent.session_id)
    assert note.state == "pending" and source.calls == 2
    listed = await backend.list_notes(session_id=agent.session_id)  # the new token is kept: no re-read
    assert [n.text for n in listed.notes] == ["sent with the new token"] and source.calls == 2


def test_the_token_flag_is_never_replaced_by_what_is_stored(
    live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--token`` names one token for the run; without it each read looks again (environment first)."""
    flagged = resolve_settings(token="plo_from-the-flag")
    assert token_reader(flagged)() == "plo_from-the-flag"
    plain = token_reader(resolve_settings())
    assert plain() == live_server.token
    write_local_server_file(live_server.url, "plo_rotated")
    assert plain() == "plo_rotated"
    monkeypatch.setenv("PRELOOP_TOKEN", "plo_from-the-env")
    assert plain() == "plo_from-the-env"
    monkeypatch.delenv("PRELOOP_TOKEN")
    write_local_server_file("http://127.0.0.1:1", "plo_another-server")
    assert plain() is None  # the file now names another server: its token is not this one's
