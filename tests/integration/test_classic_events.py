"""``astream_events(version="v2")`` and ``version="v1"`` on the local compiled graph and on
``RemoteGraph``: the same events in the same order, with the same names (a graph
compiled without a name is "LangGraph" locally), tags, metadata (every key:
see ``objects``), the same tree of ``parent_ids``, and payloads revived as objects
(``AIMessageChunk`` chunks, ``ToolMessage`` tool outputs). The sync
``stream_events(version="v1"/"v2")`` raises ``NotImplementedError`` locally, and
so must the remote one.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from tests.integration.lanes import (
    GATE,
    LINEAR,
    Lane,
    Scenarios,
    compare,
    lanes_server_url,
)
from tests.integration.objects import in_task_order, objects, tool_of_event

pytestmark = [
    pytest.mark.integration,
    # langchain-core warns that v1 is deprecated, locally as remotely.
    pytest.mark.filterwarnings("ignore:astream_events version='v1' is deprecated"),
]

SCENARIOS = Scenarios()
scenario = SCENARIOS

REACT_TOOLS = ("add", "multiply")


def ask(text: str = "compute") -> dict[str, Any]:
    """A fresh input: ``add_messages`` gives an input message its id in place."""
    return {"messages": [HumanMessage(text)]}


def async_only(lane: Lane) -> None:
    if lane.flavour == "sync":
        pytest.skip("the sync stream_events has no v1/v2: see sync_stream_events_v1_v2_is_not_implemented")


def tools_in_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's events with its two tool calls' events in call order (see ``in_task_order``)."""
    return in_task_order(events, lambda event: tool_of_event(event, REACT_TOOLS))


def caught(lane: Lane, graph: Any, input: Any, **kwargs: Any) -> dict[str, Any]:
    """The events of a run that raises, and what it raised."""
    events: list[Any] = []

    async def go() -> None:
        async for event in graph.astream_events(input, lane.thread(), **kwargs):
            events.append(event)

    try:
        lane.call(go)
    except Exception as exc:
        return {"events": events, "error": exc}
    return {"events": events, "error": None}


# --- v2 ---------------------------------------------------------------------------------


@scenario
def events_v2_of_plain_nodes(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("linear"), LINEAR)


@scenario
def events_v2_of_a_streaming_chat_model(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("chat"), ask())


@scenario
def events_v2_of_subgraphs(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("nested"), LINEAR)


@scenario
def events_v2_of_a_prebuilt_agent(lane: Lane) -> Any:
    async_only(lane)
    events = tools_in_order(lane.events(lane.graph("react"), ask()))
    ends = [e["data"]["output"] for e in events if e["event"] == "on_chat_model_end"]
    return {
        "events": events,
        # The model's message whole: text and both tool calls with complete arguments.
        "model_outputs": [(type(m).__name__, m.content, m.tool_calls) for m in ends],
        "tool_outputs": [type(e["data"]["output"]).__name__ for e in events if e["event"] == "on_tool_end"],
    }


@scenario
def events_v2_of_a_subagent_in_a_tool(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("subagent"), ask("research otters"))


@scenario
def events_v2_with_run_name_tags_and_metadata(lane: Lane) -> Any:
    async_only(lane)
    config = {**lane.thread(), "run_name": "my_run", "tags": ["t1", "t2"], "metadata": {"tenant": "acme"}}
    return lane.events(lane.graph("chat"), ask(), config)


@scenario
def events_v2_filtered(lane: Lane) -> Any:
    async_only(lane)
    graph = lane.graph("react")
    return {
        "include_types": lane.events(graph, ask(), include_types=["chat_model"]),
        "include_names": tools_in_order(lane.events(graph, ask(), include_names=["tools", "add"])),
        "exclude_types": [e["event"] + ":" + e["name"] for e in tools_in_order(lane.events(graph, ask(), exclude_types=["chat_model", "tool"]))],
        "include_tags": lane.events(graph, ask(), include_tags=["graph:step:1"]),
    }


@scenario
def events_v2_of_an_interrupt_and_its_resume(lane: Lane) -> Any:
    async_only(lane)
    graph = lane.graph("gate")
    config = lane.thread()
    return {"paused": lane.events(graph, GATE, config), "resumed": lane.events(graph, Command(resume="yes"), config)}


@scenario
def events_v2_of_a_tool_interrupt_and_its_resume(lane: Lane) -> Any:
    async_only(lane)
    graph = lane.graph("react_ask")
    config = lane.thread()
    return {"paused": lane.events(graph, ask("send 5"), config), "resumed": lane.events(graph, Command(resume="yes"), config)}


@scenario
def events_v2_of_a_node_error(lane: Lane) -> Any:
    async_only(lane)
    return caught(lane, lane.graph("boom"), LINEAR, version="v2")


@scenario
def events_v2_of_custom_events(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("ticks"), {"n": 3, "turns": []})


# --- v1 ---------------------------------------------------------------------------------


@scenario
def events_v1_of_plain_nodes(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("linear"), LINEAR, version="v1")


@scenario
def events_v1_of_a_streaming_chat_model(lane: Lane) -> Any:
    async_only(lane)
    return lane.events(lane.graph("chat"), ask(), version="v1")


@scenario
def events_v1_of_a_prebuilt_agent(lane: Lane) -> Any:
    async_only(lane)
    return tools_in_order(lane.events(lane.graph("react"), ask(), version="v1"))


@scenario
def events_v1_of_a_node_error(lane: Lane) -> Any:
    async_only(lane)
    return caught(lane, lane.graph("boom"), LINEAR, version="v1")


# --- sync -------------------------------------------------------------------------------


@scenario
def sync_stream_events_v1_v2_is_not_implemented(lane: Lane) -> Any:
    if lane.flavour == "async":
        pytest.skip("a sync API scenario")
    out = {}
    for version in ("v1", "v2"):
        try:
            out[version] = lane.events(lane.graph("linear"), LINEAR, version=version)
        except NotImplementedError as exc:
            out[version] = exc
    return out


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_classic_events_local_equals_remote(name: str, flavour: str, request: pytest.FixtureRequest) -> None:
    local, remote = compare(SCENARIOS[name], flavour, lanes_server_url(request))
    assert objects(remote) == objects(local)
