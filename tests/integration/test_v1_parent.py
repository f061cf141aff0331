"""A child inside a local parent run with plain ``invoke`` or v1/v2 ``stream``:
a local compiled child in one lane, a ``RemoteGraph`` of the same graph in the
other, sync and async, compared. The child's messages must be what a local
child's are in the parent's mode: string content, and token chunks in a parent
streaming ``messages``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import graphs
import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from remote_graph import RemoteGraph
from tests.integration.lanes import Lane, Scenarios, compare
from tests.integration.objects import versions_masked

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

ASK = {"messages": [("user", "add")]}


def child(lane: Lane, name: str) -> Any:
    if lane.kind == "local":
        return graphs.BUILDERS[name]().compile()
    return RemoteGraph(name, url=lane.server_url)


def parent_of(node: Any) -> Any:
    g = StateGraph(graphs.ChatState)
    g.add_node("child", node)
    g.add_edge(START, "child")
    return g.compile(checkpointer=InMemorySaver())


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def invoke(lane: Lane, graph: Any, input: Any) -> Any:
    if lane.flavour == "sync":
        return graph.invoke(input, thread())
    return lane.call(lambda: graph.ainvoke(input, thread()))


def stream(lane: Lane, graph: Any, input: Any, **kwargs: Any) -> list[Any]:
    if lane.flavour == "sync":
        return list(graph.stream(input, thread(), **kwargs))

    async def go(parts: AsyncIterator[Any]) -> list[Any]:
        return [part async for part in parts]

    return lane.call(lambda: go(graph.astream(input, thread(), **kwargs)))


def seg(value: Any) -> Any:
    return re.sub(r":[0-9a-f-]{8,}", ":*", value) if isinstance(value, str) else value


def message(m: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": type(m).__name__,
        "content": m.content,
        "response_metadata": m.response_metadata,
        "has_id": bool(m.id),
    }
    if getattr(m, "tool_calls", None):
        out["tool_calls"] = [(c["name"], c["args"], c["id"]) for c in m.tool_calls]  # type: ignore[attr-defined]
    if getattr(m, "tool_call_id", None):
        out["tool_call_id"] = m.tool_call_id  # type: ignore[attr-defined]
    if isinstance(m, AIMessageChunk):
        out["position"] = m.chunk_position
    return out


def meta(metadata: dict[str, Any]) -> dict[str, Any]:
    # Every key a local child's chunk carries (ids with their task ids masked, the
    # model's langchain-core release too: a remote child's is the server's).
    return {
        k: bool(v) if k == "thread_id" else versions_masked(v) if k == "lc_versions" else seg(v)
        for k, v in metadata.items()
    }


def compared(parts: list[tuple[tuple[str, ...], str, Any]]) -> list[Any]:
    """Parts as compared: each in order, as it came (no chunk merged away)."""
    return [normal(ns, mode, data) for ns, mode, data in parts]


def normal(ns: tuple[str, ...], mode: str, data: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"ns": [seg(s) for s in ns], "mode": mode}
    if mode == "messages":
        out["message"], out["meta"] = message(data[0]), meta(data[1])
    elif mode == "values":
        out["messages"] = [message(m) for m in data["messages"]]
    elif mode == "updates":
        out["updates"] = {node: [message(m) for m in (write or {}).get("messages", [])] for node, write in data.items()}
    return out


# --- plain invoke ------------------------------------------------------------------


@scenario
def invoke_returns_string_content(lane: Lane) -> Any:
    return {
        name: [message(m) for m in invoke(lane, parent_of(child(lane, name)), ASK)["messages"]]
        for name in ("chat", "agent")
    }


@scenario
def invoke_in_a_node_returns_string_content(lane: Lane) -> Any:
    sub = child(lane, "agent")

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": sub.invoke({"messages": state["messages"]})["messages"]}

    async def anode(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        # The config is passed on: before 3.11 an async node's context does not carry it.
        return {"messages": (await sub.ainvoke({"messages": state["messages"]}, config))["messages"]}

    out = invoke(lane, parent_of(node if lane.flavour == "sync" else anode), ASK)
    return [message(m) for m in out["messages"]]


# --- v1/v2 stream ------------------------------------------------------------------------


@scenario
def stream_messages_tokens_of_a_child(lane: Lane) -> Any:
    g = parent_of(child(lane, "chat"))
    out = {}
    for subgraphs in (False, True):
        parts = stream(lane, g, ASK, stream_mode="messages", subgraphs=subgraphs)
        rows = [(p[0], p[1]) if subgraphs else ((), p) for p in parts]
        out[str(subgraphs)] = [
            {"ns": [seg(s) for s in ns], "message": message(m), "meta": meta(md)} for ns, (m, md) in rows
        ]
    return out


@scenario
def stream_messages_of_an_agent_child(lane: Lane) -> Any:
    g = parent_of(child(lane, "agent"))
    out = {}
    for subgraphs in (False, True):
        parts = stream(lane, g, ASK, stream_mode="messages", subgraphs=subgraphs)
        out[str(subgraphs)] = compared([(p[0], "messages", p[1]) if subgraphs else ((), "messages", p) for p in parts])
    return out


@scenario
def stream_v2_messages_values_updates_in_order(lane: Lane) -> Any:
    g = parent_of(child(lane, "agent"))
    parts = stream(lane, g, ASK, stream_mode=["messages", "values", "updates"], subgraphs=True, version="v2")
    return compared([(p["ns"], p["type"], p["data"]) for p in parts])


@scenario
def stream_values_of_a_child_hold_string_content(lane: Lane) -> Any:
    g = parent_of(child(lane, "chat"))
    return [normal(ns, "values", data) for ns, data in stream(lane, g, ASK, stream_mode="values", subgraphs=True)]


@scenario
def stream_messages_of_a_child_called_in_a_node(lane: Lane) -> Any:
    sub = child(lane, "chat")

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": sub.invoke({"messages": state["messages"]})["messages"]}

    async def anode(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        # The config is passed on: before 3.11 an async node's context does not carry it.
        return {"messages": (await sub.ainvoke({"messages": state["messages"]}, config))["messages"]}

    g = parent_of(node if lane.flavour == "sync" else anode)
    return compared(
        [(ns, "messages", data) for ns, data in stream(lane, g, ASK, stream_mode="messages", subgraphs=True)]
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_v1_parent_local_child_equals_remote_child(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local
