"""The one connection's transport as a user meets it, through a backend, with the app's client and with
the blocking one of one-shot commands (``sessions list``, ``notes list``) alike: requests share a connection
(keep-alive), a connection the server closed while idle costs no request, each transport fault is one error
saying what happened and whether the request may have reached the server, and a refused token is read
again. A real server does not produce the faults on demand, so a small socket server answers with scripted
bytes; the token is refused by the real local server."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from client.backends import connect
from client.config import Settings, resolve_settings, token_reader
from client.errors import AuthError, ConnectionLost, ServerUnreachable, Timeout
from server.embedded import write_local_server_file
from tests.conftest import LiveServer

CLIENTS = pytest.mark.parametrize("blocking", [False, True], ids=["async", "blocking"])


class Scripted:
    """A one-connection-at-a-time HTTP server that answers each request with the next scripted reply
    (raw bytes; None: close the connection without answering), counting connections and requests."""

    def __init__(self, replies: list[bytes | None], *, close_after_each: bool = False) -> None:
        self.replies = replies
        self.close_after_each = close_after_each
        self.connections = 0
        self.closed = threading.Event()
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.replies:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                while self.replies:
                    request = conn.recv(65536)
                    if not request:
                        break
                    self.requests.append(request)
                    reply = self.replies.pop(0)
                    if reply is None:
                        break
                    conn.sendall(reply)
                    if self.close_after_each:
                        break
            self.closed.set()

    def close(self) -> None:
        self.listener.close()
        self.thread.join(5)


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    servers: list[Scripted] = []

    def make(replies: list[bytes | None], **kw: bool) -> Scripted:
        servers.append(Scripted(replies, **kw))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


HEALTH = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"status":"ok"}'


@CLIENTS
async def test_requests_share_one_connection_and_a_new_one_follows_a_server_that_closed_it(
    scripted: Callable[..., Scripted], blocking: bool
) -> None:
    """Keep-alive; a connection the server closed while idle is replaced, the request not lost."""
    kept = scripted([HEALTH, HEALTH, HEALTH])
    async with await connect(Settings(kept.url, "t"), server_kind="local", blocking=blocking) as backend:
        for _ in range(3):
            assert (await backend.health()).status == "ok"
    assert kept.connections == 1 and len(kept.requests) == 3
    assert kept.requests[0].startswith(b"GET /api/v1/health HTTP/1.1\r\n")
    assert b"\r\nAuthorization: Bearer t\r\n" in kept.requests[0]

    closing = scripted([HEALTH, HEALTH], close_after_each=True)
    async with await connect(Settings(closing.url, "t"), server_kind="local", blocking=blocking) as backend:
        assert (await backend.health()).status == "ok"
        await asyncio.to_thread(closing.closed.wait, 5)  # an idle connection's end, as a server times it out
        assert (await backend.health()).status == "ok"
    assert closing.connections == 2 and len(closing.requests) == 2


@CLIENTS
async def test_each_transport_fault_is_one_error_saying_whether_the_request_was_sent(
    blocking: bool,
    scripted: Callable[..., Scripted],
) -> None:
    hang_up = scripted([None])
    cut = scripted([b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"status"'])
    for server in (hang_up, cut):
        async with await connect(
            Settings(server.url, "t"), server_kind="local", blocking=blocking
        ) as backend:
            with pytest.raises(ConnectionLost, match=r"the connection to .* broke during GET /api/v1/health"):
                await backend.health()

    free = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{free.getsockname()[1]}"
    free.close()
    async with await connect(Settings(url, "t"), server_kind="local", blocking=blocking) as backend:
        with pytest.raises(ServerUnreachable, match="is the server running") as info:
            await backend.health()
    assert info.value.sent is False

    silent = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        settings = Settings(url, "t")
        async with await connect(settings, server_kind="local", blocking=blocking, timeout=0.3) as backend:
            with pytest.raises(Timeout, match=r"got no answer from .* within 0\.3 s") as timed_out:
                await backend.health()
        assert timed_out.value.sent is True
    finally:
        silent.close()


@CLIENTS
async def test_a_request_refused_401_is_sent_again_with_the_token_read_again(
    live_server: LiveServer, blocking: bool
) -> None:
    settings = resolve_settings()
    reads: list[str | None] = []
    read = token_reader(settings)

    def source() -> str | None:
        reads.append(read())
        return reads[-1]

    async with await connect(
        settings, server_kind="local", blocking=blocking, token_source=source
    ) as backend:
        new = live_server.rotate_token()
        with pytest.raises(AuthError, match="run `preloop login`"):
            await backend.list_sessions()
        assert len(reads) == 1
        write_local_server_file(live_server.url, new)
        assert (await backend.list_sessions()).items == []
        assert reads == [live_server.token, new]
        assert (await backend.list_sessions()).items == [] and len(reads) == 2  # the new one is kept
