"""``_private.gather_chunked_reads`` and ``read_held_bytes_first`` on the installed HTTP stack.

A loopback server answers with a chunked body written in one go, so one
socket read holds many chunks. With the reader gathered, a read hands them
over as one block; the body is byte for byte what was sent, its end (last
chunk and trailer) is h11's, a body cut short or malformed is an httpx
protocol error, and the connection serves the next request. A change in the
HTTP stack that breaks the path to the reader fails here, not as a slow
client.

The async reads that take what the socket holds are checked the same way:
a read of bytes already there finishes without suspending, the body and
its end are as without them, and a stream they cannot reach is left alone.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from remote_graph._private import gather_chunked_reads, read_held_bytes_first

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
FRAMES = [f'event: custom\r\ndata: {{"i": {i}, "t": "é中😀"}}\r\n\r\n'.encode() for i in range(50)]


def chunked(frames: list[bytes], *, end: bool = True) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames)
    return body + (b"0\r\n\r\n" if end else b"")


class OneConnection:
    """A loopback server on its own thread that takes one connection and answers it (``_answer``).

    One connection only: a client that opens a second one fails the test's count.
    """

    def __init__(self) -> None:
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(10)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.connections += 1
        with conn:
            conn.settimeout(10)
            try:
                self._answer(conn)
            except OSError:
                return

    def _answer(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()
        self.thread.join(10)


class Server(OneConnection):
    """Answers each request on its connection with ``HEAD`` and the body; counts requests."""

    def __init__(self, body: bytes, *, close_after: bool = False) -> None:
        self.body = body
        self.close_after = close_after
        self.requests = 0
        super().__init__()

    def _answer(self, conn: socket.socket) -> None:
        buffer = b""
        while data := conn.recv(65536):
            buffer += data
            while b"\r\n\r\n" in buffer:
                _, buffer = buffer.split(b"\r\n\r\n", 1)
                self.requests += 1
                conn.sendall(HEAD + self.body)
                if self.close_after:
                    conn.shutdown(socket.SHUT_RDWR)
                    return


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server(chunked(FRAMES))
    yield s
    s.close()


@pytest.mark.timeout(30)
def test_sync_reads_come_as_blocks_and_the_connection_is_kept(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for _ in range(2):
            with client.stream("GET", "/stream") as response:
                assert gather_chunked_reads(response), "the h11 reader under httpx is out of reach"
                blocks = list(response.iter_raw())
            assert b"".join(blocks) == b"".join(FRAMES)
            assert len(blocks) < len(FRAMES) // 2, f"{len(blocks)} blocks for {len(FRAMES)} chunks"
        # The body ended as h11 ends one: the second request reused the connection.
        assert (server.connections, server.requests) == (1, 2)


@pytest.mark.timeout(30)
def test_async_reads_come_as_blocks_and_the_connection_is_kept(server: Server) -> None:
    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            for _ in range(2):
                async with client.stream("GET", "/stream") as response:
                    assert gather_chunked_reads(response), "the h11 reader under httpx is out of reach"
                    blocks = [block async for block in response.aiter_raw()]
                assert b"".join(blocks) == b"".join(FRAMES)
                assert len(blocks) < len(FRAMES) // 2

    asyncio.run(go())
    assert (server.connections, server.requests) == (1, 2)


@pytest.mark.timeout(30)
def test_a_body_cut_short_is_still_h11s_error() -> None:
    cut = Server(chunked(FRAMES, end=False)[:-7], close_after=True)
    try:
        with httpx.Client(base_url=cut.url, timeout=10) as client:
            with client.stream("GET", "/stream") as response:
                assert gather_chunked_reads(response)
                received = b""
                with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
                    for block in response.iter_raw():
                        received += block
        assert b"".join(FRAMES).startswith(received) and received
    finally:
        cut.close()


def test_a_malformed_chunk_is_an_httpx_protocol_error() -> None:
    bad = Server(chunked(FRAMES[:3]).replace(b"\r\n0\r\n", b"\r\nzz\r\n"), close_after=True)
    try:
        with httpx.Client(base_url=bad.url, timeout=10) as client:
            with client.stream("GET", "/stream") as response:
                assert gather_chunked_reads(response)
                with pytest.raises(httpx.RemoteProtocolError, match="malformed chunked body"):
                    for _ in response.iter_raw():
                        pass
    finally:
        bad.close()


def test_a_reader_is_gathered_once_and_a_mock_transport_is_left_alone(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        with client.stream("GET", "/stream") as response:
            assert gather_chunked_reads(response)
            assert not gather_chunked_reads(response)
            assert b"".join(response.iter_raw()) == b"".join(FRAMES)
    mock = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, content=b"data: x\n\n")))
    with mock, mock.stream("GET", "http://test/stream") as response:
        assert not gather_chunked_reads(response)
        assert response.read() == b"data: x\n\n"


def test_a_trailer_and_chunk_extensions_end_the_body_as_h11_does() -> None:
    body = chunked(FRAMES[:3]).replace(b"0\r\n\r\n", b"0\r\nx-trailer: yes\r\n\r\n")
    body = body.replace(b"\r\n", b";ext=1\r\n", 1)  # an extension on the first size line
    server = Server(body)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for _ in range(2):
                with client.stream("GET", "/stream") as response:
                    assert gather_chunked_reads(response)
                    assert b"".join(response.iter_raw()) == b"".join(FRAMES[:3])
        assert (server.connections, server.requests) == (1, 2)
    finally:
        server.close()


class SlowServer(OneConnection):
    """Sends the head and the first frames, then, once told, the rest of the body (or a cut)."""

    def __init__(self, *, cut: bool = False) -> None:
        self.cut = cut
        self.go = threading.Event()
        super().__init__()

    def _answer(self, conn: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            data = conn.recv(65536)
            if not data:
                return
            request += data
        conn.sendall(HEAD + chunked(FRAMES[:2], end=False))
        if self.go.wait(10):
            rest = chunked(FRAMES[2:])
            conn.sendall(rest[: len(rest) // 2] if self.cut else rest)

    def close(self) -> None:
        self.go.set()
        super().close()


def _now(awaitable: Any) -> Any:
    """The result of ``awaitable`` if it finishes without suspending; fails if it would wait."""
    try:
        awaitable.send(None)
    except StopIteration as done:
        return done.value
    awaitable.close()
    raise AssertionError("the read waited for the event loop")


@pytest.mark.timeout(30)
def test_async_reads_take_held_bytes_without_a_turn_of_the_loop() -> None:
    server = SlowServer()

    async def go() -> bytes:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            async with client.stream("GET", "/stream") as response:
                assert gather_chunked_reads(response)
                assert read_held_bytes_first(response), "the asyncio socket under httpx is out of reach"
                assert read_held_bytes_first(response)  # once wrapped, stays wrapped
                blocks = response.aiter_raw()
                received = await anext(blocks)  # the first frames, as they came
                server.go.set()
                await asyncio.sleep(0.3)  # the rest lands in the socket meanwhile
                received += _now(anext(blocks))
                async for block in blocks:  # the end: the peer's, through anyio's read
                    received += block
                return received

    try:
        assert asyncio.run(go()) == b"".join(FRAMES)
    finally:
        server.close()


@pytest.mark.timeout(30)
def test_a_body_cut_short_on_held_bytes_is_still_h11s_error() -> None:
    server = SlowServer(cut=True)

    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            async with client.stream("GET", "/stream") as response:
                assert gather_chunked_reads(response) and read_held_bytes_first(response)
                blocks = response.aiter_raw()
                received = await anext(blocks)
                server.go.set()
                await asyncio.sleep(0.3)
                with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
                    async for block in blocks:
                        received += block
                assert b"".join(FRAMES).startswith(received) and len(received) > len(b"".join(FRAMES[:2]))

    try:
        asyncio.run(go())
    finally:
        server.close()


@pytest.mark.timeout(30)
def test_async_held_reads_keep_the_connection_and_leave_sync_and_mocks_alone(server: Server) -> None:
    async def go() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            for _ in range(2):
                async with client.stream("GET", "/stream") as response:
                    assert read_held_bytes_first(response)
                    assert b"".join([block async for block in response.aiter_raw()]) == b"".join(FRAMES)
        mock = httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(200, content=b"x")))
        async with mock, mock.stream("GET", "http://test/stream") as response:
            assert not read_held_bytes_first(response)

    asyncio.run(go())
    assert (server.connections, server.requests) == (1, 2)
    other = Server(chunked(FRAMES))  # the fixture's server takes one connection
    try:
        with httpx.Client(base_url=other.url, timeout=10) as client, client.stream("GET", "/stream") as response:
            assert not read_held_bytes_first(response)
            assert b"".join(response.iter_raw()) == b"".join(FRAMES)
    finally:
        other.close()
