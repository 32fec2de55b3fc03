"""The pure SSE decoder: whatever way the bytes are cut, the same events come out."""

from __future__ import annotations

import pytest

from client.streaming.sse import SSEDecoder, SSEFrame

STREAM = (
    b"\xef\xbb\xbf: keep-alive\r\n"
    b"retry: 2500\n"
    b'id: 1\nevent: model.delta\ndata: {"text": "caf\xc3\xa9 \xe2\x9c\x93"}\n\n'
    b"id: 2\r\nevent: tool.started\r\ndata: line one\r\ndata: line two\r\n\r\n"
    b": comment in the middle\r"
    b"id: 3\revent: x\rdata:no-space\r\r"
    b"data: keeps id 3\n\n"
    b"event: ignored-without-data\n\n"
    b"id: 4\x00bad\ndata: id with NUL is ignored\n\n"
    b"unknownfield: value\ndata\n\n"
    b"id: 9\ndata: cut off at the end"
)

EXPECTED = [
    SSEFrame("model.delta", '{"text": "café ✓"}', "1", 2500),
    SSEFrame("tool.started", "line one\nline two", "2", None),
    SSEFrame("x", "no-space", "3", None),
    SSEFrame("", "keeps id 3", "3", None),
    SSEFrame("", "id with NUL is ignored", "3", None),
    SSEFrame("", "", "3", None),
]


def decode_in_pieces(data: bytes, cuts: list[int]) -> tuple[list[SSEFrame], SSEDecoder]:
    decoder = SSEDecoder()
    frames: list[SSEFrame] = []
    start = 0
    for cut in [*cuts, len(data)]:
        frames += decoder.feed(data[start:cut])
        start = cut
    frames += decoder.flush()
    return frames, decoder


def test_whole_stream_decodes_per_spec() -> None:
    frames, decoder = decode_in_pieces(STREAM, [])
    assert frames == EXPECTED
    assert decoder.retry_ms == 2500
    assert decoder.comments == 2
    assert decoder.last_event_id == "9"  # the cut-off event's id was read, its data dropped


@pytest.mark.parametrize("offset", range(1, len(STREAM)))
def test_split_at_every_offset_gives_the_same_events(offset: int) -> None:
    frames, _ = decode_in_pieces(STREAM, [offset])
    assert frames == EXPECTED


def test_one_byte_at_a_time_including_inside_utf8_and_crlf() -> None:
    frames, _ = decode_in_pieces(STREAM, list(range(1, len(STREAM))))
    assert frames == EXPECTED


@pytest.mark.parametrize("offset", range(1, 12))
def test_two_cuts_around_a_crlf_pair(offset: int) -> None:
    data = b"data: a\r\n\r\ndata: b\r\n\r\n"
    frames, _ = decode_in_pieces(data, sorted({offset, min(offset + 1, len(data) - 1)}))
    assert [f.data for f in frames] == ["a", "b"]


def test_lone_cr_then_lf_in_next_chunk_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    # "\n" right after the "\r" must not be read as a second (empty) line, which would dispatch early.
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n\r\n") == [SSEFrame("", "a\nb", "", None)]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    decoder = SSEDecoder()
    (frame,) = decoder.feed(b"data: \xff\xfe ok\n\n")
    assert frame.data == "\ufffd\ufffd ok"


def test_retry_must_be_digits() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"retry: soon\ndata: x\n\n")
    assert decoder.retry_ms is None
    decoder.feed("retry: \u0663\n\n".encode())  # an Arabic-Indic three is a digit, but not an ASCII one
    assert decoder.retry_ms is None
    decoder.feed(b"retry: 10\n\n")
    assert decoder.retry_ms == 10


def test_unterminated_event_is_dropped_at_end_of_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 5\ndata: half") == []
    assert decoder.flush() == []
    # after flush a fresh stream starts clean
    assert decoder.feed(b"data: next\n\n") == [SSEFrame("", "next", "5", None)]


def reference_decode(data: bytes) -> list[SSEFrame]:
    """The spec's algorithm, line by line, written as plainly as possible (the decoder's oracle)."""
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:-1]
    frames: list[SSEFrame] = []
    event, buf, last_id, retry, have_data = "", [], "", None, False
    for line in lines:
        if line == "":
            if have_data:
                frames.append(SSEFrame(event, "\n".join(buf), last_id, retry))
            event, buf, retry, have_data = "", [], None, False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            buf.append(value)
            have_data = True
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isdigit() and value.isascii():
            retry = int(value)
    return frames


PIECES = [
    b"id: 1\nevent: a\ndata: one\n\n",
    b'id: 2\nevent: b\ndata: {"t": "\xc3\xa9\xe2\x9c\x93"}\n\n',
    b": keepalive\n\n",
    b"retry: 3000\n\n",
    b"data: early\n",  # an event under way: the canonical lines that follow belong to it
    b"xid: 7\nevent: c\ndata: mid\n\n",  # "id: " inside a line must not start a frame
    b"id: 3\r\nevent: d\r\ndata: crlf\r\n\r\n",
    b"event: e\nid: 4\ndata: other order\n\n",
    b"id: 5\x00\nevent: f\ndata: nul id\n\n",
    b"\n",
    b"data: a\ndata: b\n\n",
]


def test_fast_path_agrees_with_the_spec_on_mixed_streams() -> None:
    import random

    rng = random.Random(1234)
    for _ in range(2000):
        stream = b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        cuts = sorted(rng.sample(range(1, len(stream)), k=min(len(stream) - 1, rng.randint(0, 6))))
        frames, _ = decode_in_pieces(stream, cuts)
        assert frames == reference_decode(stream), (stream, cuts)


def test_agrees_with_httpx_sse_on_random_streams() -> None:
    """The same events as httpx-sse's own parser (``EventSource``), at any chunking: we keep our decoder
    only for speed (benchmarks/bench_client_ingest.py), not for different answers. httpx-sse also
    dispatches blocks without data (after keep-alives, a lone ``retry:``) and names unnamed events
    "message"; neither is an event to the follower, so those are compared as the spec has them."""
    import random

    import httpx
    from httpx_sse import EventSource

    rng = random.Random(4321)
    for _ in range(300):
        stream = b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        cuts = sorted(rng.sample(range(1, len(stream)), k=min(len(stream) - 1, rng.randint(0, 6))))
        frames, _ = decode_in_pieces(stream, cuts)
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)
        theirs = [
            (e.event if e.event != "message" else "", e.data, e.id)
            for e in EventSource(response).iter_sse()
            if e.data
        ]
        assert [(f.event, f.data, f.id) for f in frames if f.data] == theirs, stream
