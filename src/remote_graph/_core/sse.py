"""Incremental Server-Sent Events decoding (bytes in, frames out)."""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Frame:
    """One dispatched SSE frame. Comment-only blocks (heartbeats) are not frames."""

    event: str
    data: str
    id: str | None


class SSEDecoder:
    """Split a byte stream into SSE frames, following the WHATWG parsing rules.

    Feed it whatever the transport hands over, in any chunking; it keeps the
    partial line between calls. Lines may end in CRLF, LF or CR. Text is
    decoded incrementally, so a multi-byte UTF-8 character split across two
    chunks is decoded whole; only bytes that are invalid UTF-8 become U+FFFD.
    """

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[Frame]:
        """Decode ``chunk`` and return the frames it completes."""
        text = self._utf8.decode(chunk)
        if self._pending_cr and text.startswith("\n"):
            # A CRLF split across two chunks: the LF belongs to the line already ended.
            text = text[1:]
        if text:
            self._pending_cr = False
        self._buffer += text
        frames: list[Frame] = []
        while True:
            cut = _first_line_break(self._buffer)
            if cut is None:
                break
            end, width = cut
            line = self._buffer[:end]
            if self._buffer[end] == "\r" and width == 1 and end + 1 == len(self._buffer):
                self._pending_cr = True
            self._buffer = self._buffer[end + width :]
            frame = self._line(line)
            if frame is not None:
                frames.append(frame)
        return frames

    def _line(self, line: str) -> Frame | None:
        if not line:
            if not self._data and not self._event:
                return None
            frame = Frame(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data = "", []
            return frame
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None


def _first_line_break(text: str) -> tuple[int, int] | None:
    r = text.find("\r")
    n = text.find("\n")
    if r == -1 and n == -1:
        return None
    if r != -1 and (n == -1 or r < n):
        return (r, 2) if n == r + 1 else (r, 1)
    return (n, 1)
