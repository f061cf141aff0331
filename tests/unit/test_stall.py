"""``Timeouts.stall``: a run silent past it fails and is cancelled; without it, silence is no failure.

A server whose worker died mid-run keeps the run's stream open with heartbeats
while the run stays ``running`` (measured on the replica stack: until the
worker's heartbeat is stale, minutes with the server's defaults). The stream
here goes silent after two events: only heartbeats come, each ``every``
seconds of the fake clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from remote_graph._core.actions import Receive, Response, Timeouts
from remote_graph._core.run import RunDriver
from remote_graph._core.state import RunStatus
from remote_graph.errors import RemoteTimeoutError
from tests.unit.fake_run import CANCEL, RUN, TID, Clock, Conn, FakeServer, cleanup, custom_run, plan

HEARTBEAT = b": heartbeat\n\n"


def silent_run(
    stall: float | None, silence: float, *, every: float = 5.0, events_every: float | None = None
) -> tuple[RunDriver, FakeServer, list[Any], BaseException | None]:
    """A run of 4 custom events and its values; after the second event, ``silence``
    seconds of heartbeats (an event every ``events_every`` seconds of them, if
    given), then the rest. Returns the driver, the server, the parts and the error."""
    frames = custom_run(4, per_ms=1)
    # One frame per read: the heartbeats come between frames.
    server = FakeServer(
        frames, [Conn(chunks=[len(f.raw) for f in frames])], rest={("POST", f"{RUN}/cancel"): Response(202, None)}
    )
    clock = server.clock = Clock()
    driver = RunDriver(plan({"x": 1}), TID, timeouts=Timeouts(stall=stall), clock=clock)
    parts: list[Any] = []
    quiet, since_event = 0.0, 0.0
    reply: Any = None
    for _ in range(100_000):
        try:
            step = driver.step(reply)
        except Exception as exc:
            return driver, server, parts, exc
        reply = None
        if step is None:
            return driver, server, parts, None
        if isinstance(step, dict):
            parts.append(step)
        elif isinstance(step, Receive) and len(parts) >= 2 and quiet < silence:
            clock.now += every
            quiet += every
            since_event += every
            if events_every is not None and since_event >= events_every:
                # The run speaks between heartbeats: the server's next frame.
                since_event = 0.0
                reply = server.answer(step)
            else:
                reply = HEARTBEAT
        else:
            reply = server.answer(step)
    raise AssertionError("the driver did not finish")


def customs(parts: list[Any]) -> list[int]:
    return [p["data"]["i"] for p in parts if p["type"] == "custom"]


def test_without_a_stall_bound_a_run_silent_for_ten_minutes_goes_on() -> None:
    driver, _, parts, error = silent_run(None, 600.0)
    assert error is None and driver.status is RunStatus.COMPLETED
    assert customs(parts) == [0, 1, 2, 3]


def test_a_run_silent_past_its_stall_bound_fails_naming_the_stall_and_is_cancelled() -> None:
    driver, server, parts, error = silent_run(30.0, 600.0)
    assert isinstance(error, RemoteTimeoutError)
    assert "sent no event for 30s (Timeouts.stall)" in str(error) and "LG_BG_JOB_HEARTBEAT" in str(error)
    assert driver.status is RunStatus.FAILED
    # Failed within a heartbeat of the bound.
    assert 30.0 < server.clock.now <= 40.0
    assert customs(parts) == [0, 1]
    assert cleanup(driver, server) == [CANCEL]


def test_a_run_whose_events_come_within_the_bound_never_stalls() -> None:
    driver, _, parts, error = silent_run(30.0, 70.0, events_every=25.0)
    assert error is None and driver.status is RunStatus.COMPLETED
    assert customs(parts) == [0, 1, 2, 3]


@pytest.mark.parametrize("stall", [0, -1.0, True, "30"])
def test_a_stall_bound_must_be_a_positive_number(stall: Any) -> None:
    with pytest.raises(ValueError, match="Timeouts.stall must be None or a positive number"):
        Timeouts(stall=stall)
