"""One server for all the pytest-xdist workers of a session.

The xdist controller runs no tests, but it outlives every worker: it owns the
session's server. ``ServerBroker`` listens on a Unix socket in the controller;
the first worker that needs the server connects, the broker starts it (once),
and every worker that connects is told the server's URL and its log file, or
why it did not start. No server is started for a session whose tests need none.
The controller stops the server after the last worker is done.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remote_graph.testing import Server

_ACCEPT_POLL = 0.2  # seconds between checks of the stop flag while no worker connects


class ServerBroker:
    """Starts the session's server when the first worker asks, and tells each worker where it is.

    Args:
        start: Starts the server and returns it once it answers.
        start_timeout: The most ``start`` may take (``close()`` waits that long for
            a start under way).
    """

    def __init__(self, start: Callable[[], Server], *, start_timeout: float) -> None:
        self._start = start
        self._start_timeout = start_timeout
        self._dir = Path(tempfile.mkdtemp(prefix="remote-graph-broker-"))
        self.address = str(self._dir / "socket")
        self.server: Server | None = None
        self._answer: bytes | None = None
        self._closing = threading.Event()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.address)
        self._listener.listen(64)
        self._listener.settimeout(_ACCEPT_POLL)
        self._thread = threading.Thread(target=self._serve, name="remote-graph-server-broker", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # One worker at a time: the first waits for the start, the others then get the
        # same answer at once (they wait in the listen backlog meanwhile).
        while not self._closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            with conn:
                answer = self._answer_once()
                try:
                    conn.settimeout(10)
                    conn.sendall(answer)
                except OSError:
                    pass  # that worker is gone; the next one still gets its answer

    def _answer_once(self) -> bytes:
        if self._answer is None:
            try:
                server = self._start()
            except Exception as exc:
                answer: dict[str, str] = {"error": f"{type(exc).__name__}: {exc}"}
            else:
                self.server = server
                answer = {"url": server.url, "log": str(server.log_path)}
            self._answer = json.dumps(answer).encode() + b"\n"
        return self._answer

    def close(self) -> Server | None:
        """Stop listening (waiting for a start under way) and return the server
        it started, if any, for the caller to stop."""
        self._closing.set()
        self._thread.join(timeout=self._start_timeout + 30)
        self._listener.close()
        shutil.rmtree(self._dir, ignore_errors=True)
        return self.server


def request_server(address: str, *, timeout: float) -> tuple[str, Path]:
    """Ask the controller's broker for the session's server.

    Args:
        address: The broker's socket.
        timeout: Seconds to wait for the answer (the server may be starting).

    Returns:
        The server's URL and its log file.

    Raises:
        RuntimeError: If the broker cannot be reached, or the server did not start
            (with the reason the controller met).
    """
    data = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(address)
            while not data.endswith(b"\n"):
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        raise RuntimeError(f"the xdist controller's server broker did not answer: {exc!r}") from None
    try:
        answer = json.loads(data)
    except ValueError:
        raise RuntimeError(f"the xdist controller's server broker answered {data[:200]!r}") from None
    if "error" in answer:
        raise RuntimeError(f"the session's server did not start (in the xdist controller): {answer['error']}")
    return str(answer["url"]), Path(answer["log"])
