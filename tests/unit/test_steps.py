"""Naming a streaming message's node from the thread's state."""

from __future__ import annotations

from typing import Any

from remote_graph._core.convert import WireConverter
from remote_graph._core.steps import StepAnswer, history_writer, node_names, step_node, strangers

MID = "lc_run--1"


def task(name: str, *, result: Any = None, state: Any = None, id: str = "t") -> dict[str, Any]:
    return {"id": id, "name": name, "path": [], "error": None, "interrupts": [], "state": state, "result": result}


def test_a_task_result_holding_the_message_means_the_server_ran_ahead() -> None:
    # The writer may be a @task the node called, which the checkpoint does not list: the wire's update tells.
    state = {
        "values": {},
        "tasks": [task("tools", result={}), task("fn", result={"messages": [{"id": MID, "content": "x"}]})],
    }
    assert step_node(state, (), MID) == StepAnswer(None, ahead=True)


def test_a_node_seen_calling_tasks_is_not_named() -> None:
    state = {"values": {}, "tasks": [task("fn")]}
    assert step_node(state, (), MID, ["plan"]) == StepAnswer(None)
    assert step_node(state, (), MID) == StepAnswer("fn")


def test_strangers_are_updates_the_checkpoint_does_not_list_and_nodes_come_from_the_drawing() -> None:
    state = {"values": {}, "tasks": [task("fn")]}
    assert strangers(state, (), ["fn", "plan", "prep"]) == {"plan", "prep"}
    drawing = {"nodes": [{"id": "__start__"}, {"id": "prep"}, {"id": "review:critic"}], "edges": []}
    assert node_names(drawing) == {"__start__", "prep", "critic"}
    assert node_names(None) == frozenset()


def test_the_converter_reads_the_drawing_only_for_strangers_and_tells_nodes_from_task_calls() -> None:
    c = WireConverter()
    start = {"namespace": [], "timestamp": 1, "data": {"event": "message-start", "role": "ai", "id": MID}}
    c.convert("values", {"namespace": [], "timestamp": 1, "data": {}})
    c.convert(
        "updates", {"namespace": [], "timestamp": 1, "data": {"prep": None}}
    )  # a step that changed nothing: no values
    state = {"values": {}, "tasks": [task("talk")]}
    assert c.wants_step("messages", start) == ()
    assert c.wants_nodes((), state)
    c.learn_nodes({"nodes": [{"id": "prep"}, {"id": "talk"}]})
    c.learn_step((), state, MID)
    [part] = c.convert("messages", start)
    assert part["data"][1]["langgraph_node"] == "talk"  # prep is a node of an earlier step, not a task call
    # A task the drawing does not know: the running node calls tasks, so it is not named.
    c.convert("updates", {"namespace": [], "timestamp": 1, "data": {"plan": {"x": 1}}})
    assert c.wants_step("messages", start) == () and not c.wants_nodes((), state)
    c.learn_step((), state, MID)
    [part] = c.convert("messages", start)
    assert part["data"][1]["langgraph_node"] is None


def test_one_unfinished_node_streams_the_message() -> None:
    state = {"values": {}, "tasks": [task("work", id="1"), task("work", id="2"), task("done", result={"x": 1})]}
    assert step_node(state, (), MID) == StepAnswer("work")


def test_two_unfinished_nodes_are_ambiguous() -> None:
    assert step_node({"values": {}, "tasks": [task("a"), task("b")]}, (), MID) == StepAnswer(None)


def test_an_earlier_checkpoint_whose_tasks_all_finished_says_nothing() -> None:
    assert step_node({"values": {}, "tasks": [task("agent", result={"messages": []})]}, (), MID) == StepAnswer(None)


def test_a_later_checkpoint_that_already_holds_the_message_is_ahead() -> None:
    state = {"values": {"messages": [{"id": MID, "content": "x"}]}, "tasks": [task("tools")]}
    assert step_node(state, (), MID) == StepAnswer(None, ahead=True)
    # The subgraph's task is gone, and the parent's state holds its message.
    assert step_node(state, ("sub:9",), MID) == StepAnswer(None, ahead=True)
    assert step_node({"values": {}, "tasks": []}, ("sub:9",), MID) == StepAnswer(None)


def test_a_subgraph_task_does_not_stream_in_its_parents_namespace() -> None:
    state = {"values": {}, "tasks": [task("sub", state={"configurable": {"checkpoint_ns": "sub:9"}}), task("agent")]}
    assert step_node(state, (), MID) == StepAnswer("agent")


def test_subgraph_namespaces_descend_into_the_tasks_states() -> None:
    inner = {"values": {}, "tasks": [task("inner_node", id="i1")]}
    state = {"values": {}, "tasks": [task("sub", id="9", state=inner)]}
    assert step_node(state, ("sub:9",), MID) == StepAnswer("inner_node")
    assert step_node(state, ("sub:8",), MID) == StepAnswer(None)


def test_the_converter_asks_once_per_step_and_sets_the_node_at_the_start() -> None:
    c = WireConverter()
    start = {"namespace": [], "timestamp": 1, "data": {"event": "message-start", "role": "ai", "id": MID}}
    c.convert("values", {"namespace": [], "timestamp": 1, "data": {}})
    assert c.wants_step("messages", start) == ()
    c.learn_step((), {"values": {}, "tasks": [task("agent")]}, MID)
    assert c.wants_step("messages", start) is None
    [part] = c.convert("messages", start)
    assert part["data"][1]["langgraph_node"] == "agent"
    [delta] = c.convert("messages", {"namespace": [], "timestamp": 1, "data": {"event": "message-finish"}})
    assert delta["data"][1]["langgraph_node"] == "agent"
    # A new step asks again; a state that could not be read leaves the node unknown.
    c.convert("values", {"namespace": [], "timestamp": 1, "data": {}})
    assert c.wants_step("messages", start) == ()
    c.learn_step((), None, MID)
    [part] = c.convert("messages", start)
    assert part["data"][1]["langgraph_node"] is None
    assert c.wants_step("messages", {"namespace": [], "data": {"event": "content-block-delta"}}) is None


def test_a_message_the_server_ran_past_is_held_until_its_update_names_the_node() -> None:
    c = WireConverter()
    start = {"namespace": [], "timestamp": 1, "data": {"event": "message-start", "role": "ai", "id": MID}}
    c.convert("values", {"namespace": [], "timestamp": 1, "data": {}})
    c.learn_step((), {"values": {"messages": [{"id": MID, "content": "x"}]}, "tasks": [task("next")]}, MID)
    assert c.convert("messages", start) == []
    assert c.convert("messages", {"namespace": [], "timestamp": 1, "data": {"event": "message-finish"}}) == []
    assert c.convert("custom:trail", {"namespace": [], "timestamp": 1, "data": 1}) == []
    update = {
        "namespace": [],
        "timestamp": 1,
        "data": {"agent": {"messages": [{"type": "ai", "id": MID, "content": "x"}]}},
    }
    parts = c.convert("updates", update)
    assert [p["type"] for p in parts] == ["messages", "messages", "custom:trail", "updates"]
    assert parts[0]["data"][1]["langgraph_node"] == "agent"


def test_a_held_message_whose_step_ends_without_naming_it_is_released_without_a_node() -> None:
    c = WireConverter()
    start = {"namespace": [], "timestamp": 1, "data": {"event": "message-start", "role": "ai", "id": MID}}
    c.learn_step((), {"values": {"m": [{"id": MID, "content": "x"}]}, "tasks": []}, MID)
    assert c.convert("messages", start) == []
    parts = c.convert("values", {"namespace": [], "timestamp": 1, "data": {}})
    assert [p["type"] for p in parts] == ["messages", "values"] and parts[0]["data"][1]["langgraph_node"] is None
    # The end of the run releases whatever is still held.
    c.learn_step((), {"values": {"m": [{"id": "m2", "content": "x"}]}, "tasks": []}, "m2")
    assert c.convert("messages", {**start, "data": {**start["data"], "id": "m2"}}) == []
    assert [p["type"] for p in c.finish(interrupted=False)] == ["messages"]


def test_a_held_message_is_named_from_the_threads_recent_states_when_its_step_ends() -> None:
    # A module without UpdatesTransformer sends no update to name it: the step's
    # values ask for the writer, and the recent states' task results name it.
    c = WireConverter()
    start = {"namespace": [], "timestamp": 1, "data": {"event": "message-start", "role": "ai", "id": MID}}
    c.learn_step((), {"values": {"m": [{"id": MID, "content": "x"}]}, "tasks": []}, MID)
    assert c.convert("messages", start) == []
    values = {"namespace": [], "timestamp": 1, "data": {}}
    assert c.wants_writers("values", values) == ()
    assert c.wants_writers("updates", values) is None
    history = [
        {"values": {}, "tasks": [task("after")]},
        {"values": {}, "tasks": [task("chat", result={"m": [{"id": MID, "content": "x"}]}), task("side", result={})]},
    ]
    c.learn_writers((), history)
    parts = c.convert("values", values)
    assert [p["type"] for p in parts] == ["messages", "values"] and parts[0]["data"][1]["langgraph_node"] == "chat"
    assert c.wants_writers("values", values) is None


def test_a_writer_read_names_one_task_or_none() -> None:
    held = {"m": [{"id": MID, "content": "x"}]}
    assert history_writer([{"tasks": [task("a", result=held)]}], MID) == "a"
    # The oldest state that holds it decides (history is newest first): a later
    # node returning it again, or removing it, did not write it.
    again = [{"tasks": [task("echo", result=held)]}, {"tasks": [task("c", result=held)]}]
    assert history_writer(again, MID) == "c"
    removed = {"m": [{"type": "remove", "id": MID, "content": ""}]}
    assert history_writer([{"tasks": [task("trim", result=removed)]}], MID) is None
    # Two tasks of one step holding it name no one.
    assert history_writer([{"tasks": [task("a", result=held), task("b", result=held)]}], MID) is None
    assert history_writer([{"tasks": [task("a")]}, {"tasks": [task("c", result=held)]}], MID) == "c"
    assert history_writer(None, MID) is None and history_writer([{"tasks": [task("a", result={})]}], MID) is None
