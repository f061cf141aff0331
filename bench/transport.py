"""What reading one server-sent-event frame costs the client, per transport.

A loopback server in its own process answers ``GET`` with an event stream laid
out the way langgraph-api writes one: ``transfer-encoding: chunked``, one HTTP
chunk per SSE frame (about 250 bytes each), a few dozen chunks per write. Each
candidate client reads the whole stream, feeds every block it is handed to
``remote_graph._core.sse.SSEDecoder`` and checks the frame count; only the
client process's CPU time is counted (``time.process_time``: the server runs in
another process). The candidates run interleaved, in a rotating order, for
several rounds; the table gives the median CPU microseconds per frame and the
ratio to httpx sync ``iter_raw()`` (what the client uses today).

By default the server writes as fast as it can, so the client lags and each
64 KiB read carries a few hundred chunks (a catching-up reader, a replay).
``--live`` paces it, one chunk per write ``--gap`` microseconds apart, so the
client keeps up and each read carries one chunk (a live run): the cost per read
then counts once per frame.

Rows marked ``mem:`` read a recorded copy of the same response from memory, cut
as the client reads it, no socket: they split the per-chunk cost into h11's
event machinery, our own chunked-framing parser and the decoder. Prints a table,
the split of httpx sync's cost, and a last line ``TRANSPORT {json}``.

    nice -n 19 python bench/transport.py [--n 20000] [--rounds 7] [--burst 32]
    nice -n 19 python bench/transport.py --live [--n 1000] [--gap 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import h11  # noqa: E402
import httpcore  # noqa: E402
import httpx  # noqa: E402

from remote_graph._core.dechunk import Dechunker  # noqa: E402
from remote_graph._core.sse import SSEDecoder  # noqa: E402
from remote_graph._private import gather_chunked_reads  # noqa: E402

try:
    import aiohttp
except ImportError:  # optional: pip install aiohttp
    aiohttp = None  # type: ignore[assignment]
try:
    import httptools
except ImportError:  # optional: pip install httptools
    httptools = None  # type: ignore[assignment]

# Seconds for any single wait: a socket read, a server start, one stream.
TIMEOUT = 30.0
# What one read asks the socket for; httpcore's HTTP11Connection.READ_NUM_BYTES.
READ = 64 * 1024
HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"content-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-store\r\n"
    b"x-accel-buffering: no\r\n"
    b"transfer-encoding: chunked\r\n"
    b"\r\n"
)
cpu = time.process_time


# --- the stream ------------------------------------------------------------------


def build_frames(n: int) -> list[bytes]:
    """N SSE frames shaped like langgraph-api's ``custom`` events, about 250 bytes each."""
    frames = []
    for i in range(n):
        data = json.dumps(
            {
                "i": i,
                "msg": f"step {i} of the plan node, streamed with get_stream_writer()",
                "ns": [],
                "meta": {"node": "plan", "step": 1, "task_id": "6f1c2d9e-3b7a-4c21-9e55-0d8a4f6b2c11"},
            },
            separators=(",", ":"),
        )
        frames.append(f"event: custom\ndata: {data}\nid: {1733000000000 + i}-0\n\n".encode())
    return frames


def chunked(frames: list[bytes]) -> list[bytes]:
    """Each frame as its own HTTP/1.1 chunk."""
    return [b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames]


def bursts(frames: list[bytes], burst: int) -> list[bytes]:
    """The whole response, ``burst`` chunks per write; the head goes with the first burst."""
    chunks = chunked(frames)
    writes = [b"".join(chunks[i : i + burst]) for i in range(0, len(chunks), burst)]
    writes[0] = HEAD + writes[0]
    writes.append(b"0\r\n\r\n")
    return writes


# --- the server (its own process) ------------------------------------------------


def serve(pipe: Any, n: int, burst: int, gap: float) -> None:
    """Answer every request on every connection with the prepared stream, until the parent goes."""
    writes = bursts(build_frames(n), burst)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(1.0)
    pipe.send(listener.getsockname()[1])
    parent = os.getppid()
    while os.getppid() == parent:
        try:
            sock, _ = listener.accept()
        except TimeoutError:
            continue
        threading.Thread(target=answer, args=(sock, writes, gap), daemon=True).start()


def answer(sock: socket.socket, writes: list[bytes], gap: float) -> None:
    sock.settimeout(300.0)  # an idle keep-alive connection between rounds
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as uvicorn does
    buffer = b""
    with sock:
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                buffer = buffer.partition(b"\r\n\r\n")[2]
                for write in writes:
                    sock.sendall(write)
                    if gap:
                        time.sleep(gap)
        except OSError:
            return


def split_head(buffer: bytes) -> bytes | None:
    """The body bytes after a complete ``200`` chunked head, or None while the head is incomplete."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > 65536:
            raise ValueError("response head larger than 64 KiB")
        return None
    head = buffer[:end].lower()
    if not head.startswith(b"http/1.1 200") or b"transfer-encoding: chunked" not in head:
        raise ValueError(f"unexpected response head: {buffer[:end]!r}")
    return buffer[end + 4 :]


def h11_state(response: httpx.Response) -> h11.Connection:
    """The h11 connection under an httpx response (private attributes, httpx 0.28 / httpcore 1.0)."""
    stream: Any = response.stream  # httpx BoundSyncStream / BoundAsyncStream
    stream = stream._stream  # httpx ResponseStream / AsyncResponseStream
    stream = stream._httpcore_stream  # httpcore PoolByteStream
    stream = stream._stream  # httpcore HTTP11ConnectionByteStream
    return stream._connection._h11_state


def h11_leftover(response: httpx.Response) -> bytes:
    """Body bytes httpcore's h11 already read past the head."""
    return h11_state(response).trailing_data[0]


if httptools is not None:

    class _ToolsBody:
        """httptools callbacks: the chunks' data, and the end of the message."""

        __slots__ = ("parts", "done")

        def __init__(self) -> None:
            self.parts: list[bytes] = []
            self.done = False

        def on_body(self, body: bytes) -> None:
            self.parts.append(body)

        def on_message_complete(self) -> None:
            self.done = True


class _RawProtocol(asyncio.Protocol):
    """An asyncio Protocol: head, then our dechunker and the decoder, in ``data_received``."""

    def __init__(self, request: bytes, finished: asyncio.Future[None], decode: bool) -> None:
        self._request = request
        self._finished = finished
        self._head: bytes | None = b""
        self.body = Dechunker()
        self._feed = SSEDecoder().feed if decode else None
        self.frames = 0
        self.blocks = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self._request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        if self._head is not None:
            rest = split_head(self._head + data)
            if rest is None:
                self._head += data
                return
            self._head, data = None, rest
        block = self.body.feed(data)
        if block:
            self.blocks += 1
            if self._feed is not None:
                self.frames += len(self._feed(block))
        if self.body.done and not self._finished.done():
            self._finished.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._finished.done():
            self._finished.set_exception(exc or ConnectionError("closed before the last chunk"))


# --- the candidates ----------------------------------------------------------------

# One stream read: (CPU seconds, frames or chunks seen, blocks handed to the decoder).
Sample = tuple[float, int, int]


class Bench:
    def __init__(self, port: int, n: int, frames: list[bytes], reads: list[bytes] | None) -> None:
        from langgraph_sdk import get_client, get_sync_client

        self.n = n
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.url = self.base + "/stream"
        self.request = f"GET /stream HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: text/event-stream\r\n\r\n".encode()
        self.loop = asyncio.new_event_loop()
        # The SDK's own httpx clients, as remote_graph gets them (retries=5 transport, its timeouts).
        self.sync_client = get_sync_client(url=self.base, api_key=None, timeout=TIMEOUT).http.client
        self.async_client = get_client(url=self.base, api_key=None, timeout=TIMEOUT).http.client
        self.pool = httpcore.ConnectionPool()
        self.apool = httpcore.AsyncConnectionPool()
        self.core_ext = {"timeout": {"connect": TIMEOUT, "read": TIMEOUT, "write": TIMEOUT, "pool": TIMEOUT}}
        self.session = None
        if aiohttp is not None:

            async def session() -> Any:
                timeout = aiohttp.ClientTimeout(total=None, sock_connect=TIMEOUT, sock_read=TIMEOUT)
                return aiohttp.ClientSession(timeout=timeout)

            self.session = self.loop.run_until_complete(session())
        # The in-memory rows: the same response as the server sends, cut as the client reads it:
        # into 64 KiB reads when the client lags behind, into the server's writes when it keeps up.
        self.frames = frames
        wire = HEAD + b"".join(chunked(frames)) + b"0\r\n\r\n"
        self.wire_reads = reads or [wire[i : i + READ] for i in range(0, len(wire), READ)]
        self.body_reads = [self.wire_reads[0][len(HEAD) :], *self.wire_reads[1:]]
        dechunker = Dechunker()
        self.payload_blocks = [block for block in map(dechunker.feed, self.body_reads) if block]

    def close(self) -> None:
        self.sync_client.close()
        self.pool.close()

        async def aclose() -> None:
            await self.async_client.aclose()
            await self.apool.aclose()
            if self.session is not None:
                await self.session.close()

        try:
            self.loop.run_until_complete(asyncio.wait_for(aclose(), TIMEOUT))
        finally:
            self.loop.close()

    def run_async(self, make: Callable[[], Awaitable[Sample]]) -> Sample:
        return self.loop.run_until_complete(asyncio.wait_for(make(), 2 * TIMEOUT))

    def candidates(self) -> dict[str, Callable[[], Sample]]:
        rows: dict[str, Callable[[], Sample]] = {
            "httpx sync iter_raw": self.httpx_sync_raw,
            "httpx sync iter_bytes": self.httpx_sync_bytes,
            "httpx async aiter_raw": lambda: self.run_async(self.httpx_async_raw),
            "httpx + coalescing h11 reader sync": self.coalesced_sync,
            "httpx + coalescing h11 reader async": lambda: self.run_async(self.coalesced_async),
            "httpcore sync (no httpx)": self.httpcore_sync,
            "httpcore async (no httpx)": lambda: self.run_async(self.httpcore_async),
            "httpx head + network_stream sync": self.netstream_sync,
            "httpx head + network_stream async": lambda: self.run_async(self.netstream_async),
            "anyio network_stream.read only": lambda: self.run_async(lambda: self.netstream_read(scoped=True)),
            "anyio receive only, no fail_after": lambda: self.run_async(lambda: self.netstream_read(scoped=False)),
            "raw socket sync": lambda: self.raw_sync(decode=True),
            "raw socket sync, no decoder": lambda: self.raw_sync(decode=False),
            "raw socket, recv only": self.recv_only,
            "raw asyncio streams": lambda: self.run_async(self.raw_streams),
            "raw asyncio Protocol": lambda: self.run_async(lambda: self.raw_protocol(decode=True)),
            "raw asyncio Protocol, no decoder": lambda: self.run_async(lambda: self.raw_protocol(decode=False)),
        }
        if self.session is not None:
            rows["aiohttp iter_any"] = lambda: self.run_async(self.aiohttp_any)
            rows["aiohttp iter_chunks"] = lambda: self.run_async(self.aiohttp_chunks)
        if httptools is not None:
            rows["httptools sync"] = self.httptools_sync
            rows["httptools asyncio streams"] = lambda: self.run_async(self.httptools_async)
        rows["mem: h11 events only"] = self.mem_h11
        rows["mem: our dechunker only"] = self.mem_dechunk
        if httptools is not None:
            rows["mem: httptools only"] = self.mem_httptools
        rows["mem: decoder, one call per frame"] = self.mem_decoder_frames
        rows["mem: decoder, one call per read"] = self.mem_decoder_blocks
        return rows

    # httpx, as the client reads today, and its layers

    def httpx_sync_raw(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        with self.sync_client.stream("GET", self.url) as response:
            for block in response.iter_raw():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    def httpx_sync_bytes(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        with self.sync_client.stream("GET", self.url) as response:
            for block in response.iter_bytes():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    async def httpx_async_raw(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        async with self.async_client.stream("GET", self.url) as response:
            async for block in response.aiter_raw():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    def coalesced_sync(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        with self.sync_client.stream("GET", self.url) as response:
            assert gather_chunked_reads(response), "the h11 reader under httpx is out of reach"
            for block in response.iter_raw():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    async def coalesced_async(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        async with self.async_client.stream("GET", self.url) as response:
            assert gather_chunked_reads(response), "the h11 reader under httpx is out of reach"
            async for block in response.aiter_raw():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    def httpcore_sync(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        with self.pool.stream("GET", self.url, extensions=self.core_ext) as response:
            for block in response.iter_stream():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    async def httpcore_async(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        async with self.apool.stream("GET", self.url, extensions=self.core_ext) as response:
            async for block in response.aiter_stream():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    # httpx sends the request and reads the head; the body is read off its network stream

    def netstream_sync(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        request = self.sync_client.build_request("GET", self.url)
        response = self.sync_client.send(request, stream=True)
        try:
            stream = response.extensions["network_stream"]
            timeout = request.extensions["timeout"]["read"]
            body = Dechunker()
            data = h11_leftover(response)
            while True:
                block = body.feed(data)
                if block:
                    blocks += 1
                    frames += len(feed(block))
                if body.done:
                    break
                data = stream.read(READ, timeout)
                if not data:
                    raise ConnectionError("closed before the last chunk")
        finally:
            response.close()  # h11 never saw the body: httpcore closes the connection
        return cpu() - start, frames, blocks

    async def netstream_async(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        request = self.async_client.build_request("GET", self.url)
        response = await self.async_client.send(request, stream=True)
        try:
            stream = response.extensions["network_stream"]
            timeout = request.extensions["timeout"]["read"]
            body = Dechunker()
            data = h11_leftover(response)
            while True:
                block = body.feed(data)
                if block:
                    blocks += 1
                    frames += len(feed(block))
                if body.done:
                    break
                data = await stream.read(READ, timeout)
                if not data:
                    raise ConnectionError("closed before the last chunk")
        finally:
            await response.aclose()
        return cpu() - start, frames, blocks

    async def netstream_read(self, scoped: bool) -> Sample:
        """httpcore's async network stream read alone: ``read`` (anyio ``fail_after`` + ``receive``) or ``receive``."""
        reads, tail = 0, b""
        start = cpu()
        request = self.async_client.build_request("GET", self.url)
        response = await self.async_client.send(request, stream=True)
        try:
            stream = response.extensions["network_stream"]
            timeout = request.extensions["timeout"]["read"]
            read = stream.read if scoped else stream._stream.receive
            data = h11_leftover(response)
            while True:
                tail = (tail + data[-7:])[-7:]
                if tail == b"\r\n0\r\n\r\n":
                    break
                data = await (read(READ, timeout) if scoped else read(READ))
                if not data:
                    raise ConnectionError("closed before the last chunk")
                reads += 1
        finally:
            await response.aclose()
        return cpu() - start, self.n, reads

    # our own HTTP/1.1 reading on a plain socket

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(self.request)
        return sock

    def raw_sync(self, decode: bool) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        with self.connect() as sock:
            recv = sock.recv
            head = b""
            while (data := split_head(head)) is None:
                more = recv(READ)
                if not more:
                    raise ConnectionError("closed before the response head")
                head += more
            body = Dechunker()
            while True:
                block = body.feed(data)
                if block:
                    blocks += 1
                    if decode:
                        frames += len(feed(block))
                if body.done:
                    break
                data = recv(READ)
                if not data:
                    raise ConnectionError("closed before the last chunk")
        return cpu() - start, frames if decode else body.chunks, blocks

    def recv_only(self) -> Sample:
        """Socket reads alone: no HTTP parsing, no decoding; the end is the last chunk's bytes."""
        reads, tail = 0, b""
        start = cpu()
        with self.connect() as sock:
            recv = sock.recv
            while tail != b"\r\n0\r\n\r\n":
                data = recv(READ)
                if not data:
                    raise ConnectionError("closed before the last chunk")
                reads += 1
                tail = (tail + data[-7:])[-7:]
        return cpu() - start, self.n, reads

    async def raw_streams(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(self.request)
            read = reader.read
            head = b""
            while (data := split_head(head)) is None:
                more = await asyncio.wait_for(read(READ), TIMEOUT)
                if not more:
                    raise ConnectionError("closed before the response head")
                head += more
            body = Dechunker()
            while True:
                block = body.feed(data)
                if block:
                    blocks += 1
                    frames += len(feed(block))
                if body.done:
                    break
                async with asyncio.timeout(TIMEOUT):
                    data = await read(READ)
                if not data:
                    raise ConnectionError("closed before the last chunk")
        finally:
            writer.close()
        return cpu() - start, frames, blocks

    async def raw_protocol(self, decode: bool) -> Sample:
        start = cpu()
        finished: asyncio.Future[None] = self.loop.create_future()
        transport, protocol = await self.loop.create_connection(
            lambda: _RawProtocol(self.request, finished, decode), "127.0.0.1", self.port
        )
        try:
            await asyncio.wait_for(finished, TIMEOUT)
        finally:
            transport.close()
        count = protocol.frames if decode else protocol.body.chunks
        return cpu() - start, count, protocol.blocks

    # other clients

    async def aiohttp_any(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        async with self.session.get(self.url) as response:  # type: ignore[union-attr]
            async for block in response.content.iter_any():
                blocks += 1
                frames += len(feed(block))
        return cpu() - start, frames, blocks

    async def aiohttp_chunks(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        async with self.session.get(self.url) as response:  # type: ignore[union-attr]
            async for block, _ in response.content.iter_chunks():
                if block:
                    blocks += 1
                    frames += len(feed(block))
        return cpu() - start, frames, blocks

    def httptools_sync(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        body = _ToolsBody()
        parser = httptools.HttpResponseParser(body)
        parts = body.parts
        with self.connect() as sock:
            recv = sock.recv
            while not body.done:
                data = recv(READ)
                if not data:
                    raise ConnectionError("closed before the last chunk")
                parser.feed_data(data)
                if parts:
                    block = parts[0] if len(parts) == 1 else b"".join(parts)
                    parts.clear()
                    blocks += 1
                    frames += len(feed(block))
        if parser.get_status_code() != 200:
            raise ValueError("unexpected status")
        return cpu() - start, frames, blocks

    async def httptools_async(self) -> Sample:
        feed, frames, blocks = SSEDecoder().feed, 0, 0
        start = cpu()
        body = _ToolsBody()
        parser = httptools.HttpResponseParser(body)
        parts = body.parts
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(self.request)
            read = reader.read
            while not body.done:
                async with asyncio.timeout(TIMEOUT):
                    data = await read(READ)
                if not data:
                    raise ConnectionError("closed before the last chunk")
                parser.feed_data(data)
                if parts:
                    block = parts[0] if len(parts) == 1 else b"".join(parts)
                    parts.clear()
                    blocks += 1
                    frames += len(feed(block))
        finally:
            writer.close()
        return cpu() - start, frames, blocks

    # the same response from memory: the parts of the per-chunk cost

    def mem_h11(self) -> Sample:
        """h11's client side over 64 KiB reads, ``bytes(event.data)`` per Data event, as httpcore does."""
        events = 0
        start = cpu()
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="GET", target="/stream", headers=[("host", "127.0.0.1")]))
        conn.send(h11.EndOfMessage())
        reads = iter(self.wire_reads)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(next(reads))
            elif type(event) is h11.Data:
                bytes(event.data)
                events += 1
            elif type(event) is h11.EndOfMessage:
                break
        # A chunk cut by a read boundary comes as two Data events.
        return cpu() - start, min(events, self.n), events

    def mem_dechunk(self) -> Sample:
        start = cpu()
        body = Dechunker()
        for data in self.body_reads:
            body.feed(data)
        return cpu() - start, body.chunks, len(self.body_reads)

    def mem_httptools(self) -> Sample:
        start = cpu()
        body = _ToolsBody()
        parser = httptools.HttpResponseParser(body)
        parts = body.parts
        for data in self.wire_reads:
            parser.feed_data(data)
            if parts:
                b"".join(parts)
                parts.clear()
        return cpu() - start, self.n if body.done else 0, len(self.wire_reads)

    def mem_decoder_frames(self) -> Sample:
        feed, frames = SSEDecoder().feed, 0
        start = cpu()
        for frame in self.frames:
            frames += len(feed(frame))
        return cpu() - start, frames, len(self.frames)

    def mem_decoder_blocks(self) -> Sample:
        feed, frames = SSEDecoder().feed, 0
        start = cpu()
        for block in self.payload_blocks:
            frames += len(feed(block))
        return cpu() - start, frames, len(self.payload_blocks)


# --- the run ---------------------------------------------------------------------------


def start_server(n: int, burst: int, gap: float) -> tuple[Any, int]:
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=serve, args=(sender, n, burst, gap), daemon=True)
    process.start()
    if not receiver.poll(TIMEOUT):
        stop_server(process)
        raise RuntimeError(f"the loopback server did not start within {TIMEOUT:.0f} s")
    return process, receiver.recv()


def stop_server(process: Any) -> None:
    process.terminate()
    process.join(5)
    if process.is_alive():
        process.kill()
        process.join(5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, help="frames per stream (default 20,000; --live: 1,000)")
    parser.add_argument("--rounds", type=int, help="rounds; each candidate once per round (default 7; --live: 5)")
    parser.add_argument("--burst", type=int, help="chunks per server write (default 32; --live: 1)")
    parser.add_argument(
        "--live",
        action="store_true",
        help="a paced stream the client keeps up with: one chunk per write, --gap apart",
    )
    parser.add_argument("--gap", type=float, default=200.0, help="microseconds between writes with --live")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds; no new round starts after it")
    args = parser.parse_args(argv)
    n = args.n or (1_000 if args.live else 20_000)
    args.rounds = args.rounds or (5 if args.live else 7)
    args.burst = args.burst or (1 if args.live else 32)
    gap = args.gap / 1e6 if args.live else 0.0
    began = time.monotonic()
    process, port = start_server(n, args.burst, gap)
    samples: dict[str, list[float]] = {}
    blocks: dict[str, int] = {}
    try:
        frames = build_frames(n)
        bench = Bench(port, n, frames, bursts(frames, args.burst) if args.live else None)
        try:
            rows = bench.candidates()
            names = list(rows)
            for name in names:  # one warm-up read each: connections, imports, caches
                rows[name]()
            rounds = 0
            for r in range(args.rounds):
                if rounds and time.monotonic() - began > args.budget:
                    print(f"budget of {args.budget:.0f} s spent: stopping after {rounds} rounds", flush=True)
                    break
                shift = r % len(names)
                for name in names[shift:] + names[:shift]:
                    gc.collect()
                    seconds, count, seen = rows[name]()
                    if count != n:
                        raise AssertionError(f"{name}: {count} frames, expected {n}")
                    samples.setdefault(name, []).append(seconds / n * 1e6)
                    blocks[name] = seen
                rounds += 1
                print(f"round {rounds}/{args.rounds} done ({time.monotonic() - began:.0f} s)", flush=True)
        finally:
            bench.close()
    finally:
        stop_server(process)

    base = statistics.median(samples["httpx sync iter_raw"])
    report: dict[str, Any] = {}
    print()
    pacing = f", {args.gap:.0f} us apart (live)" if args.live else " (as fast as it goes)"
    print(f"{n:,} frames per stream, {args.burst} chunks per server write{pacing}, {rounds} rounds; client CPU only")
    print(f"{'candidate':40} {'us/frame':>9} {'x sync':>7} {'min':>7} {'max':>7} {'blocks':>7}")
    for name, values in samples.items():
        median = statistics.median(values)
        report[name] = {
            "us_per_frame": round(median, 3),
            "ratio": round(median / base, 3),
            "min": round(min(values), 3),
            "max": round(max(values), 3),
            "blocks": blocks[name],
        }
        print(f"{name:40} {median:9.2f} {median / base:7.2f} {min(values):7.2f} {max(values):7.2f} {blocks[name]:7d}")

    def med(name: str) -> float:
        return report[name]["us_per_frame"]

    split = {
        "socket reads": med("raw socket, recv only"),
        "h11 events": med("mem: h11 events only"),
        "decoder, per chunk": med("mem: decoder, one call per frame"),
        "httpcore's layers": med("httpcore sync (no httpx)")
        - med("raw socket, recv only")
        - med("mem: h11 events only")
        - med("mem: decoder, one call per frame"),
        "httpx's wrappers": med("httpx sync iter_raw") - med("httpcore sync (no httpx)"),
    }
    print()
    print(f"httpx sync iter_raw, {base:.2f} us/frame, split (medians; the last two are differences):")
    for part, value in split.items():
        print(f"  {part:22} {value:6.2f} us  {value / base:6.1%}")
    print()
    summary = {
        "n": n,
        "rounds": rounds,
        "burst": args.burst,
        "gap_us": args.gap if args.live else 0,
        "seconds": round(time.monotonic() - began, 1),
        "candidates": report,
        "split_httpx_sync": {k: round(v, 3) for k, v in split.items()},
    }
    print("TRANSPORT " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
