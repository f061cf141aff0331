"""Thread ids that are not UUIDs, as a local graph takes them: each scenario runs
on the local compiled graph and on ``RemoteGraph``, sync and async, compared.

The server takes only UUIDs; ``RemoteGraph`` sends a name's UUID5 and reads
results back under the name. Names get a random tail so that runs against a
long-lived server (or two flavours of one scenario) never share a thread.
"""

from __future__ import annotations

import uuid
from typing import Any

import graphs
import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from langgraph_sdk import get_sync_client

from remote_graph import THREAD_ID_NAMESPACE, RemoteGraph
from tests.conftest import shared_thread_param
from tests.integration.lanes import GATE, LINEAR, Lane, Scenarios, compare, local_twin, norm, norm_event

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS


def named(base: str) -> str:
    """A readable thread id, unique to this run: ``"user-42-1a2b3c4d"``."""
    return f"{base}-{uuid.uuid4().hex[:8]}"


def on(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def snap(state: Any) -> dict[str, Any]:
    """The comparable part of a StateSnapshot."""
    return {"values": norm(state.values), "next": list(state.next), "interrupts": norm(list(state.interrupts))}


def threads_of(snapshot: Any) -> set[str]:
    """Every thread id a snapshot's configs name: its own, its parent's, its tasks'."""
    configs = [snapshot.config, snapshot.parent_config, *(t.state for t in snapshot.tasks if isinstance(t.state, dict))]
    return {c["configurable"]["thread_id"] for c in configs if c}


def run_reads_back(lane: Lane, run: Any, name: str) -> bool:
    """A remote run names its thread as the caller did (local run streams have no ``thread_id``)."""
    return lane.kind == "local" or (run.thread_id == name and run.snapshot().thread_id == name)


def invoke(lane: Lane, graph: Any, input: Any, config: Any) -> Any:
    if lane.flavour == "sync":
        return graph.invoke(input, config)
    return lane.call(lambda: graph.ainvoke(input, config))


def stream(lane: Lane, graph: Any, input: Any, config: Any, **kwargs: Any) -> list[Any]:
    if lane.flavour == "sync":
        return list(graph.stream(input, config, **kwargs))

    async def go() -> list[Any]:
        return [chunk async for chunk in graph.astream(input, config, **kwargs)]

    return lane.call(go)


def outcome(lane: Lane, run: Any) -> dict[str, Any]:
    events = [norm_event(e) for e in lane.collect(run, "events")]
    return {
        "events": events,
        "output": lane.output(run),
        "interrupted": lane.interrupted(run),
        "interrupts": norm(lane.interrupts(run)),
    }


# --- scenarios ---------------------------------------------------------------------


@scenario
def v3_runs_on_a_named_thread_continue_its_state(lane: Lane) -> Any:
    graph = lane.graph("linear")
    name = named("user-42")
    first = lane.start(graph, LINEAR, on(name))
    first_output = lane.output(first)
    second = lane.start(graph, {"x": 2, "log": []}, on(name))
    second_output = lane.output(second)
    state = lane.state(graph, on(name))
    return {
        "outputs": [first_output, second_output],  # the second run's log continues the first's
        "state": snap(state),
        "state_names_the_thread": threads_of(state) == {name},
        "runs_name_the_thread": [run_reads_back(lane, first, name), run_reads_back(lane, second, name)],
    }


@scenario
def state_methods_on_a_named_thread(lane: Lane) -> Any:
    graph = lane.graph("linear")
    name = named("my-thread-1")
    output = invoke(lane, graph, LINEAR, on(name))
    state = lane.state(graph, on(name))
    updated = lane.update_state(graph, on(name), {"x": 5}, as_node="a")
    after_update = lane.state(graph, on(name))
    continued = invoke(lane, graph, None, on(name))
    final = lane.state(graph, on(name))
    history = lane.history(graph, on(name))
    # A config read back is a config to pass back in: it names the same thread.
    at_first = lane.state(graph, state.config)
    snapshots = [state, after_update, final, at_first, *history]
    return {
        "output": output,
        "state": snap(state),
        "config_thread_id": state.config["configurable"]["thread_id"] == name,
        "updated_config_thread_id": updated["configurable"]["thread_id"] == name,
        "after_update": snap(after_update),
        "continued": continued,
        "final": snap(final),
        "history": [snap(s) for s in history],
        "at_first": snap(at_first),
        "every_snapshot_names_the_thread": all(threads_of(s) == {name} for s in snapshots),
    }


@scenario
def streamed_checkpoints_name_the_thread(lane: Lane) -> Any:
    graph = lane.graph("linear")
    name = named("tenant/7 thread")
    chunks = stream(lane, graph, LINEAR, on(name), stream_mode="checkpoints")
    configs = [c for chunk in chunks for c in (chunk["config"], chunk["parent_config"]) if c]
    return {
        "values": [chunk["values"] for chunk in chunks],
        "next": [list(chunk["next"]) for chunk in chunks],
        "names_the_thread": {c["configurable"]["thread_id"] for c in configs} == {name},
    }


@scenario
def interrupt_and_resume_on_a_named_thread(lane: Lane) -> Any:
    graph = lane.graph("gate")
    name = named("support ticket #7")
    paused = lane.start(graph, GATE, on(name))
    paused_outcome = outcome(lane, paused)
    waiting = lane.state(graph, on(name))
    (interrupt,) = lane.interrupts(paused)
    resumed = lane.start(graph, Command(resume={interrupt.id: "yes"}), on(name))
    resumed_outcome = outcome(lane, resumed)
    final = lane.state(graph, on(name))
    return {
        "paused": paused_outcome,
        "waiting": snap(waiting),
        "resumed": resumed_outcome,
        "final": snap(final),
        "names_the_thread": threads_of(waiting) == threads_of(final) == {name},
        "runs_name_the_thread": [run_reads_back(lane, paused, name), run_reads_back(lane, resumed, name)],
    }


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


# --- on the server --------------------------------------------------------------------


def test_a_named_thread_is_the_uuid5_of_its_name_on_the_server(server_url: str) -> None:
    graph = RemoteGraph("linear", url=server_url)
    name = named("user-42")
    output = graph.stream_events(LINEAR, on(name), version="v3").output
    server_thread = str(uuid.uuid5(THREAD_ID_NAMESPACE, name))
    assert graph.server_thread_id(name) == server_thread
    # Any client finds it there: the SDK with the UUID, and RemoteGraph with the UUID as well.
    assert get_sync_client(url=server_url).threads.get_state(server_thread)["values"] == output
    snapshot = graph.get_state(on(server_thread))
    assert snapshot.values == output and threads_of(snapshot) == {server_thread}


@pytest.mark.parametrize(
    "base",
    [*map(shared_thread_param, (".", "..", "")), "/", "a/../b"],  # the literal ids: test_bad_input's too
    ids=["dot", "dotdot", "empty", "slash", "dotdot-path"],
)
def test_ids_a_url_would_mangle_name_threads_as_they_do_locally(server_url: str, base: str) -> None:
    # "." and ".." and "" cannot be made unique; the linear graph overwrites x on each pass.
    name = base if base in (".", "..", "") else f"{uuid.uuid4().hex[:8]}{base}"
    graph = RemoteGraph("linear", url=server_url)
    run = graph.stream_events(LINEAR, on(name), version="v3")
    assert run.output["x"] == 20 and run.thread_id == name
    snapshot = graph.get_state(on(name))
    assert snapshot.values == run.output and threads_of(snapshot) == {name}


def test_a_named_thread_never_used_reads_as_empty_under_its_name(server_url: str) -> None:
    # The server answers 404 ("Thread with ID <uuid> not found"); a local graph
    # reads a thread it never ran as empty, and so does this one, by its name.
    name = named("never used")
    graph = RemoteGraph("linear", url=server_url)
    snapshot = graph.get_state(on(name))
    assert (snapshot.values, snapshot.next, snapshot.tasks) == ({}, (), ())
    assert snapshot.config["configurable"]["thread_id"] == name
    assert list(graph.get_state_history(on(name))) == []


def test_a_readable_child_thread_is_mapped_like_any_thread_id(server_url: str) -> None:
    # One child thread per parent thread and node, named readably, as docs/composition.md suggests.
    child = RemoteGraph("linear", url=server_url, child_thread_id=lambda parent, ns: f"{parent}/{ns.split(':')[0]}")
    g = StateGraph(graphs.LinearState)
    g.add_node("child", child)
    g.add_edge(START, "child")
    parent = g.compile(checkpointer=InMemorySaver())
    parent_thread = named("parent")
    for x in (1, 2):
        parent.stream_events({"x": x, "log": []}, on(parent_thread), version="v3").output
    runs = get_sync_client(url=server_url).runs.list(str(uuid.uuid5(THREAD_ID_NAMESPACE, f"{parent_thread}/child")))
    assert [r["status"] for r in runs] == ["success", "success"]


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def test_probe_the_server_runs_a_named_thread_under_its_uuid(server_url: str) -> None:
    # What code in the graph sees: the configurable the server runs the graph
    # with, and the checkpoint metadata that run wrote. Locally, the name.
    graph = RemoteGraph("linear", url=server_url)
    name = named("user-42")
    run = graph.stream_events(LINEAR, on(name), version="v3")
    run.output
    assert run.thread_id == name
    server_thread = graph.server_thread_id(name)
    assert server_thread != name
    record = httpx.get(f"{server_url}/threads/{server_thread}/runs/{run.run_id}", timeout=10).json()
    assert record["kwargs"]["config"]["configurable"]["thread_id"] == server_thread
    state = httpx.get(f"{server_url}/threads/{server_thread}/state", timeout=10).json()
    # langgraph-api 0.16 writes the thread into the checkpoint's metadata; 0.11 (the
    # replicas server) writes none. Neither writes the name.
    assert state["metadata"].get("thread_id", server_thread) == server_thread
    assert name not in str(state["metadata"])


def test_probe_two_spellings_of_one_uuid_are_one_server_thread(server_url: str) -> None:
    spelled = str(uuid.uuid4())
    states = {}
    for kind, graph in (("local", local_twin("linear")), ("remote", RemoteGraph("linear", url=server_url))):
        graph.invoke(LINEAR, on(spelled.upper()))
        states[kind] = graph.get_state(on(spelled.lower())).values
    assert states == {"local": {}, "remote": {"x": 20, "log": ["a", "b"]}}
