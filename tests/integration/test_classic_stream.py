"""Classic ``stream`` / ``astream`` in every ``stream_mode``: the local compiled graph and
``RemoteGraph``, sync and async, must yield the same chunks (see ``objects``):
``(AIMessageChunk, metadata)`` pairs in ``messages`` mode, ``Interrupt``s inside
``values`` and ``updates`` chunks, namespaces as tuples with ``subgraphs=True``,
``{"type", "ns", "data"}`` parts with ``version="v2"``, and a stream left early
leaves nothing running.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import (
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langgraph.types import Command

from tests.integration.lanes import (
    GATE,
    LINEAR,
    Lane,
    Scenarios,
    compare,
    lanes_server_url,
)
from tests.integration.objects import in_task_order, objects

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

ALL_MODES = ("values", "updates", "messages", "custom", "debug", "tasks", "checkpoints")


def ask(text: str = "compute") -> dict[str, Any]:
    """A fresh input: ``add_messages`` gives an input message its id in place."""
    return {"messages": [HumanMessage(text)]}


def parts(chunks: list[Any], *, modes: bool, subgraphs: bool) -> list[tuple[Any, str | None, Any]]:
    """v1 chunks as ``(namespace, mode, data)``, whatever their shape."""
    out = []
    for chunk in chunks:
        ns: Any = ()
        mode = None
        if subgraphs:
            ns, *rest = chunk
            chunk = tuple(rest) if modes else rest[0]
        if modes:
            mode, chunk = chunk
        out.append((ns, mode, chunk))
    return out


def tool_call_of(data: Any) -> str | None:
    """The tool call a chunk of a prebuilt agent's tools step belongs to (each call is a task)."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], BaseMessage):
        message, metadata = data
        if metadata.get("langgraph_node") == "tools" and isinstance(message, ToolMessage):
            return message.tool_call_id
        return None
    if isinstance(data, dict) and isinstance(data.get("tools"), dict):
        messages = data["tools"].get("messages") or []
        return messages[0].tool_call_id if messages and isinstance(messages[0], ToolMessage) else None
    return None


def tools_in_order(chunks: list[Any], *, modes: bool = False, subgraphs: bool = False) -> list[Any]:
    """A prebuilt agent's chunks with its two side-by-side tool calls in call order."""
    shaped = parts(chunks, modes=modes, subgraphs=subgraphs)
    ordered = in_task_order(list(zip(shaped, chunks)), lambda pair: tool_call_of(pair[0][2]))
    return [chunk for _, chunk in ordered]


def merged_messages(pairs: list[Any]) -> list[Any]:
    """Each streamed message's chunks added up, as a caller accumulates them."""
    merged: dict[Any, Any] = {}
    for message, _ in pairs:
        if isinstance(message, AIMessageChunk):
            merged[message.id] = merged[message.id] + message if message.id in merged else message
    return [
        {"tool_calls": m.tool_calls, "content": m.content, "invalid": m.invalid_tool_calls} for m in merged.values()
    ]


# --- one mode at a time ----------------------------------------------------------------


@scenario
def stream_values(lane: Lane) -> Any:
    return {name: lane.stream(lane.graph(name), LINEAR, stream_mode="values") for name in ("linear", "nested")}


@scenario
def stream_updates(lane: Lane) -> Any:
    return {name: lane.stream(lane.graph(name), LINEAR, stream_mode="updates") for name in ("linear", "nested")}


@scenario
def stream_default_mode(lane: Lane) -> Any:
    return {
        "linear": lane.stream(lane.graph("linear"), LINEAR),
        "nested": lane.stream(lane.graph("nested"), LINEAR),
        "react": tools_in_order(lane.stream(lane.graph("react"), ask())),
    }


@scenario
def stream_messages_of_a_chat_model(lane: Lane) -> Any:
    return lane.stream(lane.graph("chat"), ask(), stream_mode="messages")


@scenario
def stream_messages_of_one_model_call_share_their_metadata(lane: Lane) -> Any:
    # Locally every token of one model call carries the same metadata dict
    # (the messages handler's); which pairs share one is compared.
    pairs = lane.stream(lane.graph("react"), ask(), stream_mode="messages")
    firsts: list[Any] = []
    for _chunk, metadata in pairs:
        firsts.append(next(i for i, (_, seen) in enumerate(pairs) if seen is metadata))
    return firsts


@scenario
def stream_messages_of_a_prebuilt_agent(lane: Lane) -> Any:
    pairs = tools_in_order(lane.stream(lane.graph("react"), ask(), stream_mode="messages"))
    return {"pairs": pairs, "merged": merged_messages(pairs)}


@scenario
def stream_messages_of_returned_messages(lane: Lane) -> Any:
    # toolflow's agent returns its tool call without streaming it; bare_agent streams nothing.
    return {
        name: lane.stream(lane.graph(name), ask(), stream_mode="messages")
        for name in ("toolflow", "bare_agent", "agent")
    }


@scenario
def stream_custom(lane: Lane) -> Any:
    ticks = lane.stream(lane.graph("ticks"), {"n": 5, "turns": []}, stream_mode="custom")
    fanned = lane.stream(lane.graph("custom"), {"n": 3, "results": []}, stream_mode="custom")
    # The three workers run side by side: their events come in any order.
    return {
        "ticks": ticks,
        "plan": [e for e in fanned if "i" in e],
        "workers": sorted(e["worker"] for e in fanned if "worker" in e),
    }


@scenario
def stream_debug(lane: Lane) -> Any:
    return {
        name: lane.stream(lane.graph(name), GATE if name == "gate" else LINEAR, stream_mode="debug")
        for name in ("linear", "gate")
    }


@scenario
def stream_tasks(lane: Lane) -> Any:
    # boom's task result carries its error, then the stream raises it.
    return {
        name: lane.stream_caught(lane.graph(name), GATE if name == "gate" else LINEAR, stream_mode="tasks")
        for name in ("linear", "gate", "boom")
    }


@scenario
def stream_checkpoints(lane: Lane) -> Any:
    return {
        name: lane.stream(lane.graph(name), GATE if name == "gate" else LINEAR, stream_mode="checkpoints")
        for name in ("linear", "gate")
    }


# --- lists of modes, subgraphs, v2 parts --------------------------------------------------------


@scenario
def stream_a_list_of_modes(lane: Lane) -> Any:
    react = lane.stream(lane.graph("react"), ask(), stream_mode=["values", "updates", "messages", "custom"])
    linear = lane.stream(lane.graph("linear"), LINEAR, stream_mode=["updates", "values", "checkpoints", "tasks"])
    return {
        "react": tools_in_order(react, modes=True),
        "linear": linear,
        "one": lane.stream(lane.graph("linear"), LINEAR, stream_mode=["values"]),
    }


@scenario
def stream_every_mode_at_once(lane: Lane) -> Any:
    return lane.stream(lane.graph("gate"), GATE, stream_mode=list(ALL_MODES))


@scenario
def stream_subgraphs(lane: Lane) -> Any:
    graph = lane.graph("nested")
    return {
        "values": lane.stream(graph, LINEAR, stream_mode="values", subgraphs=True),
        "updates": lane.stream(graph, LINEAR, stream_mode="updates", subgraphs=True),
        "both": lane.stream(graph, LINEAR, stream_mode=["values", "updates"], subgraphs=True),
        "default": lane.stream(graph, LINEAR, subgraphs=True),
    }


@scenario
def stream_subgraph_messages(lane: Lane) -> Any:
    return lane.stream(lane.graph("toolflow"), ask(), stream_mode=["messages", "updates", "custom"], subgraphs=True)


@scenario
def stream_subgraph_debug_and_checkpoints(lane: Lane) -> Any:
    return lane.stream(lane.graph("nested"), LINEAR, stream_mode=["debug", "checkpoints", "tasks"], subgraphs=True)


@scenario
def stream_v2_parts(lane: Lane) -> Any:
    return {
        "linear": lane.stream(lane.graph("linear"), LINEAR, stream_mode=["values", "updates"], version="v2"),
        "single": lane.stream(lane.graph("linear"), LINEAR, stream_mode="updates", version="v2"),
        "chat": lane.stream(lane.graph("chat"), ask(), stream_mode="messages", version="v2"),
        "nested": lane.stream(
            lane.graph("nested"), LINEAR, stream_mode=["values", "updates"], subgraphs=True, version="v2"
        ),
        "custom": lane.stream(lane.graph("ticks"), {"n": 3, "turns": []}, stream_mode="custom", version="v2"),
    }


@scenario
def stream_v2_interrupts_on_values_parts(lane: Lane) -> Any:
    return {
        "gate": lane.stream(lane.graph("gate"), GATE, stream_mode=["values", "updates"], version="v2"),
        "subask": lane.stream(
            lane.graph("subask"), GATE, stream_mode=["values", "updates"], subgraphs=True, version="v2"
        ),
    }


# --- interrupts, output keys, resume ------------------------------------------------------------


@scenario
def stream_interrupts_in_values_and_updates(lane: Lane) -> Any:
    graph = lane.graph("gate")
    return {
        "values": lane.stream(graph, GATE, stream_mode="values"),
        "updates": lane.stream(graph, GATE, stream_mode="updates"),
        "both": lane.stream(graph, GATE, stream_mode=["updates", "values"]),
        "subgraph": lane.stream(lane.graph("subask"), GATE, stream_mode=["updates", "values"], subgraphs=True),
        "tool": lane.stream(lane.graph("react_ask"), ask("send 5"), stream_mode=["updates", "values"]),
    }


@scenario
def stream_interrupt_before_and_after(lane: Lane) -> Any:
    graph = lane.graph("linear")
    before, after = lane.thread(), lane.thread()
    return {
        "before": lane.stream(graph, LINEAR, before, stream_mode=["values", "updates"], interrupt_before=["b"]),
        "continued": lane.stream(graph, None, before, stream_mode=["values", "updates"]),
        "after": lane.stream(graph, LINEAR, after, stream_mode="updates", interrupt_after=["a"]),
        "after_v2": lane.stream(graph, None, after, stream_mode="values", version="v2"),
    }


@scenario
def stream_output_keys(lane: Lane) -> Any:
    graph = lane.graph("linear")
    return {
        "values_one_key": lane.stream(graph, LINEAR, stream_mode="values", output_keys="x"),
        "values_key_list": lane.stream(graph, LINEAR, stream_mode="values", output_keys=["log"]),
        "updates_one_key": lane.stream(graph, LINEAR, stream_mode="updates", output_keys="x"),
    }


@scenario
def stream_resume(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.stream(graph, GATE, config)
    resumed = lane.stream(graph, Command(resume="yes"), config, stream_mode=["values", "updates", "messages"])
    ask_config = lane.thread()
    # One graph for both calls: a local twin keeps its threads in its own checkpointer.
    react_ask = lane.graph("react_ask")
    lane.stream(react_ask, ask("send 5"), ask_config)
    tool = lane.stream(react_ask, Command(resume="yes"), ask_config, stream_mode=["updates", "messages"])
    return {"gate": resumed, "tool": tool}


@scenario
def stream_resume_in_a_subgraph(lane: Lane) -> Any:
    graph = lane.graph("subask")
    config = lane.thread()
    paused = lane.stream(graph, GATE, config, stream_mode="updates", subgraphs=True)
    return {
        "paused": paused,
        "resumed": lane.stream(
            graph, Command(resume="inner"), config, stream_mode=["values", "updates"], subgraphs=True
        ),
    }


@scenario
def stream_node_error(lane: Lane) -> Any:
    """What came before the failure, then the node's own exception."""
    graph = lane.graph("boom")
    return {
        mode: lane.stream_caught(graph, LINEAR, stream_mode=mode) for mode in ("values", "updates", "debug", "tasks")
    }


# --- leaving early ------------------------------------------------------------------------------


@scenario
def stream_break_after_a_few_chunks(lane: Lane) -> Any:
    return {
        "values": lane.stream_until(lane.graph("linear"), LINEAR, lane.thread(), 2, stream_mode="values"),
        "messages": lane.stream_until(lane.graph("chat"), ask(), lane.thread(), 3, stream_mode="messages"),
        "modes": lane.stream_until(
            lane.graph("nested"), LINEAR, lane.thread(), 3, stream_mode=["updates", "values"], subgraphs=True
        ),
    }


@scenario
def stream_break_leaves_nothing_running(lane: Lane) -> Any:
    """``paced`` runs about 3 s; its stream is left after two updates. Nothing may run
    on the thread after that (locally nothing does): the remote run is cancelled,
    within 1.5 s, well before it would have ended by itself."""
    config = lane.thread()
    chunks = lane.stream_until(lane.graph("paced"), {"x": 0, "log": []}, config, 2, stream_mode="updates")
    return {"chunks": chunks, "still_running": lane.settle(config, bound=1.5)}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_classic_stream_local_equals_remote(name: str, flavour: str, request: pytest.FixtureRequest) -> None:
    local, remote = compare(SCENARIOS[name], flavour, lanes_server_url(request))
    assert objects(remote) == objects(local)


def test_probe_a_models_chunks_name_the_servers_langchain_core(server_url: str) -> None:
    """A model's ``messages`` chunks carry ``lc_versions``: the langchain-core of the
    process the model ran in. Remotely that is the server's, exactly as its stream
    says, whatever release the caller has."""
    import uuid

    from langgraph_sdk import get_sync_client

    from remote_graph import RemoteGraph

    pairs = list(RemoteGraph("chat", url=server_url).stream(ask(), {}, stream_mode="messages"))
    assert pairs, "no chunks"
    client = get_sync_client(url=server_url)
    try:
        thread = client.threads.create(thread_id=str(uuid.uuid4()))
        wire = [
            part.data[1]
            for part in client.runs.stream(thread["thread_id"], "chat", input=ask(), stream_mode="messages-tuple")
            if part.event == "messages"
        ]
    finally:
        client.close()
    served = {m["lc_versions"]["langchain-core"] for m in wire}
    assert len(served) == 1, served
    assert {metadata["lc_versions"]["langchain-core"] for _, metadata in pairs} == served
