"""A run's next part, when the driver has it without I/O.

langgraph's async run stream pumps one part per step, and every step starts
a task to pull the part and waits for it: two turns of the event loop and a
task per event. A local graph needs them (making a part runs its nodes), but
a remote run's parts come a read at a time: one read of the event stream
holds every frame the server wrote meanwhile, and the parts after the first
need no I/O at all. ``Lookahead`` lets the async shell offer such a part to
the pump, which then pushes it without a task: still one part per pump step,
pulled only when a consumer asks, as locally. What stopped the look (the
next I/O action, the run's end or its failure) is kept for the shell's next
step.
"""

from __future__ import annotations

from typing import Any

from remote_graph._core.actions import IOAction
from remote_graph._core.convert import Part
from remote_graph._core.run import RunDriver

__all__ = ["Lookahead"]

# Nothing is held: the next step is the driver's own.
_NOTHING: Any = object()


class Lookahead:
    """Steps a driver one step ahead for a part, and keeps what came instead."""

    __slots__ = ("_held", "_error")

    def __init__(self) -> None:
        self._held: Any = _NOTHING
        self._error: Exception | None = None

    def ready(self, driver: RunDriver) -> Part | None:
        """The driver's next part if it has one without I/O, else ``None``.

        ``None`` keeps what the driver answered instead (an I/O action, its
        end, or the run's failure) for ``next_step``, which the shell's next
        pull starts from.
        """
        if self._held is not _NOTHING or self._error is not None:
            return None
        try:
            step = driver.step(None)
        except Exception as exc:
            self._error = exc
            return None
        if isinstance(step, dict):
            return step
        self._held = step
        return None

    def next_step(self, driver: RunDriver) -> IOAction | Part | None:
        """The step to carry on from: what stopped the last look, else the driver's next.

        Raises:
            Exception: The run's failure, met while looking ahead.
        """
        error, self._error = self._error, None
        if error is not None:
            raise error
        held, self._held = self._held, _NOTHING
        if held is not _NOTHING:
            return held  # type: ignore[no-any-return]
        return driver.step(None)

    def hold(self, step: IOAction | None) -> None:
        """Keep ``step``, an action (or the run's end) the driver answered, for ``next_step``."""
        assert self._held is _NOTHING and self._error is None, "a step is held already"
        self._held = step

    def clear(self) -> None:
        """Forget what is held: the driver was abandoned and starts its cleanup."""
        self._held, self._error = _NOTHING, None
