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

from remote_graph._core.event_ids import IdAge, SeenIds

# Replay from the run's first frame: the servers take an id they never sent as "before everything".
FROM_START = "-1"


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

    def observe(self, frame_id: str | None) -> None:
        """Note a received frame's id. An id delivered before (a repeat) never
        moves the cursor back or forward."""
        if frame_id is None:
            return
        newest = self._ids.newest
        if self._ids.age(frame_id) is IdAge.NEW and newest is not None:
            self._boundary = newest
