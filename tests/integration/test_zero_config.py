"""Zero-config parity: ``RemoteGraph(name, url=...)``, told nothing else, does what the
local graph compiled as its module is served does.

``toolflow`` is served from a module whose ``stream_transformers()`` hook adds
its own named channel; ``bare_agent`` from a module without the hook. Each
scenario runs on [local, remote] x [sync, async] (see ``lanes.py``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import toolflow
from langchain_core.messages import HumanMessage

from remote_graph import RemoteGraph
from tests.integration import server_kinds
from tests.integration.lanes import Lane, Scenarios, compare, local_twin, norm, norm_event, remote_without_state_reads

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

ASK = {"messages": [HumanMessage("what is 1 + 2?")]}


@scenario
def module_channels_by_name(lane: Lane) -> Any:
    # The module's own channel, updates and custom: subscribed before the run
    # moves, as a local caller does, with nothing configured on the client.
    run = lane.start(lane.graph("toolflow"), ASK)
    drained = lane.drain(run, "node_trail", "updates", "custom")
    return {
        "drained": norm(drained),
        "projections": sorted(run.extensions),
        "attributes": [hasattr(run, name) for name in ("updates", "custom")],
        "output": norm(lane.output(run)),
    }


@scenario
def module_channel_computed_on_the_client_is_whole_on_every_run(lane: Lane) -> Any:
    # The module's transformers given to the client compute its channel from the
    # run's stored events, so no run loses an item: not after a lost connection,
    # and not on a server that drops named-channel events live (the replicas).
    trails = []
    for _ in range(5):
        run = lane.start(lane.graph("toolflow", stream_transformers=toolflow.stream_transformers()), ASK)
        trails.append(lane.drain(run, "node_trail")["node_trail"])
    return trails


@scenario
def module_channel_subscribed_late_misses_earlier_items(lane: Lane) -> Any:
    # A channel is single-consumer and keeps nothing for a consumer yet to come:
    # subscribed after the values were read, it has nothing left, remotely too.
    run = lane.start(lane.graph("toolflow"), ASK)
    trail = run.extensions["node_trail"]
    values = lane.collect(run, "values")
    return {"values": len(values), "trail": lane.drain_channel(trail)}


@scenario
def module_channel_subscribed_mid_run(lane: Lane) -> Any:
    # Subscribed after the first values: the items from then on, in order.
    run = lane.start(lane.graph("toolflow"), ASK)
    first = lane.collect(run, "events", limit=3)
    return {"first": [norm_event(e) for e in first], "rest": lane.drain(run, "node_trail")}


@scenario
def raw_events_toolflow(lane: Lane) -> Any:
    run = lane.start(lane.graph("toolflow"), ASK)
    return [norm_event(e) for e in lane.collect(run, "events")]


@scenario
def node_returned_messages_in_order(lane: Lane) -> Any:
    # The tool call the agent builds itself is a message stream, before the streamed summary.
    run = lane.start(lane.graph("toolflow"), ASK)
    return lane.messages(run, at_start=True)


@scenario
def subgraph_message_node_at_start(lane: Lane) -> Any:
    run = lane.start(lane.graph("toolflow"), ASK)
    return lane.subgraph_messages(run)


@scenario
def node_named_at_start_while_its_step_runs(lane: Lane) -> Any:
    # The model streams slowly, so the thread's state is read while its step runs.
    run = lane.start(lane.graph("drip"), ASK)
    return lane.messages(run, at_start=True)


@scenario
def task_returned_messages_in_the_functional_api(lane: Lane) -> Any:
    # Each @task's returned message is a stream named for the task; the entrypoint returning them again adds none.
    run = lane.start(lane.graph("planner"), {"question": "weather?"})
    return {"messages": lane.messages(run, at_start=True), "output": norm(lane.output(run))}


@scenario
def node_returned_messages_without_updates_on_the_wire(lane: Lane) -> Any:
    # A module without the hook: the wire has values only. The thread's recent
    # states name the node of such a message (docs/zero-config.md, "Message nodes").
    run = lane.start(lane.graph("bare_agent"), ASK)
    return {"messages": lane.messages(run, at_start=True), "output": norm(lane.output(run))}


# Scenarios that read the module's channel off the wire, as a zero-config caller does.
_WIRE_CHANNELS = {"module_channels_by_name", "module_channel_subscribed_mid_run", "raw_events_toolflow"}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote(name: str, flavour: str, server_url: str, request: pytest.FixtureRequest) -> None:
    if name in _WIRE_CHANNELS and server_kinds.drops_live_channel_events(request):
        pytest.skip("this server drops named-channel events live: test_probe_the_pg_runtime_drops_channel_events")
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


# --- what the server tells a client, probed --------------------------------------------


def _raw_run(server_url: str, graph: str, input: Any, *, replayed: bool = False) -> list[dict[str, Any]]:
    """Every protocol event of one v3 run, read raw from its per-run stream: joined
    before the run starts, or (``replayed``) replayed from its start once it ended."""
    import json
    import uuid

    import httpx

    from remote_graph._core.commands import _V3_MARKER, _V3_STREAM_MODES
    from remote_graph._core.cursor import FROM_START

    with httpx.Client(base_url=server_url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        body = {
            "assistant_id": graph,
            "input": input,
            "config": {"configurable": {_V3_MARKER: True}},
            "stream_mode": list(_V3_STREAM_MODES),
            "stream_subgraphs": True,
            "if_not_exists": "create",
            # Stored and read from its first event: a stream joined live misses what
            # came before, and behind replicas the run may be on another server.
            "stream_resumable": True,
        }
        run = http.post(f"/threads/{thread_id}/runs", json=body).json()
        if replayed:
            http.get(f"/threads/{thread_id}/runs/{run['run_id']}/join", timeout=60)
        events = []
        path = f"/threads/{thread_id}/runs/{run['run_id']}/stream"
        with http.stream("GET", path, headers={"Last-Event-ID": FROM_START}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                    if isinstance(data, dict) and data.get("type") == "event":
                        events.append(data)
        return events


def test_probe_the_server_lists_no_transformer_channels(server_url: str) -> None:
    # The module's own channel (node_trail) is named nowhere a client can ask:
    # not the assistant, its schemas, its graph, its subgraphs or /info.
    import httpx

    with httpx.Client(base_url=server_url, timeout=30) as http:
        [assistant] = http.post("/assistants/search", json={"graph_id": "toolflow"}).json()
        answers = [
            assistant,
            http.get(f"/assistants/{assistant['assistant_id']}").json(),
            http.get(f"/assistants/{assistant['assistant_id']}/schemas").json(),
            http.get(f"/assistants/{assistant['assistant_id']}/graph", params={"xray": "true"}).json(),
            http.get(f"/assistants/{assistant['assistant_id']}/subgraphs", params={"recurse": "true"}).json(),
            http.get("/info").json(),
        ]
    text = str(answers)
    assert "critic" in text  # the answers do describe the graph...
    assert (
        "node_trail" not in text and "NodeTrail" not in text and "transformer" not in text.lower()
    )  # ...not its channels


def test_probe_what_the_wire_carries_of_nodes_and_returned_messages(
    server_url: str, request: pytest.FixtureRequest
) -> None:
    events = _raw_run(server_url, "toolflow", {"messages": [{"type": "human", "content": "what is 1 + 2?"}]})
    methods = [e["method"] for e in events]
    # The module's channel is its own method, at the root only: pushes of the
    # subgraph-scoped transformer (the critic's update) never reach the wire.
    trail = [e for e in events if e["method"] == "custom:node_trail"]
    nodes = [e["params"]["data"]["node"] for e in trail]
    if server_kinds.drops_live_channel_events(request):
        # Some may be lost live there (test_probe_the_pg_runtime_drops_channel_events).
        expected = iter(["agent", "tools", "agent", "review"])
        assert all(node in expected for node in nodes), nodes
    else:
        assert nodes == ["agent", "tools", "agent", "review"]
    assert all(e["params"]["namespace"] == [] for e in trail)
    if server_kinds.drops_live_channel_events(request):
        # That runtime can drop a stored event on its live way too (the client
        # replays it: v3_wire's gap check); the stored run has them all.
        ask = {"messages": [{"type": "human", "content": "what is 1 + 2?"}]}
        events = _raw_run(server_url, "toolflow", ask, replayed=True)
        methods = [e["method"] for e in events]
    # Message events say nothing of their node; neither do updates, nor is there a tasks event.
    messages = [e for e in events if e["method"] == "messages"]
    assert messages and not any("node" in e["params"] or len(e["params"]["data"]) > 5 for e in messages)
    assert "tasks" not in methods and not any("node" in e["params"] for e in events if e["method"] == "updates")
    # Every message event is a content-block event: the tool call the agent
    # returned without streaming is in its update, not on the messages channel.
    starts = [e["params"]["data"] for e in messages if e["params"]["data"]["event"] == "message-start"]
    assert len(starts) == 2  # the streamed summary and the critic's review
    first_update = next(e for e in events if e["method"] == "updates")
    assert first_update["params"]["data"]["agent"]["messages"][0]["tool_calls"][0]["id"] == "call_1"


def test_probe_a_replay_holds_only_the_runs_stream_modes(server_url: str) -> None:
    # A run stores for a replay only the events of its stream modes (langgraph-api
    # publishes the rest as not resumable, and the runs API takes no other mode):
    # a subgraph's lifecycle events and the module's named channel are sent live
    # only. Once the run ended, a replay from its start has neither, so the client
    # rebuilds a subgraph's start and end from its other events (_core/convert.py)
    # and a named channel's items sent during a lost connection are gone
    # (docs/divergences.md).
    ask = {"messages": [{"type": "human", "content": "what is 1 + 2?"}]}
    methods = {e["method"] for e in _raw_run(server_url, "toolflow", ask, replayed=True)}
    assert {"values", "updates", "messages", "custom"} <= methods
    assert "lifecycle" not in methods and "custom:node_trail" not in methods


@pytest.mark.timeout(180)
def test_probe_the_pg_runtime_drops_channel_events(server_url: str, request: pytest.FixtureRequest) -> None:
    # Ten runs, each joined before it starts: every named-channel event is sent
    # live. The in-memory runtime delivers all of them; the Postgres + Redis one
    # drops some (tests/integration/server_kinds.py), about half of the runs
    # losing one or more of their four.
    ask = {"messages": [{"type": "human", "content": "what is 1 + 2?"}]}
    counts = []
    for _ in range(10):
        events = _raw_run(server_url, "toolflow", ask)
        counts.append(sum(e["method"] == "custom:node_trail" for e in events))
    if server_kinds.drops_live_channel_events(request):
        assert min(counts) < 4, counts
    else:
        assert counts == [4] * 10


def test_probe_a_module_without_the_hook_sends_no_updates_and_no_custom(server_url: str) -> None:
    events = _raw_run(server_url, "bare_agent", {"messages": [{"type": "human", "content": "weather?"}]})
    assert {e["method"] for e in events} <= {"values", "messages", "lifecycle", "input.requested"}
    assert not any(e["method"] == "messages" for e in events)  # the agent streams nothing


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def _both(server_url: str, name: str) -> tuple[Any, Any]:
    """The local twin of graph ``name`` and the remote graph, told nothing else."""
    return local_twin(name), RemoteGraph(name, url=server_url)


def _thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_probe_a_message_node_is_none_at_its_start_when_the_state_cannot_be_read(server_url: str) -> None:
    # The wire's message-start names no node and the thread's state (which
    # would name the step's one task) cannot be read: the node's update names it.
    nodes = {}
    for kind, graph in (("local", local_twin("chat")), ("remote", remote_without_state_reads("chat", server_url))):
        run = graph.stream_events(ASK, _thread(), version="v3")
        messages, at_start = [], []
        for message in run.messages:
            messages.append(message)
            at_start.append(message.node)
            "".join(message.text)
        run.output
        nodes[kind] = {"at_start": at_start, "at_end": [m.node for m in messages]}
    assert nodes["local"] == {"at_start": ["chat"], "at_end": ["chat"]}
    assert nodes["remote"] == {"at_start": [None], "at_end": ["chat"]}


def test_probe_updates_and_custom_exist_where_the_module_registers_neither(server_url: str) -> None:
    local, remote = _both(server_url, "bare_agent")
    local_run = local.stream_events(ASK, _thread(), version="v3")
    assert not hasattr(local_run, "updates") and not hasattr(local_run, "custom")
    local_run.output
    run = remote.stream_events(ASK, _thread(), version="v3")
    assert (list(run.updates), list(run.custom)) == ([], [])  # there, and empty
    exact = RemoteGraph("bare_agent", url=server_url, stream_transformers=()).stream_events(
        ASK, _thread(), version="v3"
    )
    assert not hasattr(exact, "updates") and not hasattr(exact, "custom")
    exact.output


def test_probe_a_channel_never_sent_is_empty_while_the_run_goes(server_url: str) -> None:
    local, remote = _both(server_url, "linear")
    local_run = local.stream_events({"x": 1, "log": []}, _thread(), version="v3")
    with pytest.raises(KeyError):
        local_run.extensions["never_sent"]
    local_run.output
    run = remote.stream_events({"x": 1, "log": []}, _thread(), version="v3")
    channel = run.extensions["never_sent"]
    assert "never_sent" in run.extensions
    assert list(channel) == []
    with pytest.raises(KeyError):  # once the run ended, as locally
        run.extensions["asked_after_the_end"]


def test_probe_a_subgraph_handle_has_no_named_channel(server_url: str) -> None:
    trails = {}
    for kind, graph in zip(("local", "remote"), _both(server_url, "toolflow")):
        run = graph.stream_events(ASK, _thread(), version="v3")
        trails[kind] = [
            list(h.extensions["node_trail"]) if "node_trail" in h.extensions else None for h in run.subgraphs
        ]
        run.output
    assert trails["local"] == [[{"node": "critic"}]]
    assert trails["remote"] == [None]


def test_probe_v3_message_deltas_carry_no_message_id(server_url: str) -> None:
    # What would tell two model calls streaming at once in one namespace apart:
    # locally each message event carries its call's run id; on the wire only a
    # message's start has an id.
    local, _ = _both(server_url, "chat")
    run = local.stream_events(ASK, _thread(), version="v3")
    local_messages = [e["params"]["data"] for e in run if e["method"] == "messages"]
    assert local_messages and all(meta.get("run_id") for _, meta in local_messages)
    events = _raw_run(server_url, "chat", {"messages": [{"type": "human", "content": "hi"}]})
    wire = [e["params"]["data"] for e in events if e["method"] == "messages"]
    deltas = [d for d in wire if d["event"] == "content-block-delta"]
    assert deltas and all(set(d) == {"event", "index", "delta"} for d in deltas)
    assert [d["event"] for d in wire if "id" in d] == ["message-start"]
