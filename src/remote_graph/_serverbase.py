"""What the test servers share: a free port, the log file any process can read, a
process started in a group of its own, the readiness poll on ``GET /ok``, and the
context manager (which the replica stack's balancer shares too)."""

from __future__ import annotations

import abc
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import httpx

_S = TypeVar("_S", bound="Service")


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LogFile:
    """A server's output, in a file that any process can read by its path.

    Positions (``mark()``) are byte offsets. ``keep()`` copies the text into memory,
    so that it can still be read once the file is removed.

    Args:
        path: The file the server writes to.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kept: bytes | None = None

    def mark(self) -> int:
        """The log's current end, for ``since``."""
        if self._kept is not None:
            return len(self._kept)
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def settle(self, quiet: float = 0.25, limit: float = 2.0) -> None:
        """Wait until nothing was written for ``quiet`` seconds, or ``limit`` seconds passed.

        A server logs a request a moment after it answers it (measured on the
        embedded server: 15 of 40 request lines not yet written when the answer
        came, each a few milliseconds later), so a failing test's part of the log
        is read once the log is still. A server that other tests keep busy may
        never be still: ``limit`` bounds the wait.
        """
        if self._kept is not None:
            return  # its server is gone: nothing more comes
        deadline = time.monotonic() + limit
        size, still = self.mark(), time.monotonic()
        while (now := time.monotonic()) - still < quiet and now < deadline:
            time.sleep(min(0.02, quiet))
            if (grown := self.mark()) != size:
                size, still = grown, time.monotonic()

    def since(self, mark: int) -> str:
        """What was written after ``mark``; undecodable bytes are replaced."""
        if self._kept is not None:
            data = self._kept[mark:]
        else:
            # A reader of its own: the writer's file offset is never moved.
            try:
                with self.path.open("rb") as log:
                    log.seek(mark)
                    data = log.read()
            except OSError:
                return ""
        return data.decode("utf-8", errors="replace")

    def keep(self) -> None:
        """Hold the log's text from now on, so that its file can go."""
        if self._kept is None:
            try:
                self._kept = self.path.read_bytes()
            except OSError:
                self._kept = b""


def spawn_logged(
    command: Sequence[str],
    log: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    **as_user: Any,
) -> subprocess.Popen[bytes]:
    """Start ``command`` with its output (stdout and stderr) appended to ``log`` and no stdin.

    It leads a process group of its own, so that a stop by its group reaches its workers too.
    ``as_user`` is ``Popen``'s ``user=``, ``group=`` and ``extra_groups=``, for a process
    run as another user.
    """
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            **as_user,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )


def exit_reason(process: subprocess.Popen[bytes] | None) -> str | None:
    """Why ``process`` is gone (``"exited with code 1"``), or ``None`` while it runs (or was never started)."""
    code = None if process is None else process.poll()
    return None if code is None else f"exited with code {code}"


def stop_process_group(process: subprocess.Popen[bytes], sig: signal.Signals, timeout: float) -> None:
    """Signal the process group ``process`` leads (``sig``) and wait until the whole group
    is gone, then SIGKILL what lingers after ``timeout``.

    The group, not only its leader: a server's leader may exit before its workers do
    (``aegra serve`` before its uvicorn child).
    """
    for each in (sig, signal.SIGKILL):
        try:
            os.killpg(process.pid, each)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            continue
        while time.monotonic() < deadline:
            if not _group_alive(process.pid):
                return
            time.sleep(0.05)
    process.wait(timeout=timeout)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member is another user's (Postgres's), and alive
        return True
    return True


def tail(text: str, limit: int = 8000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


class Service(abc.ABC):
    """What runs from ``start()`` to ``stop()``; a ``with`` block starts and stops it."""

    @abc.abstractmethod
    def start(self: _S) -> _S:
        """Start it; returns it once it is ready."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop it and release what it holds; safe to call more than once."""

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ServerBase(Service):
    """The log and readiness wait of every test server."""

    _log: LogFile | None = None

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """Base URL of the running server."""

    @property
    def log_path(self) -> Path:
        """The file the server's output is written to while it runs.

        Raises:
            RuntimeError: If the server was never started.
        """
        if self._log is None:
            raise RuntimeError("server not started")
        return self._log.path

    def logs(self) -> str:
        """Everything the server has printed (kept after ``stop()``)."""
        return self.logs_since(0)

    def log_mark(self) -> int:
        """A position in the server's output (a byte offset), for ``logs_since``."""
        return 0 if self._log is None else self._log.mark()

    def logs_since(self, mark: int) -> str:
        """What the server printed after ``mark`` (from ``log_mark()``)."""
        return "" if self._log is None else self._log.since(mark)

    def _wait_ready(
        self, timeout: float, exited: Callable[[], str | None], what: str, url: str | None = None, path: str = "/ok"
    ) -> None:
        """Poll ``GET path`` until it answers 200, for at most ``timeout`` seconds.

        Args:
            timeout: Seconds to wait.
            exited: Returns why the server is gone (``"exited with code 1"``), or
                ``None`` while it runs.
            what: The server, as messages name it.
            url: The base URL polled, when it is not ``self.url`` (one process of several).
            path: The readiness endpoint (langgraph-api's ``/ok``; aegra answers ``/health``).

        Raises:
            RuntimeError: If the server exits first.
            TimeoutError: If it does not answer in time.
        """
        base = self.url if url is None else url
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as http:
            while time.monotonic() < deadline:
                reason = exited()
                if reason is not None:
                    raise RuntimeError(f"{what} {reason}:\n{tail(self.logs())}")
                try:
                    if http.get(f"{base}{path}").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.25)
        raise TimeoutError(f"{what} did not answer {base}{path} within {timeout}s:\n{tail(self.logs())}")
