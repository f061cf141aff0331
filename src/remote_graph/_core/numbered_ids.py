"""A frame a server numbered but did not send: the gap in a stream of numbered ids.

aegra names a run's frames ``<run_id>_event_<n>``, ``n`` going up by a fixed
step (2 on its Redis broker, which counts each event twice; 1 in memory). On
its Redis broker, a connection that resumes after ``Last-Event-ID`` reads its
replay from the stored frames, then subscribes for live ones: a frame stored
after the read and published before the subscription comes neither way.
Measured through a reader that reconnects every 1-40 frames, 2 to 3 frames of
a 1,671-frame run were lost so, one at a time, in 3 runs of 4. The frame is
stored, so a replay brings it: a number skipped in the stream makes the driver
reopen it after the frame before the gap (``rewind``), as ``v3_wire`` does
with a v3 ``seq``.

Nothing in the SSE spec numbers ids, so this is judged only on a stream that
shows it: every id the same text before a run of digits, and the numbers
going up by one step, ``_STEADY`` times in a row (``Phase.LEARNING``). From
then on (``Phase.ARMED``) a number past the next one is a gap, checked once:
if the replay does not bring it, it was never sent (``_NATURAL`` such gaps and
the stream is no longer judged). Ids of any other shape turn it off for the
run (``Phase.OFF``): the in-memory langgraph-api runtime's ``<ms>-0`` shares
one id per millisecond, and a Redis stream id (``<ms>-<seq>``, both runtimes)
is not a count of frames, so it is not judged at all. A number at or below the
highest seen is a repeat or a replay, for ``replay.RepeatFilter`` to judge.

The frame that shows a gap is not delivered: the reopened stream brings it
again after the missing ones, so a server must store every numbered frame it
sends live (aegra stores each before it publishes it). A number far ahead
(aegra's timestamp id when its Redis cannot count) is checked once, and the
numbers below it are not judged after it.
"""

from __future__ import annotations

import enum
import re

__all__ = ["NumberedIds", "Phase"]

# Consecutive equal steps before a skipped number counts as a gap.
_STEADY = 4
# Gaps a replay did not fill (the server never sent those numbers) before the stream is no longer judged.
_NATURAL = 3

_NUMBERED = re.compile(r"(.*?)(\d+)", re.ASCII | re.DOTALL)
_STREAM_ID = re.compile(r"\d+-\d+", re.ASCII)


class Phase(enum.Enum):
    """How far a stream's ids are understood."""

    LEARNING = "learning"
    """Not yet a steady step: no gap is judged."""
    ARMED = "armed"
    """A steady step: a skipped number is a gap to check."""
    OFF = "off"
    """Not numbered, or its gaps are the server's own: never judged again."""


class NumberedIds:
    """Finds the frames a numbered stream skipped; see the module docstring.

    Feed it every frame id, repeats too (``gap``).
    """

    __slots__ = ("_checked", "_high", "_high_id", "_natural", "_prefix", "_step", "_streak", "phase")

    def __init__(self) -> None:
        self.phase = Phase.LEARNING
        self._prefix: str | None = None
        self._high = 0
        self._high_id: str | None = None
        self._step = 0
        self._streak = 0
        # The number after the latest gap a reopen was asked for: if it comes
        # again after the same gap, the replay had nothing to fill it with.
        self._checked = 0
        self._natural = 0

    def gap(self, frame_id: str | None) -> str | None:
        """The id to reopen the stream after, when frames before ``frame_id`` did not come.

        Then ``frame_id`` is not counted: the reopened stream brings it again.
        """
        if frame_id is None or self.phase is Phase.OFF:
            return None
        match = _NUMBERED.fullmatch(frame_id)
        if match is None or _STREAM_ID.fullmatch(frame_id) or (self._prefix is not None and match[1] != self._prefix):
            self._set(Phase.OFF)
            return None
        number = int(match[2])
        if self._prefix is None:
            self._prefix, self._high, self._high_id = match[1], number, frame_id
            return None
        step = number - self._high
        if step <= 0:
            return None  # a repeat, or a replay from before
        if self.phase is Phase.ARMED and step > self._step:
            if number > self._checked:
                self._checked = number
                return self._high_id
            # Checked, and the replay did not bring it: the server never sent it.
            self._natural += 1
            if self._natural >= _NATURAL:
                self._set(Phase.OFF)
        elif self.phase is Phase.LEARNING:
            self._streak = self._streak + 1 if step == self._step else 1
            self._step = step
            if self._streak >= _STEADY:
                self._set(Phase.ARMED)
        self._high, self._high_id = number, frame_id
        return None

    def _set(self, phase: Phase) -> None:
        # Only LEARNING -> ARMED, LEARNING -> OFF and ARMED -> OFF: OFF is for the run.
        self.phase = phase
