"""``client.quick`` facing what our server never sends: each is a ``Fallback`` (the full path then repeats the
request and reports it). The answers come from a canned socket on loopback; the plain case against the
real server is in tests/cli/test_fast_path.py."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from client.config import Settings
from client.quick import Fallback, QuickClient


@contextmanager
def canned(answer: bytes | None, seen: list[bytes] | None = None) -> Iterator[str]:
    """A one-shot server on loopback sending ``answer`` to the first request (None: never answers)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    done = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            if seen is not None:
                seen.append(data)
            if answer is None:
                done.wait(5)
            else:
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        done.set()
        server.close()
        thread.join(5)


def _get(url: str, token: str | None = "tok", timeout: float = 5.0) -> Any:
    return QuickClient(Settings(url=url, token=token), timeout=timeout).get("/x", {"a": 1, "b": None})


def test_a_plain_answer_is_read_and_the_request_is_the_full_paths() -> None:
    seen: list[bytes] = []
    body = b'{"items": [1, "\xc3\xa9"]}'
    answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
    with canned(answer + body, seen) as url:
        assert _get(url) == {"items": [1, "é"]}
    request = seen[0].decode()
    assert request.startswith("GET /api/v1/x?a=1 HTTP/1.1\r\n")
    assert "\r\nAuthorization: Bearer tok\r\n" in request and f"\r\nHost: {url[7:]}\r\n" in request


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /y\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
        b'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"x": NaN}',
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n\xff\xfe",
        b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n{}",  # then the connection closes: too short
        b"HTTP/1.1 200 OK\r\n\r\n{}",  # no length
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nbroken header\r\nContent-Length: 2\r\n\r\n{}",
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"",
    ],
)
def test_anything_but_a_plain_answer_falls_back(answer: bytes) -> None:
    with canned(answer) as url, pytest.raises(Fallback):
        _get(url)


def test_no_answer_in_time_falls_back() -> None:
    with canned(None) as url, pytest.raises(Fallback):
        _get(url, timeout=0.3)


def test_a_closed_port_falls_back() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Fallback):
        _get(f"http://127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("url", "token"),
    [
        ("https://127.0.0.1:8765", "tok"),
        ("http://user:pw@127.0.0.1:8765", "tok"),
        ("http://127.0.0.1:8765", "has space"),
        ("http://127.0.0.1:8765", "tök"),
        ("http://127.0.0.1:99999", "tok"),
    ],
)
def test_what_the_full_path_handles_differently_falls_back_before_any_request(url: str, token: str) -> None:
    with pytest.raises(Fallback):
        QuickClient(Settings(url=url, token=token))
