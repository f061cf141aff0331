"""Shared pytest setup: the served graphs live in ``app/`` at the repo root, and the
locks that keep parallel tests apart.

``python -m pytest`` runs on several pytest-xdist workers against one server. Two
markers keep apart the tests that cannot share it:

- ``shares_thread(thread_id)``: the test uses a literal thread id (``"."``, ``5``:
  ids that cannot be made unique), so it shares that server thread with every other
  test using the same id; two runs at once on it would conflict. Tests marked with
  the same id run one after the other, whichever workers they are on
  (``shared_thread_param`` makes such a parametrize value).
- ``serial``: the test bounds the server's timing, which other tests' runs would
  slow: it runs while no other test runs. Every soak test is serial.

Both are file locks in the run's temporary directory, taken before the test's
timeout starts. Without xdist, tests run one after the other and no lock is taken.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"
if str(APP) not in sys.path:
    sys.path.insert(0, str(APP))

# Seconds a test waits for the tests it must not run beside: a serial soak test may
# wait behind all the others (about 20 minutes).
LOCK_WAIT = 3600.0
_LOCK_FAILURE = pytest.StashKey[str]()


def shared_thread_param(thread_id: Any) -> Any:
    """A ``parametrize`` value that is a literal thread id other tests use too."""
    return pytest.param(thread_id, marks=pytest.mark.shares_thread(thread_id))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "shares_thread(thread_id): the test uses a server thread other tests use too; "
        "tests marked with the same id never run at the same time, on any xdist worker",
    )
    config.addinivalue_line(
        "markers", "serial: the test bounds the server's timing; it runs while no other test runs, on any xdist worker"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Soak tests bound memory, timing and the server's work over minutes; beside other
    # tests' runs they measure those instead (a cut-connections run lost its stream).
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(pytest.mark.serial)


def _acquire(path: Path, mode: int, deadline: float) -> int | None:
    """A descriptor of ``path`` holding ``mode`` (``LOCK_SH``/``LOCK_EX``), or
    ``None`` once ``deadline`` has passed."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.02)


def _locks(item: pytest.Item, directory: Path) -> tuple[list[int], str | None]:
    """Take the item's locks: every test holds ``tests`` shared and a serial one holds it
    alone. The ``turnstile``, held while waiting for ``tests``, keeps a serial test from
    waiting forever behind tests that keep starting. Thread locks come last, in one
    order everywhere, so no two tests wait on each other."""
    deadline = time.monotonic() + LOCK_WAIT
    serial = item.get_closest_marker("serial") is not None
    held: list[int] = []
    turnstile = _acquire(directory / "turnstile.lock", fcntl.LOCK_EX, deadline)
    if turnstile is None:
        return held, "the tests before it"
    held.append(turnstile)
    tests = _acquire(directory / "tests.lock", fcntl.LOCK_EX if serial else fcntl.LOCK_SH, deadline)
    if tests is None:
        return held, "the tests running beside it to end"
    held.append(tests)
    if not serial:
        os.close(held.pop(0))  # the turnstile: the next test may come in
    for thread_id in sorted({repr(mark.args[0]) for mark in item.iter_markers("shares_thread")}):
        name = hashlib.sha256(thread_id.encode()).hexdigest()[:16]
        fd = _acquire(directory / f"thread-{name}.lock", fcntl.LOCK_EX, deadline)
        if fd is None:
            return held, f"the other tests on thread {thread_id}"
        held.append(fd)
    return held, None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    # Outside pytest-timeout's own wrapper: the wait is not the test's time.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    # The workers' temporary directories share a parent: the run's own.
    directory = item.config._tmp_path_factory.getbasetemp().parent / "test-locks"  # type: ignore[attr-defined]
    directory.mkdir(exist_ok=True)
    held, waited_for = _locks(item, directory)
    if waited_for is not None:
        item.stash[_LOCK_FAILURE] = f"waited {LOCK_WAIT:.0f}s for {waited_for}"
    try:
        yield
    finally:
        for fd in reversed(held):
            os.close(fd)  # closing the descriptor releases its lock


@pytest.fixture(autouse=True)
def _lock_failure(request: pytest.FixtureRequest) -> None:
    """Fail a test whose locks could not be had (it would run beside the wrong tests)."""
    failure = request.node.stash.get(_LOCK_FAILURE, None)
    if failure is not None:
        pytest.fail(failure)
