"""Static types of the public surface, checked by ``mypy --strict`` in CI.

The ``assert_type`` calls are what the type checker verifies; at run time they do
nothing, so pytest also runs each function to check that the classes it returns are
the ones the types promise. No server is contacted: a run stream sends nothing
until its first pull, and each remote one is closed before it starts.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.stream import AsyncGraphRunStream, GraphRunStream
from typing_extensions import TypedDict, assert_type

from remote_graph import AsyncRemoteGraphRunStream, RemoteGraph, RemoteGraphRunStream, RunChunks

URL = "http://127.0.0.1:9"  # never contacted


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _local() -> CompiledStateGraph[Any, Any, Any, Any]:
    def step(state: State) -> dict[str, list[str]]:
        return {"steps": ["step"]}

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile()


def run_of(graph: CompiledStateGraph[Any, Any, Any, Any] | RemoteGraph) -> GraphRunStream:
    """Code written once for a local or a remote graph."""
    if isinstance(graph, RemoteGraph):
        assert_type(graph.stream_events({"steps": []}, version="v3"), RemoteGraphRunStream)
    else:
        assert_type(graph.stream_events({"steps": []}, version="v3"), GraphRunStream)
    run = graph.stream_events({"steps": []}, version="v3")
    assert_type(run, GraphRunStream)
    return run


async def arun_of(graph: CompiledStateGraph[Any, Any, Any, Any] | RemoteGraph) -> AsyncGraphRunStream:
    run = await graph.astream_events({"steps": []}, version="v3")
    assert_type(run, AsyncGraphRunStream)
    return run


def test_stream_events_v3_is_the_remote_run_stream() -> None:
    graph = RemoteGraph("linear", url=URL)
    with graph.stream_events({"steps": []}, version="v3") as run:
        assert_type(run, RemoteGraphRunStream)
        assert isinstance(run, RemoteGraphRunStream)
        assert_type(run.run_id, str | None)
        assert_type(run.thread_id, str)


async def test_astream_events_v3_is_the_async_remote_run_stream() -> None:
    graph = RemoteGraph("linear", url=URL)
    run = await graph.astream_events({"steps": []}, version="v3")
    assert_type(run, AsyncRemoteGraphRunStream)
    assert isinstance(run, AsyncRemoteGraphRunStream)
    async with run as entered:
        assert_type(entered, AsyncRemoteGraphRunStream)
        assert entered is run


def test_local_or_remote_graph_gives_a_graph_run_stream() -> None:
    local = run_of(_local())
    assert type(local) is GraphRunStream
    assert local.output == {"steps": ["step"]}
    with run_of(RemoteGraph("linear", url=URL)) as remote:
        assert isinstance(remote, RemoteGraphRunStream)


async def test_local_or_remote_graph_gives_an_async_graph_run_stream() -> None:
    local = await arun_of(_local())
    assert type(local) is AsyncGraphRunStream
    assert await local.output() == {"steps": ["step"]}
    remote = await arun_of(RemoteGraph("linear", url=URL))
    assert isinstance(remote, AsyncRemoteGraphRunStream)
    async with remote:
        pass


def test_a_join_is_a_run_stream_or_classic_chunks_with_a_cursor() -> None:
    graph = RemoteGraph("linear", url=URL)
    with graph.join("run-1", thread_id="t") as run:
        assert_type(run, RemoteGraphRunStream)
        assert isinstance(run, RemoteGraphRunStream)
        assert_type(run.cursor, str | None)
    chunks = graph.join("run-1", thread_id="t", version="v1", stream_mode="updates")
    assert_type(chunks, RunChunks)
    assert isinstance(chunks, RunChunks)
    assert_type(chunks.cursor, str | None)
    chunks.close()
