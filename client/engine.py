"""What an engine is: the part of a connection that carries bytes (:mod:`client.connection` builds the
requests and reads the answers; :mod:`client.httpx_engine` and :mod:`client.blocking_engine` carry them).

Kept apart from the connection so that each engine depends on this contract only, and the connection picks
an engine without the engines importing it back.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = ["Engine", "EngineFailure", "Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer, read whole: status, headers (names lower-case; repeated ones joined by ", "), body, and
    the request it answers (for messages)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes
    method: str
    path: str
    """The URL path that was asked for, without the query."""

    @property
    def text(self) -> str:
        """The body as text (UTF-8; bytes that are not become U+FFFD)."""
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body decoded from JSON (ValueError when it is not)."""
        return jsonlib.loads(self.content)


class EngineFailure(Exception):
    """An engine's request did not complete: ``kind`` says how, ``sent`` whether it may have reached the
    server (False: nothing left this machine)."""

    def __init__(self, kind: Literal["unreachable", "timeout", "lost"], *, sent: bool) -> None:
        super().__init__(kind)
        self.kind = kind
        self.sent = sent


class Engine(Protocol):
    """Carries one request and reads its whole answer; EngineFailure when that cannot be done."""

    async def send(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> Reply:
        """Send ``method target`` (path and query, below the base URL) with exactly these headers."""
        ...

    async def aclose(self) -> None:
        """Close what the engine holds open."""
        ...
