"""One connection to one server: the token, the requests, and how answers become errors and models.

Every backend (``client.backends``) talks through one of these, whatever the server's API looks like, so
a failed request, a refused token or a redirect reads the same on every kind of server::

    conn = Connection("http://127.0.0.1:8765", token, transport=...)   # transport: tests inject faults
    response = await conn.request("GET", "/api/v1/health")             # ClientError on any failure
    session = conn.parse(response, SessionDetail)                      # InvalidResponse on a wrong shape

Every live feed's SSE stream is opened here too, with httpx-sse (:meth:`Connection.event_source`: the
answer checked, its read timeout the stall timeout), and parsed by httpx-sse's ``EventSource.aiter_sse``;
:meth:`Connection.stream_failure` says what a broken stream means. It knows nothing about sessions, notes
or events: that is the backends' business.

**Two engines, one REST path.** A request is built here (the query, the JSON body, the token), sent by an
engine that only carries bytes (:mod:`client.engine`: ``Engine``), and its answer read here (``Reply``,
error statuses into :mod:`client.errors`, bodies into pydantic models). The engine is httpx's ``AsyncClient``
(:mod:`client.httpx_engine`) for the app, every live feed and any https server; a one-shot command
(``one_shot=True``: ``preloop sessions list``, ``preloop notes list``) sends its requests one after another
and nothing else runs meanwhile, so on a plain http server they go over the standard library's
``http.client`` (:mod:`client.blocking_engine`), which spares those commands the import of httpx (85-100 ms
of their start-up: 190 ms against 280-290 ms here, the engine swapped). Live streams always use httpx
(:attr:`Connection.http`, made on first use).

The token can change while the connection lives: given a ``token_source`` (``client.config.token_reader``),
a request the server answers 401 makes the connection read the token again; when it changed (``preloop
login`` in another terminal, a restarted local server), the request is sent once more with the new one,
which every later request uses. Requests refused at the same moment read it once, not once each.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import quote, urlencode, urlsplit
from urllib.request import getproxies

from pydantic import BaseModel, ValidationError

from client.engine import Engine, EngineFailure, Reply
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
    import httpx
    from httpx_sse import EventSource

__all__ = ["Connection", "display_url"]

_M = TypeVar("_M", bound=BaseModel)

_DEFAULT_PORTS = {"http": 80, "https": 443}


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


_PATH_SAFE = "/:@!$&'()*+,;=~%"
"""Characters a path keeps as they are (the rest is percent-encoded, as httpx does)."""


def _query_value(value: Any) -> str:
    """A query value as httpx spells it (``true``/``false`` for booleans)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _target(path: str, params: Mapping[str, Any] | None) -> str:
    """The request target: the path percent-encoded, then the query (None values left out; a list or
    tuple repeats its key)."""
    pairs: list[tuple[str, str]] = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        for item in value if isinstance(value, list | tuple) else (value,):
            pairs.append((key, _query_value(item)))
    target = quote(path, safe=_PATH_SAFE)
    return f"{target}?{urlencode(pairs)}" if pairs else target


class Answer(Protocol):
    """What :meth:`Connection.api_error` reads of an error answer: a :class:`Reply`, or the
    ``httpx.Response`` a live stream was refused with."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...


def _proxied() -> bool:
    """Whether plain http requests would go through a proxy (environment or system settings): httpx
    honours them, the standard library's ``http.client`` does not, so httpx carries those."""
    proxies = getproxies()
    return bool(proxies.get("http") or proxies.get("all"))


class Connection:
    """One server with one token, the engine its requests take, and the settings every live feed shares.

    ``one_shot`` says the caller sends one request at a time and runs nothing else meanwhile (a one-shot
    command): requests to a plain ``http://`` server then go over ``http.client`` (see the module
    docstring). ``stall_timeout`` (default twice ``keepalive_interval``) is how long a live stream may stay
    silent before its follower reconnects; ``backoff_initial``/``backoff_max`` bound the reconnect backoff.
    ``token_source`` reads the token again after a 401 (see the module docstring); without it a refused
    token stays refused.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        one_shot: bool = False,
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
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        engine = self._blocking_engine(url) if one_shot and transport is None else None
        if engine is None:
            from client.httpx_engine import HttpxEngine

            engine = HttpxEngine(self)
        self._engine: Engine = engine

    def __repr__(self) -> str:
        return f"Connection(base_url={self.base_url!r}, token=***)"

    def _blocking_engine(self, url: str) -> Engine | None:
        """``http.client`` for a one-shot command's requests to a plain http server reached directly; None
        (httpx carries them) for https, a proxy, or a URL it does not take as is."""
        if not url.startswith("http://") or _proxied():
            return None
        from client.blocking_engine import BlockingEngine

        try:
            return BlockingEngine(url, self.timeout)
        except ValueError:
            return None

    @property
    def http(self) -> httpx.AsyncClient:
        """The httpx client (made on first use): live streams read through it, and requests too unless a
        one-shot command's go over ``http.client``. It sends the connection's current token and, on a
        401, reads it again like :meth:`send`."""
        if self._http is None:
            from client.httpx_engine import make_client

            self._http = make_client(self, self._transport)
        return self._http

    async def aclose(self) -> None:
        """Close the engine and the connection pool; open streams end."""
        await self._engine.aclose()
        if self._http is not None:
            await self._http.aclose()

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

    async def send_again(self, status: int, used: str | None) -> bool:
        """After an answer to a request that carried the token ``used``: whether to send it once more,
        with the token read again (a 401, and the source now gives another token)."""
        return status == 401 and await self.reread_token(used)

    # ------------------------------------------------------------------------------------ requests

    def transport_error(self, failure: EngineFailure, method: str, path: str) -> TransportError:
        """What a request that did not complete means for the operator (server down, too slow, connection
        broke); ``sent`` on the error says whether it may have reached the server."""
        where = self.display_url
        error: TransportError
        if failure.kind == "unreachable":
            from client.config import how_to_start  # (only when a server did not answer)

            error = ServerUnreachable(f"cannot reach {where}: {how_to_start(self.base_url)}")
        elif failure.kind == "timeout":
            error = Timeout(f"{method} {path} got no answer from {where} within {self.timeout:g} s")
        else:
            error = ConnectionLost(f"the connection to {where} broke during {method} {path}")
        error.sent = failure.sent
        return error

    async def send(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None
    ) -> Reply:
        """One request (``params``: its query, None values left out; ``json``: its body), the answer not yet
        checked; a 401 is sent once more if the token changed meanwhile. A request that does not complete
        is a TransportError (its ``sent`` says whether the server may have seen it)."""
        target = _target(path, params)
        headers = {"Accept": "application/json"}
        body = None
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        try:
            used = self._token
            reply = await self._engine.send(method, target, {**headers, **self.auth_headers()}, body)
            if await self.send_again(reply.status_code, used):
                reply = await self._engine.send(method, target, {**headers, **self.auth_headers()}, body)
        except EngineFailure as failure:
            raise self.transport_error(failure, method, path) from None
        return reply

    async def request(
        self,
        method: str,
        path: str,
        *,
        what: str = "",
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Reply:
        """One request; any failure (transport, error status, redirect) is a ClientError saying what to do.
        ``what`` names the object for a 404 ("session 1a2b3c4d")."""
        reply = await self.send(method, path, params=params, json=json)
        if reply.status_code >= 400:
            raise self.api_error(reply, what)
        if reply.status_code >= 300:
            raise self.redirected(reply)
        return reply

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
        import httpx  # here: a one-shot command's requests never stream, nor load httpx
        from httpx_sse import aconnect_sse

        from client.streaming.reconnect import Refusal, Retry

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
        import httpx  # loaded already: the stream that broke was opened with it

        from client.stream_words import failure_words

        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return f"cannot reach {self.display_url}"
        if isinstance(exc, httpx.TimeoutException):
            return f"stalled: nothing received for {self.stall_timeout:g} s"
        if isinstance(exc, httpx.TransportError):
            return failure_words(exc)  # in words: never the exception's name
        return None

    def redirected(self, response: Reply) -> InvalidResponse:
        """Redirects are not followed (the token must not travel to another host): say where it points."""
        location = response.headers.get("location")
        target = display_url(location) if location else "?"
        return InvalidResponse(
            f"the server redirects {response.path} to {safe_line(target, 120)}: "
            "use that address as the server URL"
        )

    def api_error(self, response: Answer, what: str) -> ApiError:
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

    def invalid(self, response: Reply, exc: Exception) -> InvalidResponse:
        """An answer of the wrong shape, named by its request and first bad field (never a traceback)."""
        detail = "wrong shape"
        if isinstance(exc, ValidationError) and exc.error_count():
            first = exc.errors()[0]
            where = safe_line(".".join(str(p) for p in first["loc"]), 60)
            if first["type"] == "json_invalid":
                detail = "not JSON"
            elif where:
                detail = f"{exc.error_count()} field error(s), first at '{where}'"
        return InvalidResponse(
            f"the answer to {response.method} {response.path} could not be read ({detail}): "
            "is this a Preloop-compatible server?"
        )

    def parse(self, response: Reply, model: type[_M]) -> _M:
        """The answer validated as ``model``, or InvalidResponse."""
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise self.invalid(response, exc) from None
