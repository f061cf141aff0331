"""The run state machine: every status a remote run can be in, and the only
place that changes it.

```
            start accepted                server: success, no interrupt
  PENDING ─────────────────► RUNNING ───────────────────────────────► COMPLETED
     │                          │      server: success, interrupts raised
     │ start refused,           ├───────────────────────────────────► INTERRUPTED
     │ or unreachable           │      server: error / timeout, or the
     ├──────────► FAILED ◄──────┤      stream is lost after every retry
     │                          │      server: cancelled or deleted,
     │ abandoned before         │      or our cancel was accepted
     └──────────► CANCELLED ◄───┘
```

Terminal statuses never change again: once a run is known to have ended,
later news (a cancel that arrives too late, a failed cleanup) cannot rewrite
what the server reported.
"""

from __future__ import annotations

import enum
from typing import Any


class RunStatus(str, enum.Enum):
    """Where a remote run stands, as far as the client knows."""

    PENDING = "pending"
    """Nothing has been sent yet, or the start request is in flight."""
    RUNNING = "running"
    """The server accepted the run; its end has not been seen."""
    COMPLETED = "completed"
    """The server finished the run."""
    INTERRUPTED = "interrupted"
    """The run paused for input (``interrupt()``); resume it with ``Command(resume=...)``."""
    FAILED = "failed"
    """The server refused the start, the run raised, or it could not be followed."""
    CANCELLED = "cancelled"
    """The run was cancelled (by ``abort()``, a multitask strategy or the server) before it ended."""

    def __str__(self) -> str:
        return self.value


TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.CANCELLED})

TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.PENDING: frozenset({RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.RUNNING: TERMINAL,
    **{status: frozenset() for status in TERMINAL},
}


class IllegalTransition(RuntimeError):
    """A bug in the client: a transition the state machine does not have."""


class RunState:
    """The status of one run, changed only through ``move``."""

    __slots__ = ("status", "error")

    def __init__(self) -> None:
        self.status = RunStatus.PENDING
        self.error: BaseException | None = None

    @property
    def terminal(self) -> bool:
        """Whether the run has ended (its status is final)."""
        return self.status in TERMINAL

    def move(self, to: RunStatus, *, error: BaseException | None = None) -> bool:
        """Move to ``to``; a no-op returning ``False`` once the run has ended.

        Raises:
            IllegalTransition: If ``to`` cannot follow the current status.
        """
        if self.terminal:
            return False
        if to not in TRANSITIONS[self.status]:
            raise IllegalTransition(f"a run cannot go from {self.status} to {to}")
        self.status = to
        if error is not None:
            self.error = error
        return True


def status_from_server(run: Any, *, raised_interrupts: bool) -> RunStatus | None:
    """The final status a server run record means, or ``None`` while it still runs.

    ``run`` is the body of ``GET /threads/{id}/runs/{run_id}``, or ``None``
    when the run no longer exists (a ``rollback`` deletes it). The server calls
    a paused run ``success``; whether it paused is known from the interrupts
    its events raised.
    """
    if run is None:
        return RunStatus.CANCELLED
    status = run.get("status") if isinstance(run, dict) else None
    if status in ("pending", "running"):
        return None
    if status == "success":
        return RunStatus.INTERRUPTED if raised_interrupts else RunStatus.COMPLETED
    if status == "interrupted":
        return RunStatus.CANCELLED
    return RunStatus.FAILED
