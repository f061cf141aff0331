"""Runtime context conformance: ``context=`` on every method a local graph takes
it on, for each kind of ``context_schema``, and inherited by a child inside a
local parent, on [local, remote] x [sync, async].
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import graphs
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from remote_graph import RemoteGraph
from tests.integration.lanes import Lane, Scenarios, compare, norm
from tests.integration.server_kinds import is_aegra

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

EMPTY = {"seen": []}
ADA = {"user": "ada", "currency": "GBP"}
SCHEMAS = ("context", "context_dict", "context_model")


def config(lane: Lane, **configurable: Any) -> dict[str, Any]:
    out = lane.thread()
    out["configurable"].update(configurable)
    return out


def invoke(lane: Lane, graph: Any, input: Any, cfg: Any = None, **kwargs: Any) -> Any:
    if lane.flavour == "sync":
        return graph.invoke(input, cfg, **kwargs)
    return lane.call(lambda: graph.ainvoke(input, cfg, **kwargs))


def stream(lane: Lane, graph: Any, input: Any, cfg: Any = None, **kwargs: Any) -> list[Any]:
    if lane.flavour == "sync":
        return list(graph.stream(input, cfg, **kwargs))

    async def go(parts: AsyncIterator[Any]) -> list[Any]:
        return [part async for part in parts]

    return lane.call(lambda: go(graph.astream(input, cfg, **kwargs)))


def child(lane: Lane, name: str) -> Any:
    if lane.kind == "local":
        return graphs.BUILDERS[name]().compile()
    return RemoteGraph(name, url=lane.server_url)


def parent(lane: Lane, node: Any, schema: Any = graphs.Settings) -> Any:
    g = StateGraph(graphs.ContextState, context_schema=schema)
    g.add_node("child", node)
    g.add_edge(START, "child")
    return g.compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS)


# --- 1. the v3 run streams ----------------------------------------------------------


@scenario
def v3_dict_context_is_coerced_to_each_schema(lane: Lane) -> Any:
    out = {}
    for name in SCHEMAS:
        run = lane.start(lane.graph(name), EMPTY, config(lane, tier="gold"), context=ADA)
        out[name] = lane.output(run)
    return out


@scenario
def v3_instance_context(lane: Lane) -> Any:
    dataclass_run = lane.start(lane.graph("context"), EMPTY, context=graphs.Settings(user="ada"))
    model_run = lane.start(lane.graph("context_model"), EMPTY, context=graphs.SettingsModel(user="bo", currency="EUR"))
    return [lane.output(dataclass_run), lane.output(model_run)]


@scenario
def v3_no_context_is_none(lane: Lane) -> Any:
    # A graph whose context schema has no required field; with no context a
    # local run's runtime.context is None, whatever the configurable holds.
    run = lane.start(lane.graph("context_dict"), EMPTY, config(lane, tier="gold", user="bob"))
    return lane.output(run)


@scenario
def v3_context_key_also_in_configurable(lane: Lane) -> Any:
    run = lane.start(lane.graph("context_dict"), EMPTY, config(lane, tier="gold", user="bob"), context={"user": "ada"})
    return lane.output(run)


@scenario
def v3_context_across_turns_of_a_thread(lane: Lane) -> Any:
    graph, cfg = lane.graph("context"), config(lane)
    lane.output(lane.start(graph, EMPTY, cfg, context={"user": "ada"}))
    return lane.output(lane.start(graph, EMPTY, cfg, context={"user": "bo"}))


# --- 2. invoke and v1/v2 stream --------------------------------------------------------


@scenario
def invoke_with_context_and_configurable(lane: Lane) -> Any:
    return {name: invoke(lane, lane.graph(name), EMPTY, config(lane, tier="gold"), context=ADA) for name in SCHEMAS}


@scenario
def stream_v1_and_v2_with_context(lane: Lane) -> Any:
    graph = lane.graph("context")
    v1 = stream(lane, graph, EMPTY, config(lane, tier="gold"), context=ADA, stream_mode="values")
    v2 = stream(
        lane, graph, EMPTY, config(lane), context=graphs.Settings(user="bo"), stream_mode=["updates"], version="v2"
    )
    return {"v1": v1, "v2": [{"type": p["type"], "data": p["data"]} for p in v2]}


# --- 3. a child inside a local parent --------------------------------------------------


@scenario
def child_node_inherits_the_parents_context(lane: Lane) -> Any:
    g = parent(lane, child(lane, "context"))
    v3 = lane.output(lane.start(g, EMPTY, context={"user": "ada"}))
    plain = invoke(lane, g, EMPTY, lane.thread(), context=graphs.Settings(user="bo", currency="EUR"))
    return {"v3": v3, "invoke": plain}


@scenario
def child_model_node_inherits_the_parents_model_context(lane: Lane) -> Any:
    g = parent(lane, child(lane, "context_model"), graphs.SettingsModel)
    return lane.output(lane.start(g, EMPTY, context=ADA))


@scenario
def child_called_in_a_node_inherits_or_overrides(lane: Lane) -> Any:
    sub = child(lane, "context")

    def node(state: dict[str, Any]) -> dict[str, Any]:
        inherited = sub.invoke(EMPTY)["seen"]
        given = sub.invoke(EMPTY, context={"user": "eve"})["seen"]
        return {"seen": inherited + given}

    async def anode(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        with graphs.node_context(config):  # the ambient config, on Python 3.10 too
            inherited = (await sub.ainvoke(EMPTY, config))["seen"]
            given = (await sub.ainvoke(EMPTY, config, context={"user": "eve"}))["seen"]
        return {"seen": inherited + given}

    g = parent(lane, node if lane.flavour == "sync" else anode)
    return lane.output(lane.start(g, EMPTY, context={"user": "ada"}))


@scenario
def child_of_a_parent_without_context_gets_none(lane: Lane) -> Any:
    g = parent(lane, child(lane, "context_dict"), graphs.SettingsDict)
    return lane.output(lane.start(g, EMPTY))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_context_local_equals_remote(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert norm(remote) == norm(local)


# --- 4. what cannot cross the wire fails before anything is sent ---------------------


class Opaque:
    pass


@pytest.mark.parametrize("bad", [Opaque(), "ada", ["ada"], {1: "ada"}], ids=["object", "str", "list", "int-key"])
def test_context_without_a_json_object_form_is_refused_before_sending(bad: Any, server_url: str) -> None:
    graph = RemoteGraph("context", url="http://127.0.0.1:9")  # nothing listens: a request would fail otherwise
    with pytest.raises(TypeError, match="context"):
        graph.stream_events(EMPTY, version="v3", context=bad)
    with pytest.raises(TypeError, match="context"):
        graph.invoke(EMPTY, context=bad)


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def local_graph(name: str) -> Any:
    return graphs.BUILDERS[name]().compile(checkpointer=InMemorySaver())


def fresh(**configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4()), **configurable}}


def test_probe_a_context_key_the_schema_lacks_is_dropped(server_url: str) -> None:
    context = {"user": "ada", "extra": 1}
    local = local_graph("context_dict").invoke(EMPTY, fresh(), context=context)["seen"]
    assert local == [{"context": ["dict", {"user": "ada", "extra": 1}], "tier": None}]
    with pytest.raises(TypeError, match="extra"):  # a local dataclass context refuses the key
        local_graph("context").invoke(EMPTY, fresh(), context=context)
    for name, kind in (("context_dict", "dict"), ("context", "Settings")):
        remote = RemoteGraph(name, url=server_url).invoke(EMPTY, fresh(), context=context)["seen"]
        assert remote[0]["context"][0] == kind and "extra" not in remote[0]["context"][1]


def test_probe_no_context_is_built_from_nothing_for_a_class_schema(server_url: str) -> None:
    # Both served class schemas require ``user``: built from {}, the run fails.
    for name, error in (("context", "TypeError"), ("context_model", "ValidationError")):
        assert local_graph(name).invoke(EMPTY, fresh())["seen"] == [{"context": ["NoneType", None], "tier": None}]
        with pytest.raises(Exception, match="user") as failed:
            RemoteGraph(name, url=server_url).invoke(EMPTY, fresh())
        assert type(failed.value).__name__ == error


def test_probe_the_context_is_mirrored_into_the_configurable(server_url: str, pytestconfig: pytest.Config) -> None:
    # The configurable the run's checkpoints are written with is the graph's: on
    # langgraph-api it holds the context's keys, the configurable's own value
    # first; the checkpoints' metadata takes them from it. aegra mirrors nothing,
    # as local.
    def written(graph: Any, **configurable: Any) -> tuple[list[Any], dict[str, Any]]:
        config = fresh(**configurable)
        chunks = graph.stream(EMPTY, config, context={"user": "ada"}, stream_mode="checkpoints")
        return [chunk["config"]["configurable"].get("user") for chunk in chunks], graph.get_state(config).metadata

    local, remote = local_graph("context_dict"), RemoteGraph("context_dict", url=server_url)
    users, metadata = written(local)
    assert set(users) == {None} and "user" not in metadata
    users, metadata = written(remote)
    if is_aegra(pytestconfig):
        assert set(users) == {None} and "user" not in metadata
    else:
        assert set(users) == {"ada"} and metadata["user"] == "ada"
    assert set(written(local, user="bob")[0]) == set(written(remote, user="bob")[0]) == {"bob"}


def test_probe_a_remote_child_gets_the_parents_context_coerced_to_its_schema(server_url: str) -> None:
    seen = {}
    for kind, sub in (("local", graphs.build_context().compile()), ("remote", RemoteGraph("context", url=server_url))):
        g = StateGraph(graphs.ContextState, context_schema=graphs.SettingsDict)
        g.add_node("child", sub)
        g.add_edge(START, "child")
        parent = g.compile(checkpointer=InMemorySaver())
        seen[kind] = parent.invoke(EMPTY, fresh(), context={"user": "ada"})["seen"][0]["context"]
    assert seen["local"] == ["dict", {"user": "ada"}]  # the parent's context as it is
    assert seen["remote"] == ["Settings", {"user": "ada", "currency": "USD"}]
