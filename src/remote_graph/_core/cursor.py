"""Where a run's stream resumes after a lost connection.

The per-run stream tags every frame with an SSE ``id`` and, on a new
connection, replays the stored frames whose id sorts after the
``Last-Event-ID`` (compared as strings). The in-memory runtime gives every
frame of one millisecond the same id (``<ms>-0``), so resuming from the last
id seen would skip the frames that share its millisecond. The cursor
therefore resumes from the newest id *before* the newest one seen: the
replay then repeats a few frames, which the driver drops by their protocol
``seq`` (the server may also repeat a frame it publishes while a connection
switches from replay to live). With unique ids (a Redis-backed server) the
replay repeats one frame.

The two servers order ids differently: the in-memory runtime compares them
as strings, a Redis-backed one as Redis stream ids (``<ms>-<seq>``, numbers
compared in turn, so ``<ms>-10`` follows ``<ms>-9``), and Redis refuses a
``Last-Event-ID`` that is not a stream id (``-1``: the replay comes back
empty). ``FROM_START`` and ``stream_order`` fit both: every id either server
gives out sorts after ``0-0`` both ways, and the in-memory ids all end in
``-0`` with a millisecond of the same width, where both orders agree.
"""

from __future__ import annotations

import re

# Replay from the run's first frame: every id sorts after it, and Redis takes it.
FROM_START = "0-0"

_STREAM_ID = re.compile(r"(\d+)-(\d+)", re.ASCII)


def stream_order(frame_id: str) -> tuple[int, int, str]:
    """The key that sorts frame ids as the server does: a Redis stream id
    (``<ms>-<seq>``) by its numbers, any other id by its text, before them."""
    match = _STREAM_ID.fullmatch(frame_id)
    if match is None:
        return -1, -1, frame_id
    return int(match[1]), int(match[2]), ""


def id_after(frame_id: str, other: str) -> bool:
    """Whether ``frame_id`` comes strictly after ``other`` in the stream."""
    return stream_order(frame_id) > stream_order(other)


class ResumeCursor:
    """Tracks the resume point of one run's stream across connections."""

    __slots__ = ("_boundary", "_newest")

    def __init__(self, boundary: str = FROM_START, newest: str | None = None) -> None:
        # A join resumes a cursor another caller stored (``join.RunCursor``).
        self._boundary = boundary
        self._newest = newest

    @property
    def newest(self) -> str | None:
        """The newest frame id seen, ``None`` before the first."""
        return self._newest

    @property
    def last_event_id(self) -> str:
        """The ``Last-Event-ID`` to send on the next connection: every frame
        whose id sorts after it may not have been delivered yet."""
        return self._boundary

    def observe(self, frame_id: str | None) -> None:
        """Note a received frame's id. Ids are compared as the server compares
        them; an older id (a repeat) never moves the cursor back or forward."""
        if frame_id is None or (self._newest is not None and not id_after(frame_id, self._newest)):
            return
        if self._newest is not None:
            self._boundary = self._newest
        self._newest = frame_id
