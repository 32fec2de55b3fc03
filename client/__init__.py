"""The client library: typed API client, resilient event stream, timeline model, configuration.

Public names (imported lazily, so ``import client.models`` from the server stays light)::

    from client import connect, resolve_settings, ClientError

    async with await connect(resolve_settings(None, None, None)) as backend:
        page = await backend.list_sessions()

No UI toolkit is imported anywhere in this package, so scripts can use it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client.backend import ApprovalPage, Backend, Capabilities, ServerKind, SessionFilter
    from client.backends import connect
    from client.config import Settings, delete_token, resolve_settings, save_profile, store_token
    from client.errors import (
        ApiError,
        AuthError,
        BadRequest,
        ClientError,
        ConfigError,
        InvalidResponse,
        NoKeyring,
        NoteOutcomeUnknown,
        NotFound,
        PermissionDenied,
        RateLimited,
        ServerError,
        ServerUnreachable,
        TransportError,
        UsageError,
        ValidationFailed,
    )
    from client.events import Event, parse_event
    from client.status import StreamStatus

_EXPORTS: dict[str, str] = {
    "ApprovalPage": "client.backend",
    "Backend": "client.backend",
    "Capabilities": "client.backend",
    "connect": "client.backends",
    "ServerKind": "client.backend",
    "SessionFilter": "client.backend",
    "Settings": "client.config",
    "delete_token": "client.config",
    "resolve_settings": "client.config",
    "save_profile": "client.config",
    "store_token": "client.config",
    "ApiError": "client.errors",
    "AuthError": "client.errors",
    "BadRequest": "client.errors",
    "ClientError": "client.errors",
    "ConfigError": "client.errors",
    "InvalidResponse": "client.errors",
    "NoKeyring": "client.errors",
    "NotFound": "client.errors",
    "NoteOutcomeUnknown": "client.errors",
    "PermissionDenied": "client.errors",
    "RateLimited": "client.errors",
    "ServerError": "client.errors",
    "ServerUnreachable": "client.errors",
    "TransportError": "client.errors",
    "UsageError": "client.errors",
    "ValidationFailed": "client.errors",
    "Event": "client.events",
    "parse_event": "client.events",
    "StreamStatus": "client.status",
}

__all__ = [
    "ApiError",
    "ApprovalPage",
    "AuthError",
    "Backend",
    "BadRequest",
    "Capabilities",
    "ClientError",
    "ConfigError",
    "Event",
    "InvalidResponse",
    "NoKeyring",
    "NotFound",
    "NoteOutcomeUnknown",
    "PermissionDenied",
    "RateLimited",
    "ServerError",
    "ServerKind",
    "ServerUnreachable",
    "SessionFilter",
    "Settings",
    "StreamStatus",
    "TransportError",
    "UsageError",
    "ValidationFailed",
    "connect",
    "delete_token",
    "parse_event",
    "resolve_settings",
    "save_profile",
    "store_token",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
