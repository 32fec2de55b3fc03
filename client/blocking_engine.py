"""The standard library's ``http.client`` under :class:`client.connection.Connection`, for one-shot commands.

A command such as ``preloop sessions list -o id`` sends a request or two and exits; over httpx it would
start 85-100 ms later (about 280 ms instead of 190 here, httpx's imports), ``http.client`` is mostly loaded
by then anyway. The engine only carries bytes: the
request is built and authorised, and its answer read into errors and models, by the connection, exactly as
over httpx. It waits for each answer without yielding to the event loop, which is all a one-shot command
does meanwhile; the app and the live feeds, which do several things at once, use httpx.

One keep-alive connection, opened on the first request and again when the server has closed it between
two; the timeout is httpx's: for connecting and for each read. Plain ``http://`` only (the connection sends
https and proxied requests through httpx).
"""

from __future__ import annotations

import http.client
import select
from urllib.parse import unquote, urlsplit

from client.engine import EngineFailure, Reply

__all__ = ["BlockingEngine"]


class BlockingEngine:
    """Requests to one plain http server over one ``http.client`` connection, one at a time."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("not a plain http:// URL")
        self._host = parts.hostname
        self._port = parts.port or 80  # ValueError for a port out of range
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    async def send(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> Reply:
        """One request, its answer read whole (the event loop waits meanwhile: see the module docstring)."""
        conn = self._connected()
        path = self._prefix + target
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            content = response.read()
        except TimeoutError:
            self.close()
            raise EngineFailure("timeout", sent=True) from None
        except (OSError, http.client.HTTPException):  # reset, closed mid-answer, not HTTP
            self.close()
            raise EngineFailure("lost", sent=True) from None
        answer_headers: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            known = answer_headers.get(key)
            answer_headers[key] = value if known is None else f"{known}, {value}"
        return Reply(response.status, answer_headers, content, method, unquote(path.partition("?")[0]))

    def _connected(self) -> http.client.HTTPConnection:
        """The open connection, or a new one: also when the kept-alive one was closed by the server (it
        reads as ready: end of file) since the last answer, so no request is lost on it."""
        conn = self._conn
        if conn is not None and conn.sock is not None and not select.select([conn.sock], [], [], 0)[0]:
            return conn
        self.close()  # none yet, closed after an answer that said so, or closed by the server
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            conn.connect()
        except (OSError, ValueError, OverflowError):  # refused, no such host, no answer in time
            conn.close()
            raise EngineFailure("unreachable", sent=False) from None
        self._conn = conn
        return conn

    def close(self) -> None:
        """Close the connection (the next request opens another)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def aclose(self) -> None:
        """Close the connection."""
        self.close()
