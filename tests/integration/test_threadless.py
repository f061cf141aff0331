"""No thread left behind: a call made without a thread id leaves no thread on the server
once it ends (finished, failed, cancelled or abandoned), sync and async; a stream cut on
the way still resumes, and the thread goes once the run has ended. A local graph with
no thread keeps nothing either."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from remote_graph import RemoteGraph
from tests.integration.cutproxy import RESUME_CUT_BYTES, CuttingProxy
from tests.integration.lanes import LINEAR

pytestmark = pytest.mark.integration

# ``slow`` ticks for three seconds: long enough to be abandoned while it runs.
SLOW = {"x": 30, "log": []}


@contextlib.contextmanager
def call_thread(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The server thread the next thread-less call runs on (the id the client draws for it)."""
    thread_id = str(uuid.uuid4())
    with monkeypatch.context() as patched:
        patched.setattr("remote_graph._core.commands.uuid4", lambda: uuid.UUID(thread_id))
        yield thread_id


def thread_exists(server_url: str, thread_id: str) -> bool:
    with httpx.Client(base_url=server_url, timeout=10) as http:
        return http.get(f"/threads/{thread_id}").status_code == 200


def abandon(graph: RemoteGraph) -> None:
    with contextlib.closing(graph.stream(SLOW, stream_mode="custom")) as chunks:
        next(iter(chunks))


async def aabandon(graph: RemoteGraph) -> None:
    async with contextlib.aclosing(graph.astream(SLOW, stream_mode="custom")) as chunks:
        await anext(aiter(chunks))


async def acancelled(graph: RemoteGraph) -> None:
    task = asyncio.ensure_future(graph.ainvoke(SLOW))
    await asyncio.sleep(0.5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


ENDINGS: dict[str, tuple[str, Callable[[RemoteGraph], Any]]] = {
    "invoke": ("linear", lambda g: g.invoke(LINEAR)),
    "stream": ("linear", lambda g: list(g.stream(LINEAR, stream_mode=["values", "updates"]))),
    "v3": ("linear", lambda g: g.stream_events(LINEAR, version="v3").output),
    "failed": ("boom", lambda g: g.invoke(LINEAR)),
    "abandoned": ("slow", abandon),
    "ainvoke": ("linear", lambda g: asyncio.run(g.ainvoke(LINEAR))),
    "astream_events": ("linear", lambda g: asyncio.run(_events(g))),
    "afailed": ("boom", lambda g: asyncio.run(g.ainvoke(LINEAR))),
    "aabandoned": ("slow", lambda g: asyncio.run(aabandon(g))),
    "acancelled": ("slow", lambda g: asyncio.run(acancelled(g))),
}


async def _events(graph: RemoteGraph) -> list[Any]:
    return [event async for event in graph.astream_events(LINEAR, version="v2")]


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_call_without_a_thread_id_leaves_no_thread(
    ending: str, server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, call = ENDINGS[ending]
    with call_thread(monkeypatch) as thread_id:
        with contextlib.suppress(Exception):
            call(RemoteGraph(name, url=server_url))
    assert not thread_exists(server_url, thread_id)


def test_a_cut_stream_resumes_and_the_thread_goes_at_the_end(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run must get through: budgets that clear a resumed stream's repeat (cutproxy.py).
    with CuttingProxy(server_url, cut_range=RESUME_CUT_BYTES, seed=5) as proxy, call_thread(monkeypatch) as thread_id:
        chunks = list(RemoteGraph("ticks", url=proxy.url).stream({"n": 200}, stream_mode="custom"))
    assert proxy.cuts > 0
    local = list(_local("ticks").stream({"n": 200}, stream_mode="custom"))
    assert chunks == local
    assert not thread_exists(server_url, thread_id)


def test_a_named_thread_is_kept(server_url: str) -> None:
    thread_id = str(uuid.uuid4())
    RemoteGraph("linear", url=server_url).invoke(LINEAR, {"configurable": {"thread_id": thread_id}})
    assert thread_exists(server_url, thread_id)


def _local(name: str) -> Any:
    import graphs

    return graphs.BUILDERS[name]().compile()
