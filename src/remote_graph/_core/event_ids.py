"""Which SSE ids of a run's stream came before, without comparing them.

The SSE spec makes an event id an opaque string, and servers differ: the
in-memory langgraph-api runtime sends ``<ms>-<n>`` (every frame of one
millisecond shares it, and it resumes after an id by string order), a
Redis-backed one a unique id per frame, aegra ``<run_id>_event_<n>`` (not
zero-padded, so ``event_10`` sorts before ``event_9`` as a string). Ids are
therefore never compared here, only recognised: an id is *older* than the
newest one delivered when it was delivered before, and *new* when it was not.

That is enough because of where a repeat can come from. A connection after
``Last-Event-ID`` replays the frames stored after that id, which begin with
the newest id delivered (``cursor.py`` resumes from the id before it), then
serves live what was published since it subscribed, which may repeat frames
its own replay sent. So an id that comes again is the newest one delivered
before the connection opened, or one delivered on this connection: those are
the ids kept, and each connection starts from the newest alone.
"""

from __future__ import annotations

import enum

__all__ = ["IdAge", "SeenIds"]

# A live part repeats what its replay sent since the connection subscribed: a
# few frames in practice. Past this many distinct ids on one connection the
# oldest are forgotten, so a long resumed connection keeps bounded memory.
_KEPT = 65_536


class IdAge(enum.Enum):
    """How a frame's id relates to the ids delivered before it."""

    NEW = "new"
    """Never delivered: the frame is news, and its id the newest."""
    NEWEST = "newest"
    """The newest id delivered (the in-memory runtime shares one id per millisecond)."""
    OLDER = "older"
    """Delivered before, and not the newest: the frame is a repeat."""


class SeenIds:
    """The ids of one stream that may come again, in delivery order; see the module docstring."""

    __slots__ = ("_seen", "_until_newest", "newest")

    def __init__(self) -> None:
        self.newest: str | None = None
        # Insertion-ordered: the oldest is forgotten first.
        self._seen: dict[str, None] = {}
        # Joined after another caller: the ids before its newest are not known here.
        self._until_newest = False

    def join(self, newest: str) -> None:
        """Start where another caller stopped, at ``newest``: a replay from the
        run's start brings ids before it that were never seen here, so every id
        until ``newest`` comes is older."""
        self.newest = newest
        self._seen = {newest: None}
        self._until_newest = True

    def back_to(self, frame_id: str) -> None:
        """The stream reopens after ``frame_id``, delivered: it is the newest, and nothing after it was."""
        self.newest = frame_id
        self._seen = {frame_id: None}
        self._until_newest = False

    def reconnected(self) -> None:
        """A connection opened: only the newest id delivered can come again from before it."""
        self._seen = {} if self.newest is None else {self.newest: None}

    def age(self, frame_id: str) -> IdAge:
        """How ``frame_id`` relates to what was delivered; a new id becomes the newest."""
        if frame_id == self.newest:
            self._until_newest = False
            return IdAge.NEWEST
        if self._until_newest:
            return IdAge.OLDER
        if frame_id in self._seen:
            return IdAge.OLDER
        self.newest = frame_id
        self._seen[frame_id] = None
        if len(self._seen) > _KEPT:
            del self._seen[next(iter(self._seen))]
        return IdAge.NEW

    def forget_older(self) -> None:
        """Nothing before the newest id can come again on this connection (it can no longer rewind)."""
        self.reconnected()
