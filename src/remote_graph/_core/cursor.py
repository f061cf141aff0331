"""Where a run's stream resumes after a lost connection.

The per-run stream tags every frame with an SSE ``id`` and, on a new
connection, replays the stored frames that come after the ``Last-Event-ID``
(in the server's own order; ids are opaque here, see ``event_ids.py``). The
in-memory runtime gives every frame of one millisecond the same id
(``<ms>-0``), so resuming from the last id seen would skip the frames that
share its millisecond. The cursor therefore resumes from the newest id
*before* the newest one seen: the replay then repeats a few frames, which the
driver drops by their protocol ``seq`` or by ``replay.RepeatFilter`` (the
server may also repeat a frame it publishes while a connection switches from
replay to live). With unique ids (a Redis-backed server, aegra) the replay
repeats one frame.
"""

from __future__ import annotations

import re

from remote_graph._core.event_ids import IdAge, SeenIds

# Replay from the run's first frame: an id no server sent, which sorts before every id
# both as text (the in-memory runtime) and as a Redis stream id (a Redis-backed server,
# which refuses ``-1``: "Invalid stream ID", and replays nothing from it).
FROM_START = "0-0"

_DIGITS = re.compile(r"(\d+)", re.ASCII)


def stream_order(frame_id: str) -> tuple[tuple[int, int, str], ...]:
    """The key that sorts one stream's frame ids as the servers do: each run of
    digits by its number, the text between by itself. A Redis stream id
    (``<ms>-<seq>``) sorts by its two numbers (``<ms>-10`` after ``<ms>-9``),
    aegra's ``<run_id>_event_<n>`` by its ``n`` (``event_10`` after
    ``event_9``, where text puts it before), and the in-memory runtime's
    ``<ms>-0`` as text would. Only a join's first frame and a v3 cursor's
    attempt are checked this way; repeats and resumes never compare ids
    (``event_ids``)."""
    return tuple(
        (0, int(part), part) if index % 2 else (1, 0, part)
        for index, part in enumerate(_DIGITS.split(frame_id))
        if part or index % 2
    )


def id_after(frame_id: str, other: str) -> bool:
    """Whether ``frame_id`` comes strictly after ``other`` in the stream (``stream_order``)."""
    return stream_order(frame_id) > stream_order(other)


class ResumeCursor:
    """Tracks the resume point of one run's stream across connections."""

    __slots__ = ("_boundary", "_ids")

    def __init__(self, boundary: str = FROM_START, newest: str | None = None) -> None:
        # A join resumes a cursor another caller stored (``join.RunCursor``).
        self._boundary = boundary
        self._ids = SeenIds()
        if newest is not None:
            self._ids.join(newest)

    @property
    def newest(self) -> str | None:
        """The newest frame id seen, ``None`` before the first."""
        return self._ids.newest

    @property
    def last_event_id(self) -> str:
        """The ``Last-Event-ID`` to send on the next connection: every frame
        after it in the stream may not have been delivered yet."""
        return self._boundary

    def open(self) -> str:
        """A connection opens: returns its ``Last-Event-ID``."""
        self._ids.reconnected()
        return self._boundary

    def rewind(self, frame_id: str) -> None:
        """Resume after ``frame_id``, a frame delivered: the frames after it are
        to be replayed. The frame that showed the gap was not delivered, so the
        cursor goes back to ``frame_id`` as its newest, and the replay moves it
        on as any stream does. (Held at the newest seen instead, a replay cut
        after two frames would resume before both, and a classic run's repeat
        filter, which knows only the newest delivered, would deliver the first
        again.)"""
        self._boundary = frame_id
        self._ids.back_to(frame_id)

    def observe(self, frame_id: str | None) -> None:
        """Note a received frame's id. An id delivered before (a repeat) never
        moves the cursor back or forward."""
        if frame_id is None:
            return
        newest = self._ids.newest
        if self._ids.age(frame_id) is IdAge.NEW and newest is not None:
            self._boundary = newest
