"""The SDK clients of one RemoteGraph: one per event loop, bounded by its timeouts, closed with their loop."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph import RemoteGraph, Timeouts

URL = "http://127.0.0.1:9"  # never contacted by these tests


async def current_client(graph: RemoteGraph) -> LangGraphClient:
    return graph._validate_client()


@pytest.fixture
def no_unraisable(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Fail on exceptions raised where nothing can catch them (finalizers, ``__del__``)."""
    seen: list[Any] = []
    gc.collect()  # what earlier tests left for the collector is theirs, not this test's
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield seen
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert seen == []


def test_each_event_loop_gets_its_own_async_client(no_unraisable: list[Any]) -> None:
    graph = RemoteGraph("linear", url=URL)
    first = asyncio.run(current_client(graph))
    second = asyncio.run(current_client(graph))
    assert first is not second
    # Built clients are closed when their loop shuts down.
    assert first.http.client.is_closed and second.http.client.is_closed

    async def twice() -> tuple[LangGraphClient, LangGraphClient, LangGraphClient | None]:
        return graph._validate_client(), await current_client(graph), graph.client

    a, b, c = asyncio.run(twice())
    assert a is b is c
    graph._validate_sync_client().close()


def test_a_given_client_serves_the_first_loop_and_other_loops_get_a_copy(no_unraisable: list[Any]) -> None:
    given = LangGraphClient(httpx.AsyncClient(base_url=URL, headers={"x-api-key": "k", "x-extra": "e"}))
    graph = RemoteGraph("linear", client=given, timeouts=Timeouts(request=3, read=4))
    assert graph.client is given  # outside a loop, before any: the one the first loop will use
    assert asyncio.run(current_client(graph)) is given
    other = asyncio.run(current_client(graph))
    assert other is not given
    http = other.http.client
    assert http.base_url == given.http.client.base_url
    assert http.headers["x-api-key"] == "k" and http.headers["x-extra"] == "e"
    assert http.timeout == httpx.Timeout(3, read=4)
    # The caller's client is the caller's to close; the copy was closed with its loop.
    assert not given.http.client.is_closed and http.is_closed
    asyncio.run(given.aclose())
    with pytest.raises(ValueError, match="Sync client is not initialized"):
        graph._validate_sync_client()


def test_built_clients_follow_the_graphs_timeouts(no_unraisable: list[Any]) -> None:
    graph = RemoteGraph("linear", url=URL, timeouts=Timeouts(request=2, read=5))
    expected = httpx.Timeout(2, read=5)
    sync = graph._validate_sync_client()
    assert sync.http.client.timeout == expected
    assert asyncio.run(current_client(graph)).http.client.timeout == expected
    sync.close()


def test_a_given_sync_client_is_used_as_is() -> None:
    given = SyncLangGraphClient(httpx.Client(base_url=URL))
    graph = RemoteGraph("linear", sync_client=given)
    assert graph.sync_client is given and graph._validate_sync_client() is given
    with pytest.raises(ValueError, match="Async client is not initialized"):
        asyncio.run(current_client(graph))
    assert graph.client is None
    given.close()


def test_a_loop_closed_without_shutting_down_is_forgotten_without_raising(no_unraisable: list[Any]) -> None:
    graph = RemoteGraph("linear", url=URL)
    loop = asyncio.new_event_loop()
    stale = loop.run_until_complete(current_client(graph))
    loop.close()  # no shutdown_asyncgens(): the client could not be closed on its loop
    fresh = asyncio.run(current_client(graph))
    assert fresh is not stale
    assert loop not in graph._clients._loops
    graph._validate_sync_client().close()


def test_a_collected_graph_closes_its_clients_on_their_loop(no_unraisable: list[Any]) -> None:
    async def main() -> bool:
        graph = RemoteGraph("linear", url=URL)
        http = graph._validate_client().http.client
        graph._validate_sync_client().close()
        del graph
        gc.collect()
        for _ in range(3):  # the loop runs the scheduled aclose()
            await asyncio.sleep(0)
        return http.is_closed

    assert asyncio.run(main())


@pytest.mark.timeout(30)
def test_four_threads_with_four_loops_at_once_get_four_clients(no_unraisable: list[Any]) -> None:
    graph = RemoteGraph("linear", url=URL)
    barrier = threading.Barrier(4, timeout=10)
    clients: dict[int, LangGraphClient] = {}
    errors: list[BaseException] = []

    async def meet(i: int) -> None:
        barrier.wait()  # all four loops are running now
        clients[i] = graph._validate_client()
        assert graph._validate_client() is clients[i]
        barrier.wait()

    def run(i: int) -> None:
        try:
            asyncio.run(meet(i))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert errors == []
    assert len({id(client) for client in clients.values()}) == 4
    assert all(client.http.client.is_closed for client in clients.values())
    graph._validate_sync_client().close()


def test_copies_share_the_clients_unless_their_settings_change() -> None:
    graph = RemoteGraph("linear", url=URL)
    same = graph.with_config({"tags": ["t"]})
    assert same._clients is graph._clients and same.sync_client is graph.sync_client
    slower = graph.copy({"timeouts": Timeouts(request=60, read=60)})
    assert slower._clients is not graph._clients
    assert slower._validate_sync_client().http.client.timeout == httpx.Timeout(60, read=60)
    given = SyncLangGraphClient(httpx.Client(base_url=URL))
    other = graph.copy({"sync_client": given})
    assert other.sync_client is given and graph.sync_client is not given
    for client in (graph.sync_client, slower.sync_client, given):
        assert client is not None
        client.close()
