"""Helpers for the control-plane tests: a raw SSE reader (framing checked by hand) and capture loading."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

_IN_REPO = Path(__file__).resolve().parents[1] / "fake_preloop" / "captures"
CAPTURES = (
    _IN_REPO if _IN_REPO.is_dir() else Path(__file__).resolve().parents[3] / "shared/preloop-0.17.1/captures"
)
"""The recorded Preloop 0.17.1 exchanges (a copy is committed beside the fake Preloop server)."""


def capture(name: str) -> dict[str, Any]:
    """One recorded Preloop exchange, by file-name prefix (``"017"`` or ``"017_runtime_session_detail"``)."""
    matches = sorted(CAPTURES.glob(f"{name}*.json"))
    assert matches, f"no capture {name!r} in {CAPTURES}"
    data: dict[str, Any] = json.loads(matches[0].read_text())
    return data


@dataclass
class Frame:
    id: int | None
    event: str | None
    data: dict[str, Any]


@dataclass
class Stream:
    """What a raw read of the SSE endpoint saw: frames, comment lines, retry hints, and whether it closed."""

    status: int = 0
    content_type: str = ""
    frames: list[Frame] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    retry: list[int] = field(default_factory=list)
    closed_by_server: bool = False
    replay_after: str | None = None
    stored_through: str | None = None

    @property
    def seqs(self) -> list[int]:
        return [f.id for f in self.frames if f.id is not None]

    @property
    def types(self) -> list[str]:
        return [f.event or "" for f in self.frames]

    def first(self, event: str) -> Frame:
        """The first frame of type ``event`` (StopIteration, i.e. a failing test, if there is none)."""
        return next(f for f in self.frames if f.event == event)


async def read_stream(
    url: str,
    token: str,
    session_id: str,
    *,
    after: int | None = None,
    tail: int | None = None,
    since: str | None = None,
    last_event_id: str | None = None,
    stop: Callable[[Stream], bool] = lambda s: False,
    seconds: float = 10.0,
) -> Stream:
    """Read ``/events`` until ``stop(stream)`` is true, the server closes it, or ``seconds`` pass."""
    headers = {"Authorization": f"Bearer {token}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    params: dict[str, int | str] = {}
    if after is not None:
        params["after"] = after
    if tail is not None:
        params["tail"] = tail
    if since is not None:
        params["since"] = since
    out = Stream()

    async def run() -> None:
        async with (
            httpx.AsyncClient(base_url=url, timeout=seconds) as http,
            http.stream(
                "GET", f"/api/v1/runtime-sessions/{session_id}/events", headers=headers, params=params or None
            ) as resp,
        ):
            out.status = resp.status_code
            out.content_type = resp.headers.get("content-type", "")
            out.replay_after = resp.headers.get("preloop-replay-after")
            out.stored_through = resp.headers.get("preloop-stored-through")
            if resp.status_code != 200:
                await resp.aread()
                return
            block: list[str] = []
            async for line in resp.aiter_lines():
                if line:
                    block.append(line)
                    continue
                _consume(out, block)
                block = []
                if stop(out):
                    return
            out.closed_by_server = True

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(run(), seconds)
    return out


async def subscribed(server: Any, session_id: str, count: int = 1) -> None:
    """Wait until ``count`` streams of the session listen on the server's bus (an
    :class:`~server.embedded.EmbeddedServer`): from then on an event reaches them live, not by replay."""
    async with asyncio.timeout(30):
        while server.plane.bus.subscriber_count(session_id) < count:  # noqa: ASYNC110 - no event to await
            await asyncio.sleep(0.005)


def _consume(out: Stream, block: list[str]) -> None:
    ident: int | None = None
    event: str | None = None
    data: list[str] = []
    for line in block:
        if line.startswith(":"):
            out.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            ident = int(value)
        elif name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "retry":
            out.retry.append(int(value))
    if data:
        out.frames.append(Frame(ident, event, json.loads("\n".join(data))))


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def read_until(server: Any, session_id: str, event: str, *, seconds: float = 10.0) -> Stream:
    """The operator's stream of a session on ``live_server``, read until the first ``event`` frame."""
    return await read_stream(
        server.url, server.token, session_id, stop=lambda s: event in s.types, seconds=seconds
    )
