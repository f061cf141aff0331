"""Remote children inside local parents: thread identity and cancellation,
checked on the server."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import graphs
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from langgraph_sdk import get_sync_client

from remote_graph import RemoteGraph
from remote_graph.nesting import default_child_thread_id

pytestmark = pytest.mark.integration


def parent_with(child: RemoteGraph, state: Any) -> Any:
    g = StateGraph(state)
    g.add_node("child", child)
    g.add_edge(START, "child")
    return g.compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS)


def child_ns(run_events: list[dict[str, Any]]) -> str:
    return next(e["params"]["namespace"][0] for e in run_events if e["params"]["namespace"])


def test_child_thread_is_derived_from_a_non_uuid_parent_thread_and_the_task(server_url: str) -> None:
    parent = parent_with(RemoteGraph("gate", url=server_url), graphs.GateState)
    parent_thread = f"parent thread {uuid.uuid4().hex[:6]} #1"  # not a UUID
    config = {"configurable": {"thread_id": parent_thread}}
    paused = parent.stream_events({"x": 1, "answer": ""}, config, version="v3")
    ns = child_ns(list(paused))
    assert paused.interrupted
    child_thread = default_child_thread_id(parent_thread, ns)
    assert uuid.UUID(child_thread) and child_thread != parent_thread
    client = get_sync_client(url=server_url)
    assert client.threads.get_state(child_thread)["interrupts"]
    resumed = parent.stream_events(Command(resume="yes"), config, version="v3")
    assert resumed.output == {"x": 20, "answer": "yes"}
    # The resume ran on the same child thread: one paused and one resumed run there.
    assert len(client.runs.list(child_thread)) == 2
    assert client.threads.get_state(child_thread)["values"] == {"x": 20, "answer": "yes"}
    # A new turn is a new task, so a fresh child thread, as a local subgraph's namespace is.
    next_turn = parent.stream_events({"x": 1, "answer": ""}, config, version="v3")
    assert default_child_thread_id(parent_thread, child_ns(list(next_turn))) != child_thread


def test_child_thread_mapping_can_be_overridden(server_url: str) -> None:
    fixed = str(uuid.uuid4())
    seen: list[tuple[str, str]] = []

    def mapping(parent_thread: str, checkpoint_ns: str) -> str:
        seen.append((parent_thread, checkpoint_ns))
        return fixed

    parent = parent_with(RemoteGraph("linear", url=server_url, child_thread_id=mapping), graphs.LinearState)
    for x in (1, 2):
        parent.stream_events({"x": x, "log": []}, {"configurable": {"thread_id": "p"}}, version="v3").output
    assert [p for p, _ in seen] == ["p", "p"] and all(ns.startswith("child:") for _, ns in seen)
    # Both turns ran on the one thread the mapping named.
    assert [r["status"] for r in get_sync_client(url=server_url).runs.list(fixed)] == ["success", "success"]
    with pytest.raises(TypeError, match="child_thread_id"):
        RemoteGraph("linear", url=server_url, child_thread_id="not callable")  # type: ignore[arg-type]


def wait_for_status(server_url: str, thread_id: str, want: str, timeout: float = 10.0) -> list[str]:
    client = get_sync_client(url=server_url)
    deadline = time.monotonic() + timeout
    statuses: list[str] = []
    while time.monotonic() < deadline:
        statuses = [r["status"] for r in client.runs.list(thread_id)]
        if statuses and statuses[0] == want:
            break
        time.sleep(0.1)
    return statuses


def test_aborting_an_async_parent_cancels_the_remote_child_run(server_url: str) -> None:
    parent_thread = str(uuid.uuid4())

    async def go() -> str:
        parent = parent_with(RemoteGraph("slow", url=server_url), graphs.LinearState)
        run = await parent.astream_events(
            {"x": 50, "log": []}, {"configurable": {"thread_id": parent_thread}}, version="v3"
        )
        async for event in run:
            if event["params"]["namespace"]:
                ns = event["params"]["namespace"][0]
                break
        await run.abort()
        return str(ns)

    ns = asyncio.run(asyncio.wait_for(go(), 60))
    assert wait_for_status(server_url, default_child_thread_id(parent_thread, ns), "interrupted") == ["interrupted"]


def test_aborting_a_sync_parent_lets_the_child_finish_as_a_local_one_does(server_url: str) -> None:
    # langgraph gives a running sync node no signal: the parent's exit waits for it,
    # for a local child and a remote one alike.
    parent_thread = str(uuid.uuid4())
    parent = parent_with(RemoteGraph("slow", url=server_url), graphs.LinearState)
    with parent.stream_events({"x": 5, "log": []}, {"configurable": {"thread_id": parent_thread}}, version="v3") as run:
        for event in run:
            if event["params"]["namespace"]:
                ns = event["params"]["namespace"][0]
                break
    assert wait_for_status(server_url, default_child_thread_id(parent_thread, ns), "success") == ["success"]


def test_remote_graph_outside_a_parent_keeps_upstream_invoke(server_url: str) -> None:
    graph = RemoteGraph("linear", url=server_url)
    assert graph.invoke({"x": 1, "log": []}) == {"x": 20, "log": ["a", "b"]}
