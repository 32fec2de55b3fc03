"""One connection to one server: one httpx client, the token, and how answers become errors and models.

Every backend (``client.backends``) talks through one of these, whatever the server's API looks like, so
a failed request, a refused token or a redirect reads the same on every kind of server, and every command
(the app, ``attach``, ``sessions list``...) sends its requests the same way::

    async with Connection("http://127.0.0.1:8765", token, transport=...) as conn:  # tests inject faults
        response = await conn.request("GET", "/api/v1/health")    # ClientError on any failure
        health = conn.parse(response, Health)                      # InvalidResponse on a wrong shape

Requests, live streams and the token all go through the one client (:attr:`Connection.http`), so proxies
(``HTTP_PROXY``, ``NO_PROXY``...), certificates (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) and https are honoured
as httpx honours them, by every command alike. That client is an ``httpx.AsyncClient``, except for a
one-shot command (``blocking=True``: ``sessions list``, ``notes list``), which sends one request after
another, runs nothing meanwhile and follows no stream: its client is the blocking ``httpx.Client`` with the
same settings and auth step, each request waited for in place (it spares the command the start-up of
httpx's async stack); requests, errors and the token take the same code either way.

Every live feed's SSE stream is opened here too, with httpx-sse (:meth:`Connection.event_source`: the
answer checked, its read timeout the stall timeout), and parsed by httpx-sse's ``EventSource.aiter_sse``;
:meth:`Connection.stream_failure` says what a broken stream means. It knows nothing about sessions, notes
or events: that is the backends' business.

The token can change while the connection lives: given a ``token_source`` (``client.config.token_reader``),
a request the server answers 401 makes the connection read the token again; when it changed (``preloop
login`` in another terminal, a restarted local server), the request is sent once more with the new one,
which every later request uses (the client's auth step, :class:`_Bearer`: REST and streams alike).
Requests refused at the same moment read it once, not once each.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar
from urllib.parse import quote, urlsplit

import httpx
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
from client.textsafe import safe_line

if TYPE_CHECKING:
    from httpx_sse import EventSource

__all__ = ["Connection", "display_url"]

_M = TypeVar("_M", bound=BaseModel)

_DEFAULT_PORTS = {"http": 80, "https": 443}

_PATH_SAFE = "/:@!$&'()*+,;=~%"
"""Characters a path shown in a message keeps as they are (the rest is percent-encoded)."""


def display_url(url: str) -> str:
    """The URL for messages: without user:password, query or fragment, which may carry secrets."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "the server"
    path = quote(parts.path, safe=_PATH_SAFE)
    if not parts.scheme and not parts.netloc:
        return path or "the server"  # a relative redirect: where on the same server
    if not host:
        return "the server"
    scheme = parts.scheme.lower()
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{path}"


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
    """TLS settings for a client of ``url``: httpx's default for an https server (certifi's CA bundle, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set).

    A plain http server (the local one) never negotiates TLS, so its client gets a context that trusts no
    certificate instead: loading the bundle is a noticeable part of every command's start-up, and a TLS
    connection made by that client would fail verification, never skip it.
    """
    if url.startswith("https://"):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _Bearer(httpx.Auth):
    """The connection's current token on every request; a 401 reads it again and, if it changed, sends
    the request once more with the new one (httpx reads and closes the refused answer first). The same
    steps for the async client and the blocking one."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        used = self._conn.token
        _authorise(request, used)
        response = yield request
        if response.status_code == 401 and await self._conn.reread_token(used):
            _authorise(request, self._conn.token)
            yield request

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        used = self._conn.token
        _authorise(request, used)
        response = yield request
        if response.status_code == 401 and self._conn.reread_token_blocking(used):
            _authorise(request, self._conn.token)
            yield request


def _authorise(request: httpx.Request, token: str | None) -> None:
    if token:
        request.headers["Authorization"] = f"Bearer {token}"
    else:
        request.headers.pop("Authorization", None)


class Connection:
    """One server with one token, the one httpx client every request and stream takes, and the settings
    every live feed shares. Close it with ``await conn.aclose()`` or ``async with``.

    ``transport`` replaces httpx's (tests inject faults a real server cannot produce on demand; an
    ``httpx.BaseTransport`` for a blocking connection). ``blocking``: the client is ``httpx.Client`` (see
    the module docstring). ``timeout`` bounds connecting and each read of a request. ``stall_timeout``
    (default twice ``keepalive_interval``) is how long a live stream may stay silent before its follower
    reconnects; ``backoff_initial``/``backoff_max`` bound the reconnect backoff. ``token_source`` reads the
    token again after a 401 (see the module docstring); without it a refused token stays refused.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.AsyncBaseTransport | httpx.BaseTransport | None = None,
        blocking: bool = False,
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
        options: dict[str, Any] = {
            "base_url": url,
            "timeout": httpx.Timeout(timeout),
            "headers": {"Accept": "application/json"},
            "auth": _Bearer(self),
            "follow_redirects": False,
            "verify": _tls_verify(url),
        }
        self.http: httpx.AsyncClient | httpx.Client
        """The client every request and live stream of this connection goes through."""
        sync = transport if isinstance(transport, httpx.BaseTransport) else None
        not_sync = transport if isinstance(transport, httpx.AsyncBaseTransport) else None
        if transport is not None and (sync if blocking else not_sync) is None:
            raise TypeError(f"{transport!r} cannot carry a {'' if blocking else 'non-'}blocking connection")
        if blocking:
            self.http = httpx.Client(transport=sync, **options)
        else:
            self.http = httpx.AsyncClient(transport=not_sync, **options)

    def __repr__(self) -> str:
        return f"Connection(base_url={self.base_url!r}, token=***)"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; open streams end."""
        if isinstance(self.http, httpx.Client):
            self.http.close()
        else:
            await self.http.aclose()

    @property
    def display_url(self) -> str:
        """The server URL safe to show (no credentials, query or fragment)."""
        return display_url(self.base_url)

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
            return self._take(await asyncio.to_thread(self._read_source))

    def reread_token_blocking(self, refused: str | None) -> bool:
        """:meth:`reread_token` for the blocking client (one request at a time, so nothing to wait for)."""
        return self._token != refused or self._take(self._read_source())

    def _read_source(self) -> str | None:
        """The token the source gives now (None: no source, nothing there, or an unreadable store, which is
        "nothing new": the 401 says what to do)."""
        if self._token_source is None:
            return None
        try:
            return _check_token(self._token_source())
        except (ClientError, OSError):
            return None

    def _take(self, fresh: str | None) -> bool:
        """Use ``fresh`` from now on if it is another token; whether it was."""
        if fresh is None or fresh == self._token:
            return False
        self._token = fresh
        return True

    # ------------------------------------------------------------------------------------ requests

    def transport_error(self, exc: httpx.TransportError, method: str, path: str) -> TransportError:
        """What a request that did not complete means for the operator (server down, too slow, connection
        broke); ``sent`` on the error says whether it may have reached the server (False: no connection
        was made, or none was free, so nothing left this machine)."""
        where = self.display_url
        error: TransportError
        if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError | httpx.UnsupportedProtocol):
            from client.config import how_to_start  # (only when a server did not answer)

            error = ServerUnreachable(f"cannot reach {where}: {how_to_start(self.base_url)}")
            error.sent = False
        elif isinstance(exc, httpx.TimeoutException):
            error = Timeout(f"{method} {path} got no answer from {where} within {self.timeout:g} s")
            error.sent = not isinstance(exc, httpx.PoolTimeout)
        else:
            error = ConnectionLost(f"the connection to {where} broke during {method} {path}")
            error.sent = True
        return error

    async def send(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None
    ) -> httpx.Response:
        """One request (``params``: its query, None values left out; ``json``: its body), the answer read
        whole but not yet checked; a 401 is sent once more if the token changed meanwhile. A request that
        does not complete is a TransportError (its ``sent`` says whether the server may have seen it)."""
        query = {key: value for key, value in (params or {}).items() if value is not None}
        try:
            if isinstance(self.http, httpx.Client):
                return self.http.request(method, path, params=query, json=json)
            return await self.http.request(method, path, params=query, json=json)
        except httpx.TransportError as exc:
            raise self.transport_error(exc, method, path) from None

    async def request(
        self,
        method: str,
        path: str,
        *,
        what: str = "",
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        """One request; any failure (transport, error status, redirect) is a ClientError saying what to do.
        ``what`` names the object for a 404 ("session 1a2b3c4d")."""
        response = await self.send(method, path, params=params, json=json)
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
        from httpx_sse import aconnect_sse  # here: a command that follows no stream never loads it

        from client.streaming.reconnect import Refusal, Retry

        if not isinstance(self.http, httpx.AsyncClient):
            raise TypeError("a blocking connection (one-shot commands) follows no live stream")

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
        from client.stream_words import failure_words

        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return f"cannot reach {self.display_url}"
        if isinstance(exc, httpx.TimeoutException):
            return f"stalled: nothing received for {self.stall_timeout:g} s"
        if isinstance(exc, httpx.TransportError):
            return failure_words(exc)  # in words: never the exception's name
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
        detail = "wrong shape"
        if isinstance(exc, ValidationError) and exc.error_count():
            first = exc.errors()[0]
            where = safe_line(".".join(str(p) for p in first["loc"]), 60)
            if first["type"] == "json_invalid":
                detail = "not JSON"
            elif where:
                detail = f"{exc.error_count()} field error(s), first at '{where}'"
        request = response.request
        return InvalidResponse(
            f"the answer to {request.method} {request.url.path} could not be read ({detail}): "
            "is this a Preloop-compatible server?"
        )

    def parse(self, response: httpx.Response, model: type[_M]) -> _M:
        """The answer validated as ``model``, or InvalidResponse."""
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise self.invalid(response, exc) from None
