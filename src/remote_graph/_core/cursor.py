"""Where a run's stream resumes after a lost connection, and which replayed
frames were already delivered.

The per-run stream tags every frame with an SSE ``id`` and replays the frames
after a ``Last-Event-ID``. The server compares ids as strings and the
in-memory runtime gives every frame of one millisecond the same id
(``<ms>-0``), so resuming from the last id seen would skip the frames that
share its millisecond. The cursor therefore resumes from the last id *before*
the newest one and drops, by count, the frames of that replay it has already
delivered. With unique ids (a Redis-backed server) that costs one replayed
frame, dropped the same way.
"""

from __future__ import annotations

# Replay from the run's first frame: every id sorts after it.
FROM_START = "-1"


class ResumeCursor:
    """Tracks the resume point of one run's stream across connections."""

    __slots__ = ("_boundary", "_newest", "_since_boundary", "_skip")

    def __init__(self) -> None:
        # The id to resume from, and how many delivered frames follow it.
        self._boundary = FROM_START
        self._since_boundary = 0
        self._newest: str | None = None
        # Frames still to drop on the current connection (already delivered).
        self._skip = 0

    @property
    def last_event_id(self) -> str:
        """The ``Last-Event-ID`` to send on the next connection."""
        return self._boundary

    def reconnecting(self) -> None:
        """A new connection starts; it replays what followed the boundary."""
        self._skip = self._since_boundary

    def admit(self, frame_id: str | None) -> bool:
        """Whether a frame is new; ``False`` for a replay of one already delivered."""
        if self._skip:
            self._skip -= 1
            return False
        if frame_id is None:
            return True
        if frame_id != self._newest:
            if self._newest is not None:
                self._boundary = self._newest
                self._since_boundary = 0
            self._newest = frame_id
        self._since_boundary += 1
        return True
