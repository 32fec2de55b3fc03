"""A pure, incremental Server-Sent Events decoder: byte chunks in, complete events out. No I/O.

It follows the WHATWG event-stream rules: lines end in ``\\r\\n``, ``\\r`` or ``\\n`` (a ``\\r`` at the end of
one chunk and a ``\\n`` at the start of the next are one line end); ``:`` lines are comments (keep-alives);
``data:`` lines join with ``\\n``; ``id:`` sets the last event id (ignored if it contains NUL) and persists
across events; ``retry:`` (digits only) sets :attr:`SSEDecoder.retry_ms`; a block without ``data`` is not
dispatched; an event cut off by the end of the stream is dropped. Chunks may split anywhere, even inside
a UTF-8 sequence: lines are only decoded once complete, and ``\\r``/``\\n`` never occur inside a multi-byte
sequence.

Keeping this separate from the connection means it is tested byte by byte, at every split offset, without
a network, and the follower (:mod:`client.follow`) only deals with connecting and ordering.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEFrame"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEFrame:
    """One dispatched event: its type (``""`` if none), data, the last event id at dispatch, and retry."""

    event: str
    data: str
    id: str
    retry: int | None = None


class SSEDecoder:
    """Feed it byte chunks as they arrive; it returns every event completed by each chunk."""

    __slots__ = (
        "_buffer",
        "_data",
        "_event",
        "_first_line",
        "_last_id",
        "_pending_cr",
        "_retry_seen",
        "comments",
        "retry_ms",
    )

    def __init__(self) -> None:
        self._buffer = b""
        self._pending_cr = False
        self._first_line = True
        self._event = b""
        self._data: list[bytes] = []
        self._last_id = ""
        self._retry_seen: int | None = None
        self.retry_ms: int | None = None
        """The newest ``retry:`` value seen (milliseconds), or None: how long the server asks us to wait."""
        self.comments = 0
        """How many comment lines (usually keep-alives) were seen."""

    @property
    def last_event_id(self) -> str:
        """The last ``id:`` seen, as the spec keeps it (it survives across events)."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        """Decode one chunk; return the events it completes (possibly none)."""
        if not chunk:
            return []
        if self._pending_cr:
            self._pending_cr = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\r" in chunk:
            self._pending_cr = chunk[-1] == 0x0D
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if self._buffer:
            chunk = self._buffer + chunk
        lines = chunk.split(b"\n")
        self._buffer = lines.pop()
        if self._first_line and lines:
            self._first_line = False
            if lines[0].startswith(_BOM):
                lines[0] = lines[0][3:]
        return self._lines(lines)

    def flush(self) -> list[SSEFrame]:
        """The stream ended: an unterminated event is dropped, as the spec says. Resets line state."""
        self._buffer = b""
        self._pending_cr = False
        self._event = b""
        self._data = []
        return []

    def _lines(self, lines: list[bytes]) -> list[SSEFrame]:
        out: list[SSEFrame] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append(
                        SSEFrame(
                            self._event.decode("utf-8", "replace"),
                            b"\n".join(data).decode("utf-8", "replace"),
                            self._last_id,
                            self._retry_seen,
                        )
                    )
                    data = self._data = []
                self._event = b""
                self._retry_seen = None
                continue
            if line[0] == 0x3A:  # ":" comment
                self.comments += 1
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"event":
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self._last_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                self.retry_ms = self._retry_seen = int(value)
        return out
