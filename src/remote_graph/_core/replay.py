"""Which frames of a stream without protocol sequence numbers are repeats.

A classic run's frames carry no ``seq`` (a v3 run's do): only the SSE ``id``,
which the in-memory server makes from the millisecond a frame was published,
so every frame of one millisecond shares it (a Redis-backed server gives each
frame its own). A connection that resumes after ``Last-Event-ID`` (the cursor
sends the id before the newest one delivered, see ``cursor.py``) gets, from
the server:

1. the stored frames after that id, in order: the newest delivered
   millisecond's frames again (the *prefix*), then new ones;
2. then, live, everything published since the connection subscribed. The
   subscription is made before the replay is read, so its first frames may be
   the replay's last ones again: the live part may *rewind* to a frame the
   replay already sent, never to one delivered before the connection opened.

Ids never go backwards in what the server stores, so a frame whose id is
older than the newest delivered is a repeat. Within the newest millisecond,
position tells: the prefix repeats the delivered frames of that millisecond in
order, and a rewind that began in an older millisecond enters this one at its
first frame. A rewind that begins inside the newest millisecond can only be
told by content: the frames that follow match, one by one, frames of that
millisecond this connection delivered (never the prefix's: those were
published before the connection subscribed). Content cannot tell a repeat
from a new frame byte for byte the same as one just delivered (a model
streaming the same token twice), so this is judged only where a rewind can
happen: on a resumed connection, once (a connection switches from replay to
live once). A run's first connection is opened with the run itself, before the
run publishes anything, so it has no replay and never rewinds.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from remote_graph._core.cursor import id_after

__all__ = ["RepeatFilter"]

logger = logging.getLogger("remote_graph")

T = TypeVar("T")

# The key of a frame another caller delivered before a join (``RepeatFilter.resume``):
# its content is not known here, only its place in its millisecond.
_SEEN: Hashable = object()


@dataclass
class _Pending(Generic[T]):
    """Frames held while it is unclear whether the live part rewound into the newest millisecond.

    ``offsets`` are where in the newest millisecond's frames a rewind may have
    begun: each fits the held frames so far (``o + len(items) >= len(block)``:
    the rewind ran to the block's end, and what followed was new).
    """

    items: list[tuple[Hashable, T]] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)


class RepeatFilter(Generic[T]):
    """Drops the frames a resumed stream repeats; see the module docstring.

    Feed it every frame (``feed``) with its SSE id and a key of its content;
    it returns the items that are new, in order (possibly later than fed,
    while a rewind is being told apart). Call ``reconnected`` when a
    connection opens (the run's first one too), and ``finish`` when the
    stream is over.
    """

    def __init__(self) -> None:
        # The newest frame id delivered, and the keys of every frame delivered with it.
        self._newest: str | None = None
        self._block: list[Hashable] = []
        # Where this connection's own frames begin in the newest block: a
        # rewind repeats only frames published after the connection subscribed.
        self._fresh_from = 0
        # This connection: how far its prefix has repeated the newest block.
        self._prefix: int | None = None
        # This connection's live part rewound: the position it has reached in the newest block.
        self._rewind: int | None = None
        # Whether this connection may still rewind inside the newest millisecond.
        self._may_rewind = False
        # Connections opened so far: every one but the run's first replays what
        # the run published before it (even when none of it was delivered).
        self._connections = 0
        self._pending: _Pending[T] = _Pending()

    def resume(self, newest: str | None = None, count: int = 0) -> None:
        """Follow a run another caller started: every connection, the first one
        too, replays what the run published before it (and may rewind). With
        ``newest``, start where that caller stopped: ``count`` frames of the
        millisecond ``newest`` were delivered (their content is not known here)."""
        if newest is not None:
            self._newest = newest
            self._block = [_SEEN] * count
        self._connections = 1

    @property
    def position(self) -> tuple[str | None, int]:
        """The newest frame id delivered, and how many frames with it were delivered."""
        return self._newest, len(self._block)

    def reconnected(self) -> list[T]:
        """A new connection opened after the cursor: its replay starts with the
        newest millisecond's frames. Returns what the last connection's held
        frames turn out to be new."""
        released = self._resolve(ended=True)
        self._fresh_from = len(self._block)
        self._prefix = 0 if self._block else None
        self._rewind = None
        # Only a resumed connection can rewind; the run's first opens with the run.
        self._connections += 1
        self._may_rewind = self._connections > 1
        return released

    def finish(self) -> list[T]:
        """The stream is over: the frames still held that are new."""
        return self._resolve(ended=True)

    def feed(self, frame_id: str | None, key: Hashable, item: T) -> list[T]:
        """The new items once this frame is counted (``[]`` for a repeat)."""
        if frame_id is None:
            # Never stored, so never replayed: new, and no position to keep.
            return [*self._resolve(ended=False), item]
        if self._prefix is not None:
            if frame_id == self._newest and self._prefix < len(self._block) and _fits(self._block, self._prefix, key):
                self._prefix += 1
                if self._prefix == len(self._block):
                    self._prefix = None
                return []
            # The replay did not repeat the whole block (the server did not keep
            # it all): what follows is judged on its own.
            self._prefix = None
        newest = self._newest
        if newest is None or id_after(frame_id, newest):
            released = self._resolve(ended=False)
            self._newest, self._block, self._rewind, self._fresh_from = frame_id, [key], None, 0
            released.append(item)
            return released
        if id_after(newest, frame_id):
            # Only a rewind brings an older id, and it enters the newest block at
            # its start. Frames held as a possible rewind inside the newest block
            # were new then: a rewind never goes back further.
            released = self._release_all()
            self._rewind = 0
            self._may_rewind = False
            return released
        return self._same_millisecond(key, item)

    def _same_millisecond(self, key: Hashable, item: T) -> list[T]:
        block = self._block
        if self._rewind is not None:
            if self._rewind < len(block) and _fits(block, self._rewind, key):
                self._rewind += 1
                return []
            # Past the block's end (or off it): new from here.
            self._rewind = None
            block.append(key)
            return [item]
        pending = self._pending
        if pending.items:
            at = len(pending.items)
            active = [o for o in pending.offsets if o + at < len(block) and block[o + at] == key]
            if active:
                done = [o for o in pending.offsets if o + at >= len(block)]
                pending.items.append((key, item))
                pending.offsets = active + done
                return []
            return self._resolve(ended=False) + self._same_millisecond(key, item)
        offsets = [o for o in range(self._fresh_from, len(block)) if block[o] == key] if self._may_rewind else []
        if offsets:
            pending.items.append((key, item))
            pending.offsets = offsets
            return []
        block.append(key)
        return [item]

    def _resolve(self, *, ended: bool) -> list[T]:
        """Decide what the held frames were, now that the frame after them does not fit.

        A rewind that began at offset ``o`` repeats the block from there to its
        end. Of the offsets that ran to the end, the longest repeat is taken,
        and what was held after it is new; when none ran to the end, the held
        frames were new, unless the connection ended mid-way (``ended``), when
        they are taken as repeats.
        """
        pending = self._pending
        if not pending.items:
            return []
        self._pending = _Pending()
        held = len(pending.items)
        done = [o for o in pending.offsets if o + held >= len(self._block)]
        if len(done) > 1:
            # Only places a rewind could have begun at (it runs to the block's
            # end) make the choice ambiguous; a mere match elsewhere does not.
            logger.warning(
                "a resumed stream sent %d frame(s) that fit more than one place among the frames of the same "
                "millisecond already delivered; the longest repeat is taken",
                held,
            )
        if done:
            repeated = len(self._block) - min(done)
        else:
            repeated = held if ended else 0
        if repeated:
            # The connection switched to live here; it does not switch again.
            self._may_rewind = False
        new = pending.items[repeated:]
        self._block.extend(key for key, _ in new)
        return [item for _, item in new]

    def _release_all(self) -> list[T]:
        pending, self._pending = self._pending, _Pending()
        self._block.extend(key for key, _ in pending.items)
        return [item for _, item in pending.items]


def _fits(block: list[Hashable], at: int, key: Hashable) -> bool:
    """Whether the frame ``key`` repeats the delivered frame at ``at``; one
    delivered before a join (``_SEEN``) is taken to be it, and learns its key."""
    if block[at] is _SEEN:
        block[at] = key
        return True
    return block[at] == key
