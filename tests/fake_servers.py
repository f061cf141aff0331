"""Servers that are not (quite) LangGraph servers: one that never answers, one
that only speaks plain HTTP, one whose runs stream whatever a test scripts."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


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
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="plain-http", daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


RUN_ID = "1ef0c0de-0000-4000-8000-000000000001"
"""The run every ``ScriptedRuns`` start names."""


class ScriptedRuns:
    """A fake LangGraph server whose runs stream a scripted event-stream body.

    It speaks just enough of the runs API for ``RemoteGraph``: ``POST
    /threads/{id}/runs/stream`` starts a run and sends ``stream()`` (any
    iterable of byte chunks, chunked, so it may never end), as does a rejoin
    (``GET .../runs/{run_id}/stream``),
    ``GET .../runs/{run_id}`` answers ``record``, ``POST .../cancel`` is
    accepted, ``GET /threads/{id}/state`` answers ``state``. Every request is
    recorded as ``(method, path, headers)`` in ``requests``; ``streamed``
    counts the bytes each stream sent.

    Args:
        stream: Called once per stream request; returns the body's chunks.
        record: The run record (its ``status`` says how the run ended).
        state: The thread's state.
    """

    def __init__(
        self,
        stream: Callable[[], Iterable[bytes]],
        *,
        record: dict[str, Any] | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        self.stream = stream
        self.record = record if record is not None else {"status": "success"}
        self.state = state if state is not None else {"values": {}, "tasks": [], "checkpoint": None}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.streamed: list[int] = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self) -> ScriptedRuns:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def asked(self, method: str, suffix: str) -> int:
        """How many ``method`` requests had a path ending in ``suffix``."""
        return sum(1 for m, path, _ in self.requests if m == method and path.endswith(suffix))

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _record(self) -> str:
                path = self.path.split("?", 1)[0]
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                with server._lock:
                    server.requests.append((self.command, path, {k.lower(): v for k, v in self.headers.items()}))
                return path

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's naming
                path = self._record()
                if path.endswith("/cancel"):
                    self._json(202, {})
                elif path.endswith("/runs/stream"):
                    self._stream(location=f"{path[: -len('/stream')]}/{RUN_ID}/stream")
                else:
                    self._json(404, {"detail": "not found"})

            def do_GET(self) -> None:  # noqa: N802
                path = self._record()
                if path.endswith("/stream"):
                    self._stream()
                elif "/runs/" in path:
                    self._json(200, {"run_id": path.rsplit("/", 1)[-1], **server.record})
                elif path.endswith("/state"):
                    self._json(200, server.state)
                else:
                    self._json(404, {"detail": "not found"})

            def _stream(self, location: str | None = None) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                if location is not None:
                    self.send_header("location", location)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                sent = 0
                try:
                    for chunk in server.stream():
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        sent += len(chunk)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client hung up
                    pass
                finally:
                    server.streamed.append(sent)
                    self.close_connection = True

        return Handler


def sse_event(method: str, data: Any, seq: int, *, namespace: Sequence[str] = ()) -> bytes:
    """One frame of a run's stream, as the server writes it."""
    envelope = {"type": "event", "method": method, "params": {"namespace": list(namespace), "data": data}, "seq": seq}
    return f"event: {method}\r\ndata: {json.dumps(envelope)}\r\nid: {seq}\r\n\r\n".encode()


def metadata_frame(run_id: str = "r", *, attempt: int = 1) -> bytes:
    """A run's first frame, as the server writes it: its ``metadata``."""
    return f'event: metadata\r\ndata: {{"run_id": "{run_id}", "attempt": {attempt}}}\r\nid: 0\r\n\r\n'.encode()
