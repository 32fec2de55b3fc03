"""A scripted SSE transport for the faults a real server cannot produce on demand.

Each connection attempt takes the next script: a status code, byte chunks (cut wherever the test likes),
pauses, or a hang (a stall: it ends in ``httpx.ReadTimeout`` once the request's read timeout passes, as
on a real connection). The requests are recorded so tests can check ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

SID = "5e55e55e-0000-4000-8000-000000000001"
AT = "2026-11-30T12:00:00Z"


def event_json(seq: int, type_: str = "model.delta", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"seq": seq, "type": type_, "session_id": SID, "at": AT}
    if type_ == "model.delta":
        body |= {"iteration": 1, "text": f"chunk {seq} ✓"}
    if type_ == "session.ended":
        body |= {"session": {"id": SID}, "reason": "done"}
    return body | fields


def frame(seq: int, type_: str = "model.delta", **fields: Any) -> bytes:
    data = json.dumps(event_json(seq, type_, **fields), ensure_ascii=False)
    return f"id: {seq}\nevent: {type_}\ndata: {data}\n\n".encode()


@dataclass
class Hang:
    """Send nothing more, keep the connection open (a stall)."""


@dataclass
class Pause:
    seconds: float


@dataclass
class Script:
    status: int = 200
    steps: list[bytes | Hang | Pause] = field(default_factory=list)
    body: bytes = b""
    content_type: str = "text/event-stream"


class ScriptedBody(httpx.AsyncByteStream):
    """The scripted body; a wait longer than the request's read timeout raises ``httpx.ReadTimeout``
    after that timeout, as a real connection does (the follower's stall detection is that timeout)."""

    def __init__(self, steps: list[bytes | Hang | Pause], read_timeout: float | None) -> None:
        self.steps = steps
        self.read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for step in self.steps:
            if isinstance(step, Hang | Pause):
                seconds = 3600.0 if isinstance(step, Hang) else step.seconds
                if self.read_timeout is not None and seconds > self.read_timeout:
                    await asyncio.sleep(self.read_timeout)
                    raise httpx.ReadTimeout("no byte within the read timeout")
                await asyncio.sleep(seconds)
            else:
                yield step


class ScriptedSSE(httpx.AsyncBaseTransport):
    """Serves ``scripts`` in order, one per request; after the last one every request is refused (404)."""

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = list(scripts)
        self.requests: list[httpx.Request] = []

    @property
    def last_event_ids(self) -> list[str | None]:
        return [r.headers.get("last-event-id") for r in self.requests]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.scripts:
            return httpx.Response(404, json={"detail": "script exhausted"})
        script = self.scripts.pop(0)
        if script.status != 200:
            return httpx.Response(
                script.status, content=script.body, headers={"content-type": "application/json"}
            )
        read_timeout = request.extensions.get("timeout", {}).get("read")
        return httpx.Response(
            200,
            headers={"content-type": script.content_type},
            stream=ScriptedBody(script.steps, read_timeout),
            request=request,
        )


class FreezingProxy:
    """A TCP proxy on loopback in front of the real server, for faults the server cannot make on demand.

    * ``freeze_open_connections()``: open connections stay open but pass no byte from the server to the
      client, exactly what a dead NAT entry or a hung middlebox looks like; new connections go through;
    * ``split_every=n``: the server's bytes reach the client in n-byte pieces, each flushed on its own;
    * ``corrupt=(old, new)``: bytes are replaced on the way (same length, so HTTP chunk sizes stay right).
    """

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        split_every: int | None = None,
        corrupt: tuple[bytes, bytes] | None = None,
    ) -> None:
        if corrupt is not None and len(corrupt[0]) != len(corrupt[1]):
            raise ValueError("a corruption must keep the length")
        self.split_every = split_every
        self.corrupt = corrupt
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.connections = 0
        self._frozen: set[int] = set()
        self._open: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FreezingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def freeze_open_connections(self) -> None:
        self._frozen |= self._open

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        conn = self.connections
        self._open.add(conn)
        up_r, up_w = await asyncio.open_connection(*self.upstream)

        async def send(dst: asyncio.StreamWriter, data: bytes) -> None:
            step = self.split_every or len(data) or 1
            for i in range(0, len(data), step):
                dst.write(data[i : i + step])
                await dst.drain()
                if self.split_every:
                    await asyncio.sleep(0.001)  # let each piece leave on its own

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, downstream: bool) -> None:
            held = b""  # with a corruption, keep back a tail that may begin a match split across reads
            try:
                while data := await src.read(65536):
                    if downstream and conn in self._frozen:
                        continue  # swallowed: the client sees silence
                    if downstream and self.corrupt is not None:
                        old, new = self.corrupt
                        held = (held + data).replace(old, new)
                        # only the longest tail that begins the pattern waits for the next read; the rest
                        # goes now (a stream's last bytes are not held until the server drops the connection)
                        keep = next(
                            (
                                n
                                for n in range(min(len(old) - 1, len(held)), 0, -1)
                                if old.startswith(held[-n:])
                            ),
                            0,
                        )
                        data, held = held[: len(held) - keep], held[len(held) - keep :]
                    if downstream:
                        await send(dst, data)
                    else:
                        dst.write(data)
                        await dst.drain()
                if held:
                    await send(dst, held)
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        tasks = {
            asyncio.create_task(pipe(client_r, up_w, downstream=False)),
            asyncio.create_task(pipe(up_r, client_w, downstream=True)),
        }
        self._tasks |= tasks
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            self._tasks -= tasks
            self._open.discard(conn)
