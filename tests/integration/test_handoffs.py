"""Handoffs across the boundary: a served graph's ``Command(graph=Command.PARENT, ...)``
reaches a local parent as a local child's does, on [local, remote] x [sync, async].

The child (``app/handoff.py``) is a local compiled graph in one lane and a
``RemoteGraph`` of the same served graph in the other. Compared: the parent's
output, its stream in every mode, its v3 events, its ``astream_events``, a
langgraph-swarm swarm with one served agent (handoffs both ways: its messages,
their types, its routing and ``active_agent``), and the error a root run raises.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

import handoff
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph_swarm import create_swarm
from typing_extensions import TypedDict

from remote_graph import RemoteGraph, RemoteHandoffError
from tests.integration.lanes import LANES, Lane, Scenarios, compare, error_of, norm_event
from tests.integration.objects import objects

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

MODES = ("values", "updates", "tasks", "custom", "messages", "checkpoints", "debug")


class EntriesState(TypedDict):
    entries: Annotated[list[str], operator.add]


def agent(lane: Lane, name: str) -> Any:
    """Served graph ``name``: compiled locally, or the deployed one (named as its node)."""
    if lane.kind == "local":
        graph = handoff.BUILDERS[name]()
        return graph if not isinstance(graph, StateGraph) else graph.compile(name=name)
    return RemoteGraph(name, url=lane.server_url, name=name)


def network(lane: Lane, *, called: bool = False, name: str = "handoff") -> Any:
    """``start`` → the child (as a node, or invoked in a node) → whichever node it hands off to."""
    sub = agent(lane, name)

    def call(state: EntriesState) -> Any:
        return sub.invoke({"entries": state["entries"]})

    async def acall(state: EntriesState, config: RunnableConfig) -> Any:
        # Before Python 3.11 asyncio tasks do not carry the node's context, so a child
        # invoked without its config does not know its parent, local or remote.
        return await sub.ainvoke({"entries": state["entries"]}, config)

    g = StateGraph(EntriesState)
    g.add_node("start", lambda state: {"entries": ["start"]})
    g.add_node("child", (call if lane.flavour == "sync" else acall) if called else sub)
    g.add_node("b", lambda state: {"entries": ["b"]})
    g.add_node("c", lambda state: {"entries": ["c"]})
    g.add_edge(START, "start")
    g.add_edge("start", "child")
    return g.compile(checkpointer=InMemorySaver())


START_INPUT: dict[str, Any] = {"entries": []}


@scenario
def handoff_routes_the_parent_on_invoke(lane: Lane) -> Any:
    return lane.invoke(network(lane), START_INPUT)


@scenario
def handoff_from_a_child_invoked_in_a_node(lane: Lane) -> Any:
    return lane.invoke(network(lane, called=True), START_INPUT)


@pytest.mark.parametrize("mode", MODES)
def test_handoff_in_each_stream_mode(mode: str, flavour: str, server_url: str) -> None:
    def stream(lane: Lane) -> Any:
        chunks = lane.stream(network(lane), START_INPUT, stream_mode=[mode], subgraphs=True)
        if mode in ("checkpoints", "debug"):
            # A remote child's checkpoints are its server thread's: their configs and
            # parents name that lineage, not the parent's (README: "Divergences").
            chunks = [chunk for chunk in chunks if not chunk[0]]
        return objects(chunks)

    local, remote = compare(stream, flavour, server_url)
    assert remote == local


@scenario
def handoff_in_a_stream_of_several_modes(lane: Lane) -> Any:
    return objects(lane.stream(network(lane), START_INPUT, stream_mode=["values", "updates", "tasks"]))


@scenario
def handoff_in_a_stream_of_values_from_a_child_invoked_in_a_node(lane: Lane) -> Any:
    return objects(lane.stream(network(lane, called=True), START_INPUT, stream_mode="values"))


@scenario
def handoff_in_a_v3_run(lane: Lane) -> Any:
    run = lane.start(network(lane), START_INPUT)
    return {"events": [norm_event(e) for e in lane.collect(run, "events")], "output": lane.output(run)}


@scenario
def handoff_in_a_v3_run_from_a_child_invoked_in_a_node(lane: Lane) -> Any:
    run = lane.start(network(lane, called=True), START_INPUT)
    return {"events": [norm_event(e) for e in lane.collect(run, "events")], "output": lane.output(run)}


@scenario
def handoff_in_astream_events(lane: Lane) -> Any:
    if lane.flavour == "sync":
        pytest.skip("the sync stream_events has no v1/v2, locally as remotely")
    keys = ("langgraph_node", "checkpoint_ns", "langgraph_checkpoint_ns")
    return objects(
        [
            {k: e[k] for k in ("event", "name", "data", "parent_ids", "tags")}
            | {"metadata": {k: v for k, v in e["metadata"].items() if k in keys}}
            for e in lane.events(network(lane), START_INPUT, version="v2")
        ]
    )


@scenario
def a_root_run_raises_as_local(lane: Lane) -> Any:
    try:
        lane.invoke(agent(lane, "handoff"), START_INPUT)
    except Exception as exc:
        return error_of(exc)
    return None


# --- langgraph-swarm with one served agent ---------------------------------------------


def swarm(lane: Lane, served: str) -> Any:
    """alice and bob, ``served`` the deployed one in the remote lane."""
    agents = [agent(lane, name) if name == served else handoff.BUILDERS[name]() for name in ("alice", "bob")]
    return create_swarm(agents, default_active_agent="alice").compile(checkpointer=InMemorySaver())


def swarm_turn(lane: Lane, served: str) -> Any:
    app = swarm(lane, served)
    config = lane.thread()
    updates = lane.stream(app, {"messages": [HumanMessage("question")]}, config, stream_mode="updates")
    out = lane.invoke(app, {"messages": [HumanMessage("again")]}, config)
    return objects({"routing": [list(u) for u in updates], "messages": out["messages"], "active": out["active_agent"]})


@scenario
def swarm_with_a_served_agent_that_hands_back(lane: Lane) -> Any:
    return swarm_turn(lane, "bob")


@scenario
def swarm_with_a_served_agent_that_hands_off_first(lane: Lane) -> Any:
    return swarm_turn(lane, "alice")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_child_equals_remote_child(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


# --- divergences kept on purpose (README: "Divergences from local") ---------------------


def test_probe_a_swarm_draws_no_handoff_edges_to_or_from_a_served_agent(server_url: str) -> None:
    """langgraph-swarm reads an agent's handoff destinations from the ``ToolNode`` in its
    drawn graph's ``tools`` node; a served agent's drawing carries no Python objects, so
    its handoffs are not drawn (they still route). ``add_node(..., destinations=...)``
    draws them."""
    remote = RemoteGraph("bob", url=server_url, name="bob")
    local = create_swarm([handoff.build_alice(), handoff.build_bob()], default_active_agent="alice")
    mixed = create_swarm([handoff.build_alice(), remote], default_active_agent="alice")
    edges = lambda builder: sorted((e.source, e.target) for e in builder.compile().get_graph().edges)  # noqa: E731
    assert ("bob", "alice") in edges(local)
    assert ("bob", "alice") not in edges(mixed)


def test_probe_a_handoff_whose_command_cannot_be_rebuilt_fails_instead_of_routing(server_url: str) -> None:
    """A value whose repr is no literal nor an allowed type (a ``Decimal``) cannot cross:
    the remote child's node fails naming it, and the parent never reaches ``b``."""
    lane_local = LANES[("local", "sync")](server_url)
    lane_remote = LANES[("remote", "sync")](server_url)
    assert lane_local.invoke(network(lane_local, name="handoff_odd"), START_INPUT)["entries"][-1] == "b"
    with pytest.raises(RemoteHandoffError, match="it holds a Decimal") as caught:
        lane_remote.invoke(network(lane_remote, name="handoff_odd"), START_INPUT)
    assert caught.value.command == "Command(update={'entries': [Decimal('1.5')]}, goto='b')"
