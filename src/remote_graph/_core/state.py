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


class _Named(str, enum.Enum):
    """An enum whose values are its members' names in lower case, and print as them."""

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
        return name.lower()

    def __str__(self) -> str:
        return str(self.value)


class RunStatus(_Named):
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
    when the run no longer exists (a ``rollback`` deletes it). langgraph-api
    calls a paused run ``success`` and a cancelled one ``interrupted``; aegra
    calls a paused run ``interrupted`` too. Whether it paused is known from the
    interrupts its events raised: a run that raised them stopped at them.
    """
    if run is None:
        return RunStatus.CANCELLED
    status = run.get("status") if isinstance(run, dict) else None
    if status in ("pending", "running"):
        return None
    if status == "success":
        return RunStatus.INTERRUPTED if raised_interrupts else RunStatus.COMPLETED
    if status == "interrupted":
        return RunStatus.INTERRUPTED if raised_interrupts else RunStatus.CANCELLED
    return RunStatus.FAILED


# --- following a run's stream -----------------------------------------------------------
#
# While a run is RUNNING, the driver follows its stream through these phases. Every
# phase change goes through ``Follow.on``, which looks the pair up in ``FOLLOW``:
#
#   OPENING ──opened──► READING ──closed──► CHECKING ──over──► OPENING ──opened_after_verdict──► CONFIRMING
#      │                  │  │                 │  │                                             │     │
#      │ lost             │  │ error_frame     │  └─running────────────► OPENING                │     │ closed_with_news
#      ▼                  │  ▼                 │                                                │     └────► OPENING
#   BACKING_OFF ◄──lost───┘  FAILING ──failed─►│──running_no_news──► BACKING_OFF                │
#      │  ▲                                    │                                               │ closed_no_news
#      │  └──────────lost──────────────────────┘                                               ▼
#      ├──retry──► OPENING                                                                    ENDING ──ended──► DONE
#      └──give_up──► DONE       (refused: OPENING, CHECKING → DONE; ended: FAILING → DONE;
#                                stream_failed: FAILING → BACKING_OFF)
#
# A join (following a run another caller started) begins in LOOKING_UP, reading the
# run's record: found ──► OPENING, refused ──► DONE. A detached start (the caller
# only starts the run) leaves once the run's stream opened: READING ──detached──► DONE.


class Phase(_Named):
    """Where the driver stands in following a run's stream."""

    LOOKING_UP = enum.auto()
    """Joining a run started elsewhere: reading its record to check it is the run asked for."""
    OPENING = enum.auto()
    """Opening the run's stream (again), after the last frame delivered."""
    READING = enum.auto()
    """Reading frames off an open stream."""
    CHECKING = enum.auto()
    """The stream closed cleanly: reading the run's record to learn whether it really ended."""
    CONFIRMING = enum.auto()
    """The record says the run is over: a reopened stream delivers whatever the closed one missed."""
    BACKING_OFF = enum.auto()
    """The stream was lost: waiting before the next attempt, or giving up once the budget is spent."""
    FAILING = enum.auto()
    """The stream carried an error frame: learning whether the run failed, and with what."""
    ENDING = enum.auto()
    """Every frame has arrived: ending the run with the server's verdict."""
    DONE = enum.auto()
    """Nothing more to read."""


class Signal(_Named):
    """What moves the driver from one ``Phase`` to the next.

    Attributes:
        OPENED: The stream opened, before the run's verdict is known.
        OPENED_AFTER_VERDICT: The stream opened again after the record said the run is over.
        LOST: The transport failed, or the server answered with a status worth another try.
        REFUSED: The server refused the stream for good (an error status, not an event stream).
        CLOSED: The stream ended cleanly, before the verdict is known.
        CLOSED_WITH_NEWS: A confirming stream ended cleanly after delivering something new.
        CLOSED_NO_NEWS: A confirming stream ended cleanly with nothing new: every frame has arrived.
        ERROR_FRAME: The stream carried an error frame.
        STREAM_FAILED: After an error frame, the record says the run still runs, or
            cannot be read: the error was the stream's (a replica that lost its
            database), not the run's verdict.
        RUNNING: The record says the run still runs, and the closed stream had brought news.
        RUNNING_NO_NEWS: The record says the run still runs, and the closed stream brought nothing new.
        OVER: The record says the run is over (or it was deleted).
        RETRY: The backoff's wait is over.
        GIVE_UP: The reconnect budget is spent.
        ENDED: How the run ended is recorded: the server's verdict, its failure, or its deletion.
        FOUND: The joined run's record names a run this join can follow.
        DETACHED: The run was started without following: its stream is left at once; the run goes on.
    """

    OPENED = enum.auto()
    OPENED_AFTER_VERDICT = enum.auto()
    LOST = enum.auto()
    REFUSED = enum.auto()
    CLOSED = enum.auto()
    CLOSED_WITH_NEWS = enum.auto()
    CLOSED_NO_NEWS = enum.auto()
    ERROR_FRAME = enum.auto()
    STREAM_FAILED = enum.auto()
    RUNNING = enum.auto()
    RUNNING_NO_NEWS = enum.auto()
    OVER = enum.auto()
    RETRY = enum.auto()
    GIVE_UP = enum.auto()
    ENDED = enum.auto()
    FOUND = enum.auto()
    DETACHED = enum.auto()


FOLLOW: dict[Phase, dict[Signal, Phase]] = {
    Phase.LOOKING_UP: {
        Signal.FOUND: Phase.OPENING,
        Signal.REFUSED: Phase.DONE,
    },
    Phase.OPENING: {
        Signal.OPENED: Phase.READING,
        Signal.OPENED_AFTER_VERDICT: Phase.CONFIRMING,
        Signal.LOST: Phase.BACKING_OFF,
        Signal.REFUSED: Phase.DONE,
    },
    Phase.READING: {
        Signal.DETACHED: Phase.DONE,
        Signal.CLOSED: Phase.CHECKING,
        Signal.LOST: Phase.BACKING_OFF,
        Signal.ERROR_FRAME: Phase.FAILING,
    },
    Phase.CHECKING: {
        Signal.RUNNING: Phase.OPENING,
        Signal.RUNNING_NO_NEWS: Phase.BACKING_OFF,
        Signal.OVER: Phase.OPENING,
        Signal.LOST: Phase.BACKING_OFF,
        Signal.REFUSED: Phase.DONE,
    },
    Phase.CONFIRMING: {
        Signal.CLOSED_WITH_NEWS: Phase.OPENING,
        Signal.CLOSED_NO_NEWS: Phase.ENDING,
        Signal.LOST: Phase.BACKING_OFF,
        Signal.ERROR_FRAME: Phase.FAILING,
    },
    Phase.BACKING_OFF: {
        Signal.RETRY: Phase.OPENING,
        Signal.GIVE_UP: Phase.DONE,
    },
    Phase.FAILING: {
        Signal.ENDED: Phase.DONE,
        Signal.STREAM_FAILED: Phase.BACKING_OFF,
    },
    Phase.ENDING: {Signal.ENDED: Phase.DONE},
    Phase.DONE: {},
}
"""Every ``(phase, signal) -> phase`` transition of following a run; any other pair is a bug."""


class Follow:
    """The phase of following one run's stream, changed only through ``on``."""

    __slots__ = ("phase",)

    def __init__(self, phase: Phase = Phase.OPENING) -> None:
        self.phase = phase

    def on(self, signal: Signal) -> Phase:
        """Move on ``signal`` and return the new phase.

        Raises:
            IllegalTransition: If ``FOLLOW`` has no such transition from the current phase.
        """
        target = FOLLOW[self.phase].get(signal)
        if target is None:
            raise IllegalTransition(f"following a run cannot take {signal} while {self.phase}")
        self.phase = target
        return target
