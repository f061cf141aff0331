"""Zero-config parity: ``RemoteGraph(name, url=...)``, told nothing else, does what the
local graph compiled as its module is served does.

``toolflow`` is served from a module whose ``stream_transformers()`` hook adds
its own named channel; ``bare_agent`` from a module without the hook. Each
scenario runs on [local, remote] x [sync, async] (see ``lanes.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from tests.integration.lanes import Lane, Scenarios, compare, norm, norm_event

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
def node_returned_messages_without_updates_on_the_wire(lane: Lane) -> Any:
    # A module without the hook: the wire has values only. The node of such a
    # message is not known (README: "Message nodes"), so it is left out here.
    run = lane.start(lane.graph("bare_agent"), ASK)
    messages = [{k: v for k, v in m.items() if k != "node"} for m in lane.messages(run)]
    return {"messages": messages, "output": norm(lane.output(run))}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local
