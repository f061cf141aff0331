"""Incremental Server-Sent Events decoding (bytes in, frames out)."""

from __future__ import annotations

from codecs import utf_8_decode
from typing import NamedTuple

from remote_graph.errors import RemoteProtocolError

# The default bound on one frame (``Limits.max_frame_chars``).
MAX_FRAME = 64 * 1024 * 1024


class Frame(NamedTuple):
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
    Each chunk is split once, so the cost per frame does not grow with the
    chunk size (a long replay after a reconnect arrives in large chunks).

    Args:
        max_frame: The most characters a frame's data lines and the line
            being read may hold together before the frame ends. A server that
            never ends a frame would otherwise grow it without bound.

    Raises:
        RemoteProtocolError: From ``feed``, once a frame passes ``max_frame``.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._max = max_frame
        # Characters in the data lines of the frame being read.
        self._size = 0
        # The start of a multi-byte character the last chunk ended in. Decoded
        # with ``utf_8_decode`` itself: the incremental decoder object adds a
        # Python-level call to every chunk.
        self._undecoded = b""
        self._tail = ""
        # The last chunk ended in CR: a LF starting the next one is its CRLF's.
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[Frame]:
        """Decode ``chunk`` and return the frames it completes."""
        if self._undecoded:
            chunk = self._undecoded + chunk
        text, used = utf_8_decode(chunk, "replace", False)
        self._undecoded = chunk[used:] if used < len(chunk) else b""
        if not text:
            return []
        if self._pending_cr and text[0] == "\n":
            text = text[1:]
        text = self._tail + text
        self._pending_cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        self._tail = lines.pop()
        frames: list[Frame] = []
        for line in lines:
            if not line:
                if self._data or self._event:
                    frames.append(Frame(self._event or "message", "\n".join(self._data), self._id))
                    self._event, self._data, self._size = "", [], 0
                continue
            if line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                self._data.append(value)
                self._size += len(value) + 1
                if self._size > self._max:
                    self._overflow()
            elif name == "event":
                self._event = value
            elif name == "id" and "\0" not in value:
                self._id = value
        if self._size + len(self._tail) > self._max:
            self._overflow()
        return frames

    def _overflow(self) -> None:
        # What the frame held is dropped now: the run fails, and nothing may keep it.
        self._data, self._tail, self._size = [], "", 0
        raise RemoteProtocolError(
            f"an event-stream frame grew past Limits.max_frame_chars ({self._max} characters); "
            "the server sent more than a frame may hold, or never ended the frame"
        )
