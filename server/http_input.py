"""What the control plane accepts on the wire before any desk sees a request: one place for bad input.

* :class:`StrictJsonRoute`: every route's JSON body is parsed strictly. ``NaN``, ``Infinity`` and
  ``-Infinity`` (which Python's ``json`` accepts but JSON does not have), numbers too large for a double
  (``1e400``, which would become infinity), lone UTF-16 surrogates (which SQLite cannot store as UTF-8)
  and nesting deeper than :data:`MAX_JSON_DEPTH` (which would exhaust the stack wherever the value is
  echoed, stored or rendered) are refused as invalid JSON, so such a value can neither reach storage and
  the event stream nor break the 422 that would echo it back. So is an object that names a key twice
  (``{"text": "a\\u0000b", "text": "ok"}``): Python keeps the last value, other parsers the first, so what
  a proxy or a log checked need not be what is stored.
* :func:`validation_error`: the 422 handler. It answers FastAPI's usual list, but first makes every echoed
  ``input`` JSON-safe (a non-JSON body arrives as bytes that need not be UTF-8; a float may not be finite),
  so refusing bad input can never itself fail.
* :class:`BodyGuard`: an ASGI middleware in front of the app. A request that carries a body has its bearer
  token checked *before* the body is read (an unauthenticated client cannot make the server buffer or
  parse megabytes; one that sent ``Expect: 100-continue`` is refused before it sends a byte of it), and a
  body larger than :data:`MAX_BODY_BYTES` is refused with 413 as soon as it is known to be too large
  (from ``Content-Length``, or while it is read).
* :data:`MAX_HEAD_BYTES`: the request line and headers together. The HTTP parser runs before any ASGI code
  (no middleware can see a header until it is complete), so the limit is the parser's own: the server
  runs uvicorn's h11 parser with ``h11_max_incomplete_event_size`` set to it (see
  :mod:`server.embedded`), which answers 400 and closes as soon as an unfinished head grows past it. The
  faster ``httptools`` parser has no such limit: it buffered a 64 MiB header whole (+128 MiB of memory)
  before answering.
* :data:`Offset`: the paging offset of every list, bounded by :data:`server.harness.INT64_MAX` (SQLite's
  largest integer) so a huge value is a 422 and never an overflow deep in the database driver.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any

from fastapi import Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.harness import INT64_MAX

MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body any endpoint accepts (a full batch of agent events fits with room to spare)."""

MAX_HEAD_BYTES = 16 * 1024
"""The longest request line plus headers accepted (a bearer token and the usual headers need < 1 KiB)."""

DISCARD_LIMIT = 64 * 1024 * 1024
"""How much of a refused body is read (and dropped) so the client can read its 401/413; past it, the
connection is closed."""

Offset = Annotated[int, Query(ge=0, le=INT64_MAX, description="Rows to skip (at most 2**63 - 1).")]
"""A list's paging offset (``offset`` / ``skip``)."""

MAX_JSON_DEPTH = 64
"""How deeply arrays and objects may nest in a body (tool arguments need a handful of levels)."""
_TOO_DEEP = f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep"

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send a finite number or null")


class _DuplicateKeyError(ValueError):
    """An object named the same key twice (raised from inside the parser, turned into a 422)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {json.dumps(key)} appears twice in one object; send each key once")
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: the object as a dict, refused when a key repeats (no silent last-wins)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses as infinity
        raise ValueError(f"{text} is too large for a JSON number; send a finite number or null")
    return value


def _check_tree(value: Any, text: str) -> None:
    """Refuse a parsed document nested deeper than :data:`MAX_JSON_DEPTH` or holding a lone surrogate.

    Iterative, so a hostile document cannot exhaust the stack here either.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                bad = next(ch for ch in item if 0xD800 <= ord(ch) <= 0xDFFF)
                raise json.JSONDecodeError(
                    f"a string holds a lone surrogate \\u{ord(bad):04x}, which is not Unicode text; "
                    "send a complete surrogate pair or the character itself",
                    text,
                    0,
                ) from None
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise json.JSONDecodeError(_TOO_DEEP, text, 0)
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def strict_json_loads(body: bytes) -> Any:
    """Parse a request body as JSON proper; anything Python's ``json`` tolerates beyond it is an error.

    Raises :class:`json.JSONDecodeError`, which FastAPI answers with its usual 422 ``json_invalid``.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError("the body is not UTF-8 text", "", exc.start) from None
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite, object_pairs_hook=_unique_keys
        )
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(_TOO_DEEP, text, 0) from None
    except _DuplicateKeyError as exc:
        raise json.JSONDecodeError(str(exc), text, max(text.rfind(json.dumps(exc.key)), 0)) from None
    except ValueError as exc:  # from _refuse_constant or _finite
        word = str(exc).split(" ", 1)[0]
        raise json.JSONDecodeError(str(exc), text, max(text.find(word), 0)) from None
    # Only a document with that many brackets can be that deep; only one with a \ud8.. escape can hold a
    # lone surrogate: most bodies skip the walk.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH or _SURROGATE_ESCAPE.search(text):
        _check_tree(value, text)
    return value


def _echoable(value: Any) -> Any:
    """``value`` with what JSON cannot carry made text: undecodable bytes, NaN and infinities."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _echoable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_echoable(v) for v in value]
    return value


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 body (``{"detail": [{type, loc, msg, input, ctx}]}``, as Preloop's), always encodable."""
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": jsonable_encoder(_echoable(list(exc.errors())))}, status_code=422)


class _StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json_loads(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """An APIRoute whose JSON bodies are parsed by :func:`strict_json_loads`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """Hand the endpoint a request whose ``json()`` is strict (FastAPI's documented extension point)."""
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictJsonRequest(request.scope, request.receive))

        return strict


Authenticate = Callable[[str, str | None], Awaitable[tuple[int, str] | None]]
"""``(path, Authorization header) -> None`` when the caller may send a body there, else ``(status,
detail)`` of the refusal (the same answer the route's own dependency would give)."""


class BodyGuard:
    """ASGI middleware: credentials before body, and a cap on the body's size (see module docstring)."""

    def __init__(self, app: ASGIApp, authenticate: Authenticate, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.authenticate = authenticate
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse early, or hand the app the already-read body (it was at most ``max_body`` bytes)."""
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        # A client that sent "Expect: 100-continue" sends no body until told to: refuse it unread.
        unsent = headers.get("expect", "").lower() == "100-continue"
        refusal = await self.authenticate(scope["path"], headers.get("authorization"))
        declared = headers.get("content-length", "")
        if refusal is None and declared.strip().isdigit() and int(declared) > self.max_body:
            refusal = (413, self._too_large)
        if refusal is not None:
            if not unsent:
                await _discard(receive)
            await _refuse(send, *refusal)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                if message.get("more_body", False):
                    await _discard(receive)
                await _refuse(send, 413, self._too_large)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @property
    def _too_large(self) -> str:
        return (
            f"Request body too large: at most {self.max_body} bytes "
            f"({self.max_body // (1024 * 1024)} MiB) are accepted"
        )


async def _discard(receive: Receive, limit: int = DISCARD_LIMIT) -> None:
    """Read and drop what is left of a refused body (up to ``limit`` bytes), keeping none of it.

    A client that does not wait for ``100 Continue`` reads the answer only after sending its whole body;
    closing on it mid-send would reset the connection and lose the answer (nginx's "lingering close").
    """
    dropped = 0
    while dropped <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _refuse(send: Send, status: int, detail: str) -> None:
    await _answer(send, status, detail, {"www-authenticate": "Bearer"} if status == 401 else None)


async def _answer(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    payload = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    # The body was not read: ask the client to close, so unread bytes are not parsed as a next request.
    raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})
