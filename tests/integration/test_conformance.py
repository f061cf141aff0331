"""Polymorphism conformance: each scenario runs on the local compiled graph and on
``RemoteGraph`` over a real server, with the sync and the async API, and the
normalized results must be equal.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import graphs
import pytest
from langchain_core.messages import HumanMessage
from langgraph.runtime import RunControl
from langgraph.stream._types import StreamTransformer
from langgraph.stream.stream_channel import StreamChannel
from langgraph.stream.transformers import CheckpointsTransformer, DebugTransformer, TasksTransformer
from langgraph.types import Command

from remote_graph import RemoteGraph, RemoteRunError
from tests.integration.lanes import (
    GATE,
    LINEAR,
    Lane,
    Scenarios,
    compare,
    error_of,
    local_twin,
    norm,
    norm_event,
    parallel_steps,
)
from tests.integration.server_kinds import is_aegra

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS


CHAT = {"messages": [HumanMessage("hi")]}


# --- plain runs --------------------------------------------------------------


@scenario
def raw_events_linear(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    events = lane.collect(run, "events")
    return {"events": [norm_event(e) for e in events], "seq": [e["seq"] for e in events], "output": lane.output(run)}


@scenario
def values_linear(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    return {"values": lane.collect(run, "values"), "output": lane.output(run), "interrupted": lane.interrupted(run)}


@scenario
def output_without_iterating(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), {"x": 5, "log": ["seed"]})
    return {"output": lane.output(run), "interrupts": lane.interrupts(run)}


@scenario
def updates_linear(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    return lane.collect(run, "updates")


@scenario
def late_subscription_misses_earlier_values(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    first = lane.collect(run, "events", limit=1)
    return {"first": norm_event(first[0]), "rest": lane.collect(run, "values")}


@scenario
def second_subscription_raises(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    lane.collect(run, "values")
    try:
        lane.collect(run, "values")
    except RuntimeError as exc:
        return "already has a subscriber" in str(exc)
    return "no error"


@scenario
def missing_projection_attribute(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    try:
        run.tool_calls  # noqa: B018
    except AttributeError as exc:
        return str(exc).split("object has no attribute")[1]
    return "no error"


@scenario
def multi_turn_same_thread(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    turns = []
    for x in (1, 7, 3):
        run = lane.start(graph, {"x": x, "log": []}, config)
        turns.append({"events": [norm_event(e) for e in lane.collect(run, "events")], "output": lane.output(run)})
    return turns


@scenario
def message_objects_in_input(lane: Lane) -> Any:
    run = lane.start(lane.graph("chat"), {"messages": [HumanMessage("hi", id="h1")]})
    return norm(lane.output(run))


# --- subgraphs -----------------------------------------------------------------


@scenario
def values_nested_root_only(lane: Lane) -> Any:
    run = lane.start(lane.graph("nested"), LINEAR)
    return {"values": lane.collect(run, "values"), "output": lane.output(run)}


@scenario
def lifecycle_nested(lane: Lane) -> Any:
    run = lane.start(lane.graph("nested"), LINEAR)
    return norm(lane.collect(run, "lifecycle"))


@scenario
def raw_events_nested(lane: Lane) -> Any:
    run = lane.start(lane.graph("nested"), LINEAR)
    return [norm_event(e) for e in lane.collect(run, "events")]


@scenario
def subgraph_handles_nested(lane: Lane) -> Any:
    run = lane.start(lane.graph("nested"), LINEAR)
    return {"handles": lane.subgraphs(run), "output": lane.output(run)}


@scenario
def updates_nested_root_only(lane: Lane) -> Any:
    run = lane.start(lane.graph("nested"), LINEAR)
    return lane.collect(run, "updates")


# --- messages ------------------------------------------------------------------


@scenario
def messages_chat_tokens(lane: Lane) -> Any:
    run = lane.start(lane.graph("chat"), CHAT)
    messages = lane.messages(run)
    return {"messages": messages, "output": norm(lane.output(run))}


@scenario
def messages_agent_tool_calls(lane: Lane) -> Any:
    run = lane.start(lane.graph("agent"), {"messages": [HumanMessage("add 1 and 2")]})
    return {"messages": lane.messages(run), "output": norm(lane.output(run))}


@scenario
def updates_agent(lane: Lane) -> Any:
    run = lane.start(lane.graph("agent"), {"messages": [HumanMessage("add 1 and 2")]})
    return norm(lane.collect(run, "updates"))


# --- custom and fan-out ----------------------------------------------------------


@scenario
def custom_and_send_fanout(lane: Lane) -> Any:
    run = lane.start(lane.graph("custom"), {"n": 4, "results": []})
    custom = lane.collect(run, "custom")
    return {"custom": sorted(map(str, custom)), "output": lane.output(run)}


@scenario
def updates_fanout(lane: Lane) -> Any:
    run = lane.start(lane.graph("custom"), {"n": 1, "results": []})
    return sorted(map(str, lane.collect(run, "updates")))


# --- interrupts ------------------------------------------------------------------


@scenario
def interrupt_gate(lane: Lane) -> Any:
    run = lane.start(lane.graph("gate"), GATE)
    return {
        "values": lane.collect(run, "values"),
        "interrupted": lane.interrupted(run),
        "interrupts": norm(lane.interrupts(run)),
        "output": lane.output(run),
    }


@scenario
def interrupt_gate_raw_events(lane: Lane) -> Any:
    run = lane.start(lane.graph("gate"), GATE)
    return [norm_event(e) for e in lane.collect(run, "events")]


@scenario
def interrupted_read_first(lane: Lane) -> Any:
    run = lane.start(lane.graph("gate"), GATE)
    return {"interrupted": lane.interrupted(run), "interrupts": norm(lane.interrupts(run))}


@scenario
def resume_gate(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    first = lane.start(graph, GATE, config)
    lane.output(first)
    resumed = lane.start(graph, Command(resume="yes"), config)
    return {
        "values": lane.collect(resumed, "values"),
        "output": lane.output(resumed),
        "interrupted": lane.interrupted(resumed),
        "interrupts": lane.interrupts(resumed),
    }


@scenario
def two_parallel_interrupts_and_batch_resume(lane: Lane) -> Any:
    graph = lane.graph("twoask")
    config = lane.thread()
    run = lane.start(graph, {"out": []}, config)
    interrupts = lane.interrupts(run)
    answers = {i.id: f"<{i.value}>" for i in interrupts}
    resumed = lane.start(graph, Command(resume=answers), config)
    return {
        "interrupts": sorted(str(norm(i)) for i in interrupts),
        # ask_a and ask_b resume side by side: see parallel_steps.
        "events": parallel_steps([norm_event(e) for e in lane.collect(resumed, "events")]),
        "output": lane.output(resumed),
    }


@scenario
def subgraph_interrupt(lane: Lane) -> Any:
    run = lane.start(lane.graph("subask"), GATE)
    handles = lane.subgraphs(run, depth=1)
    return {
        "handles": [{k: h[k] for k in ("graph_name", "status", "values", "output")} for h in handles],
        "interrupted": lane.interrupted(run),
        "interrupts": norm(lane.interrupts(run)),
        "output": lane.output(run),
    }


@scenario
def subgraph_interrupt_lifecycle_and_resume(lane: Lane) -> Any:
    graph = lane.graph("subask")
    config = lane.thread()
    run = lane.start(graph, GATE, config)
    lifecycle = norm(lane.collect(run, "lifecycle"))
    resumed = lane.start(graph, Command(resume="inner-yes"), config)
    return {
        "lifecycle": lifecycle,
        "resumed_lifecycle": norm(lane.collect(resumed, "lifecycle")),
        "output": lane.output(resumed),
    }


# --- errors ----------------------------------------------------------------------


@scenario
def node_error_values_then_raise(lane: Lane) -> Any:
    run = lane.start(lane.graph("boom"), LINEAR)
    items: list[Any] = []
    try:
        source = run.values
        if lane.flavour == "sync":
            for item in source:
                items.append(item)
        else:

            async def go() -> None:
                async for item in source:
                    items.append(item)

            lane.call(go)
    except Exception as exc:
        return {"items": items, "error": error_of(exc)}
    return {"items": items, "error": None}


@scenario
def node_error_output_and_raw(lane: Lane) -> Any:
    out: dict[str, Any] = {}
    run = lane.start(lane.graph("boom"), LINEAR)
    try:
        lane.output(run)
    except Exception as exc:
        out["output"] = error_of(exc)
    run = lane.start(lane.graph("boom"), LINEAR)
    events: list[Any] = []
    try:
        events.extend(norm_event(e) for e in lane.collect(run, "events"))
    except Exception as exc:
        out["raw"] = (events, error_of(exc))
    return out


# --- consumption ------------------------------------------------------------------


@scenario
def abort_early_keeps_last_values(lane: Lane) -> Any:
    run = lane.start(lane.graph("linear"), LINEAR)
    items, output = lane.abort_after(run, "values", 1)
    return {"items": items, "output": output}


@scenario
def interleave_values_updates_lifecycle(lane: Lane) -> Any:
    if lane.flavour == "async" and lane.kind == "local":
        pytest.skip("local async streams have no interleave; the remote async one is compared with local sync")
    run = lane.start(lane.graph("nested"), LINEAR)
    return norm(lane.interleave(run, "values", "updates", "lifecycle"))


class NodeCounter(StreamTransformer):
    """A user transformer: counts node updates and publishes a named channel."""

    _native = True
    required_stream_modes = ("updates",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.names: StreamChannel[str] = StreamChannel("node_names")
        self.counts: dict[str, int] = {}

    def init(self) -> dict[str, Any]:
        return {"node_names": self.names}

    def process(self, event: Any) -> bool:
        if event["method"] == "updates" and event["params"]["namespace"] == list(self.scope):
            for node in event["params"]["data"]:
                self.counts[node] = self.counts.get(node, 0) + 1
                self.names.push(node)
        return True


@scenario
def call_site_transformer(lane: Lane) -> Any:
    run = lane.start(lane.graph("nested"), LINEAR, transformers=[NodeCounter])
    names = lane.collect(run, "node_names")
    raw = lane.start(lane.graph("linear"), LINEAR, transformers=[NodeCounter])
    methods = [e["method"] for e in lane.collect(raw, "events")]
    return {"names": names, "methods": methods, "extensions": sorted(run.extensions)}


@scenario
def invariant_kwargs_rejected(lane: Lane) -> Any:
    graph = lane.graph("linear")
    out = []
    for kwargs in ({"stream_mode": "values"}, {"subgraphs": True}):
        try:
            if lane.flavour == "sync":
                graph.stream_events(LINEAR, lane.thread(), version="v3", **kwargs)
            else:
                graph.astream_events(LINEAR, lane.thread(), version="v3", **kwargs)
        except TypeError as exc:
            out.append(str(exc))
    return out


@scenario
def prebuilt_transformer_instance_rejected(lane: Lane) -> Any:
    from langgraph.stream.transformers import UpdatesTransformer

    try:
        run = lane.start(lane.graph("linear"), LINEAR, transformers=[UpdatesTransformer()])
        lane.output(run)
    except TypeError as exc:
        return str(exc)
    return "accepted"


# --- parametrization -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote(name: str, flavour: str, server_url: str) -> None:
    fn = SCENARIOS[name]
    # Local async streams have no interleave; that scenario's reference is local sync.
    reference = "sync" if fn is interleave_values_updates_lifecycle else None
    local, remote = compare(fn, flavour, server_url, reference_flavour=reference)
    assert remote == local


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def _thread() -> dict[str, Any]:
    return Lane.thread()


@pytest.mark.parametrize(
    "method, kwargs",
    [
        ("stream_events", {"control": RunControl()}),
        ("stream_events", {"output_keys": ["x"]}),
        ("stream_events", {"print_mode": "values"}),
        ("stream_events", {"debug": True}),
        ("stream_events", {"checkpoint_during": True}),
        ("invoke", {"control": RunControl()}),
        ("invoke", {"params": {"tag": "a"}}),
        ("stream", {"control": RunControl()}),
        ("stream", {"params": {"tag": "a"}}),
    ],
    ids=lambda value: value if isinstance(value, str) else next(iter(value)),
)
def test_probe_a_keyword_no_server_path_honours_is_refused_where_local_takes_it(
    method: str, kwargs: dict[str, Any], server_url: str
) -> None:
    def call(graph: Any) -> Any:
        if method == "stream_events":
            return graph.stream_events(LINEAR, _thread(), version="v3", **kwargs).output
        if method == "invoke":
            return graph.invoke(LINEAR, _thread(), **kwargs)
        return list(graph.stream(LINEAR, _thread(), **kwargs))

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # checkpoint_during warns, debug prints
        warnings.simplefilter("ignore", DeprecationWarning)
        assert call(local_twin("linear"))
    with pytest.raises(NotImplementedError, match=f"{next(iter(kwargs))}="):
        call(RemoteGraph("linear", url=server_url))


def test_probe_a_rebuilt_exception_is_named_as_the_remote_one_but_is_another_class(server_url: str) -> None:
    with pytest.raises(graphs.Boom):
        local_twin("boom").invoke(LINEAR, _thread())
    with pytest.raises(RemoteRunError, match="kaboom from node") as boom:
        RemoteGraph("boom", url=server_url).invoke(LINEAR, _thread())
    assert type(boom.value).__name__ == "Boom" and not isinstance(boom.value, graphs.Boom)
    # A builtin type's is a subclass of it.
    with pytest.raises(ValueError, match="must not be negative") as picky:
        RemoteGraph("picky", url=server_url).invoke({"x": -1, "log": []}, _thread())
    assert type(picky.value) is not ValueError and isinstance(picky.value, RemoteRunError)


def test_probe_v3_checkpoints_tasks_and_debug_stay_empty(server_url: str, request: pytest.FixtureRequest) -> None:
    transformers = [CheckpointsTransformer, TasksTransformer, DebugTransformer]
    counts = {}
    for kind, graph in (("local", local_twin("linear")), ("remote", RemoteGraph("linear", url=server_url))):
        run = graph.stream_events(LINEAR, _thread(), version="v3", transformers=transformers)
        cursors = {name: iter(getattr(run, name)) for name in ("checkpoints", "tasks", "debug")}
        counts[kind] = {name: len(list(cursor)) for name, cursor in cursors.items()}
        assert run.output == {"x": 20, "log": ["a", "b"]}
    assert counts["local"] == {"checkpoints": 4, "tasks": 4, "debug": 8}
    # A server without the v3 protocol (aegra) streams the classic checkpoints and
    # tasks modes a v3 run's projections are built from; debug stays empty there too.
    empty = {"checkpoints": 0, "tasks": 0, "debug": 0}
    assert counts["remote"] == ({**empty, "checkpoints": 4, "tasks": 4} if is_aegra(request.config) else empty)
    # The classic stream modes of those names do work.
    remote = RemoteGraph("linear", url=server_url)
    assert {mode: len(remote.invoke(LINEAR, _thread(), stream_mode=mode)) for mode in ("checkpoints", "tasks")} == {
        "checkpoints": 4,
        "tasks": 4,
    }
