"""The data of a chunked HTTP/1.1 body, a block at a time.

The server writes one chunk per event-stream frame, and h11 parses each chunk
in Python with a regex and two reader passes; a read that brings twenty
frames costs twenty of those. ``Dechunker`` takes a block of any size and
returns the data of every chunk it completes (and the start of the one it
ends inside) as one ``bytes``. It reads only the data chunks: at the last
chunk's size line it stops, and what follows (the last chunk and any
trailer) goes back to h11, which ends the message as it always does.
"""

from __future__ import annotations

__all__ = ["ChunkFramingError", "Dechunker"]

_CRLF = b"\r\n"
_HEX = b"0123456789abcdefABCDEF"
# A size line is a hex size and, rarely, extensions; no server sends a long one.
_MAX_SIZE_LINE = 1024


class ChunkFramingError(ValueError):
    """The body is not valid chunked framing."""


class Dechunker:
    """Chunked framing to data; see the module docstring.

    Attributes:
        done: The last chunk's size line has been reached; ``rest()`` holds it
            and what followed.
        chunks: Data chunks read to their end so far (the server writes one
            per frame, so a reader that does not decode can count frames).
    """

    __slots__ = ("_pending", "_left", "_last", "done", "chunks")

    def __init__(self) -> None:
        self._pending = b""  # bytes of a size line not complete yet
        self._left = 0  # bytes left in the current chunk, its closing CRLF included
        self._last = b""  # the last chunk's size line and what followed, once done
        self.done = False
        self.chunks = 0

    def feed(self, block: bytes) -> bytes:
        """The chunk data ``block`` completes or continues; ``b""`` when it holds none.

        Raises:
            ChunkFramingError: A size line that is not hex, too long a size line,
                or a chunk not followed by CRLF.
        """
        if self.done:
            self._last += block
            return b""
        buffer = self._pending + block if self._pending else block
        self._pending = b""
        end = len(buffer)
        pos = 0
        left = self._left
        out: list[bytes] = []
        chunks = self.chunks
        while pos < end:
            if left:
                # Inside a chunk: ``left`` counts its data still to come and its CRLF.
                if end - pos < left:
                    # The chunk goes on past this block: take its data, and the
                    # part of its closing CRLF the block holds.
                    take = min(end - pos, left - 2)
                    if take > 0:
                        out.append(buffer[pos : pos + take])
                        pos += take
                        left -= take
                    if pos < end:
                        got = buffer[pos:end]
                        if got != _CRLF[2 - left :][: len(got)]:
                            raise ChunkFramingError(f"a chunk's data is not followed by CRLF: {got!r}")
                        left -= len(got)
                        pos = end
                    break
                # The rest of the chunk is here: its data, then its CRLF (or its LF alone).
                if left >= 2:
                    data_end = pos + left - 2
                    if left > 2:
                        out.append(buffer[pos:data_end])
                    got = buffer[data_end : data_end + 2]
                    ok = got == _CRLF
                else:
                    got = buffer[pos : pos + 1]
                    ok = got == b"\n"
                if not ok:
                    raise ChunkFramingError(f"a chunk's data is not followed by CRLF: {got!r}")
                pos += left
                left = 0
                chunks += 1
            eol = buffer.find(_CRLF, pos)
            if eol < 0:
                if end - pos > _MAX_SIZE_LINE:
                    raise ChunkFramingError(f"a chunk size line longer than {_MAX_SIZE_LINE} bytes")
                self._pending = buffer[pos:]
                break
            size_field = buffer[pos:eol].split(b";", 1)[0].strip(b" \t")
            if not size_field or size_field.strip(_HEX):
                raise ChunkFramingError(f"a chunk size line that is not a hex size: {buffer[pos:eol]!r}")
            size = int(size_field, 16)
            if size == 0:
                self.done = True
                self._last = buffer[pos:]
                break
            pos = eol + 2
            left = size + 2
        self._left = left
        self.chunks = chunks
        if not out:
            return b""
        return out[0] if len(out) == 1 else b"".join(out)

    def rest(self) -> bytes:
        """Once ``done``: the last chunk's size line and everything after it."""
        return self._last
