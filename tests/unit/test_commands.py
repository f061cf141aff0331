from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from remote_graph._core.commands import RunOptions, StartPlan, wire_config

STATE_ONE = {"tasks": [{"interrupts": [{"id": "i1", "value": "q"}]}], "interrupts": [{"id": "i1", "value": "q"}]}
STATE_TWO = {"tasks": [{"interrupts": [{"id": "a"}]}, {"interrupts": [{"id": "b"}]}]}


def plan(input, **kw) -> StartPlan:  # type: ignore[no-untyped-def]
    return StartPlan(assistant_id="g", input=input, config={}, options=RunOptions(**kw))


def test_run_start_carries_input_metadata_and_camel_case_strategy() -> None:
    body = plan({"messages": [HumanMessage("hi")]}, metadata={"k": 1}, multitask_strategy="reject").command(None)
    assert body["method"] == "run.start"
    assert body["params"]["multitaskStrategy"] == "reject" and body["params"]["metadata"] == {"k": 1}
    assert isinstance(body["params"]["input"]["messages"][0], HumanMessage)  # encoded later, the SDK's way


def test_input_on_an_interrupted_thread_is_refused() -> None:
    with pytest.raises(ValueError, match="i1"):
        plan({"x": 1}).command(STATE_ONE)


def test_resume_maps_to_input_respond() -> None:
    body = plan(Command(resume="yes", update={"x": 1}, goto="b")).command(STATE_ONE)
    assert body["method"] == "input.respond"
    assert body["params"]["responses"] == [{"interrupt_id": "i1", "response": "yes", "namespace": []}]
    assert body["params"]["update"] == {"x": 1} and body["params"]["goto"] == "b"


def test_resume_by_id_map_and_ambiguity() -> None:
    body = plan(Command(resume={"a": 1, "b": 2})).command(STATE_TWO)
    assert [r["interrupt_id"] for r in body["params"]["responses"]] == ["a", "b"]
    with pytest.raises(ValueError, match="2 pending interrupts"):
        plan(Command(resume="x")).command(STATE_TWO)
    with pytest.raises(ValueError, match="no pending interrupt"):
        plan(Command(resume="x")).command(None)
    with pytest.raises(NotImplementedError, match="update_state"):
        plan(Command(update={"x": 1})).command(STATE_ONE)


def test_run_options_refuse_what_would_be_dropped() -> None:
    with pytest.raises(NotImplementedError, match="interrupt_before"):
        RunOptions.from_kwargs({"interrupt_before": ["a"]})
    with pytest.raises(NotImplementedError, match="whatever"):
        RunOptions.from_kwargs({"whatever": 1})
    with pytest.raises(ValueError, match="multitask_strategy"):
        RunOptions.from_kwargs({"multitask_strategy": "sometimes"})
    assert RunOptions.from_kwargs({"context": None}) == RunOptions()


def test_wire_config_keeps_checkpoint_id_and_drops_process_local_keys() -> None:
    thread, config, given = wire_config(
        {"configurable": {"thread_id": "t", "checkpoint_id": "c", "checkpoint_ns": "x", "__pregel_send": object(), "user": 1}, "callbacks": [object()], "tags": ["a"]}
    )
    assert (thread, given) == ("t", True)
    assert config == {"configurable": {"checkpoint_id": "c", "user": 1}, "tags": ["a"]}
    _, _, given = wire_config(None)
    assert not given
    with pytest.raises(ValueError, match="'/'"):
        wire_config({"configurable": {"thread_id": "a/b"}})
