"""One RemoteGraph used from several event loops: successive ``asyncio.run()`` calls and threads.

These tests are plain functions that start their own loops, as an
application calling ``asyncio.run()`` more than once does.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import uuid
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from remote_graph import RemoteGraph

pytestmark = pytest.mark.integration

LINEAR = {"x": 1, "log": []}
DONE = {"x": 20, "log": ["a", "b"]}


def thread() -> Any:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


async def v3_output(graph: RemoteGraph, config: Any = None) -> Any:
    run = await graph.astream_events(LINEAR, config, version="v3")
    return await run.output()


async def ainvoke(graph: RemoteGraph, config: Any = None) -> Any:
    return await graph.ainvoke(LINEAR, config)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("call", [v3_output, ainvoke], ids=["astream_events_v3", "ainvoke"])
def test_one_graph_runs_in_two_successive_asyncio_runs(
    server_url: str, call: Callable[[RemoteGraph], Coroutine[Any, Any, Any]]
) -> None:
    graph = RemoteGraph("linear", url=server_url)
    assert asyncio.run(asyncio.wait_for(call(graph), 30)) == DONE
    assert asyncio.run(asyncio.wait_for(call(graph), 30)) == DONE
    graph.sync_client.close()  # type: ignore[union-attr]


@pytest.mark.timeout(60)
def test_state_written_in_one_loop_is_read_in_the_next(server_url: str) -> None:
    graph = RemoteGraph("linear", url=server_url)
    config = thread()
    assert asyncio.run(asyncio.wait_for(ainvoke(graph, config), 30)) == DONE
    assert asyncio.run(asyncio.wait_for(graph.aget_state(config), 30)).values == DONE
    asyncio.run(asyncio.wait_for(graph.aupdate_state(config, {"x": 7}), 30))
    assert asyncio.run(asyncio.wait_for(graph.aget_state(config), 30)).values["x"] == 7
    assert asyncio.run(asyncio.wait_for(v3_output(graph, config), 30)) == {"x": 20, "log": ["a", "b", "a", "b"]}
    graph.sync_client.close()  # type: ignore[union-attr]


@pytest.mark.timeout(120)
def test_four_threads_with_their_own_loops_use_one_graph_at_once(server_url: str) -> None:
    graph = RemoteGraph("linear", url=server_url)
    barrier = threading.Barrier(4, timeout=30)
    results: dict[int, tuple[Any, Any]] = {}
    errors: list[BaseException] = []

    async def both(i: int) -> None:
        barrier.wait()  # four loops are running before any request
        results[i] = await asyncio.gather(ainvoke(graph), v3_output(graph))

    def run(i: int) -> None:
        try:
            asyncio.run(asyncio.wait_for(both(i), 60))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"loop-{i}") for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert errors == []
    assert results == {i: [DONE, DONE] for i in range(4)}
    graph.sync_client.close()  # type: ignore[union-attr]


@pytest.mark.timeout(60)
def test_a_loops_clients_close_with_it_and_leave_no_socket(server_url: str) -> None:
    graph = RemoteGraph("linear", url=server_url)

    async def run_and_keep_client(graph: RemoteGraph) -> Any:
        assert await ainvoke(graph) == DONE
        assert await v3_output(graph) == DONE
        return graph.client

    gc.collect()  # what earlier tests left for the collector is theirs, not this graph's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        first = asyncio.run(asyncio.wait_for(run_and_keep_client(graph), 30))
        second = asyncio.run(asyncio.wait_for(run_and_keep_client(graph), 30))
        graph.sync_client.close()  # type: ignore[union-attr]
        del graph
        gc.collect()
    assert first is not second
    assert first.http.client.is_closed and second.http.client.is_closed
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
