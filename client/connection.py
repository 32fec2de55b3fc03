"""One connection to one server: the ``httpx.AsyncClient``, the token, and how answers become errors.

Every backend (``client.backends``) talks through one of these, whatever the server's API looks like, so
a failed request, a refused token or a redirect reads the same on every kind of server::

    conn = Connection("http://127.0.0.1:8765", token, transport=...)   # transport: tests inject faults
    response = await conn.request("GET", "/api/v1/health")             # ClientError on any failure
    session = conn.parse(response, SessionDetail)                      # InvalidResponse on a wrong shape

Every live feed's SSE stream is opened here too, with httpx-sse (:meth:`Connection.event_source`: the
answer checked, its read timeout the stall timeout), and parsed by httpx-sse's ``EventSource.aiter_sse``;
:meth:`Connection.stream_failure` says what a broken stream means. It knows nothing about sessions, notes
or events: that is the backends' business.

The token can change while the connection lives: given a ``token_source`` (``client.config.token_reader``),
a request the server answers 401 makes the connection read the token again; when it changed (``preloop
login`` in another terminal, a restarted local server), the request is sent once more with the new one,
which every later request uses. Requests refused at the same moment read it once, not once each.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource, aconnect_sse
from pydantic import BaseModel, ValidationError

from client.errors import (
    ApiError,
    ClientError,
    ConnectionLost,
    InvalidResponse,
    ServerUnreachable,
    Timeout,
    TransportError,
    UsageError,
    error_for_status,
)
from client.streaming.policy import BACKOFF_INITIAL, BACKOFF_MAX, refuses
from client.streaming.reconnect import Refusal, Retry
from client.textsafe import safe_line

__all__ = ["Connection", "display_url"]

_M = TypeVar("_M", bound=BaseModel)


def display_url(url: str) -> str:
    """The URL for messages: without user:password, query or fragment, which may carry secrets."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "the server"
    return str(parsed.copy_with(username=None, password=None, query=None, fragment=None))


def _check_token(token: str | None) -> str | None:
    """A token goes into a header: refuse one that cannot, without ever echoing it (httpx would)."""
    if token is None or not token.strip():
        return None
    token = token.strip()
    if any(not (0x21 <= ord(ch) <= 0x7E) for ch in token):
        raise UsageError(
            "the token contains spaces, line breaks or non-ASCII characters: copy it again "
            "(`preloop login --with-token` reads it from standard input)"
        )
    return token


def _tls_verify(url: str) -> ssl.SSLContext | bool:
    """TLS settings for a client of ``url``: httpx's default (certifi's CA bundle) for an https server.

    A plain http server (the local one) never negotiates TLS, so its client gets a context that trusts no
    certificate instead: loading the bundle costs 70-130 ms of every command's start-up, and a TLS
    connection made by that client would fail verification, never skip it.
    """
    if url.startswith("https://"):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _Bearer(httpx.Auth):
    """The connection's current token on every request; a 401 reads it again and, if it changed, sends
    the request once more with the new one (httpx reads and closes the refused answer first)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        used = self._conn.token
        _authorise(request, used)
        response = yield request
        if response.status_code == 401 and await self._conn.reread_token(used):
            _authorise(request, self._conn.token)
            yield request


def _authorise(request: httpx.Request, token: str | None) -> None:
    if token:
        request.headers["Authorization"] = f"Bearer {token}"
    else:
        request.headers.pop("Authorization", None)


class Connection:
    """One connection pool to one server with one token, and the settings every live feed shares.

    ``stall_timeout`` (default twice ``keepalive_interval``) is how long a live stream may stay silent
    before its follower reconnects; ``backoff_initial``/``backoff_max`` bound the reconnect backoff.
    ``token_source`` reads the token again after a 401 (see the module docstring); without it a refused
    token stays refused.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 10.0,
        keepalive_interval: float = 15.0,
        stall_timeout: float | None = None,
        backoff_initial: float = BACKOFF_INITIAL,
        backoff_max: float = BACKOFF_MAX,
        token_source: Callable[[], str | None] | None = None,
    ) -> None:
        url = base_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"server URL must start with http:// or https:// (got '{safe_line(url, 80)}')")
        self.base_url = url
        self._token = _check_token(token)
        self._token_source = token_source
        self._token_lock = asyncio.Lock()
        self.timeout = timeout
        self.stall_timeout = stall_timeout if stall_timeout is not None else 2 * keepalive_interval
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.http = httpx.AsyncClient(
            base_url=url,
            transport=transport,
            timeout=httpx.Timeout(timeout),
            headers={"Accept": "application/json"},
            auth=_Bearer(self),
            follow_redirects=False,
            verify=_tls_verify(url),
        )

    def __repr__(self) -> str:
        return f"Connection(base_url={self.base_url!r}, token=***)"

    async def aclose(self) -> None:
        """Close the connection pool; open streams end."""
        await self.http.aclose()

    @property
    def display_url(self) -> str:
        """The server URL safe to show (no credentials, query or fragment)."""
        return display_url(self.base_url)

    @property
    def has_token(self) -> bool:
        """Lets a UI say "no token" up front instead of waiting for the server's 401."""
        return self._token is not None

    @property
    def token(self) -> str | None:
        """The token requests carry now (it changes when :meth:`reread_token` finds a new one)."""
        return self._token

    def auth_headers(self) -> dict[str, str]:
        """The headers that authenticate a request (a websocket follower sends the same ones)."""
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    async def reread_token(self, refused: str | None) -> bool:
        """The server refused the token ``refused`` (401): read the token again from the source. True when
        requests now carry another one (read here, or by a request refused at the same time), so the
        refused request is worth sending again; False when there is nothing new (or no source)."""
        async with self._token_lock:
            if self._token != refused:
                return True
            if self._token_source is None:
                return False
            try:
                fresh = _check_token(await asyncio.to_thread(self._token_source))
            except (ClientError, OSError):
                return False  # an unreadable store is "nothing new"; the 401 says what to do
            if fresh is None or fresh == self._token:
                return False
            self._token = fresh
            return True

    # ------------------------------------------------------------------------------------ requests

    def transport_error(self, exc: httpx.TransportError, method: str, path: str) -> TransportError:
        """What a failed request means for the operator (server down, too slow, connection broke)."""
        where = self.display_url
        if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError | httpx.UnsupportedProtocol):
            return ServerUnreachable(
                f"cannot reach {where}: is the server running? (`preloop serve` starts a local one)"
            )
        if isinstance(exc, httpx.TimeoutException):
            return Timeout(f"{method} {path} got no answer from {where} within {self.timeout:g} s")
        return ConnectionLost(f"the connection to {where} broke during {method} {path}")

    async def request(
        self,
        method: str,
        path: str,
        *,
        what: str = "",
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        """One request; any failure (transport, error status, redirect) is a ClientError saying what to do.
        ``what`` names the object for a 404 ("session 1a2b3c4d")."""
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = await self.http.request(method, path, params=clean or None, json=json)
        except httpx.TransportError as exc:
            raise self.transport_error(exc, method, path) from None
        if response.status_code >= 400:
            raise self.api_error(response, what)
        if response.status_code >= 300:
            raise self.redirected(response)
        return response

    # ------------------------------------------------------------------------------ live streams

    @asynccontextmanager
    async def event_source(
        self,
        path: str,
        *,
        what: str,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> AsyncIterator[EventSource]:
        """A live feed's SSE stream, opened with httpx-sse (``aconnect_sse``: ``Accept: text/event-stream``,
        ``Cache-Control: no-store``) and checked before it is read with ``EventSource.aiter_sse``.

        An answer that refuses (:func:`~client.streaming.policy.refuses`: a 401, 403, 404...) raises
        :class:`~client.streaming.reconnect.Refusal` with the server's sentence (``what`` names the object
        for a 404), any other error status or a body that is not an event stream raises
        :class:`~client.streaming.reconnect.Retry`. The read timeout is the stall timeout: a stream that
        sends nothing, not even a keep-alive, for that long raises ``httpx.ReadTimeout``
        (:meth:`stream_failure` reads it as a stall)."""
        timeout = httpx.Timeout(self.timeout, read=self.stall_timeout)
        async with aconnect_sse(
            self.http, "GET", path, headers=dict(headers or {}), params=params, timeout=timeout
        ) as source:
            response = source.response
            status = response.status_code
            if status >= 400:
                await response.aread()
                if refuses(status):
                    raise Refusal(self.api_error(response, what).hint, status)
                raise Retry(f"the server answered {status}")
            ctype = response.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                raise Retry(f"the server sent {ctype or 'no content type'}, not an event stream")
            yield source

    def stream_failure(self, exc: Exception) -> str | None:
        """Why a live stream broke, as the reason to reconnect a follower shows; None when ``exc`` is not a
        transport failure (a bug, re-raised by the reconnect loop)."""
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return f"cannot reach {self.display_url}"
        if isinstance(exc, httpx.TimeoutException):
            return f"stalled: nothing received for {self.stall_timeout:g} s"
        if isinstance(exc, httpx.TransportError):
            return f"connection lost ({type(exc).__name__})"
        return None

    def redirected(self, response: httpx.Response) -> InvalidResponse:
        """Redirects are not followed (the token must not travel to another host): say where it points."""
        location = response.headers.get("location")
        target = display_url(location) if location else "?"
        return InvalidResponse(
            f"the server redirects {response.request.url.path} to {safe_line(target, 120)}: "
            "use that address as the server URL"
        )

    def api_error(self, response: httpx.Response, what: str) -> ApiError:
        """The error an error answer means, with the token scrubbed from the server's text; live feeds use
        it too, so a refused stream reads exactly like a refused REST call."""
        try:
            body: Any = response.json()
        except ValueError:
            # Not cut here: ``error_for_status`` scrubs the token first and then shortens (a cut first
            # could leave the start of an echoed token that no longer matches the whole one).
            body = response.text
        return error_for_status(
            response.status_code,
            body,
            what=what,
            token_sent=self._token is not None,
            retry_after=response.headers.get("retry-after"),
            secret=self._token,
        )

    def invalid(self, response: httpx.Response, exc: Exception) -> InvalidResponse:
        """An answer of the wrong shape, named by its request and first bad field (never a traceback)."""
        path = response.request.url.path
        detail = "wrong shape"
        if isinstance(exc, ValidationError) and exc.error_count():
            first = exc.errors()[0]
            where = safe_line(".".join(str(p) for p in first["loc"]), 60)
            if first["type"] == "json_invalid":
                detail = "not JSON"
            elif where:
                detail = f"{exc.error_count()} field error(s), first at '{where}'"
        return InvalidResponse(
            f"the answer to {response.request.method} {path} could not be read ({detail}): "
            "is this a Preloop-compatible server?"
        )

    def parse(self, response: httpx.Response, model: type[_M]) -> _M:
        """The answer validated as ``model``, or InvalidResponse."""
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise self.invalid(response, exc) from None
