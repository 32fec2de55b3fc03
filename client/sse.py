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

import re
from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEFrame"]

_BOM = b"\xef\xbb\xbf"
# The shape every frame of our server has, with any comment (keep-alive) or blank lines before it. A chunk
# made only of these is split in one C call; anything else takes the line-by-line path.
_CANONICAL = re.compile(
    rb"(?<![^\n])((?::[^\n]*\n|\n)*)id: ([^\n\x00]*)\nevent: ([^\n]*)\ndata: ([^\n]*)\n\n"
)
_ONE_FRAME = re.compile(rb"id: ([^\n\x00]*)\nevent: ([^\n]*)\ndata: ([^\n]*)\n\n")
_COMMENT = re.compile(rb"(?m)^:")


class SSEFrame(NamedTuple):
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
        if self._first_line:
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._buffer = chunk
                return []
            self._first_line = False
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        out: list[SSEFrame] = []
        pieces = _CANONICAL.split(chunk)
        # pieces = [between, prefix, id, event, data, between, ..., tail]. Fast path: the matches are back to
        # back, the first starts at a line start, and no event is under way when it starts.
        if len(pieces) > 1 and not any(pieces[5:-1:5]):
            head = pieces[0]
            if not head or head[-1] == 0x0A:
                fed = len(head) + len(pieces[1])
                if head:
                    # finish the event under way first (its blank line is in the first match's prefix)
                    self._feed_lines(head + pieces[1], out)
                    pieces[1] = b""
                if not (self._data or self._event or self._retry_seen is not None):
                    prefixes = b"".join(pieces[1::5])
                    if prefixes:
                        self.comments += len(_COMMENT.findall(prefixes))
                    out += [
                        SSEFrame(
                            e.decode("utf-8", "replace"),
                            d.decode("utf-8", "replace"),
                            i.decode("utf-8", "replace"),
                        )
                        for i, e, d in zip(pieces[2::5], pieces[3::5], pieces[4::5], strict=True)
                    ]
                    self._last_id = out[-1].id
                    chunk = pieces[-1]
                elif head:
                    chunk = chunk[fed:]
        # Line by line (still taking whole canonical frames in one match when no event is under way).
        pos = 0
        match = _ONE_FRAME.match
        while True:
            if not (self._data or self._event or self._retry_seen is not None):
                m = match(chunk, pos)
                while m is not None:
                    ident, event, data = m.groups()
                    self._last_id = ident.decode("utf-8", "replace")
                    out.append(
                        SSEFrame(
                            event.decode("utf-8", "replace"), data.decode("utf-8", "replace"), self._last_id
                        )
                    )
                    pos = m.end()
                    m = match(chunk, pos)
            end = chunk.find(b"\n", pos)
            if end < 0:
                break
            self._line(chunk[pos:end], out)
            pos = end + 1
        self._buffer = chunk[pos:]
        return out

    def _feed_lines(self, text: bytes, out: list[SSEFrame]) -> None:
        for line in text.split(b"\n")[:-1]:
            self._line(line, out)

    def flush(self) -> list[SSEFrame]:
        """The stream ended: an unterminated event is dropped, as the spec says. Resets line state."""
        self._buffer = b""
        self._pending_cr = False
        self._event = b""
        self._data = []
        return []

    def _line(self, line: bytes, out: list[SSEFrame]) -> None:
        if not line:
            if self._data:
                out.append(
                    SSEFrame(
                        self._event.decode("utf-8", "replace"),
                        b"\n".join(self._data).decode("utf-8", "replace"),
                        self._last_id,
                        self._retry_seen,
                    )
                )
                self._data = []
            self._event = b""
            self._retry_seen = None
            return
        if line[0] == 0x3A:  # ":" comment
            self.comments += 1
            return
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry_ms = self._retry_seen = int(value)
