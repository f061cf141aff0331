"""A TCP proxy in front of the LangGraph server that cuts event-stream responses.

``CuttingProxy(server_url)`` listens on a free loopback port and forwards
every connection to the server. It reads the request heads a client sends on
each connection (HTTP/1.1, keep-alive included) and, for the response to an
event-stream request, a ``GET`` whose path contains ``/stream`` (a run's
resumable stream), a ``POST`` to ``.../runs/stream`` (a run that streams from
its start) or a ``POST`` to ``.../stream/events`` (the thread stream),
forwards a random number of bytes (uniform in ``cut_range``, seeded) and then
cuts the connection: both sockets are closed at once, with no chunked
terminator; the client side gets either a reset or an orderly close (picked
by the same seeded generator). Every other response is forwarded untouched:
the byte budget is set afresh for each request head, before the request
reaches the server, so a non-stream response on a kept-alive connection is
never cut.

The proxy runs one asyncio loop in one background thread. Leaving the ``with``
block (or ``stop()``) closes the listening socket and every connection and
joins the thread. Every wait is bounded.

Example:
    ```python
    with CuttingProxy(server_url, cut_range=(300, 4000), seed=7) as proxy:
        graph = RemoteGraph("ticks", url=proxy.url)
        ...
        print(proxy.cuts)
    ```
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
import weakref
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import urlsplit

__all__ = ["RESUME_CUT_BYTES", "CuttingProxy"]

# The cut range for a library run that must get through the proxy. A resumed stream
# first repeats part of what the lost connection had: the in-memory server gives every
# frame of one millisecond the same id, so the cursor resumes from the id before the
# newest one, and the server re-sends every frame of the newest millisecond
# (``_core/cursor.py``). A connection whose budget ends within that repeat brings
# nothing new, and a run fails once 12 reconnects in a row (15 s of backoff,
# ``Timeouts.reconnect``) draw such budgets. A ``ticks`` run whose start stream was cut
# writes 10-14 frames a millisecond (5-7 while a client reads its start stream): with
# the response head, up to about 2.9 kB before the first new frame. A top of 3-4 kB
# leaves most budgets inside that: it failed about one soak run in two, and a 300-tick
# run through an authenticating server under load. So the top clears the repeat
# several times over (the cut-connection soak checks it does).
RESUME_CUT_BYTES = (300, 16000)

_MAX_HEAD = 64 * 1024
_READ_SIZE = 64 * 1024


def is_event_stream(method: str, target: str) -> bool:
    """Whether the response to this request is one the proxy cuts."""
    path = target.split("?", 1)[0]
    if method == "GET":
        return "/stream" in path
    return method == "POST" and path.endswith(("/runs/stream", "/stream/events"))


class RequestHeads:
    """Finds the request lines in the bytes a client sends on one connection.

    It skips request bodies (``Content-Length`` or chunked), so a body never
    passes for a request line, and any number of requests may follow each
    other on the connection.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._state = "head"
        self._remaining = 0

    def feed(self, data: bytes) -> list[tuple[str, str]]:
        """Consume ``data``; return the ``(method, target)`` of each request head it completes."""
        self._buffer += data
        found: list[tuple[str, str]] = []
        while self._step(found):
            pass
        return found

    def _step(self, found: list[tuple[str, str]]) -> bool:
        buffer = self._buffer
        if self._state == "head":
            while buffer.startswith(b"\r\n"):  # empty lines may precede a request line
                del buffer[:2]
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > _MAX_HEAD:
                    raise ValueError("request head too long")
                return False
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            del buffer[: end + 4]
            method, target = (lines[0].split(" ") + ["", ""])[:2]
            headers = {}
            for header in lines[1:]:
                name, _, value = header.partition(":")
                headers[name.strip().lower()] = value.strip().lower()
            found.append((method, target))
            if "chunked" in headers.get("transfer-encoding", ""):
                self._state = "chunk-size"
            else:
                self._remaining = int(headers.get("content-length") or 0)
                self._state = "body"
            return True
        if self._state in ("body", "chunk-data"):
            take = min(self._remaining, len(buffer))
            del buffer[:take]
            self._remaining -= take
            if self._remaining:
                return False
            self._state = "head" if self._state == "body" else "chunk-size"
            return True
        end = buffer.find(b"\r\n")
        if end < 0:
            return False
        line = bytes(buffer[:end])
        del buffer[: end + 2]
        if self._state == "chunk-size":
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size:
                self._remaining = size + 2  # the chunk and its CRLF
                self._state = "chunk-data"
            else:
                self._state = "trailers"
        elif not line:  # the empty line that ends the trailers
            self._state = "head"
        return True


@dataclass(eq=False)  # hashed by identity
class _Connection:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    budget: int | None = None  # response bytes allowed for the current request; None: no limit
    sent: int = 0  # response bytes forwarded for the current request
    last_activity: float = 0.0
    closed: bool = False
    heads: RequestHeads = field(default_factory=RequestHeads)


class CuttingProxy:
    """TCP proxy to ``target_url`` that cuts event-stream responses; see the module docstring.

    Args:
        target_url: The server, ``http://host:port``.
        cut_range: Inclusive bounds of the number of response bytes (status line
            and headers included) forwarded before a cut. ``(0, 0)`` cuts every
            event stream before its first byte.
        seed: Seeds the generator that picks each budget and how to close.
        cutting: Whether to cut at all; settable at any time (``proxy.cutting = False``),
            it applies to the requests that start after the change.
        idle_timeout: A connection with no traffic either way for this long is closed.
        connect_timeout: Bound on connecting to the target.

    Attributes:
        cuts: Connections cut so far.
        stream_requests: Event-stream requests seen so far (cut or not).
        connections: Client connections accepted so far.
    """

    def __init__(
        self,
        target_url: str,
        *,
        cut_range: tuple[int, int] = (300, 4000),
        seed: int = 0,
        cutting: bool = True,
        idle_timeout: float = 120.0,
        connect_timeout: float = 10.0,
    ) -> None:
        target = urlsplit(target_url)
        if target.scheme != "http" or not target.hostname or not target.port:
            raise ValueError(f"target_url must be http://host:port, got {target_url!r}")
        low, high = cut_range
        if not 0 <= low <= high:
            raise ValueError(f"cut_range must be 0 <= low <= high, got {cut_range!r}")
        self.target = (target.hostname, target.port)
        self.cut_range = (low, high)
        self.cutting = cutting
        self.idle_timeout = idle_timeout
        self.connect_timeout = connect_timeout
        self.cuts = 0
        self.stream_requests = 0
        self.connections = 0
        self.host = "127.0.0.1"
        self.port: int | None = None
        self._rng = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._open: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        # Every socket the proxy opened that is not closed yet, for the final sweep.
        self._transports: weakref.WeakSet[asyncio.WriteTransport] = weakref.WeakSet()

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the proxy is not running")
        return f"http://{self.host}:{self.port}"

    # --- lifecycle (called from the test's thread) -------------------------------

    def start(self, timeout: float = 10.0) -> CuttingProxy:
        if self._loop is not None:
            raise RuntimeError("the proxy is already running")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="cutting-proxy", daemon=True)
        self._loop, self._thread = loop, thread
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._listen(), loop).result(timeout)
        except BaseException:
            self.stop(timeout)
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Close the listening socket and every connection, stop the loop, join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            if thread.is_alive():
                asyncio.run_coroutine_threadsafe(self._shutdown(timeout / 2), loop).result(timeout)
        finally:
            if thread.is_alive():
                loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError("the proxy thread did not stop")
            loop.close()
            self._loop = self._thread = None
            self.port = None

    def __enter__(self) -> CuttingProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- the loop's side ---------------------------------------------------------

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _shutdown(self, timeout: float) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._open):
            self._close(conn, reset=True)
        # The aborted sockets end every connection's pumps; cancel what is left after that.
        tasks = [task for task in self._tasks if not task.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout / 2)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=timeout / 2)
        # A socket closed with a FIN waits for its buffer to drain; drop it now.
        for transport in list(self._transports):
            transport.abort()
        await asyncio.sleep(0)  # let the aborts' connection_lost callbacks close the sockets
        if self._server is not None:
            await asyncio.wait_for(self._server.wait_closed(), timeout)

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        conn = _Connection(client_writer, last_activity=loop.time())
        self._tasks.add(task)
        self._open.add(conn)
        self._transports.add(client_writer.transport)
        self.connections += 1
        try:
            try:
                upstream_reader, conn.upstream = await asyncio.wait_for(
                    asyncio.open_connection(*self.target), self.connect_timeout
                )
            except (OSError, asyncio.TimeoutError):
                return
            self._transports.add(conn.upstream.transport)  # type: ignore[union-attr]  # just connected
            pumps = [
                asyncio.ensure_future(self._client_to_server(client_reader, conn)),
                asyncio.ensure_future(self._server_to_client(upstream_reader, conn)),
            ]
            try:
                # Either side ending (or a cut) ends the connection.
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.wait(pumps, timeout=5)
                for pump in pumps:
                    if pump.done() and not pump.cancelled() and pump.exception() is not None:
                        raise pump.exception()  # type: ignore[misc]  # a bug in the proxy: fail loudly
        except asyncio.CancelledError:
            pass  # stop() ends a stuck connection; the handler task just ends
        finally:
            self._close(conn, reset=False)
            self._open.discard(conn)
            self._tasks.discard(task)

    async def _read(self, reader: asyncio.StreamReader, conn: _Connection) -> bytes:
        """The next bytes from ``reader``; ``b""`` at its end or when the connection idled out."""
        loop = asyncio.get_running_loop()
        while not conn.closed:
            try:
                data = await asyncio.wait_for(reader.read(_READ_SIZE), self.idle_timeout)
            except asyncio.TimeoutError:
                if loop.time() - conn.last_activity >= self.idle_timeout:
                    return b""
                continue
            except OSError:
                return b""
            conn.last_activity = loop.time()
            return data
        return b""

    async def _client_to_server(self, reader: asyncio.StreamReader, conn: _Connection) -> None:
        assert conn.upstream is not None
        while data := await self._read(reader, conn):
            try:
                heads = conn.heads.feed(data)
            except ValueError:
                return
            # A new request starts a new response: its budget is set before the
            # request reaches the server, so before any byte of its response.
            for method, target in heads:
                conn.sent = 0
                conn.budget = None
                if is_event_stream(method, target):
                    self.stream_requests += 1
                    if self.cutting:
                        conn.budget = self._rng.randint(*self.cut_range)
            if not await self._forward(conn.upstream, data, conn):
                return

    async def _server_to_client(self, reader: asyncio.StreamReader, conn: _Connection) -> None:
        while data := await self._read(reader, conn):
            budget = conn.budget
            if budget is not None and conn.sent + len(data) > budget:
                head = data[: budget - conn.sent]
                if head and not await self._forward(conn.client, head, conn):
                    return
                self.cuts += 1
                self._close(conn, reset=self._rng.random() < 0.5)
                return
            conn.sent += len(data)
            if not await self._forward(conn.client, data, conn):
                return

    async def _forward(self, writer: asyncio.StreamWriter, data: bytes, conn: _Connection) -> bool:
        if conn.closed:
            return False
        try:
            writer.write(data)
            await asyncio.wait_for(writer.drain(), self.idle_timeout)
        except (OSError, asyncio.TimeoutError):
            return False
        return True

    def _close(self, conn: _Connection, *, reset: bool) -> None:
        """Close both sockets now. With ``reset`` the client gets an RST instead of a FIN."""
        if conn.closed:
            return
        conn.closed = True
        for writer in (conn.client, conn.upstream):
            if writer is None:
                continue
            transport = writer.transport
            if reset:
                sock = transport.get_extra_info("socket")
                if sock is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    except OSError:
                        pass
                transport.abort()
            else:
                transport.close()
