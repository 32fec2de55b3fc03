"""The CLI's fast path: a scripted listing read from our local server with the standard library alone.

Why it exists: ``preloop sessions list -o id`` and ``preloop notes list --json`` run from scripts, often in
loops, and should answer in about 0.15 s. The full path cannot: importing httpx, pydantic with the wire
models and asyncio costs over half a second before the first byte is sent. This module sends the same GETs
over a plain socket (bearer token, the full path's 10 s timeout; :meth:`QuickClient._exchange` says why
not ``http.client``) and reads the JSON into the views of :mod:`client.rows`, which the CLI's formatters
print exactly as they print the full path's models.

When it is used (:meth:`QuickClient.open_local`): only when the target is known to be our local server
without asking the network (``--server-kind local``, or the profile or the local server file says so) and
the token needs no keyring (it comes from ``--token``, ``PRELOOP_TOKEN`` or the local server file).

Its limits are deliberate. Anything that is not the plain, happy case raises :class:`Fallback`, before
anything is printed, and the caller takes the full path, which repeats the request and reports what went
wrong in its own words; so every error message stays in one place (:mod:`client.errors`) and the fast
path never prints one of its own. It falls back on: an ``https://`` URL, or one with a user name, query or
fragment; a token the full path would refuse; a refused, broken or timed-out connection (a server that
never answers is thus waited for twice, 10 s each); any status but 200 (401, 404, 422, 5xx, a redirect);
a compressed or non-JSON body, or JSON not plainly of the wire types (:class:`client.rows.NotPlain`); a
short session id that matches no session or several, or a search through more than 10,000 sessions.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Self
from urllib.parse import urlencode, urlsplit

from client.backends import parse_server_kind
from client.backends.base import API_PREFIX, SessionFilter
from client.config import Settings, local_server_settings
from client.errors import ClientError
from client.ids import is_uuid, match_prefix, normalise_prefix
from client.rows import NoteListView, NotPlain, SessionListView

__all__ = ["Fallback", "QuickClient"]

TIMEOUT = 10.0
"""Seconds for connecting and for each read, as the full path's :class:`client.connection.Connection`."""

RESOLVE_LIMIT = 10_000
"""How many sessions a short id is looked for in, as ``client.backends.rest`` does."""


class Fallback(Exception):
    """Not the plain case: take the full path (which repeats the request and reports any error)."""


def _refuse_constant(name: str) -> Any:
    raise NotPlain(name)  # NaN and Infinity: JSON has neither; the models' parser refuses them


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ValueError("the answer ended early")
    return chunk


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status code and headers of an HTTP/1.x answer; ValueError for anything odd."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if version not in ("HTTP/1.1", "HTTP/1.0") or not rest[:3].isdigit():
        raise ValueError("not an HTTP answer")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        key = name.strip().lower()
        if not colon or key in headers:
            raise ValueError("odd header")
        headers[key] = value.strip().lower()
    return int(rest[:3]), headers


class QuickClient:
    """Synchronous GETs to one local server, answers read into :mod:`client.rows` views; every failure or
    surprise is :class:`Fallback`."""

    def __init__(self, settings: Settings, *, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(settings.url)
        try:
            port = parts.port or 80
            host = (parts.hostname or "").encode("ascii")
        except (ValueError, UnicodeError):
            raise Fallback("URL") from None
        if parts.scheme != "http" or not host or parts.username or parts.password:
            raise Fallback("not a plain http:// URL")
        if parts.query or parts.fragment:
            raise Fallback("not a plain http:// URL")
        token = (settings.token or "").strip()
        if any(not 0x21 <= ord(ch) <= 0x7E for ch in token):
            raise Fallback("token")  # the full path refuses it, in its words
        # Bytes, which socket takes though typeshed says str: a str host makes it load the idna codec.
        self._address: tuple[Any, int] = (host, port)
        self._timeout = timeout
        self._base = parts.path.rstrip("/") + API_PREFIX
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self._headers = (
            f"Host: {parts.netloc}\r\nAccept: application/json\r\nAccept-Encoding: identity\r\n"
            f"{auth}Connection: close\r\n\r\n"
        )

    @classmethod
    def open_local(
        cls, url: str | None, token: str | None, profile: str | None, server_kind: str | None
    ) -> Self:
        """A client for the global flags' target if it is known to be our local server without a request
        and without the keyring (see the module docstring); Fallback otherwise."""
        try:
            kind = parse_server_kind(server_kind)
        except ClientError:
            raise Fallback("server kind") from None
        settings = local_server_settings(url, token, profile, kind)
        if settings is None:
            raise Fallback("not known to be the local server, or the token is in the keyring")
        return cls(settings)

    def get(self, path: str, params: dict[str, Any]) -> Any:
        """``GET /api/v1{path}?{params}`` (None values left out, as the full path does) decoded from JSON;
        Fallback for anything but a 200 with a plain JSON body."""
        query = urlencode({key: value for key, value in params.items() if value is not None})
        target = f"{self._base}{path}?{query}" if query else f"{self._base}{path}"
        try:
            status, headers, body = self._exchange(f"GET {target} HTTP/1.1\r\n{self._headers}".encode())
        except (OSError, ValueError) as exc:  # refused, reset, timed out, garbled, not ASCII
            raise Fallback(type(exc).__name__) from None
        if status != 200:
            raise Fallback(f"status {status}")
        if headers.get("content-encoding", "identity") != "identity":
            raise Fallback("compressed")
        try:
            return json.loads(body, parse_constant=_refuse_constant)
        except ValueError:  # not JSON, not UTF-8, or NaN (NotPlain is a ValueError)
            raise Fallback("not plain JSON") from None

    def _exchange(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        """One request on its own connection (``Connection: close``; loopback makes that cheap): the status,
        the headers (names and values lower-cased) and the body of exactly ``Content-Length`` bytes.

        Plain HTTP/1.1 over a socket rather than ``http.client``, whose imports (``ssl``, ``email``) cost
        ~45 ms, a third of the start-up budget; anything unusual (no length, chunked, a short body, an odd
        header) is a ValueError, so the full path takes over."""
        with socket.create_connection(self._address, timeout=self._timeout) as sock:
            sock.sendall(request)
            received = bytearray()
            while b"\r\n\r\n" not in received:
                received += _more(sock)
            head, _, rest = bytes(received).partition(b"\r\n\r\n")
            status, headers = _parse_head(head)
            if "transfer-encoding" in headers:
                raise ValueError("chunked")
            length = int(headers.get("content-length", "-1"))
            body = bytearray(rest)
            while len(body) < length:
                body += _more(sock)
        if len(body) != length:
            raise ValueError("body length")
        return status, headers, bytes(body)

    def sessions(self, filters: SessionFilter, *, limit: int, offset: int) -> SessionListView:
        """One page of ``GET /runtime-sessions`` (the full path's query: :meth:`SessionFilter.params`)."""
        data = self.get("/runtime-sessions", filters.params(limit=limit, offset=offset))
        try:
            return SessionListView.from_json(data)
        except NotPlain:
            raise Fallback("sessions page") from None

    def notes(self, session_id: str, *, state: str | None, limit: int, offset: int) -> NoteListView:
        """One page of a session's notes, newest first (``client.backends.rest``'s ``list_notes`` query)."""
        params = {"runtime_session_id": session_id, "state": state, "limit": limit, "offset": offset}
        data = self.get("/operator-notes", params)
        try:
            return NoteListView.from_json(data)
        except NotPlain:
            raise Fallback("notes page") from None

    def resolve_session(self, value: str) -> str:
        """A full session UUID as given (lower-cased), or the one session whose id starts with a short id,
        looked for as the full path does (``cli.commands.common.resolve_session`` and the REST backend's
        ``resolve_session_id``: every session, pages of 100); Fallback when it is not exactly one."""
        text = value.strip()
        if is_uuid(text):
            return text.lower()
        if len(text) == 36:
            raise Fallback("not a UUID")  # the full path refuses it
        try:
            prefix = normalise_prefix(text)
        except ClientError:
            raise Fallback("not a short id") from None
        everything = SessionFilter(status="all")
        candidates: list[str] = []
        offset = 0
        while True:
            page = self.sessions(everything, limit=100, offset=offset)
            candidates += [row.id.lower() for row in page.items if row.id.lower().startswith(prefix)]
            offset += len(page.items)
            if not page.has_more or not page.items:
                break
            if offset >= RESOLVE_LIMIT:
                raise Fallback("too many sessions to look through")
        try:
            return match_prefix(prefix, candidates)
        except ClientError:  # none or several: the full path says which
            raise Fallback("no single match") from None
