from __future__ import annotations

import pytest

from remote_graph._core.sse import Frame, SSEDecoder
from remote_graph.errors import RemoteProtocolError

WIRE = (
    b'event: values\r\ndata: {"a": 1}\r\nid: 7\r\n\r\n'
    b": heartbeat\r\n\r\n"
    b'event: lifecycle\r\ndata: {"b": 2}\r\nid: 8\r\n\r\n'
)
EXPECTED = [Frame("values", '{"a": 1}', "7"), Frame("lifecycle", '{"b": 2}', "8")]


def test_whole_chunk() -> None:
    assert SSEDecoder().feed(WIRE) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 17])
def test_any_chunking_gives_the_same_frames(size: int) -> None:
    decoder = SSEDecoder()
    frames = []
    for i in range(0, len(WIRE), size):
        frames.extend(decoder.feed(WIRE[i : i + size]))
    assert frames == EXPECTED


def test_multiline_data_lf_endings_and_heartbeat_only() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b": heartbeat\n\n") == []
    assert decoder.feed(b"data: one\ndata: two\n\n") == [Frame("message", "one\ntwo", None)]


def test_utf8_split_across_chunks() -> None:
    payload = 'data: "héllo"\n\n'.encode()
    cut = payload.index(b"\xc3") + 1
    decoder = SSEDecoder()
    # A split multi-byte character is decoded leniently per chunk but frames still end correctly.
    frames = decoder.feed(payload[:cut]) + decoder.feed(payload[cut:])
    assert len(frames) == 1


# 2-, 3- and 4-byte UTF-8 characters, next to ASCII, in a frame's data.
MULTIBYTE = '{"text": "é ß Ж λ — 中文字 ア 한 € ✓ 😀 🎉 𝄞 👍 é中😀"}'
MULTIBYTE_WIRE = f"event: values\r\ndata: {MULTIBYTE}\r\nid: 9\r\n\r\n".encode()


def test_multibyte_text_survives_a_split_at_every_byte_offset() -> None:
    assert {len(c.encode()) for c in MULTIBYTE} == {1, 2, 3, 4}
    for cut in range(1, len(MULTIBYTE_WIRE)):
        decoder = SSEDecoder()
        frames = decoder.feed(MULTIBYTE_WIRE[:cut]) + decoder.feed(MULTIBYTE_WIRE[cut:])
        assert frames == [Frame("values", MULTIBYTE, "9")], f"split at byte {cut}"


def test_multibyte_text_survives_a_three_way_split() -> None:
    for first in range(1, len(MULTIBYTE_WIRE) - 1):
        for second in range(first + 1, len(MULTIBYTE_WIRE)):
            decoder = SSEDecoder()
            frames = (
                decoder.feed(MULTIBYTE_WIRE[:first])
                + decoder.feed(MULTIBYTE_WIRE[first:second])
                + decoder.feed(MULTIBYTE_WIRE[second:])
            )
            assert frames == [Frame("values", MULTIBYTE, "9")], f"split at bytes {first} and {second}"


def test_invalid_utf8_becomes_replacement_characters_in_any_chunking() -> None:
    wire = b"data: a\xff\xfeb \xe4\xb8\r\n\r\ndata: \xf0\x9f\x98\x80\r\n\r\n"
    expected = [Frame("message", "a\ufffd\ufffdb \ufffd", None), Frame("message", "\U0001f600", None)]
    for size in (1, 2, 3, len(wire)):
        decoder = SSEDecoder()
        frames = [f for i in range(0, len(wire), size) for f in decoder.feed(wire[i : i + size])]
        assert frames == expected, f"chunks of {size}"


# --- the frame limit --------------------------------------------------------------------


def test_a_frame_up_to_the_limit_passes() -> None:
    decoder = SSEDecoder(max_frame=100)
    frame = b"data: " + b"x" * 99 + b"\n\n"  # 99 characters and the line's end
    assert decoder.feed(frame) == [Frame("message", "x" * 99, None)]
    # The count starts again with each frame.
    assert decoder.feed(frame * 3) == [Frame("message", "x" * 99, None)] * 3


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_a_frame_over_the_limit_fails_in_any_chunking(size: int) -> None:
    decoder = SSEDecoder(max_frame=1000)
    wire = b"event: values\ndata: " + b"y" * 600 + b"\ndata: " + b"z" * 600 + b"\n\n"
    with pytest.raises(RemoteProtocolError, match=r"Limits.max_frame_chars \(1000 characters\)"):
        for i in range(0, len(wire), size):
            decoder.feed(wire[i : i + size])


def test_a_line_that_never_ends_fails_and_is_dropped() -> None:
    decoder = SSEDecoder(max_frame=10_000)
    decoder.feed(b"data: ")
    with pytest.raises(RemoteProtocolError):
        for _ in range(100):
            decoder.feed(b"q" * 1000)  # no newline, ever
    # What it held is let go: memory stays bounded even if the caller goes on.
    assert decoder._tail == "" and decoder._data == [] and decoder._size == 0
