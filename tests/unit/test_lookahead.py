"""``Lookahead``: the async pump takes the rest of a read without I/O, and the run is unchanged.

A shell that offers parts through ``ready`` and carries on through
``next_step`` must give the same parts, in the same order, with the same
actions, end and failure as one that pulls every part through I/O steps.
"""

from __future__ import annotations

from typing import Any

import pytest

from remote_graph._core.actions import Receive, Response, Timeouts
from remote_graph._core.ahead import Lookahead
from remote_graph._core.run import RunDriver
from remote_graph._core.state import RunStatus
from remote_graph.errors import RemoteRunError
from tests.unit.fake_run import (
    FAILED_STATE,
    RUN,
    THREAD,
    TID,
    Clock,
    Conn,
    FakeServer,
    Frame,
    Outcome,
    custom_run,
    drive,
    plan,
)


def driver_for(server: FakeServer) -> RunDriver:
    server.clock = Clock()
    return RunDriver(plan({"x": 1}), TID, timeouts=Timeouts(read_batch=0), clock=server.clock)


def drive_looking_ahead(driver: RunDriver, server: FakeServer) -> tuple[Outcome, int]:
    """Drive as the async shell under ``ReadyPartPump`` does: the parts, and how many came ready."""
    ahead = Lookahead()
    parts: list[dict[str, Any]] = []
    ready = 0
    try:
        for _ in range(100_000):
            part = ahead.ready(driver)
            if part is not None:
                ready += 1
                parts.append(part)
                continue
            step = ahead.next_step(driver)  # the pull through ``__anext__``
            while step is not None and not isinstance(step, dict):
                step = driver.step(server.answer(step))
            if step is None:
                return Outcome(parts, None), ready
            parts.append(step)
    except Exception as exc:
        return Outcome(parts, exc), ready
    raise AssertionError("the driver did not finish")


def served(frames: list[Frame], chunk: int, **kwargs: Any) -> FakeServer:
    return FakeServer(frames, [Conn(chunks=(chunk,))], then=Conn(chunks=(chunk,)), **kwargs)


@pytest.mark.parametrize("chunk", [1, 7, 90, 400, 100_000])
def test_a_run_with_lookahead_gives_the_parts_and_actions_of_one_without(chunk: int) -> None:
    frames = custom_run(40, 4)
    plain = served(frames, chunk)
    expected = drive(driver_for(plain), plain)
    server = served(frames, chunk)
    driver = driver_for(server)
    out, ready = drive_looking_ahead(driver, server)
    assert out.error is None and expected.error is None
    assert out.parts == expected.parts and len(out.parts) == 41
    assert driver.status is RunStatus.COMPLETED
    assert server.trail() == plain.trail()
    if chunk == 100_000:  # one read holds the whole body: every part after the first is ready
        assert ready == 40
    if chunk == 1:  # a frame completes only at a read
        assert ready == 0


def read_once_and_take_the_rest(n: int) -> tuple[RunDriver, Lookahead]:
    """A run whose body comes in one read: pull its first part, take every ready one after it."""
    server = served(custom_run(n, 4), 100_000)
    driver = driver_for(server)
    ahead = Lookahead()
    step = ahead.next_step(driver)
    while not isinstance(step, dict):
        step = driver.step(server.answer(step))
    taken = 0
    while ahead.ready(driver) is not None:
        taken += 1
    assert taken == n  # the first part was pulled, the rest and the final values were ready
    return driver, ahead


def test_what_stopped_a_look_is_the_next_step_once() -> None:
    driver, ahead = read_once_and_take_the_rest(8)
    # The look met the driver's next read: held, offered no part, then given once.
    assert ahead.ready(driver) is None
    assert isinstance(ahead.next_step(driver), Receive)


def test_a_failure_met_looking_ahead_is_raised_by_the_next_pull_after_the_parts() -> None:
    rest = {("GET", RUN): Response(200, {"status": "error"}), ("GET", f"{THREAD}/state"): Response(200, FAILED_STATE)}
    plain = served(custom_run(6, 4, fail=True), 100_000, rest=rest)
    expected = drive(driver_for(plain), plain)
    server = served(custom_run(6, 4, fail=True), 100_000, rest=rest)
    driver = driver_for(server)
    out, _ = drive_looking_ahead(driver, server)
    assert isinstance(out.error, RemoteRunError) and type(out.error).__name__ == type(expected.error).__name__
    assert out.parts == expected.parts and len(out.parts) == 6
    assert driver.status is RunStatus.FAILED


def test_clear_forgets_what_is_held() -> None:
    driver, ahead = read_once_and_take_the_rest(3)
    ahead.clear()
    driver.abandon()
    assert not isinstance(ahead.next_step(driver), Receive)  # the cleanup's own first step


def test_a_step_handed_back_is_held_for_the_next_pull_and_offers_no_part() -> None:
    driver, ahead = read_once_and_take_the_rest(4)
    # What the async shell does when a pull it began in the caller's task meets
    # a step it leaves to the pump's task (a stream to open, a request, the
    # run's end): the step is handed back. Any action shows the same.
    step = ahead.next_step(driver)
    assert isinstance(step, Receive)
    ahead.hold(step)
    assert ahead.ready(driver) is None  # a held step is not looked past
    assert ahead.next_step(driver) is step
    ahead.hold(None)  # the run's end is held the same way
    assert ahead.next_step(driver) is None
    ahead.hold(step)
    with pytest.raises(AssertionError, match="held already"):
        ahead.hold(step)
