"""A pure, incremental Server-Sent Events decoder: byte chunks in, complete events out. No I/O.

It follows the WHATWG event-stream rules: lines end in ``\\r\\n``, ``\\r`` or ``\\n`` (a ``\\r`` at the end of
one chunk and a ``\\n`` at the start of the next are one line end); ``:`` lines are comments (keep-alives);
``data:`` lines join with ``\\n``; ``id:`` sets the last event id (ignored if it contains NUL) and persists
across events; ``retry:`` (digits only) sets :attr:`SSEDecoder.retry_ms`; a block without ``data`` is not
dispatched; an event cut off by the end of the stream is dropped. Chunks may split anywhere, even inside
a UTF-8 sequence: the complete lines of a chunk are decoded in one go (``\\r``/``\\n`` never occur inside a
multi-byte sequence) and the unfinished last line waits for the next chunk. Invalid UTF-8 becomes U+FFFD.

Speed: frames of the canonical shape our server writes (``id``, ``event``, one ``data`` line) are cut out
of the text by one regex ``split`` per chunk; anything else goes line by line, with identical results (a
test checks both against a plain reading of the spec, and against httpx-sse's own parser, on random
streams cut at random places).

Why not httpx-sse's parser: streams are *opened* with ``httpx_sse.aconnect_sse``
(:meth:`client.connection.Connection.event_source`), but ``EventSource.aiter_sse`` hands events over one at
a time with no chunk boundary, and driving httpx-sse's line and field decoders a chunk at a time (to keep
validating a chunk's frames in one pydantic call) costs a Python call per line: over seven runs on this
shared 2-core machine the full ingest path ran at 31-51 % of httpx-sse's raw parse rate that way (below
the ≥ 50 % target in six), against 52-70 % with this decoder (``benchmarks/bench_client_ingest.py`` prints
both, interleaved in one run).

Keeping this separate from the connection means it is tested byte by byte, at every split offset, without
a network, and the follower (:mod:`client.backends.local.feed`) only deals with connecting.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import NamedTuple

__all__ = ["SSEDecoder", "SSEFrame"]

# The shape every frame of our server has, with any comment (keep-alive) or blank lines before it. Text made
# only of these is split in one C call; anything else takes the line-by-line path.
# (``.`` is "anything but \n"; possessive ``*+`` never backtracks: same matches, ~15 % faster than [^\n]*.)
_CANONICAL = re.compile(r"(?<![^\n])((?::.*+\n|\n)*+)id: ([^\n\x00]*+)\nevent: (.*+)\ndata: (.*+)\n\n")
_ONE_FRAME = re.compile(r"id: ([^\n\x00]*+)\nevent: (.*+)\ndata: (.*+)\n\n")
_COMMENT = re.compile(r"(?m)^:")
_new_tuple = tuple.__new__


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
        self._event = ""
        self._data: list[str] = []
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
        # Only complete lines are decoded, all at once: a newline never sits inside a UTF-8 sequence.
        cut = chunk.rfind(b"\n") + 1
        self._buffer = chunk[cut:]
        if not cut:
            return []
        text = chunk[:cut].decode("utf-8", "replace")
        if self._first_line:
            self._first_line = False
            text = text.removeprefix("\ufeff")
        return self._text(text)

    def flush(self) -> list[SSEFrame]:
        """The stream ended: an unterminated event is dropped, as the spec says. Resets line state."""
        self._buffer = b""
        self._pending_cr = False
        self._event = ""
        self._data = []
        return []

    def _idle(self) -> bool:
        return not (self._data or self._event or self._retry_seen is not None)

    def _text(self, text: str) -> list[SSEFrame]:
        out: list[SSEFrame] = []
        pieces = _CANONICAL.split(text)
        # pieces = [between, prefix, id, event, data, between, ..., tail]. Fast path: the matches are back to
        # back, the first starts at a line start, and no event is under way when it starts.
        if len(pieces) > 1 and not any(pieces[5:-1:5]):
            head = pieces[0]
            fed = len(head) + len(pieces[1])
            if head:
                # finish what came before (an event under way ends with the first match's prefix)
                self._lines(head + pieces[1], out)
                pieces[1] = ""
            if self._idle():
                prefixes = "".join(pieces[1::5])
                if prefixes:
                    self.comments += len(_COMMENT.findall(prefixes))
                ids = pieces[2::5]
                # tuple.__new__ straight from C: the namedtuple's Python __new__ is one call per event
                out += map(_new_tuple, repeat(SSEFrame), zip(pieces[3::5], pieces[4::5], ids, repeat(None)))
                self._last_id = ids[-1]
                text = pieces[-1]
            elif head:
                text = text[fed:]  # still under way: the rest goes line by line
        self._lines(text, out)
        return out

    def _lines(self, text: str, out: list[SSEFrame]) -> None:
        """Complete lines one by one, still taking whole canonical frames in one match when idle."""
        pos = 0
        match = _ONE_FRAME.match
        end_of_text = len(text)
        while pos < end_of_text:
            if self._idle():
                m = match(text, pos)
                while m is not None:
                    ident, event, data = m.groups()
                    self._last_id = ident
                    out.append(SSEFrame(event, data, ident))
                    pos = m.end()
                    m = match(text, pos)
                if pos >= end_of_text:
                    break
            end = text.find("\n", pos)
            self._line(text[pos:end], out)
            pos = end + 1

    def _line(self, line: str, out: list[SSEFrame]) -> None:
        if not line:
            if self._data:
                out.append(SSEFrame(self._event, "\n".join(self._data), self._last_id, self._retry_seen))
                self._data = []
            self._event = ""
            self._retry_seen = None
            return
        if line[0] == ":":
            self.comments += 1
            return
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = self._retry_seen = int(value)
