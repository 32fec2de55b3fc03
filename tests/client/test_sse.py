"""The pure SSE decoder: whatever way the bytes are cut, the same events come out."""

from __future__ import annotations

import pytest

from client.sse import SSEDecoder, SSEFrame

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
    decoder.feed(b"retry: 10\n\n")
    assert decoder.retry_ms == 10


def test_unterminated_event_is_dropped_at_end_of_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 5\ndata: half") == []
    assert decoder.flush() == []
    # after flush a fresh stream starts clean
    assert decoder.feed(b"data: next\n\n") == [SSEFrame("", "next", "5", None)]
