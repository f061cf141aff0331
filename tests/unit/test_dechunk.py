"""``Dechunker``: chunked framing to data, from blocks split anywhere."""

from __future__ import annotations

import random

import pytest

from remote_graph._core.dechunk import ChunkFramingError, Dechunker

DATA = [b"event: a\r\ndata: 1\r\n\r\n", "data: é中😀\r\n\r\n".encode(), b"x" * 300, b"\r\n", b"0"]


def framed(parts: list[bytes], *, upper: bool = False, ext: bool = False) -> bytes:
    out = b""
    for part in parts:
        size = b"%X" % len(part) if upper else b"%x" % len(part)
        out += size + (b";name=v" if ext else b"") + b"\r\n" + part + b"\r\n"
    return out + b"0\r\ntrailer: t\r\n\r\n"


def run(blocks: list[bytes]) -> tuple[bytes, Dechunker]:
    body = Dechunker()
    out = b"".join(body.feed(block) for block in blocks)
    return out, body


@pytest.mark.parametrize(("upper", "ext"), [(False, False), (True, False), (False, True)])
def test_every_split_gives_the_data_and_hands_back_the_end(upper: bool, ext: bool) -> None:
    wire = framed(DATA, upper=upper, ext=ext)
    end = wire.index(b"0\r\ntrailer")
    for cut in range(len(wire) + 1):
        out, body = run([wire[:cut], wire[cut:]])
        assert out == b"".join(DATA), cut
        assert body.done and body.rest() == wire[end:]
        assert body.chunks == len(DATA)


@pytest.mark.parametrize("seed", range(20))
def test_random_blocks_give_the_data(seed: int) -> None:
    rng = random.Random(seed)
    wire = framed(DATA * 5)
    blocks, pos = [], 0
    while pos < len(wire):
        step = rng.randint(1, 40)
        blocks.append(wire[pos : pos + step])
        pos += step
    out, body = run(blocks)
    assert out == b"".join(DATA * 5) and body.done
    assert body.chunks == len(DATA) * 5


def test_a_block_with_no_complete_data_gives_nothing_yet() -> None:
    body = Dechunker()
    assert body.feed(b"1") == b"" and body.feed(b"4\r\n") == b""
    assert body.feed(b"abc") == b"abc" and not body.done


@pytest.mark.parametrize(
    ("wire", "says"),
    [
        (b"zz\r\nab\r\n", "not a hex size"),
        (b"\r\n", "not a hex size"),
        (b"2\r\nabXY", "not followed by CRLF"),
        (b"2\r\nab\rX", "not followed by CRLF"),
        (b"1" * 2000, "longer than 1024"),
    ],
)
def test_malformed_framing_is_refused_naming_it(wire: bytes, says: str) -> None:
    with pytest.raises(ChunkFramingError, match=says):
        Dechunker().feed(wire)
