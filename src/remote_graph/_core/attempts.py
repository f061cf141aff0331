"""What a retried attempt of a run repeats, and what it adds.

A server that loses the worker executing a run (a replica killed or shut down
mid-run) queues the run again. The new attempt announces itself with a
``metadata`` frame (``{"run_id": ..., "attempt": 2}``) and runs the graph again
from the thread's latest checkpoint, so it sends again, under new event ids
(and, on a v3 stream, with its protocol ``seq`` counted from 1 again), the
events the lost attempt had sent since that checkpoint. A local run never
repeats itself, and neither may the remote one.

``AttemptFilter`` keeps the events delivered so far (the last ``keep`` of
them). When an attempt after the first begins, its events are laid over that
history: every place in it where the new attempt's events so far match, one by
one, the delivered ones is a way the attempt may have begun there. While at
least one such place still fits, the event is a repeat and is dropped; the first
event that fits none is news, and from then on every event of the attempt is
delivered. So only an event equal to one already delivered is ever dropped, and
an attempt whose events differ from the lost one's (a model that answers
differently the second time) is delivered from where it differs. An attempt that
repeats more than ``keep`` events delivers the older ones again.

The filter sees events after the connection-level repeat filters: a frame read
twice after a reconnect never reaches it.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["AttemptFilter", "attempt_number"]

K = TypeVar("K")

# Events kept to lay a retried attempt over: a retry repeats what came after the
# run's latest checkpoint, usually one step.
_KEEP = 4096


def attempt_number(metadata: object) -> int | None:
    """The attempt a decoded ``metadata`` frame announces, or ``None`` if it names none."""
    number = metadata.get("attempt") if isinstance(metadata, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) and number >= 1 else None


class AttemptFilter(Generic[K]):
    """Drops the events a retried attempt repeats. See the module docstring.

    Two events are the same when their keys are equal; a wire keys each event by
    a hash of it, so as not to hold the events.

    Args:
        keep: How many delivered events' keys a retried attempt is laid over.
    """

    def __init__(self, keep: int = _KEEP) -> None:
        self._keep = keep
        self._history: list[K] = []
        # The attempt whose events arrive, once a metadata frame named it.
        self.attempt: int | None = None
        # While a retried attempt is laid over the history: where in it the
        # attempt may have begun, and how many of its events matched so far.
        self._starts: list[int] | None = None
        self._matched = 0

    def begin(self, number: int) -> bool:
        """A ``metadata`` frame announced attempt ``number``.

        Returns:
            Whether it is a new attempt (a replay of the frame is not).
        """
        if number == self.attempt:
            return False
        retried = self.attempt is not None and number > self.attempt
        self.attempt = number
        # Only an attempt that follows one this filter saw can repeat what it delivered.
        self._starts = [] if retried and self._history else None
        self._matched = 0
        return True

    def feed(self, key: K) -> bool:
        """Whether the event ``key`` stands for is news; a repeat is dropped."""
        starts = self._starts
        if starts is not None:
            history, matched = self._history, self._matched
            if matched == 0:
                fitting = [at for at, seen in enumerate(history) if seen == key]
            else:
                end = len(history) - matched
                fitting = [at for at in starts if at < end and history[at + matched] == key]
            if fitting:
                self._starts, self._matched = fitting, matched + 1
                return False
            self._starts = None
        self._remember(key)
        return True

    def _remember(self, key: K) -> None:
        history = self._history
        history.append(key)
        if len(history) > 2 * self._keep:
            # Trimmed in blocks: one copy per ``keep`` events, not one per event.
            del history[: len(history) - self._keep]
