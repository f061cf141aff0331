"""Node-returned messages rebuilt from the wire, as local langgraph's messages handler emits them."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from remote_graph._core.convert import WireConverter

HUMAN = {"type": "human", "content": "hi", "id": "h1"}
CALL = {
    "type": "ai",
    "content": "",
    "id": "a1",
    "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}],
}
TOOL = {"type": "tool", "content": "3", "id": "t1", "tool_call_id": "c1"}
STREAMED = {"type": "ai", "content": "summary", "id": "lc_run--1"}


def params(data: Any, ns: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"namespace": list(ns), "timestamp": 1, "data": data}


def kinds(parts: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        if part["type"] == "messages":
            payload, meta = part["data"]
            out.append(("messages", getattr(payload, "id", None) or payload.get("event"), meta["langgraph_node"]))
        else:
            out.append(part["type"])
    return out


def test_a_returned_message_comes_before_its_nodes_update_and_only_once() -> None:
    c = WireConverter()
    parts = c.convert("values", params({"messages": [HUMAN]}))
    parts += c.convert("updates", params({"agent": {"messages": [CALL]}}))
    parts += c.convert("values", params({"messages": [HUMAN, CALL]}))
    parts += c.convert("updates", params({"tools": {"messages": [TOOL]}}))
    parts += c.convert("values", params({"messages": [HUMAN, CALL, TOOL]}))
    assert kinds(parts) == ["values", ("messages", "a1", "agent"), "updates", "values", "updates", "values"]
    message = parts[1]["data"][0]
    assert isinstance(message, AIMessage) and message.tool_calls[0]["id"] == "c1"


def test_a_streamed_message_is_not_emitted_again_from_its_update() -> None:
    c = WireConverter()
    parts = c.convert("values", params({"messages": [HUMAN]}))
    parts += c.convert("messages", params({"event": "message-start", "role": "ai", "id": "lc_run--1"}))
    parts += c.convert("messages", params({"event": "message-finish"}))
    parts += c.convert("updates", params({"say": {"messages": [STREAMED]}}))
    assert kinds(parts) == [
        "values",
        ("messages", "message-start", None),
        ("messages", "message-finish", None),
        "updates",
    ]


def test_input_messages_returned_again_are_not_new() -> None:
    c = WireConverter()
    c.convert("values", params({"messages": [HUMAN]}))
    assert kinds(c.convert("updates", params({"echo": {"messages": [HUMAN]}}))) == ["updates"]


def test_returned_messages_are_found_in_lists_of_writes_and_in_subgraphs() -> None:
    c = WireConverter()
    parts = c.convert("updates", params({"work": [{"messages": [CALL]}, {"note": HUMAN}]}, ("sub:1",)))
    assert kinds(parts) == [("messages", "a1", "work"), ("messages", "h1", "work"), "updates"]
    assert parts[0]["ns"] == ("sub:1",) and isinstance(parts[1]["data"][0], HumanMessage)


def test_without_updates_new_messages_of_a_later_state_are_emitted_without_a_node() -> None:
    # A server whose module registers no UpdatesTransformer sends only values.
    c = WireConverter()
    parts = c.convert("values", params({"messages": [HUMAN]}))
    parts += c.convert("values", params({"messages": [HUMAN, CALL, TOOL, {"type": "ai", "content": "x", "id": None}]}))
    assert kinds(parts) == ["values", ("messages", "a1", None), "values"]


def test_without_updates_a_states_new_messages_are_named_by_the_threads_recent_states() -> None:
    # A module that sends no updates: the state after the step is all that carries
    # the returned message, and it asks for the writer before it converts.
    c = WireConverter()
    first = params({"messages": [HUMAN]})
    assert c.wants_writers("values", first) is None  # the input: nothing is emitted for it
    c.convert("values", first)
    after = params({"messages": [HUMAN, CALL]})
    assert c.wants_writers("values", after) == ()
    history = [{"values": {}, "tasks": [{"name": "agent", "result": {"messages": [CALL]}}]}]
    c.learn_writers((), history, after["data"])
    parts = c.convert("values", after)
    assert [p["type"] for p in parts] == ["messages", "values"]
    assert parts[0]["data"][1]["langgraph_node"] == "agent"
    # Once emitted, the same message in a later state asks for nothing.
    assert c.wants_writers("values", params({"messages": [HUMAN, CALL]})) is None
