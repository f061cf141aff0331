"""Shared pytest setup: the served graphs live in ``app/`` at the repo root, and tests
that share a server thread never run at the same time.

``python -m pytest`` runs on several pytest-xdist workers against one server. A test
that uses a literal thread id (``"."``, ``5``: ids that cannot be made unique) shares
that server thread with every other test using the same id, on any worker; two runs
at once on it would conflict. Such a test is marked ``shares_thread(thread_id)``
(``shared_thread_param`` makes a parameter of it): tests marked with the same id run
one after the other, whichever workers they are on.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"
if str(APP) not in sys.path:
    sys.path.insert(0, str(APP))

SHARED_THREAD_WAIT = 120.0  # seconds a test waits for the others on its thread


def shared_thread_param(thread_id: Any) -> Any:
    """A ``parametrize`` value that is a literal thread id other tests use too."""
    return pytest.param(thread_id, marks=pytest.mark.shares_thread(thread_id))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "shares_thread(thread_id): the test uses a server thread other tests use too; "
        "tests marked with the same id never run at the same time, on any xdist worker",
    )


@pytest.fixture(autouse=True)
def _one_test_per_shared_thread(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Hold a lock named by each ``shares_thread`` id for the test's duration."""
    ids = [mark.args[0] for mark in request.node.iter_markers("shares_thread")]
    if not ids or "PYTEST_XDIST_WORKER" not in os.environ:
        yield  # without workers, tests run one after the other anyway
        return
    # The workers' temporary directories share a parent: the run's own.
    locks = tmp_path_factory.getbasetemp().parent / "shared-threads"
    locks.mkdir(exist_ok=True)
    held = []
    try:
        for thread_id in sorted({repr(i) for i in ids}):  # one order everywhere: no deadlock
            name = hashlib.sha256(thread_id.encode()).hexdigest()[:16]
            held.append(_lock(locks / f"{name}.lock", thread_id))
        yield
    finally:
        for fd in reversed(held):
            os.close(fd)  # closing the descriptor releases its lock


def _lock(path: Path, thread_id: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + SHARED_THREAD_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                pytest.fail(f"other tests held thread {thread_id} for more than {SHARED_THREAD_WAIT}s")
            time.sleep(0.05)
