"""``Balancer``: a round-robin TCP proxy on loopback, in front of a server's replicas.

Each accepted connection goes to the next replica in turn, and stays with it (a
kept-alive HTTP connection is one connection). A replica that refuses the
connection is skipped for that connection, as a load balancer's health check
would take it out: a test that kills one replica sees the balancer carry on with
the others. Which replica served which connection is recorded (``served``).

The proxy runs one asyncio loop in one background thread; ``stop()`` closes the
listening socket and every connection and joins the thread. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from remote_graph._serverbase import free_port

_READ_SIZE = 64 * 1024
_CONNECT_TIMEOUT = 5.0
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Served:
    """One connection the balancer forwarded.

    Attributes:
        connection: The connection's number, from 0 in the order they were accepted.
        replica: The index (in ``Balancer.backends``) of the replica it went to, or
            ``None`` if no replica took it.
    """

    connection: int
    replica: int | None


class Balancer:
    """A round-robin TCP balancer on ``host``, in front of ``backends``.

    Args:
        backends: ``(host, port)`` of each replica.
        host: Loopback address to listen on.
        port: Port to listen on; a free one is picked when omitted.
    """

    def __init__(
        self, backends: Sequence[tuple[str, int]], *, host: str = "127.0.0.1", port: int | None = None
    ) -> None:
        if not backends:
            raise ValueError("a balancer needs at least one backend")
        self.backends = list(backends)
        self.host = host
        self.port = port or free_port(host)
        self.served: list[Served] = []
        """Every connection forwarded so far, in the order they were accepted."""
        self._next = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Base URL of the balancer."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> Balancer:
        """Start listening; returns once the socket is bound.

        Raises:
            RuntimeError: If it is running already, or did not start.
        """
        if self._thread is not None:
            raise RuntimeError("balancer already started")
        self._thread = threading.Thread(target=self._run, name="remote-graph-balancer", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT) or self._error is not None:
            self.stop()
            raise RuntimeError(f"balancer did not start on {self.host}:{self.port}: {self._error!r}")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(asyncio.start_server(self._accept, self.host, self.port))
        except OSError as exc:
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        number = len(self.served)
        try:
            upstream = await self._connect()
            if upstream is None:
                self.served.append(Served(number, None))
                return
            replica, (up_reader, up_writer) = upstream
            self.served.append(Served(number, replica))
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except (asyncio.CancelledError, OSError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _connect(self) -> tuple[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] | None:
        # Round robin, skipping a replica that refuses: the next one in turn takes the connection.
        first = self._next
        self._next = (self._next + 1) % len(self.backends)
        for offset in range(len(self.backends)):
            index = (first + offset) % len(self.backends)
            host, port = self.backends[index]
            try:
                streams = await asyncio.wait_for(asyncio.open_connection(host, port), _CONNECT_TIMEOUT)
            except (OSError, TimeoutError):
                continue
            return index, streams
        return None

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(_READ_SIZE):
                sink.write(data)
                await sink.drain()
        except OSError:
            pass
        finally:
            # Either side's end ends both: a reset replica resets the client's connection too.
            with contextlib.suppress(OSError):
                sink.close()

    def stop(self) -> None:
        """Close the listening socket and every connection, and join the thread. Safe to call more than once."""
        loop, thread = self._loop, self._thread
        self._thread = None
        if loop is None or thread is None:
            return
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(_STOP_TIMEOUT)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(loop.stop)
        thread.join(_STOP_TIMEOUT)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=_STOP_TIMEOUT)

    def __enter__(self) -> Balancer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
