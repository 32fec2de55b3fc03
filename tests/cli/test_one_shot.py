"""``sessions list`` and ``notes list`` are one-shot commands: against a plain http server their requests go
over the standard library's ``http.client`` (``client.blocking_engine``) instead of httpx, through the same
connection, backends and models as the app. Against the real local server over loopback: they print the
same bytes either way, and every error once, in the client's own words.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cli.main import main
from client import connection
from client.blocking_engine import BlockingEngine
from client.engine import Reply
from client.httpx_engine import HttpxEngine
from server.harness_client import HarnessSession
from tests.cli.helpers import with_sessions


class Engines:
    """Counts the requests each engine carries."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.blocking = 0
        self.httpx = 0
        blocking_send, httpx_send = BlockingEngine.send, HttpxEngine.send

        async def counting_blocking(engine: BlockingEngine, *args: Any) -> Reply:
            self.blocking += 1
            return await blocking_send(engine, *args)

        async def counting_httpx(engine: HttpxEngine, *args: Any) -> Reply:
            self.httpx += 1
            return await httpx_send(engine, *args)

        monkeypatch.setattr(BlockingEngine, "send", counting_blocking)
        monkeypatch.setattr(HttpxEngine, "send", counting_httpx)

    def reset(self) -> None:
        self.blocking = self.httpx = 0


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Engines:
    return Engines(monkeypatch)


Outcome = tuple[int, str, str]


def _both(
    argv: list[str], engines: Engines, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Outcome, Outcome]:
    """The command as a user runs it (over http.client), and the same with its requests over httpx (as
    when a proxy is configured): exit code, stdout, stderr each."""
    engines.reset()
    code = main(argv)
    out = capsys.readouterr()
    one_shot: Outcome = (code, out.out, out.err)
    assert engines.blocking >= 1 and engines.httpx == 0
    engines.reset()
    with monkeypatch.context() as patch:
        patch.setattr(connection, "_proxied", lambda: True)
        code = main(argv)
    out = capsys.readouterr()
    assert engines.blocking == 0 and engines.httpx >= 1
    return one_shot, (code, out.out, out.err)


@pytest.fixture
def data(live_server: Any) -> dict[str, Any]:
    """Six sessions (two ended, two with the same title, one with an escape sequence and non-ASCII text in
    its title); the first has notes in four states: delivered, pending, withdrawn, and pending with a
    short expiry."""
    from client.backends import connect
    from client.config import Settings

    async def shape(sessions: list[HarnessSession]) -> None:
        first = sessions[0].session_id
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            await client.send_note("first: delivered", session_id=first)
            await sessions[0].claim_notes()
            await client.send_note("second: stays pending", session_id=first)
            third = await client.send_note("third: withdrawn", session_id=first)
            await client.withdraw_note(third.note_id)
            await client.send_note("fourth: expires soon", session_id=first, expires_in_seconds=120)
        await sessions[3].end()
        await sessions[4].end("crashed")

    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [
            {"agent_name": "builder", "title": "Fix the build"},
            {"agent_name": "builder-2", "title": "Fix the build"},
            {"agent_name": "codexer", "agent_kind": "codex", "cwd": "/work/repo"},
            {"agent_name": "old", "title": "Refactor\x1b[31m the parser, ünïcode"},
            {"agent_name": "older"},
            {"agent_name": "quiet"},
        ],
        shape,
    )
    return {"ids": ids, "first": ids[0]}


CASES: list[Callable[[dict[str, Any]], list[str]]] = [
    lambda d: ["sessions", "list", "-o", "id"],
    lambda d: ["sessions", "list", "--json"],
    lambda d: ["sessions", "list"],
    lambda d: ["sessions", "list", "--json", "--active"],
    lambda d: ["sessions", "list", "-o", "id", "--limit", "2"],
    lambda d: ["sessions", "list", "--json", "--limit", "3"],
    lambda d: ["sessions", "list", "--json", "--agent", "builder"],
    lambda d: ["sessions", "list", "-o", "id", "--kind", "Codex", "--since", "1h"],
    lambda d: ["notes", "list", "--session", d["first"][:6], "--json"],
    lambda d: ["notes", "list", "--session", d["first"], "-o", "id"],
    lambda d: ["notes", "list", "--session", d["first"]],
    lambda d: ["notes", "list", "--session", d["first"][:8].upper(), "--json", "--state", "pending"],
    lambda d: ["notes", "list", "--session", d["ids"][5][:5], "--json"],
    lambda d: ["--server-kind", "auto", "notes", "list", "--session", d["first"][:6], "-o", "id"],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_one_shot_listings_print_the_same_over_http_client_as_over_httpx(
    case: int,
    data: dict[str, Any],
    engines: Engines,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = CASES[case](data)
    one_shot, over_httpx = _both(argv, engines, capsys, monkeypatch)
    assert one_shot == over_httpx
    assert one_shot[0] == 0 and one_shot[1] and one_shot[2] == ""
    if "--json" in argv:
        json.loads(one_shot[1])


# ------------------------------------------------------------------------------------------ errors


def test_an_unknown_short_id_is_reported_once(
    data: dict[str, Any],
    engines: Engines,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unknown = next(p * 4 for p in "0123456789abcdef" if not any(i.startswith(p * 4) for i in data["ids"]))
    one_shot, over_httpx = _both(
        ["notes", "list", "--session", unknown, "--json"], engines, capsys, monkeypatch
    )
    assert one_shot == over_httpx
    assert one_shot == (1, "", f"preloop: no such session: no session starts with '{unknown}': "
                        "`preloop sessions list` shows the ids\n")  # fmt: skip


def test_a_refused_token_is_reported_with_what_to_do(
    live_server: Any, engines: Engines, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRELOOP_URL", live_server.url)
    monkeypatch.setenv("PRELOOP_TOKEN", "not-the-token")
    one_shot, over_httpx = _both(["sessions", "list", "-o", "id"], engines, capsys, monkeypatch)
    assert one_shot == over_httpx
    assert one_shot == (
        1,
        "",
        "preloop: not authorised: your token is invalid or expired: run `preloop login`\n",
    )


def test_a_dead_server_is_reported_with_what_to_do(
    live_server: Any, engines: Engines, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    live_server.stop()
    argv = ["--server-kind", "local", "--url", live_server.url, "--token", "t", "notes", "list"]
    one_shot, over_httpx = _both([*argv, "--session", "abcd", "--json"], engines, capsys, monkeypatch)
    assert one_shot == over_httpx
    assert one_shot == (
        1,
        "",
        f"preloop: server unreachable: cannot reach {live_server.url}: is `preloop serve --port "
        f"{live_server.server.port}` running? (it was the last local server here)\n",
    )


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[bytes]]]:
    """A server that accepts connections and reads requests but never answers: (its URL, what it read)."""
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            received.append(conn.recv(65536))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", received
    finally:
        listener.close()
        for conn in held:
            conn.close()
        thread.join(5)


def test_a_server_that_never_answers_is_waited_for_once(
    silent_server: tuple[str, list[bytes]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One request, one timeout, one sentence (the fast path it replaced asked twice, 10 s each)."""
    url, received = silent_server
    monkeypatch.setitem(connection.Connection.__init__.__kwdefaults__, "timeout", 0.5)
    argv = ["--server-kind", "local", "--url", url, "--token", "t", "sessions", "list", "-o", "id"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == (
        f"preloop: timed out: GET /api/v1/runtime-sessions got no answer from {url} within 0.5 s\n"
    )
    assert len(received) == 1 and received[0].startswith(b"GET /api/v1/runtime-sessions?")
