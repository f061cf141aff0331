"""Thread state through the classic surface: ``get_state`` (``subgraphs=True`` too),
``get_state_history`` (``limit``, ``before``, ``filter``), ``update_state``,
``bulk_update_state`` and ``get_subgraphs``, each with its async twin, on the local
compiled graph and on ``RemoteGraph``: the same ``StateSnapshot``s field by field
(see ``objects``), with message objects in their values.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command, StateUpdate

from tests.integration.lanes import (
    GATE,
    LINEAR,
    Lane,
    Scenarios,
    compare,
    lanes_server_url,
)
from tests.integration.objects import objects

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

TENANT = {"metadata": {"tenant": "acme"}}


def ask(text: str) -> dict[str, Any]:
    """A fresh input: ``add_messages`` gives an input message its id in place."""
    return {"messages": [HumanMessage(text)]}


def at(config: dict[str, Any], snapshot: Any) -> dict[str, Any]:
    """``config``'s thread at ``snapshot``'s checkpoint."""
    return {
        "configurable": {**config["configurable"], "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"]}
    }


# --- get_state --------------------------------------------------------------------------


@scenario
def state_after_a_run(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.invoke(graph, LINEAR, {**config, **TENANT})
    return lane.state(graph, config)


@scenario
def state_after_an_interrupt(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.invoke(graph, GATE, config)
    paused = lane.state(graph, config)
    lane.invoke(graph, Command(resume="yes"), config)
    return {"paused": paused, "done": lane.state(graph, config)}


@scenario
def state_after_an_interrupt_in_a_prebuilt_agents_tool(lane: Lane) -> Any:
    graph = lane.graph("react_ask")
    config = lane.thread()
    lane.invoke(graph, ask("send 5"), config)
    paused = lane.state(graph, config)
    resumed = lane.invoke(graph, Command(resume="yes"), config)
    return {
        "paused": paused,
        "message_types": [type(m).__name__ for m in paused.values["messages"]],
        "resumed": resumed,
        "done": lane.state(graph, config),
    }


@scenario
def state_with_subgraphs(lane: Lane) -> Any:
    graph = lane.graph("subask")
    config = lane.thread()
    lane.invoke(graph, GATE, config)
    out = {"nested": lane.state(graph, config, subgraphs=True), "flat": lane.state(graph, config)}
    done = lane.thread()
    # One graph for both calls: a local twin keeps its threads in its own checkpointer.
    nested = lane.graph("nested")
    lane.invoke(nested, LINEAR, done)
    out["finished"] = lane.state(nested, done, subgraphs=True)
    return out


@scenario
def state_during_a_tool_interrupt_with_subgraphs(lane: Lane) -> Any:
    graph = lane.graph("react_ask")
    config = lane.thread()
    lane.invoke(graph, ask("send 5"), config)
    return lane.state(graph, config, subgraphs=True)


@scenario
def state_after_a_failure(lane: Lane) -> Any:
    graph = lane.graph("boom")
    config = lane.thread()
    try:
        lane.invoke(graph, LINEAR, config)
    except Exception as exc:
        return {"error": exc, "state": lane.state(graph, config)}
    return "no error"


@scenario
def state_of_a_thread_that_does_not_exist(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    return {
        "state": lane.state(graph, config),
        "history": lane.history(graph, config),
        "limited": lane.history(graph, config, limit=2),
    }


@scenario
def state_at_an_earlier_checkpoint(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.invoke(graph, LINEAR, config)
    before_b = next(s for s in lane.history(graph, config) if s.next == ("b",))
    return lane.state(graph, at(config, before_b))


# --- get_state_history ---------------------------------------------------------------------


@scenario
def history_full_limit_before_filter(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.invoke(graph, LINEAR, {**config, **TENANT})
    lane.invoke(graph, {"x": 2, "log": []}, config)
    full = lane.history(graph, config)
    return {
        "full": full,
        "limit": lane.history(graph, config, limit=3),
        "before": lane.history(graph, config, before=at(config, full[2])),
        "before_and_limit": lane.history(graph, config, before=at(config, full[1]), limit=2),
        "filter_source": lane.history(graph, config, filter={"source": "input"}),
        "filter_step": lane.history(graph, config, filter={"step": 1}),
        "filter_user_metadata": lane.history(graph, config, filter={"tenant": "acme"}),
    }


@scenario
def history_of_a_prebuilt_agent(lane: Lane) -> Any:
    graph = lane.graph("react")
    config = lane.thread()
    lane.invoke(graph, ask("compute"), config)
    return lane.history(graph, config)


@scenario
def history_of_an_interrupted_thread(lane: Lane) -> Any:
    graph = lane.graph("subask")
    config = lane.thread()
    lane.invoke(graph, GATE, config)
    paused = lane.history(graph, config)
    lane.invoke(graph, Command(resume="ok"), config)
    return {"paused": paused, "resumed": lane.history(graph, config, limit=2)}


# --- update_state / bulk_update_state -----------------------------------------------------------


@scenario
def update_state_as_node_then_continue(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.invoke(graph, LINEAR, interrupt_before=["b"], config=config)
    written = lane.update_state(graph, config, {"x": 5, "log": ["edited"]}, as_node="a")
    state = lane.state(graph, config)
    return {
        "written": written,
        "state": state,
        "continued": lane.invoke(graph, None, config),
        "history": lane.history(graph, config, limit=3),
    }


@scenario
def update_state_without_as_node(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.invoke(graph, LINEAR, config)
    written = lane.update_state(graph, config, {"x": 7})
    return {"written": written, "state": lane.state(graph, config)}


@scenario
def update_state_on_an_interrupted_thread(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.invoke(graph, GATE, config)
    written = lane.update_state(graph, config, {"answer": "by hand"}, as_node="ask")
    state = lane.state(graph, config)
    return {"written": written, "state": state, "continued": lane.invoke(graph, None, config)}


@scenario
def update_state_with_messages(lane: Lane) -> Any:
    graph = lane.graph("react")
    config = lane.thread()
    lane.invoke(graph, ask("compute"), config)
    lane.update_state(graph, config, {"messages": [HumanMessage("one more", id="extra-1")]})
    state = lane.state(graph, config)
    return {"state": state, "next_turn": lane.invoke(graph, None, config)}


@scenario
def update_state_of_a_thread_that_does_not_exist(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    written = lane.update_state(graph, config, {"x": 3, "log": ["seed"]}, as_node="a")
    return {"written": written, "state": lane.state(graph, config), "continued": lane.invoke(graph, None, config)}


@scenario
def bulk_update_state_in_supersteps(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    supersteps = [[StateUpdate({"x": 3, "log": ["first"]}, "a")], [StateUpdate({"log": ["second"]}, "b")]]
    written = lane.bulk_update_state(graph, config, supersteps)
    return {"written": written, "state": lane.state(graph, config), "history": lane.history(graph, config)}


@scenario
def bulk_update_state_then_continue(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    written = lane.bulk_update_state(graph, config, [[StateUpdate({"x": 4, "log": []}, "a")]])
    return {"written": written, "continued": lane.invoke(graph, None, config), "state": lane.state(graph, config)}


# --- get_subgraphs ---------------------------------------------------------------------------------


@scenario
def get_subgraphs_names_and_use(lane: Lane) -> Any:
    nested = lane.graph("nested")
    out: dict[str, Any] = {
        "nested": [name for name, _ in lane.get_subgraphs(nested)],
        "recurse": [name for name, _ in lane.get_subgraphs(nested, recurse=True)],
        "namespace": [name for name, _ in lane.get_subgraphs(nested, namespace="sub")],
        "subask": [name for name, _ in lane.get_subgraphs(lane.graph("subask"))],
        "none": [name for name, _ in lane.get_subgraphs(lane.graph("react"))],
    }
    # Each describes its own input and output. (Running one on its own is a kept
    # divergence: a deployed graph's subgraph is not an assistant, see the probe below.)
    out["schemas"] = {
        name: {
            "input": sorted((sub.get_input_jsonschema().get("properties") or {}).keys()),
            "output": sorted((sub.get_output_jsonschema().get("properties") or {}).keys()),
        }
        for name, sub in lane.get_subgraphs(nested, recurse=True)
    }
    return out


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_classic_state_local_equals_remote(name: str, flavour: str, request: pytest.FixtureRequest) -> None:
    local, remote = compare(SCENARIOS[name], flavour, lanes_server_url(request))
    assert objects(remote) == objects(local)


# --- divergences kept on purpose (docs/divergences.md) ------------------------------------


def test_probe_a_subgraph_of_a_deployed_graph_cannot_run_on_its_own(server_url: str) -> None:
    """Locally ``get_subgraphs`` yields compiled subgraphs that run on their own; the
    server runs only deployed graphs (assistants), so a remote subgraph says so."""
    from remote_graph import RemoteGraph

    subgraphs = dict(RemoteGraph("nested", url=server_url).get_subgraphs(recurse=True))
    assert set(subgraphs) == {"sub", "sub|gc"}
    with pytest.raises(NotImplementedError, match="subgraph 'sub'.*runs only deployed graphs"):
        subgraphs["sub"].invoke({"x": 1, "log": []})


def test_probe_state_is_json_on_the_way_back(server_url: str) -> None:
    """A tuple and a dataclass in the state: locally the output holds them as they
    are (and ``get_state``, read from the checkpoint, the tuple as a list); remotely
    both are JSON: a list and a dict."""
    import uuid

    import graphs

    from remote_graph import RemoteGraph
    from tests.integration.lanes import local_twin

    given = {"seen": [("a", 1), graphs.Settings(user="ada")]}
    local, remote = local_twin("context"), RemoteGraph("context", url=server_url)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    assert local.invoke(given, config, context={"user": "ada"})["seen"][:2] == given["seen"]
    assert local.get_state(config).values["seen"][:2] == [["a", 1], graphs.Settings(user="ada")]
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    as_json = [["a", 1], {"user": "ada", "currency": "USD"}]
    assert remote.invoke(given, config, context={"user": "ada"})["seen"][:2] == as_json
    assert remote.get_state(config).values["seen"][:2] == as_json


def test_probe_a_top_level_thread_id_names_the_thread_where_local_get_state_raises(server_url: str) -> None:
    """``{"thread_id": ...}`` without ``configurable``: langchain reads a top-level key
    that is no config key as configurable's (``ensure_config``), and so do a local
    graph's ``invoke`` and ``get_state_history``; a local ``get_state`` and
    ``update_state`` index ``config["configurable"]`` and raise ``KeyError``. Remotely
    every method reads the thread, as ``invoke`` does."""
    import uuid

    from remote_graph import RemoteGraph
    from tests.integration.lanes import local_twin

    name = f"top-level-{uuid.uuid4().hex[:8]}"
    local, remote = local_twin("linear"), RemoteGraph("linear", url=server_url)
    for graph in (local, remote):
        assert graph.invoke(LINEAR, {"thread_id": name}) == {"x": 20, "log": ["a", "b"]}
        assert [s.next for s in graph.get_state_history({"thread_id": name})][:2] == [(), ("b",)]
    with pytest.raises(KeyError, match="configurable"):
        local.get_state({"thread_id": name})
    with pytest.raises(KeyError, match="configurable"):
        local.update_state({"thread_id": name}, {"x": 5})
    snapshot = remote.get_state({"thread_id": name})
    assert snapshot.values == {"x": 20, "log": ["a", "b"]}
    assert snapshot.config["configurable"]["thread_id"] == name
    written = remote.update_state({"thread_id": name}, {"x": 5})
    assert written["configurable"]["thread_id"] == name
    assert remote.get_state({"configurable": {"thread_id": name}}).values["x"] == 5
