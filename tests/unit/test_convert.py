"""The per-run stream's protocol events -> v2 stream parts (``WireConverter.convert(method, params)``)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.stream.run_stream import GraphRunStream
from langgraph.stream.transformers import LifecycleTransformer, ValuesTransformer
from langgraph.types import Interrupt

from remote_graph._core.convert import WireConverter
from remote_graph._core.revive import revive
from remote_graph._private import StreamMux

SUB = ("sub:0c01",)
INNER = ("sub:0c01", "inner:61b2")


def params(data: Any, ns: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """An event's params as the server's mux logs them."""
    return {"namespace": list(ns), "timestamp": 1, "data": data, **extra}


def lifecycle(event: str, ns: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    # Lifecycle events are logged at the root; the subgraph's namespace is in the data.
    return params({"event": event, "namespace": list(ns), **extra})


def started(ns: tuple[str, ...], graph_name: str | None = None, **extra: Any) -> dict[str, Any]:
    segment, _, call_id = ns[-1].partition(":")
    return lifecycle("started", ns, graph_name=graph_name or segment, trigger_call_id=call_id, **extra)


# --- interrupts ------------------------------------------------------------------


def test_values_carry_their_interrupts_as_interrupt_objects() -> None:
    c = WireConverter()
    [part] = c.convert(
        "values",
        params(
            {"x": 1, "answer": ""},
            interrupts=[{"value": {"question": "approve?"}, "id": "b8fe", "response_schema": None}],
        ),
    )
    assert part["type"] == "values" and part["ns"] == () and part["data"] == {"x": 1, "answer": ""}
    assert part["interrupts"] == (Interrupt(value={"question": "approve?"}, id="b8fe"),)
    assert c.interrupts == [((), Interrupt(value={"question": "approve?"}, id="b8fe"))]


def test_values_without_interrupts() -> None:
    c = WireConverter()
    extras: list[dict[str, Any]] = [{}, {"interrupts": []}, {"interrupts": None}]
    for extra in extras:
        [part] = c.convert("values", params({"x": 1}, **extra))
        assert part["interrupts"] == ()
    assert c.interrupts == []


def test_updates_with_interrupt_become_a_tuple_of_interrupts() -> None:
    c = WireConverter()
    raw = [
        {"value": {"question": "approve?"}, "id": "b8fe", "response_schema": None},
        {"value": "second?", "id": "77aa"},
    ]
    [part] = c.convert("updates", params({"__interrupt__": raw}))
    assert part == {
        "type": "updates",
        "ns": (),
        "data": {
            "__interrupt__": (
                Interrupt(value={"question": "approve?"}, id="b8fe"),
                Interrupt(value="second?", id="77aa"),
            )
        },
    }
    assert [i.id for _, i in c.interrupts] == ["b8fe", "77aa"]


def test_updates_keep_their_other_keys_next_to_the_interrupt() -> None:
    c = WireConverter()
    returned, part = c.convert(
        "updates",
        params(
            {
                "node": {"messages": [{"type": "ai", "content": "hi", "id": "m"}]},
                "__interrupt__": [{"value": 1, "id": "i"}],
            }
        ),
    )
    assert returned["type"] == "messages" and returned["data"][1]["langgraph_node"] == "node"
    assert isinstance(part["data"]["node"]["messages"][0], AIMessage)
    assert part["data"]["__interrupt__"] == (Interrupt(value=1, id="i"),)


def test_an_interrupt_seen_on_updates_and_values_is_recorded_once_where_it_was_raised() -> None:
    c = WireConverter()
    raw = [{"value": "inner?", "id": "c6b3", "response_schema": None}]
    c.convert("updates", params({"__interrupt__": raw}, INNER))
    c.convert("values", params({"x": 2}, INNER, interrupts=raw))
    c.convert("values", params({"x": 2}, interrupts=raw))  # propagated to the root
    assert c.interrupts == [(INNER, Interrupt(value="inner?", id="c6b3"))]


def test_interrupt_values_are_revived() -> None:
    c = WireConverter()
    [part] = c.convert("values", params({}, interrupts=[{"value": {"type": "human", "content": "q"}, "id": "i"}]))
    assert isinstance(part["interrupts"][0].value, HumanMessage)


# --- subgraph lifecycle -> tasks ----------------------------------------------------


def test_a_started_subgraph_becomes_a_task_start_at_its_own_namespace() -> None:
    c = WireConverter()
    [part] = c.convert("lifecycle", started(SUB))
    assert part == {"type": "tasks", "ns": SUB, "data": {"id": "0c01", "name": "sub", "input": None, "triggers": ()}}


def test_a_completed_subgraph_becomes_a_task_result_at_the_parent_namespace() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    [part] = c.convert("lifecycle", lifecycle("completed", SUB))
    assert part == {
        "type": "tasks",
        "ns": (),
        "data": {"id": "0c01", "name": "sub", "result": None, "error": None, "interrupts": []},
    }
    assert c.convert("lifecycle", lifecycle("completed", SUB)) == []  # already closed


def test_nested_subgraphs_open_and_close_at_their_namespaces() -> None:
    c = WireConverter()
    parts = []
    for event in (started(SUB), started(INNER), lifecycle("completed", INNER), lifecycle("completed", SUB)):
        parts += c.convert("lifecycle", event)
    assert [(p["ns"], p["data"]["id"], "result" in p["data"]) for p in parts] == [
        (SUB, "0c01", False),
        (INNER, "61b2", False),
        (SUB, "61b2", True),
        ((), "0c01", True),
    ]


def test_a_failed_subgraph_reports_its_error() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    [part] = c.convert("lifecycle", lifecycle("failed", SUB, error="Boom('kaboom')"))
    assert part["ns"] == () and part["data"]["error"] == "Boom('kaboom')" and part["data"]["interrupts"] == []
    c.convert("lifecycle", started(INNER))
    [part] = c.convert("lifecycle", lifecycle("failed", INNER))
    assert part["ns"] == SUB and part["data"]["error"] == "Subgraph failed"


def test_an_interrupted_subgraph_reports_the_interrupts_raised_below_it() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    c.convert("lifecycle", started(INNER))
    c.convert("values", params({"x": 2}, INNER, interrupts=[{"value": "inner?", "id": "c6b3"}]))
    [inner] = c.convert("lifecycle", lifecycle("interrupted", INNER))
    [outer] = c.convert("lifecycle", lifecycle("interrupted", SUB))
    assert inner["ns"] == SUB and inner["data"]["interrupts"] == [Interrupt(value="inner?", id="c6b3")]
    assert outer["ns"] == () and outer["data"]["interrupts"] == [Interrupt(value="inner?", id="c6b3")]
    assert inner["data"]["error"] is None


def test_an_interrupted_subgraph_with_no_known_interrupt_still_reports_one() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    [part] = c.convert("lifecycle", lifecycle("interrupted", SUB))
    assert part["data"]["interrupts"] == [Interrupt(value=None, id="")]


def test_a_drained_subgraph_is_closed() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    [part] = c.convert("lifecycle", lifecycle("drained", SUB))
    assert part["ns"] == () and part["data"]["id"] == "0c01" and part["data"]["error"] is None


def test_root_lifecycle_and_unknown_events_make_no_parts() -> None:
    c = WireConverter()
    assert c.convert("lifecycle", lifecycle("started", (), graph_name="agent")) == []
    assert c.convert("lifecycle", lifecycle("running", SUB)) == []
    assert c.convert("lifecycle", lifecycle("completed", SUB)) == []  # never started
    assert c.convert("lifecycle", {"namespace": [], "data": "not a mapping"}) == []


def test_a_tool_call_cause_is_given_to_the_parent_task() -> None:
    c = WireConverter()
    ns = ("tools:t1", "researcher:9f")
    parts = c.convert(
        "lifecycle", started(ns, graph_name="researcher", cause={"type": "toolCall", "tool_call_id": "call_9"})
    )
    assert parts == [
        {
            "type": "tasks",
            "ns": ("tools:t1",),
            "data": {"id": "9f", "name": "researcher", "input": {"tool_call": {"id": "call_9"}}, "triggers": ()},
        },
        # Only a subagent has a tool-call cause: its start names it, even when
        # the name is its node's, so the client's LifecycleTransformer keeps the cause.
        {
            "type": "tasks",
            "ns": ns,
            "data": {
                "id": "9f",
                "name": "researcher",
                "input": None,
                "triggers": (),
                "metadata": {"lc_agent_name": "researcher"},
            },
        },
    ]


def test_a_cause_without_a_tool_call_id_is_ignored() -> None:
    c = WireConverter()
    [start] = c.convert("lifecycle", started(SUB, cause={"type": "toolCall"}))
    assert start["ns"] == SUB and "metadata" not in start["data"]


def test_a_plain_subgraph_named_like_its_node_gets_no_agent_name() -> None:
    c = WireConverter()
    [start] = c.convert("lifecycle", started(SUB))
    assert start["data"] == {"id": "0c01", "name": "sub", "input": None, "triggers": ()}


def test_an_agent_subgraph_keeps_its_graph_name() -> None:
    c = WireConverter()
    [start] = c.convert("lifecycle", started(("tools:t1",), graph_name="researcher"))
    assert start["data"]["name"] == "tools" and start["data"]["metadata"] == {"lc_agent_name": "researcher"}
    [result] = c.convert("lifecycle", lifecycle("completed", ("tools:t1",)))
    assert result["data"]["id"] == "t1"


def test_finish_closes_the_subgraphs_a_paused_run_left_open_below_its_interrupts() -> None:
    c = WireConverter()
    other = ("other:5e",)
    for event in (started(SUB), started(INNER), started(other)):
        c.convert("lifecycle", event)
    c.convert("updates", params({"__interrupt__": [{"value": "inner?", "id": "c6b3"}]}, INNER))
    assert c.finish(interrupted=False) == []
    parts = c.finish(interrupted=True)
    # Deepest first, each at its parent namespace; "other" has no interrupt below it.
    assert [(p["ns"], p["data"]["id"]) for p in parts] == [(SUB, "61b2"), ((), "0c01")]
    assert all(p["data"]["interrupts"] == [Interrupt(value="inner?", id="c6b3")] for p in parts)
    assert c.finish(interrupted=True) == []  # closed once


# --- round trip: the client's own LifecycleTransformer rebuilds the server's events ---------


def rebuilt_lifecycle(events: list[tuple[str, dict[str, Any]]], *, interrupted: bool = False) -> list[Any]:
    """The lifecycle events a local mux derives from the converted parts."""
    c = WireConverter()
    parts: list[dict[str, Any]] = []
    for method, p in events:
        parts += c.convert(method, p)
    parts += c.finish(interrupted=interrupted)
    run = GraphRunStream(
        iter(parts), StreamMux(factories=[ValuesTransformer, LifecycleTransformer], scope=(), is_async=False)
    )
    return list(run.lifecycle)


def server_lifecycle(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [p["data"] for method, p in events if method == "lifecycle"]


CAUSE = {"type": "toolCall", "tool_call_id": "call_9"}
ROUND_TRIPS = {
    "completed": [("lifecycle", started(SUB)), ("lifecycle", lifecycle("completed", SUB))],
    "failed": [("lifecycle", started(SUB)), ("lifecycle", lifecycle("failed", SUB, error="Boom('kaboom')"))],
    "nested-interrupted": [
        ("lifecycle", started(SUB)),
        ("lifecycle", started(INNER)),
        ("values", params({}, INNER, interrupts=[{"value": "inner?", "id": "c6b3"}])),
        ("lifecycle", lifecycle("interrupted", INNER)),
        ("lifecycle", lifecycle("interrupted", SUB)),
    ],
    "subagent-from-tool-call": [
        ("lifecycle", started(("tools:9f",), graph_name="researcher", cause=CAUSE)),
        ("lifecycle", lifecycle("completed", ("tools:9f",))),
    ],
    "subagent-named-like-its-node": [
        ("lifecycle", started(("researcher:9f",), graph_name="researcher", cause=CAUSE)),
        ("lifecycle", lifecycle("completed", ("researcher:9f",))),
    ],
}


@pytest.mark.parametrize(
    "name",
    list(ROUND_TRIPS),
)
def test_the_client_mux_rebuilds_the_servers_lifecycle_events(name: str) -> None:
    events = ROUND_TRIPS[name]
    assert rebuilt_lifecycle(events) == server_lifecycle(events)


def test_finish_closes_open_subgraphs_as_the_server_would_have() -> None:
    events = [
        ("lifecycle", started(SUB)),
        ("lifecycle", started(INNER)),
        ("values", params({}, INNER, interrupts=[{"value": "inner?", "id": "c6b3"}])),
    ]
    # The run paused; its "interrupted" lifecycle events were not seen before the stream ended.
    assert rebuilt_lifecycle(events, interrupted=True) == [
        *server_lifecycle(events),
        {"event": "interrupted", "namespace": list(INNER)},
        {"event": "interrupted", "namespace": list(SUB)},
    ]


# The server stores no lifecycle event for a replay, and the Postgres + Redis runtime
# drops some live: what a local mux derives must not depend on each one arriving.
STATE = {"x": 1}


def test_a_start_that_comes_right_after_the_subgraphs_first_event_is_the_servers() -> None:
    events = [
        ("values", params(STATE, SUB)),
        ("lifecycle", started(SUB, graph_name="reviewer")),
        ("values", params(STATE, SUB)),
        ("lifecycle", lifecycle("completed", SUB)),
    ]
    c = WireConverter()
    parts = [part for method, p in events for part in c.convert(method, p)]
    starts = [p for p in parts if p["type"] == "tasks" and p["ns"] == SUB and "input" in p["data"]]
    assert len(starts) == 1 and starts[0]["data"]["metadata"] == {"lc_agent_name": "reviewer"}


def test_a_lost_start_is_made_at_the_subgraphs_second_event_and_a_late_one_is_dropped() -> None:
    c = WireConverter()
    first = c.convert("values", params(STATE, INNER))
    second = c.convert("values", params(STATE, INNER))
    late = c.convert("lifecycle", started(INNER))
    assert [p["type"] for p in first] == ["values"]
    assert [(p["type"], p["ns"]) for p in second] == [("tasks", SUB), ("tasks", INNER), ("values", INNER)]
    assert [p["data"]["id"] for p in second[:2]] == ["0c01", "61b2"]
    assert late == []


def test_a_lost_end_is_made_before_the_event_after_the_parents_update() -> None:
    # The server sends a subgraph's end right after the parent's update for its node.
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    c.convert("lifecycle", started(INNER))
    c.convert("updates", params({"inner": {"x": 1}}, SUB))
    assert c.convert("lifecycle", lifecycle("completed", INNER))[0]["data"]["id"] == "61b2"  # on time: the server's
    c.convert("updates", params({"sub": {"x": 1}}))
    after = c.convert("values", params(STATE))  # SUB's end did not come
    assert [(p["type"], p["ns"], p["data"].get("id")) for p in after] == [("tasks", (), "0c01"), ("values", (), None)]
    assert c.convert("lifecycle", lifecycle("completed", SUB)) == []  # too late: already ended


def test_an_update_of_a_node_running_two_subgraphs_ends_neither_the_parents_state_ends_both() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(("sub:1",)))
    c.convert("lifecycle", started(("sub:2",)))
    assert [p["type"] for p in c.convert("updates", params({"sub": {"x": 1}}))] == ["updates"]
    after = c.convert("values", params(STATE))
    assert [(p["type"], p["data"].get("id")) for p in after] == [("tasks", "1"), ("tasks", "2"), ("values", None)]


def test_without_updates_a_lost_end_is_made_before_the_parents_next_state() -> None:
    # A module without UpdatesTransformer: the parent's state is what follows a subgraph's end.
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    c.convert("lifecycle", started(INNER))
    c.convert("values", params(STATE, INNER))
    after_inner = c.convert("values", params(STATE, SUB))  # INNER's end did not come
    assert [(p["type"], p["ns"], p["data"].get("id")) for p in after_inner] == [
        ("tasks", SUB, "61b2"),
        ("values", SUB, None),
    ]
    assert c.convert("lifecycle", lifecycle("completed", SUB))[0]["data"]["id"] == "0c01"  # on time
    assert [p["type"] for p in c.convert("values", params(STATE))] == ["values"]


def test_a_parents_state_leaves_a_paused_subgraph_open() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    c.convert("lifecycle", started(("other:5e",)))
    c.convert("updates", params({"__interrupt__": [{"value": "sub?", "id": "c6b3"}]}, SUB))
    # Its sibling finished: ended. The paused one is the run's end's to close.
    after = c.convert("values", params(STATE))
    assert [(p["type"], p["data"].get("id")) for p in after] == [("tasks", "5e"), ("values", None)]
    paused = {**params(STATE), "interrupts": [{"value": "sub?", "id": "c6b3"}]}
    assert [p["type"] for p in c.convert("values", paused)] == ["values"]
    assert [p["data"]["id"] for p in c.finish(interrupted=True)] == ["0c01"]


def test_a_completed_run_closes_the_subgraphs_whose_end_was_lost() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    c.convert("values", params(STATE, SUB))
    c.convert("values", params(STATE, ("other:77",)))  # seen once, its start lost too
    closing = c.finish(interrupted=False, completed=True)
    assert [(p["type"], p["ns"], "result" in p["data"]) for p in closing] == [
        ("tasks", ("other:77",), False),
        ("tasks", (), True),
        ("tasks", (), True),
    ]
    assert {p["data"]["id"] for p in closing if "result" in p["data"]} == {"0c01", "77"}


def test_a_failed_or_cancelled_run_leaves_a_lost_end_to_the_mux() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))
    assert c.finish(interrupted=False) == []


# --- messages -----------------------------------------------------------------------


def message_key(part: dict[str, Any]) -> str:
    return part["data"][1]["run_id"]


def test_each_message_gets_its_own_routing_key_per_namespace() -> None:
    c = WireConverter()
    start = {"event": "message-start", "role": "ai", "id": "m1"}
    delta = {"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "x"}}
    c.convert("lifecycle", started(SUB))
    root1 = c.convert("messages", params(start))
    sub1 = c.convert("messages", params({**start, "id": "s1"}, SUB))
    root1_delta = c.convert("messages", params(delta))
    sub1_delta = c.convert("messages", params(delta, SUB))
    root2 = c.convert("messages", params({**start, "id": "m2"}))
    root2_delta = c.convert("messages", params(delta))
    sub1_after = c.convert("messages", params(delta, SUB))
    keys = [message_key(p[0]) for p in (root1, root1_delta, sub1, sub1_delta, sub1_after, root2, root2_delta)]
    assert keys[0] == keys[1]
    assert keys[2] == keys[3] == keys[4]  # another namespace's new message does not move this one's key
    assert keys[5] == keys[6]
    assert len({keys[0], keys[2], keys[5]}) == 3


def test_a_message_part_carries_the_event_and_its_namespace() -> None:
    c = WireConverter()
    event = {"event": "message-start", "role": "ai", "id": "m1"}
    [part] = c.convert("messages", params(event, INNER))
    assert part["type"] == "messages" and part["ns"] == INNER
    data, metadata = part["data"]
    assert data == event
    assert metadata["langgraph_checkpoint_ns"] == "sub:0c01|inner:61b2"


# --- objects revived, other modes -------------------------------------------------------


def test_message_dicts_in_values_and_updates_are_revived() -> None:
    c = WireConverter()
    messages = [
        {"type": "human", "content": "hi", "id": "h"},
        {
            "type": "ai",
            "content": "",
            "id": "a",
            "tool_calls": [{"name": "f", "args": {}, "id": "call_1", "type": "tool_call"}],
        },
        {"type": "tool", "content": "42", "tool_call_id": "call_1", "id": "t"},
    ]
    [values] = c.convert("values", params({"messages": messages, "n": 1}))
    [updates] = c.convert("updates", params({"agent": {"messages": messages[1:2]}}))
    assert [type(m) for m in values["data"]["messages"]] == [HumanMessage, AIMessage, ToolMessage]
    assert values["data"]["messages"][1].tool_calls[0]["id"] == "call_1"
    assert values["data"]["n"] == 1
    assert isinstance(updates["data"]["agent"]["messages"][0], AIMessage)


def test_tools_are_revived_and_other_modes_pass_through() -> None:
    c = WireConverter()
    c.convert("lifecycle", started(SUB))  # announced, as the server does
    finished = {"event": "tool-finished", "output": {"type": "tool", "content": "1", "tool_call_id": "c"}}
    [tools] = c.convert("tools", params(finished, SUB))
    assert tools["ns"] == SUB and isinstance(tools["data"]["output"], ToolMessage)
    [custom] = c.convert("custom", params({"progress": 0.5}, SUB))
    assert custom == {"type": "custom", "ns": SUB, "data": {"progress": 0.5}}
    [checkpoints] = c.convert("checkpoints", params({"type": "human", "content": "left alone"}))
    assert checkpoints["data"] == {"type": "human", "content": "left alone"}


def test_revive_rebuilds_messages_and_leaves_other_data_alone() -> None:
    state = {
        "messages": [
            {"type": "human", "content": "hi", "id": "h"},
            {"type": "ai", "content": "yo", "id": "a", "tool_calls": []},
        ],
        "other": {"type": "human"},  # no content: not a message
    }
    out = revive(state)
    assert isinstance(out["messages"][0], HumanMessage) and isinstance(out["messages"][1], AIMessage)
    assert out["other"] is state["other"]
    plain = {"x": [1, 2]}
    assert revive(plain) is plain
