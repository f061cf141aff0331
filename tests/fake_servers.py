"""Servers that are not LangGraph servers: one that never answers, one that only speaks plain HTTP."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SilentServer:
    """Accepts connections and never answers.

    ``stop()`` reports the connections the client left open: each accepted
    connection must reach EOF (the client hung up) within two seconds.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def stop(self) -> list[int]:
        """Stop listening; return the client ports of connections the client left open."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
        left_open = []
        for conn in self.accepted:
            conn.settimeout(2)
            try:
                while conn.recv(65536):  # the request, then EOF once the client closed
                    pass
            except OSError:  # TimeoutError included: still open
                left_open.append(conn.getpeername()[1])
            finally:
                conn.close()
        return left_open


class _NotLangGraph(http.server.BaseHTTPRequestHandler):
    """``GET`` answers an HTML 404; other methods get the stdlib's HTML 501."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
        self.send_error(404, "File not found")

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def plain_http_server() -> Iterator[str]:
    """A plain HTTP server on a free loopback port; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotLangGraph)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="plain-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
