"""No thread left behind: a run started without a thread id deletes its thread at its end.

Every ending goes through the driver's cleanup (the shells abandon a run that
ended too); a call that named its thread keeps it, and so does a run paused by
an interrupt (its run stream names the thread, to resume it).
"""

from __future__ import annotations

import logging

import httpx
import pytest

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.state import RunStatus
from remote_graph._core.threadless import forget_thread
from tests.unit.fake_run import CANCEL, RUN, THREAD, Clock, FakeServer, cleanup, make_driver, plan, run, started_driver
from tests.unit.test_run import completed_run, failed_run, paused_in_subgraph_run

FORGET = Request("DELETE", THREAD)
DELETED = {("DELETE", THREAD): Response(204, None)}


def test_a_finished_run_deletes_its_thread() -> None:
    server = FakeServer(completed_run(), rest=DELETED)
    driver, out = run(server, start=plan({"x": 1}, thread_given=False))
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert cleanup(driver, server) == [FORGET]


def test_a_failed_run_deletes_its_thread_after_reading_its_error() -> None:
    server = FakeServer(failed_run(), rest={**DELETED, ("GET", RUN): Response(200, {"status": "error"})})
    driver, out = run(server, start=plan({"x": 1}, thread_given=False))
    assert out.error is not None and driver.status is RunStatus.FAILED
    assert not server.asked("DELETE", THREAD)
    assert cleanup(driver, server) == [FORGET]


def test_an_abandoned_run_is_cancelled_then_its_thread_deleted() -> None:
    server = FakeServer(completed_run(), rest={**DELETED, ("POST", f"{RUN}/cancel"): Response(202, None)})
    driver = started_driver(server, start=plan({"x": 1}, thread_given=False))
    assert cleanup(driver, server) == [CANCEL, FORGET]
    assert driver.status is RunStatus.CANCELLED


def test_a_run_abandoned_before_it_was_sent_deletes_nothing() -> None:
    server = FakeServer(completed_run(), rest=DELETED)
    driver = make_driver(Clock(), start=plan({"x": 1}, thread_given=False))
    assert cleanup(driver, server) == []


def test_a_paused_run_keeps_its_thread() -> None:
    server = FakeServer(paused_in_subgraph_run(), rest=DELETED)
    driver, out = run(server, start=plan({"x": 1}, thread_given=False))
    assert driver.status is RunStatus.INTERRUPTED
    assert cleanup(driver, server) == []


def test_a_named_thread_is_kept() -> None:
    server = FakeServer(completed_run(), rest=DELETED)
    driver, out = run(server, start=plan({"x": 1}, thread_given=True))
    assert out.error is None and cleanup(driver, server) == []


@pytest.mark.parametrize(
    "answer", [Response(500, {"detail": "boom"}), Broken(httpx.ConnectError("refused"), unreachable=True)]
)
def test_a_thread_that_cannot_be_deleted_is_logged_not_raised(answer: object, caplog: pytest.LogCaptureFixture) -> None:
    talk = forget_thread(THREAD)
    assert next(talk) == FORGET
    with caplog.at_level(logging.WARNING, logger="remote_graph"), pytest.raises(StopIteration):
        talk.send(answer)
    assert "could not delete the call's thread" in caplog.text


def test_a_thread_already_gone_is_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    talk = forget_thread(THREAD)
    next(talk)
    with caplog.at_level(logging.WARNING, logger="remote_graph"), pytest.raises(StopIteration):
        talk.send(Response(404, {"detail": "Thread not found"}))
    assert caplog.text == ""
