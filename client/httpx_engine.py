"""httpx under :class:`client.connection.Connection`: its ``AsyncClient`` and the engine that carries
requests over it.

The app, every live feed and any https server use it (one-shot commands to a plain http server use
:mod:`client.blocking_engine`). The client sends the connection's current token on every request it makes
itself (live streams); the REST requests the connection sends come with their headers already made, so
the engine only carries them and says how a failed one failed.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import httpx

from client.engine import EngineFailure, Reply

if TYPE_CHECKING:
    from client.connection import Connection

__all__ = ["HttpxEngine", "make_client"]


def _tls_verify(url: str) -> ssl.SSLContext | bool:
    """TLS settings for a client of ``url``: httpx's default (certifi's CA bundle) for an https server.

    A plain http server (the local one) never negotiates TLS, so its client gets a context that trusts no
    certificate instead: loading the bundle costs 20-35 ms of the start-up of every command that makes this
    client (the app, ``attach``), and a TLS connection made by that client would fail verification, never
    skip it.
    """
    if url.startswith("https://"):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _Bearer(httpx.Auth):
    """The connection's current token on every request the client makes itself (live streams); a 401
    reads it again and, if it changed, sends the request once more (httpx reads and closes the refused
    answer first)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        used = self._conn.token
        _authorise(request, used)
        response = yield request
        if await self._conn.send_again(response.status_code, used):
            _authorise(request, self._conn.token)
            yield request


def _authorise(request: httpx.Request, token: str | None) -> None:
    if token:
        request.headers["Authorization"] = f"Bearer {token}"
    else:
        request.headers.pop("Authorization", None)


def make_client(conn: Connection, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    """The ``AsyncClient`` of ``conn``: its base URL and timeout, its token, no redirects followed."""
    return httpx.AsyncClient(
        base_url=conn.base_url,
        transport=transport,
        timeout=httpx.Timeout(conn.timeout),
        headers={"Accept": "application/json"},
        auth=_Bearer(conn),
        follow_redirects=False,
        verify=_tls_verify(conn.base_url),
    )


_AS_MADE = httpx.Auth()
"""No authentication step: the connection's requests carry the headers it made (token included)."""


def _failure(exc: httpx.TransportError) -> EngineFailure:
    """How a request failed; nothing left this machine when no connection was made or none was free."""
    if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError | httpx.UnsupportedProtocol):
        return EngineFailure("unreachable", sent=False)
    if isinstance(exc, httpx.TimeoutException):
        return EngineFailure("timeout", sent=not isinstance(exc, httpx.PoolTimeout))
    return EngineFailure("lost", sent=True)


class HttpxEngine:
    """The connection's requests over its ``AsyncClient`` (:attr:`Connection.http`)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def send(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> Reply:
        """One request, its answer read whole."""
        try:
            response = await self._conn.http.request(
                method, target, content=body, headers=headers, auth=_AS_MADE
            )
        except httpx.TransportError as exc:
            raise _failure(exc) from None
        answer_headers: dict[str, str] = {}
        for name, value in response.headers.multi_items():
            known = answer_headers.get(name)
            answer_headers[name] = value if known is None else f"{known}, {value}"
        return Reply(
            response.status_code, answer_headers, response.content, method, response.request.url.path
        )

    async def aclose(self) -> None:
        """Nothing of its own: the connection closes its client."""
