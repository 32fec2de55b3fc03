"""Backends: one package per kind of server, behind one protocol, opened by :func:`connect`.

::

    client/backends/
      base.py         Backend = SessionDesk + NoteDesk + ApprovalDesk + LiveFeed (+ Capabilities)
      rest.py         RestBackend (what every backend's REST side shares: the connection, paging) and
                      PreloopRestApi, the Preloop-shaped REST that local and preloop share
      wire.py         what the mappings share: loose wire values (parse_time, as_str...) and the
                      Sequencer that numbers mapped events
      attention.py    the attention inbox's feed by polling any backend's REST side
      local/          our control plane: that REST + feed.py (our SSE stream)          LocalBackend
                      + attention.py (our server's attention stream)
      preloop/        a Preloop 0.17.1 server: that REST + feed.py (websocket, replay,
                      polls) + mapping.py (Draft -> PreloopMapper)                     PreloopBackend
      dendrux/        a Dendrux 0.4.1 app: read router + our steer router + feed.py (its SSE
                      stream, backfilled) + mapping.py (RawEvent -> DendruxMapper)      DendruxBackend
    client/streaming/ the live-feed toolkit every backend uses (decode, order, backoff, refusal, reconnect)
    client/connection.py  one connection per server, one httpx client: requests, how answers become
                      client.errors, and every SSE stream opened (httpx-sse's aconnect_sse) and
                      checked: Connection.event_source

Every package has the same shape: its REST in ``__init__`` (inherited from ``rest`` where the server
speaks Preloop's), its live feed in ``feed.py`` (``feed.follow(backend, session_id, after=...)``), and,
where the wire is not our vocabulary, its mapping in ``mapping.py`` (pure; one ``<Kind>Mapper`` per
follow, a :class:`~client.backends.wire.Sequencer`). docs/backends.md says more.

**Adding a backend** (e.g. ``dendrux/``):

1. Make a package ``client/backends/<kind>/`` whose ``__init__`` defines a class implementing
   :class:`~client.backends.base.Backend` on :class:`~client.backends.rest.RestBackend`:
   ``__init__(self, conn: Connection, ...)``, a ``server_kind`` and a ``capabilities``
   (:class:`~client.backends.base.Capabilities`; methods the server cannot serve raise
   :class:`client.errors.Unsupported`). Use ``conn.request``/``conn.parse`` for REST so errors read the
   same everywhere.
2. Its ``feed.follow()`` is "open, read, map" handed to :func:`client.streaming.reconnect.reconnecting`:
   one connection's work as an async generator (yield ``Live`` once open, events, ``Ended``; raise
   ``Retry`` or ``Refusal``; call ``link.alive()`` when bytes flow). An SSE stream is opened with
   ``conn.event_source`` and read with httpx-sse's ``aiter_sse``; for a seq-numbered stream in our
   vocabulary, :class:`client.streaming.intake.SeqIntake` does ordering, duplicates, skips and the gap
   policy.
3. Add the kind to :data:`~client.backends.base.ServerKind` (already there for ``dendrux``), a branch in
   :func:`backend_for` below, and detection in :func:`detect_server_kind` if the server can be told apart.
4. Never import another backend package (an import-linter contract checks it): share through ``base``,
   ``rest``, ``wire``, ``attention``, ``client.streaming`` or ``client.connection``.

Nothing above ``client/`` may know which backend it talks to; it reads ``backend.capabilities``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from client.backends.base import SERVER_KINDS, Backend, ServerKind
from client.errors import Unsupported, UsageError

if TYPE_CHECKING:
    from client.config import Settings
    from client.connection import Connection

__all__ = [
    "backend_for",
    "connect",
    "detect_server_kind",
    "parse_server_kind",
]


def parse_server_kind(value: str | None) -> ServerKind | None:
    """A kind named by a flag or a config file; ``None``/``"auto"`` means "ask the server"."""
    if value in (None, "auto"):
        return None
    for kind in SERVER_KINDS:
        if value == kind:
            return kind
    raise UsageError(f"server kind must be {', '.join(SERVER_KINDS)} or auto (got '{str(value)[:20]}')")


def backend_for(kind: ServerKind, conn: Connection) -> Backend:
    """The backend class for ``kind``, on ``conn`` (imported only when used: websockets, Dendrux...)."""
    if kind == "local":
        from client.backends.local import LocalBackend

        return LocalBackend(conn)
    if kind == "preloop":
        from client.backends.preloop import PreloopBackend

        return PreloopBackend(conn)
    if kind == "dendrux":
        from client.backends.dendrux import DendruxBackend

        return DendruxBackend(conn)
    raise Unsupported(f"this client cannot talk to a {kind} server yet")


async def detect_server_kind(conn: Connection) -> ServerKind:
    """Ask the server what it is: ``/api/v1/health`` of ours says ``"local"``, Preloop's says nothing, and a
    server without ``/api/v1`` that answers ``GET /runs`` like Dendrux's read router is a Dendrux app."""
    from client.backends.rest import PreloopRestApi
    from client.errors import NotFound

    try:
        health = await PreloopRestApi(conn).health()
    except NotFound:
        from client.backends.dendrux import looks_like_dendrux

        if await looks_like_dendrux(conn):
            return "dendrux"
        raise
    return "local" if health.server_kind == "local" else "preloop"


async def connect(settings: Settings, *, server_kind: str | None = None, **options: Any) -> Backend:
    """The backend for the server ``settings`` name (``client.config.resolve_settings``), its kind known.

    The kind comes from ``server_kind`` (a ``--server-kind`` flag), else the settings (a profile, the
    local server's file); only when neither knows it is the server asked, once, here. ``options`` go to
    :class:`~client.connection.Connection` (timeout, transport, keepalive, backoff...); its token is read
    again the way ``settings`` found it when the server stops accepting it (``client.config.token_reader``).
    Close the backend with ``await backend.aclose()`` or ``async with``. A server that cannot be reached
    while its kind is unknown raises :class:`client.errors.ServerUnreachable` (nothing else could be told
    about it).
    """
    from client.config import token_reader

    options.setdefault("token_source", token_reader(settings))
    from client.connection import Connection

    kind = parse_server_kind(server_kind) or settings.server_kind
    conn = Connection(settings.url, settings.token, **options)
    if kind is None:
        try:
            kind = await detect_server_kind(conn)
        except BaseException:
            await conn.aclose()
            raise
    return backend_for(kind, conn)
