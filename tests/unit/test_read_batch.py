"""``Timeouts.read_batch``: a caught-up reader pauses before its next read, and loses nothing by it.

The shells say whether an opened stream batches its reads (``Response.batched``:
each read hands over everything it brought, however many chunks). On such a
stream the driver delivers a read's parts, then asks for a ``Sleep`` of
``read_batch`` before the next read, unless that read was long (more was
waiting). Everything else about the run is as without the pause.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from remote_graph._core.actions import Receive, Sleep, Timeouts
from remote_graph._core.run import RunDriver
from remote_graph._core.state import RunStatus
from tests.unit.fake_run import TID, Clock, Conn, FakeServer, Outcome, custom_run, drive, plan, wire_bytes

BATCH = 0.002


def run_with(server: FakeServer, timeouts: Timeouts) -> tuple[RunDriver, Outcome]:
    clock = Clock()
    server.clock = clock
    driver = RunDriver(plan({"x": 1}), TID, timeouts=timeouts, clock=clock)
    return driver, drive(driver, server)


def reads_and_pauses(server: FakeServer) -> list[str]:
    """The driver's reads and pauses, in order: ``r`` a read, ``p`` a pause of ``BATCH``."""
    out = []
    for action in server.actions:
        if isinstance(action, Receive):
            out.append("r")
        elif isinstance(action, Sleep) and action.seconds == BATCH:
            out.append("p")
    return out


def custom_items(out: Outcome) -> list[Any]:
    return [part["data"] for part in out.parts if part["type"] == "custom"]


def test_a_batched_stream_pauses_after_each_short_read_and_delivers_everything() -> None:
    frames = custom_run(30)
    server = FakeServer(frames, [Conn(chunks=(300,))], batched=True)
    driver, out = run_with(server, Timeouts(read_batch=BATCH))
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert custom_items(out) == [{"i": i} for i in range(30)]
    trail = reads_and_pauses(server)
    # The first read is never delayed; each read that brought bytes is followed
    # by a pause; the read that found the end of the body is not.
    assert trail[0] == "r" and "pp" not in "".join(trail)
    body_reads = -(-len(wire_bytes(frames)) // 300)
    assert "".join(trail).startswith("rp" * body_reads + "r")


def test_the_pause_comes_after_the_reads_parts_are_delivered() -> None:
    frames = custom_run(6)
    server = FakeServer(frames, [Conn(chunks=(len(frames[0].raw) + len(frames[1].raw),))], batched=True)
    clock = Clock()
    server.clock = clock
    driver = RunDriver(plan({"x": 1}), TID, timeouts=Timeouts(read_batch=BATCH), clock=clock)
    reply: Any = None
    seen: list[str] = []
    while True:
        step = driver.step(reply)
        reply = None
        if step is None:
            break
        if isinstance(step, dict):
            seen.append("part")
            continue
        if isinstance(step, Sleep) and step.seconds == BATCH:
            seen.append("pause")
        elif isinstance(step, Receive):
            seen.append("read")
        reply = server.answer(step)
    # The first read holds the metadata frame and the first event: that
    # event's part goes to the caller before the driver asks to wait.
    assert seen[:4] == ["read", "part", "pause", "read"]


def test_a_long_read_is_not_followed_by_a_pause() -> None:
    # A read of 16 KiB or more says more is waiting: the reader is behind.
    frames = custom_run(400)
    body = len(wire_bytes(frames))
    server = FakeServer(frames, [Conn(chunks=(body,))], batched=True)
    _, out = run_with(server, Timeouts(read_batch=BATCH))
    assert body > 16 * 1024
    assert len(custom_items(out)) == 400
    # The long read, then the end of the body, with no pause between; then
    # the confirming connection's replay and its end.
    assert reads_and_pauses(server) == ["r", "r", "r", "r"]


def test_a_confirming_connection_does_not_pause() -> None:
    # Once the record says the run is over, the stream only replays what is
    # stored and closes: a pause would only delay the run's end.
    frames = custom_run(30)
    server = FakeServer(frames, [Conn(chunks=(300,))], then=Conn(chunks=(40,)), batched=True)
    _, out = run_with(server, Timeouts(read_batch=BATCH))
    assert len(custom_items(out)) == 30
    trail = "".join(reads_and_pauses(server))
    first = "rp" * -(-len(wire_bytes(frames)) // 300) + "r"  # every read with bytes paused after, then the end
    assert trail.startswith(first)
    confirming = trail[len(first) :]
    assert len(confirming) > 2 and set(confirming) == {"r"}


@pytest.mark.parametrize(("batched", "read_batch"), [(False, BATCH), (True, 0)])
def test_no_pause_unless_the_stream_batches_and_a_batch_is_asked_for(batched: bool, read_batch: float) -> None:
    # A transport that hands over one chunk per read (a mock, HTTP/2) would
    # only be slowed by a pause: each of its reads is short.
    frames = custom_run(12)
    server = FakeServer(frames, [Conn(chunks=(50,))], batched=batched)
    _, out = run_with(server, Timeouts(read_batch=read_batch))
    assert len(custom_items(out)) == 12
    assert not [a for a in server.actions if isinstance(a, Sleep)]


@pytest.mark.parametrize("seed", range(12))
def test_pauses_and_cuts_together_lose_and_repeat_nothing(seed: int) -> None:
    rng = random.Random(seed)
    frames = custom_run(40, per_ms=rng.randint(1, 5))
    body = len(wire_bytes(frames))
    connections = [
        Conn(cut=rng.randint(1, body - 1), live=rng.choice([None, rng.randint(0, 6)]), chunks=(rng.randint(20, 400),))
        for _ in range(rng.randint(1, 5))
    ]
    server = FakeServer(frames, connections, then=Conn(chunks=(rng.randint(20, 400),)), batched=True)
    driver, out = run_with(server, Timeouts(read_batch=BATCH))
    assert out.error is None, out.error
    assert custom_items(out) == [{"i": i} for i in range(40)]
    assert driver.status is RunStatus.COMPLETED
    assert "p" in reads_and_pauses(server)


@pytest.mark.parametrize("value", [-0.001, 1.0, 5, True, "0.001", None])
def test_a_read_batch_out_of_range_is_refused_naming_it(value: Any) -> None:
    with pytest.raises(ValueError, match=r"Timeouts\.read_batch must be a number of seconds from 0 to under 1"):
        Timeouts(read_batch=value)


def test_the_default_batch_is_a_millisecond() -> None:
    assert Timeouts().read_batch == 0.001
    assert Timeouts(read_batch=0).read_batch == 0
