"""The wire -> stream-part conversion, fed recorded wire sequences."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from remote_graph._core.convert import WireConverter
from remote_graph._core.revive import revive

SUB = ("inner:a110",)


def interrupts(part: dict) -> list:
    return [i.value for i in part.get("interrupts", ())] if part["type"] == "values" else [
        i.value for i in part["data"].get("__interrupt__", ())
    ]


def test_root_interrupt_rebuilt_on_updates_and_values() -> None:
    c = WireConverter()
    parts = []
    parts += c.convert("values", (), {"x": 2})
    parts += c.convert("updates", (), {})
    assert len(parts) == 1  # the emptied update waits for its interrupt
    parts += c.convert("input.requested", (), {"interrupt_id": "i1", "payload": {"q": "ok?"}})
    parts += c.convert("values", (), {"x": 2})
    assert [p["type"] for p in parts] == ["values", "updates", "values"]
    assert parts[0]["interrupts"] == ()
    assert interrupts(parts[1]) == [{"q": "ok?"}]
    assert interrupts(parts[2]) == [{"q": "ok?"}]
    assert parts[2]["interrupts"][0].id == "i1"


def test_parallel_interrupts_each_on_their_own_update() -> None:
    c = WireConverter()
    seq = [
        ("updates", (), {}),
        ("input.requested", (), {"interrupt_id": "a", "payload": "A?"}),
        ("values", (), {"out": []}),
        ("updates", (), {}),
        ("input.requested", (), {"interrupt_id": "b", "payload": "B?"}),
        ("values", (), {"out": []}),
    ]
    parts = [p for m, ns, d in seq for p in c.convert(m, ns, d)]
    assert [(p["type"], interrupts(p)) for p in parts] == [
        ("updates", ["A?"]),
        ("values", ["A?"]),
        ("updates", ["B?"]),
        ("values", ["B?"]),
    ]


def test_subgraph_interrupt_propagates_to_parent_and_closes_the_subgraph() -> None:
    c = WireConverter()
    seq = [
        ("values", SUB, {"x": 2}),
        ("lifecycle", SUB, {"event": "started", "namespace": list(SUB), "graph_name": "inner", "trigger_call_id": "a110"}),
        ("updates", SUB, {}),
        ("input.requested", SUB, {"interrupt_id": "i", "payload": "inner?"}),
        ("values", SUB, {"x": 2}),
        ("updates", (), {}),
        ("values", (), {"x": 2}),
    ]
    parts = [p for m, ns, d in seq for p in c.convert(m, ns, d)]
    kinds = [(p["type"], p["ns"]) for p in parts]
    assert kinds == [
        ("values", SUB),
        ("tasks", SUB),
        ("updates", SUB),
        ("values", SUB),
        ("updates", ()),
        ("values", ()),
    ]
    assert interrupts(parts[4]) == ["inner?"] and interrupts(parts[5]) == ["inner?"]
    assert parts[1]["data"]["id"] == "a110"
    # The subgraph's interrupted lifecycle may trail the run; finish() closes it from known interrupts.
    closing = c.finish(interrupted=True)
    assert closing[0]["type"] == "tasks" and closing[0]["ns"] == ()
    assert closing[0]["data"]["id"] == "a110" and closing[0]["data"]["interrupts"]


def test_subgraph_completed_and_failed_become_task_results() -> None:
    c = WireConverter()
    c.convert("lifecycle", SUB, {"event": "started", "graph_name": "inner", "trigger_call_id": "a110"})
    done = c.convert("lifecycle", SUB, {"event": "failed", "error": "sub exploded"})
    assert done[0]["data"]["error"] == "sub exploded"
    assert c.convert("lifecycle", SUB, {"event": "completed"}) == []  # already closed


def test_agent_name_and_tool_call_cause_are_kept() -> None:
    c = WireConverter()
    parts = c.convert(
        "lifecycle",
        ("tools:t1",),
        {"event": "started", "graph_name": "researcher", "trigger_call_id": "t1", "cause": {"type": "toolCall", "tool_call_id": "call_9"}},
    )
    assert parts[0]["ns"] == () and parts[0]["data"]["input"] == {"tool_call": {"id": "call_9"}}
    assert parts[1]["data"]["metadata"] == {"lc_agent_name": "researcher"}


def test_messages_get_one_routing_key_per_message() -> None:
    c = WireConverter()
    first = c.convert("messages", (), {"event": "message-start", "role": "ai", "id": "m1"})
    delta = c.convert("messages", (), {"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "x"}})
    second = c.convert("messages", (), {"event": "message-start", "role": "ai", "id": "m2"})
    key = lambda parts: parts[0]["data"][1]["run_id"]  # noqa: E731
    assert key(first) == key(delta) != key(second)


def test_revive_rebuilds_messages_and_leaves_other_data_alone() -> None:
    state = {
        "messages": [{"type": "human", "content": "hi", "id": "h"}, {"type": "ai", "content": "yo", "id": "a", "tool_calls": []}],
        "other": {"type": "human"},  # no content: not a message
    }
    out = revive(state)
    assert isinstance(out["messages"][0], HumanMessage) and isinstance(out["messages"][1], AIMessage)
    assert out["other"] is state["other"]
    plain = {"x": [1, 2]}
    assert revive(plain) is plain
