"""A client closed under a run: the run's cleanup ends quietly, and a new call fails saying why.

httpx raises a bare ``RuntimeError`` for a request on a closed client. A run
stream left open past its client's ``close()`` (a generator collected late, a
``with`` block of the client that ended first) still runs its cleanup, which
sends the cancel; and a call made on a closed client must be a ``RemoteGraphError``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client, get_sync_client

from remote_graph import RemoteConnectionError, RemoteGraph
from tests.fake_servers import ScriptedRuns, sse_event


def _endless(stop: threading.Event) -> Iterator[bytes]:
    yield sse_event("values", {"x": 1}, 1)
    deadline = time.monotonic() + 10
    while not stop.is_set() and time.monotonic() < deadline:
        yield b": heartbeat\n\n"
        time.sleep(0.05)


@pytest.mark.timeout(30)
def test_a_run_abandoned_after_its_sync_client_was_closed_ends_quietly() -> None:
    stop = threading.Event()
    with ScriptedRuns(lambda: _endless(stop)) as server:
        client = get_sync_client(url=server.url)
        graph = RemoteGraph("g", sync_client=client)
        run = graph.stream_events({"x": 0}, version="v3")
        assert next(iter(run))["method"] == "values"
        client.http.client.close()
        run.abort()  # its cancel finds the client closed: no RuntimeError
        stop.set()
        with pytest.raises(RemoteConnectionError, match="the HTTP client was closed"):
            graph.invoke({"x": 0})


@pytest.mark.timeout(30)
def test_a_run_abandoned_after_its_async_client_was_closed_ends_quietly() -> None:
    stop = threading.Event()

    async def main(url: str) -> None:
        client = get_client(url=url)
        graph = RemoteGraph("g", client=client)
        run = await graph.astream_events({"x": 0}, version="v3")
        assert (await run.__aiter__().__anext__())["method"] == "values"
        await client.http.client.aclose()
        await run.abort()
        stop.set()
        with pytest.raises(RemoteConnectionError, match="the HTTP client was closed"):
            await graph.ainvoke({"x": 0})

    with ScriptedRuns(lambda: _endless(stop)) as server:
        asyncio.run(main(server.url))
