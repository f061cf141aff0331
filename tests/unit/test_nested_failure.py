"""A remote child that fails inside a local parent: what it produced first still reaches the parent."""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any

import httpx
import pytest
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient
from typing_extensions import TypedDict

from remote_graph import RemoteGraph

BASE = "http://remote.test"


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]


def sse_body(*chunks: tuple[str, Any]) -> bytes:
    """A classic run's stream (a child in a classic parent runs classic): chunks, then the error."""
    out = []
    for seq, (mode, data) in enumerate(chunks, 1):
        out.append(f"event: {mode}\r\ndata: {json.dumps(data)}\r\nid: 17-{seq}\r\n\r\n")
    out.append('event: error\r\ndata: {"error": "ValueError", "message": "boom"}\r\n\r\n')
    return "".join(out).encode()


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A streamed body, read as the server's event stream is."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Any:
        yield self._body

    async def __aiter__(self) -> Any:
        yield self._body


def respond(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    if (request.method == "POST" and path.endswith("/runs/stream")) or path.endswith("/runs/R/stream"):
        tool = {"type": "tool", "content": "3", "tool_call_id": "c1", "id": "m1"}
        metadata = {"langgraph_node": "tools", "langgraph_checkpoint_ns": "tools:t1"}
        body = sse_body(
            ("values", {"messages": [], "log": []}),
            ("messages", [tool, metadata]),
            ("updates", {"tools": {"messages": [tool]}}),
        )
        return httpx.Response(
            200,
            stream=Body(body),
            headers={"content-type": "text/event-stream", "location": "/threads/T/runs/R/stream"},
        )
    if path.endswith("/runs/R"):
        return httpx.Response(200, json={"run_id": "R", "status": "error"})
    if path.endswith("/state"):
        return httpx.Response(
            200, json={"values": {}, "tasks": [{"id": "t", "name": "fail", "error": "ValueError('boom')"}]}
        )
    return httpx.Response(404, json={"detail": "Not Found"})


def remote_graph() -> RemoteGraph:
    transport = httpx.MockTransport(respond)
    return RemoteGraph(
        "agent",
        client=LangGraphClient(httpx.AsyncClient(transport=transport, base_url=BASE)),
        sync_client=SyncLangGraphClient(httpx.Client(transport=transport, base_url=BASE)),
    )


def sync_chunks() -> list[Any]:
    remote = remote_graph()

    def call(state: State, config: RunnableConfig) -> Any:
        return remote.invoke(state, config)

    graph = StateGraph(State).add_node("child", call).add_edge(START, "child").compile()
    chunks: list[Any] = []
    with pytest.raises(ValueError, match="boom"):
        for chunk in graph.stream({"messages": [], "log": []}, stream_mode=["messages", "updates"], subgraphs=True):
            chunks.append(chunk)
    return chunks


def async_chunks() -> list[Any]:
    remote = remote_graph()

    async def call(state: State, config: RunnableConfig) -> Any:
        return await remote.ainvoke(state, config)

    graph = StateGraph(State).add_node("child", call).add_edge(START, "child").compile()

    async def collect() -> list[Any]:
        chunks: list[Any] = []
        with pytest.raises(ValueError, match="boom"):
            async for chunk in graph.astream(
                {"messages": [], "log": []}, stream_mode=["messages", "updates"], subgraphs=True
            ):
                chunks.append(chunk)
        return chunks

    return asyncio.run(collect())


@pytest.mark.parametrize("collect", [sync_chunks, async_chunks], ids=["sync", "async"])
def test_a_failing_remote_child_delivers_its_returned_message_and_update_before_the_error(collect: Any) -> None:
    chunks = collect()
    child = [(mode, data) for ns, mode, data in chunks if ns and ns[0].startswith("child:")]
    assert [mode for mode, _ in child] == ["messages", "updates"]
    message = child[0][1][0]
    assert isinstance(message, ToolMessage) and message.content == "3" and message.id
