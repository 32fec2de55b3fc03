"""A token that stops working mid-shift, against the real local server: the operator token is revoked
server-side (``LiveServer.rotate_token``) under a running client, which carries on once a valid token can
be read again, without a restart.

The client is made as the CLI and the app make it (``open_backend(resolve_settings())``), so the token it
reads again is the one in the local server's file, exactly what a restarted server or ``preloop login``
(the keyring) changes under a running app.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from client.backend import Backend
from client.backends import open_backend
from client.config import resolve_settings, token_reader
from client.errors import AuthError
from server.embedded import write_local_server_file
from tests.conftest import LiveServer


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
    backend = open_backend(
        resolve_settings(), server_kind="local", backoff_initial=0.05, backoff_max=0.2, token_source=source
    )
    async with backend:  # type: ignore[attr-defined]
        yield backend


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
