"""A remote run inside a local parent task: chunks for the parent, resume choice."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph._internal._scratchpad import PregelScratchpad
from langgraph.errors import GraphInterrupt
from langgraph.pregel.protocol import StreamProtocol
from langgraph.types import Interrupt

from remote_graph._core.commands import RunOptions, StartPlan
from remote_graph._core.nested import NestedRun, ParentResume
from remote_graph._core.schema import GraphSchemas
from remote_graph.nesting import default_child_thread_id, parent_task

ALL = frozenset({"values", "updates", "messages", "tasks", "custom"})
NS = ("child:t1",)


def run(**kw: Any) -> NestedRun:
    return NestedRun(NS, kw.pop("modes", ALL), key_prefix="k", **kw)


def test_the_handle_opens_after_the_first_root_values_like_a_local_child() -> None:
    r = run(metadata={"lc_agent_name": "researcher"})
    first = r.feed({"type": "values", "ns": (), "data": {"x": 1}, "interrupts": ()})
    assert first == [(NS, "values", {"x": 1})]
    second = r.feed({"type": "updates", "ns": (), "data": {"a": {"x": 2}}})
    assert [(c[0], c[1]) for c in second] == [(NS, "tasks"), (NS, "updates")]
    assert second[0][2]["metadata"] == {"lc_agent_name": "researcher"} and second[0][2]["name"] == "child"
    assert r.finish() == []


def test_a_run_without_values_still_opens_its_handle() -> None:
    r = run()
    assert [c[1] for c in r.feed({"type": "custom", "ns": (), "data": 1})] == ["tasks", "custom"]
    r = run()
    assert [c[1] for c in r.finish()] == ["tasks"]


def test_interrupts_go_back_on_the_values_and_the_node_raises_them() -> None:
    r = run()
    interrupt = Interrupt(value="q?", id="i1")
    r.feed({"type": "values", "ns": (), "data": {"x": 1}, "interrupts": ()})
    chunks = r.feed({"type": "values", "ns": (), "data": {"x": 1}, "interrupts": (interrupt,)})
    assert chunks[-1] == (NS, "values", {"x": 1, "__interrupt__": (interrupt,)})
    assert r.result("interrupted", [interrupt]) == ({"x": 1}, (interrupt,))
    assert r.result("completed", []) == ({"x": 1}, ())


def test_the_node_returns_the_output_schema_keys_like_a_local_invoke() -> None:
    r = run()
    r.feed({"type": "values", "ns": (), "data": {"x": 3, "scratch": "internal"}, "interrupts": ()})
    schema = GraphSchemas()
    schema.learn({"output_schema": {"properties": {"x": {"type": "integer"}}}})
    assert schema.known and r.result("completed", [], schema.keys) == ({"x": 3}, ())
    unknown = GraphSchemas()
    unknown.learn(None)
    assert unknown.known and r.result("completed", [], unknown.keys) == ({"x": 3, "scratch": "internal"}, ())


def test_messages_are_keyed_per_run() -> None:
    part = {
        "type": "messages",
        "ns": ("sub:1",),
        "data": ({"event": "message-start"}, {"run_id": "sub:1#1", "langgraph_node": None}),
    }
    (_, (ns, mode, (event, meta))) = run().feed(part)
    assert (
        ns == NS + ("sub:1",) and meta["run_id"] == "k:sub:1#1" and meta["langgraph_checkpoint_ns"] == "child:t1|sub:1"
    )
    assert run(modes=frozenset({"values"})).feed(part) == []


def test_parent_resume_answers_only_this_runs_interrupts() -> None:
    assert ParentResume(by_id={"a": 1, "other": 2}).responses(["a", "b"]) == ({"a": 1}, False)
    assert ParentResume(value="yes").responses(["a"]) == ({"a": "yes"}, True)
    assert ParentResume(by_id={"other": 2}).responses(["a"]) == (None, False)
    assert ParentResume(value="yes").responses([]) == (None, False)
    with pytest.raises(RuntimeError, match="2 pending interrupts"):
        ParentResume(value="yes").responses(["a", "b"])


def resumed_plan(resume: ParentResume) -> StartPlan:
    return StartPlan(assistant_id="g", input={"x": 1}, config={}, options=RunOptions(), parent_resume=resume)


def test_a_resumed_parent_task_answers_the_childs_interrupt() -> None:
    plan = resumed_plan(ParentResume(value="yes"))
    assert plan.needs_state()
    req = plan.request(
        "/threads/t", {"tasks": [{"interrupts": [{"id": "a", "value": "q?"}]}], "checkpoint": {"checkpoint_id": "c"}}
    )
    assert req.path == "/threads/t/runs/stream" and req.json["command"]["resume"] == {"a": "yes"}
    assert plan.used_parent_value


def test_a_resumed_parent_task_continues_the_child_like_a_local_one() -> None:
    # Unanswered interrupts are raised again as they are, without a run.
    plan = resumed_plan(ParentResume(by_id={"other": 1}))
    with pytest.raises(GraphInterrupt) as info:
        plan.request(
            "/threads/t", {"interrupts": [{"id": "a", "value": {"q": "?"}}], "checkpoint": {"checkpoint_id": "c"}}
        )
    assert [(i.id, i.value) for i in info.value.args[0]] == [("a", {"q": "?"})]
    # A child that already ran in this task continues from its checkpoint, not from the input.
    req = resumed_plan(ParentResume(value="yes")).request(
        "/threads/t", {"values": {"x": 20}, "tasks": [], "checkpoint": {"checkpoint_id": "c"}}
    )
    assert req.path.endswith("/runs/stream") and req.json["input"] is None and "command" not in req.json
    # A child that never ran here starts from the input.
    req = resumed_plan(ParentResume(value="yes")).request("/threads/t", None)
    assert req.json["input"] == {"x": 1} and not resumed_plan(ParentResume()).used_parent_value


def scratchpad(counter: int = 0, null: Any = None, consumed: list[bool] | None = None) -> PregelScratchpad:
    def get_null_resume(consume: bool = False) -> Any:
        if consumed is not None:
            consumed.append(consume)
        return null

    return PregelScratchpad(
        step=1,
        stop=25,
        call_counter=lambda: 0,
        interrupt_counter=lambda: 0,
        get_null_resume=get_null_resume,
        resume=[],
        subgraph_counter=lambda: counter,
    )


def test_child_thread_mapping_must_return_a_thread_id() -> None:
    conf = {"thread_id": "p", "checkpoint_ns": "child:t1", "__pregel_task_id": "t1"}
    with pytest.raises(TypeError, match="child_thread_id must return"):
        parent_task({"configurable": conf}, lambda parent, ns: None)  # type: ignore[arg-type,return-value]


def test_parent_task_reads_the_task_a_local_child_would_run_in() -> None:
    assert parent_task({"configurable": {"thread_id": "p"}}) is None
    written: list[Any] = []
    consumed: list[bool] = []
    stream = StreamProtocol(written.append, {"values", "tasks"})
    conf = {
        "thread_id": "not a uuid",
        "checkpoint_ns": "outer:1|child:t1",
        "__pregel_task_id": "t1",
        "__pregel_stream": stream,
        "__pregel_scratchpad": scratchpad(counter=1, null="yes", consumed=consumed),
        "__pregel_resuming": True,
        "__pregel_resume_map": {"i": 1},
        "__pregel_stream_messages_v2": True,
    }
    task = parent_task({"configurable": conf, "metadata": {"lc_agent_name": "r", "langgraph_step": 3}})
    assert task is not None
    assert task.ns == ("outer:1", "child:t1", "1")  # a second graph run in one task gets its own namespace
    assert task.thread_id == default_child_thread_id("not a uuid", "outer:1|child:t1|1")
    assert task.modes == {"values", "tasks"} and task.v3_messages and task.metadata == {"lc_agent_name": "r"}
    assert task.resume == ParentResume(by_id={"i": 1}, value="yes")
    assert consumed == [False]  # read, not used up: the child may not take it
    task.consume_resume()
    assert consumed == [False, True]
    assert task.write is not None
    task.write(((), "values", {"x": 1}))
    assert written == [((), "values", {"x": 1})]


# --- a remote child in a classic parent -------------------------------------------------------

from remote_graph._core.classic_nested import ClassicNestedRun  # noqa: E402


def classic(**kw: Any) -> ClassicNestedRun:
    return ClassicNestedRun(NS, kw.pop("modes", ALL), parent_thread="parent-thread", **kw)


def test_a_classic_child_writes_the_parents_modes_under_the_task_namespace() -> None:
    r = classic(modes=frozenset({"values", "updates"}))
    values = {"type": "values", "ns": (), "data": {"x": 1}}
    assert r.feed(values) == [(NS, "values", {"x": 1})]
    assert r.feed({"type": "updates", "ns": ("sub:2",), "data": {"n": {"x": 2}}}) == [
        (NS + ("sub:2",), "updates", {"n": {"x": 2}})
    ]
    assert r.feed({"type": "custom", "ns": (), "data": 1}) == []
    assert r.output == {"x": 1} and r.finish() == []


def test_a_classic_childs_messages_carry_their_place_under_the_parent() -> None:
    emitted: list[tuple[str, ...]] = []
    r = classic(emits=lambda ns: emitted.append(ns) or True)
    meta = {
        "langgraph_checkpoint_ns": "agent:9",
        "checkpoint_ns": "agent:9",
        "thread_id": "server-thread",
        "langgraph_node": "agent",
    }
    [(ns, mode, (message, out))] = r.feed({"type": "messages", "ns": (), "data": ("chunk", meta)})
    assert ns == NS and mode == "messages" and message == "chunk" and emitted == [NS]
    # As a local child's: under the task's namespace, the outermost task as checkpoint_ns, the parent's thread.
    assert out == {
        "langgraph_checkpoint_ns": "child:t1|agent:9",
        "checkpoint_ns": "child:t1",
        "thread_id": "parent-thread",
        "langgraph_node": "agent",
    }
    # A namespace the parent's handler does not emit from gets nothing.
    assert classic(emits=lambda ns: False).feed({"type": "messages", "ns": (), "data": ("chunk", meta)}) == []
    assert classic(emits=None).feed({"type": "messages", "ns": (), "data": ("chunk", meta)}) == []


def test_a_classic_childs_states_are_seen_by_the_parents_handler() -> None:
    from langchain_core.messages import AIMessage

    seen: list[list[str]] = []
    r = classic(emits=lambda ns: ns == NS, mark_seen=seen.append)
    r.feed({"type": "values", "ns": (), "data": {"messages": [AIMessage("a", id="m1"), AIMessage("b")]}})
    r.feed({"type": "values", "ns": ("sub:1",), "data": {"messages": [AIMessage("c", id="m2")]}})
    assert seen == [["m1"]]


def test_a_classic_childs_result_is_its_output_schema_keys_and_its_interrupts() -> None:
    from langgraph.types import Interrupt

    r = classic()
    r.feed({"type": "values", "ns": (), "data": {"x": 3, "scratch": "internal", "__interrupt__": ()}})
    assert r.result("completed", [], frozenset({"x"})) == ({"x": 3}, ())
    interrupt = Interrupt(value="ok?", id="i1")
    assert r.result("interrupted", [interrupt]) == ({"x": 3, "scratch": "internal"}, (interrupt,))
