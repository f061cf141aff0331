"""A remote child's messages in a v1/v2 parent: string content and token chunks."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManager
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from remote_graph._private import StreamMessagesHandler, StreamMessagesHandlerV2

from remote_graph._core.nested import NestedRun
from remote_graph._core.v1_messages import V1Messages, to_v0
from remote_graph.nesting import parent_task

NS = ("child:t1",)
V1 = {"output_version": "v1", "model_name": "m"}


def event(data: dict[str, Any], node: str | None = "agent") -> dict[str, Any]:
    return {"type": "messages", "ns": (), "data": (data, {"langgraph_node": node, "langgraph_checkpoint_ns": "", "run_id": "#1"})}


def test_v1_output_becomes_the_string_content_a_model_returns_by_default() -> None:
    text = AIMessage(content=[{"type": "text", "text": "hel", "index": 0}, {"type": "text", "text": "lo"}], response_metadata=V1, id="m1")
    call = AIMessage(
        content=[{"type": "tool_call", "id": "c1", "name": "add", "args": {"a": 1}}],
        tool_calls=[{"id": "c1", "name": "add", "args": {"a": 1}}],
        response_metadata=V1,
    )
    state = {"messages": [HumanMessage("hi"), text, call], "n": 1}
    out = to_v0(state)
    assert [m.content for m in out["messages"]] == ["hi", "hello", ""]
    assert out["messages"][1].response_metadata == {"model_name": "m"} and out["messages"][1].id == "m1"
    assert out["messages"][2].tool_calls[0]["name"] == "add" and out["n"] == 1
    assert state["messages"][1].content[0]["text"] == "hel"  # the input is not mutated
    # Blocks with no string form stay blocks; messages not in the v1 format are untouched.
    mixed = AIMessage(content=[{"type": "reasoning", "reasoning": "r"}, {"type": "text", "text": "t"}], response_metadata=V1)
    assert to_v0(mixed).content == [{"type": "reasoning", "reasoning": "r"}, {"type": "text", "text": "t"}]
    plain = AIMessage(content=[{"type": "text", "text": "x"}])
    assert to_v0(plain) is plain


def feed_all(v1: V1Messages, parts: list[dict[str, Any]]) -> list[Any]:
    return [payload for part in parts for payload in v1.feed(NS, part)]


def test_text_deltas_become_chunks_the_last_one_marked() -> None:
    v1 = V1Messages(lambda ns: True)
    out = feed_all(
        v1,
        [
            event({"event": "message-start", "role": "ai", "id": "m1"}),
            event({"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}}),
            event({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "hel"}}),
            event({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "lo"}}),
            event({"event": "content-block-finish", "index": 0, "content": {"type": "text", "text": "hello"}}),
            event({"event": "message-finish", "usage": {"input_tokens": 2, "output_tokens": 3}}),
        ],
    )
    assert [(c.content, c.chunk_position, c.id) for c, _ in out] == [("hel", None, "m1"), ("lo", "last", "m1")]
    assert all(isinstance(c, AIMessageChunk) for c, _ in out)
    assert out[-1][0].usage_metadata == {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}
    assert out[0][1] == {"langgraph_node": "agent", "langgraph_checkpoint_ns": "child:t1", "checkpoint_ns": "child:t1", "ls_integration": "langchain_chat_model"}


def test_a_tool_call_rides_on_its_first_args_chunk() -> None:
    v1 = V1Messages(lambda ns: True)
    out = feed_all(
        v1,
        [
            event({"event": "message-start", "role": "ai", "id": "m1"}),
            event({"event": "content-block-start", "index": 0, "content": {"type": "tool_call_chunk", "id": "c1", "name": "add", "args": "", "index": 0}}),
            event({"event": "content-block-delta", "index": 0, "delta": {"type": "tool-call-delta", "args": '{"a": '}}),
            event({"event": "content-block-delta", "index": 0, "delta": {"type": "tool-call-delta", "args": "1}"}}),
            event({"event": "message-finish"}),
        ],
    )
    merged = out[0][0] + out[1][0]
    assert merged.tool_calls == [{"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}]
    assert out[0][0].tool_call_chunks[0]["name"] == "add" and out[1][0].tool_call_chunks[0]["name"] is None


def test_a_message_with_no_chunk_still_ends_with_a_last_chunk() -> None:
    v1 = V1Messages(lambda ns: True)
    out = feed_all(v1, [event({"event": "message-start", "role": "ai", "id": "m1"}), event({"event": "message-finish"})])
    assert [(c.content, c.chunk_position) for c, _ in out] == [("", "last")]


def test_nothing_is_emitted_where_the_parents_handler_would_not() -> None:
    v1 = V1Messages(lambda ns: False)
    assert feed_all(v1, [event({"event": "message-start", "role": "ai", "id": "m1"}), event({"event": "message-finish"})]) == []


def test_id_less_returned_messages_wait_for_the_state_that_names_them() -> None:
    v1 = V1Messages(lambda ns: True)
    tool = ToolMessage(content="3", tool_call_id="c1")
    assert feed_all(v1, [{"type": "updates", "ns": (), "data": {"tools": {"messages": [tool]}}}]) == []
    assert v1.waiting(NS)
    named = ToolMessage(content="3", tool_call_id="c1", id="server-id")
    out = feed_all(v1, [{"type": "values", "ns": (), "data": {"messages": [named]}}])
    assert [(m.id, md["langgraph_node"], md["ls_integration"]) for m, md in out] == [("server-id", "tools", "langgraph")]
    assert tool.id == "server-id"  # named in place, as the update holds it
    # Already seen: a later update with the same message emits nothing.
    assert feed_all(v1, [{"type": "updates", "ns": (), "data": {"tools": {"messages": [named]}}}]) == []


def test_a_whole_message_rebuilt_from_an_update_is_emitted_whole_in_v0_form() -> None:
    v1 = V1Messages(lambda ns: True)
    message = AIMessage(content=[{"type": "text", "text": "hi"}], response_metadata=V1, id="m2")
    out = feed_all(v1, [event(message, node="say")])  # type: ignore[arg-type]
    assert [(m.content, md["langgraph_node"]) for m, md in out] == [("hi", "say")]


def test_nested_run_in_a_v1_parent_holds_the_update_until_its_messages_are_named() -> None:
    r = NestedRun(NS, frozenset({"messages", "updates", "values"}), v3_messages=False, key_prefix="k", v1_messages=lambda ns: True)
    r.feed({"type": "values", "ns": (), "data": {"messages": []}, "interrupts": ()})
    tool = ToolMessage(content="3", tool_call_id="c1")
    assert r.feed({"type": "updates", "ns": (), "data": {"tools": {"messages": [tool]}}}) == []
    named = ToolMessage(content="3", tool_call_id="c1", id="s1")
    chunks = r.feed({"type": "values", "ns": (), "data": {"messages": [named]}, "interrupts": ()})
    assert [c[1] for c in chunks] == ["messages", "updates", "values"]
    assert chunks[1][2]["tools"]["messages"][0].id == "s1"


def test_nested_run_output_has_string_content_unless_the_parent_streams_v3() -> None:
    reply = AIMessage(content=[{"type": "text", "text": "hi"}], response_metadata=V1, id="m1")
    for v3, want in ((False, "hi"), (True, [{"type": "text", "text": "hi"}])):
        r = NestedRun(NS, frozenset({"values"}), v3_messages=v3, key_prefix="k")
        chunks = r.feed({"type": "values", "ns": (), "data": {"messages": [reply]}, "interrupts": ()})
        assert chunks[0][2]["messages"][0].content == want
        assert r.result("completed", [])[0]["messages"][0].content == want


def test_the_parent_task_tells_which_namespaces_its_v1_handler_emits() -> None:
    def task(*handlers: Any) -> Any:
        conf = {"__pregel_task_id": "t1", "checkpoint_ns": "child:t1", "thread_id": "p"}
        return parent_task({"configurable": conf, "callbacks": CallbackManager(handlers=list(handlers))})

    assert task().v1_messages is None
    assert task(StreamMessagesHandlerV2(lambda c: None, True)).v1_messages is None
    flat = task(StreamMessagesHandler(lambda c: None, False)).v1_messages
    deep = task(StreamMessagesHandler(lambda c: None, True)).v1_messages
    assert flat is not None and not flat(NS) and flat(())
    assert deep is not None and deep(NS)


def test_a_message_cut_off_by_the_runs_end_still_emits_the_chunk_it_held() -> None:
    v1 = V1Messages(lambda ns: True)
    out = feed_all(
        v1,
        [
            event({"event": "message-start", "role": "ai", "id": "m1"}),
            event({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "hel"}}),
            event({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "lo"}}),
        ],
    )
    assert [c.content for c, _ in out] == ["hel"]
    # No finish came (the run failed or was stopped): the chunk held to be marked last is still owed, unmarked.
    rest = v1.finish()
    assert [(ns, c.content, c.chunk_position) for ns, (c, _) in rest] == [(NS, "lo", None)]
    assert v1.finish() == []
