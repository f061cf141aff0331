from __future__ import annotations

from uuid import uuid5

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command, Send

from remote_graph._core.commands import RunOptions, StartPlan, wire_config
from remote_graph._core.thread_ids import THREAD_ID_NAMESPACE

STATE_ONE = {"tasks": [{"interrupts": [{"id": "i1", "value": "q"}]}], "interrupts": [{"id": "i1", "value": "q"}]}
STATE_TWO = {"tasks": [{"interrupts": [{"id": "a"}]}, {"interrupts": [{"id": "b"}]}]}


def plan(input, **kw) -> StartPlan:  # type: ignore[no-untyped-def]
    return StartPlan(assistant_id="g", input=input, config={}, options=RunOptions(**kw))


def start(input, state=None, **kw):  # type: ignore[no-untyped-def]
    return plan(input, **kw).request("/threads/t", state)


def test_a_run_starts_through_the_runs_api_marked_for_v3_events() -> None:
    req = start(
        {"messages": [HumanMessage("hi")]}, metadata={"k": 1}, multitask_strategy="reject", interrupt_before=["b"]
    )
    assert (req.method, req.path) == ("POST", "/threads/t/runs/stream")
    body = req.json
    # The configurable (the v3 marker with it) travels in ``checkpoint``, merged
    # into it by the server, so that ``context`` can be sent beside it.
    assert body["checkpoint"]["__event_streaming_v2"] is True and "configurable" not in body["config"]
    assert "context" not in body
    assert body["stream_subgraphs"] and body["stream_resumable"] and body["if_not_exists"] == "create"
    assert body["multitask_strategy"] == "reject" and body["metadata"] == {"k": 1}
    assert body["interrupt_before"] == ["b"] and "interrupt_after" not in body
    assert isinstance(body["input"]["messages"][0], HumanMessage)  # encoded later, the SDK's way


def test_fork_target_is_sent_where_the_runs_api_reads_it() -> None:
    p = StartPlan(assistant_id="g", input=None, config={"configurable": {"checkpoint_id": "c1"}}, options=RunOptions())
    body = p.request("/threads/t", None).json
    assert body["checkpoint_id"] == "c1" and body["checkpoint"]["checkpoint_id"] == "c1"


def test_going_on_from_the_latest_checkpoint_names_an_empty_checkpoint() -> None:
    # aegra refuses a run with no input, command or checkpoint (422); every server
    # reads an empty checkpoint as the thread's latest.
    p = StartPlan(assistant_id="g", input=None, config={}, options=RunOptions(), stream_mode=("values",))
    body = p.request("/threads/t", STATE_DONE).json
    assert body["input"] is None and body["checkpoint"] == {} and "command" not in body
    # Input, a command or a checkpoint of its own: none is added.
    with_input = StartPlan(assistant_id="g", input={"x": 1}, config={}, options=RunOptions(), stream_mode=("values",))
    assert "checkpoint" not in with_input.request("/threads/t", STATE_DONE).json
    resumed = start(Command(resume="yes"), STATE_ONE).json
    assert resumed["checkpoint"] == {"__event_streaming_v2": True}  # the v3 marker alone


def test_input_on_an_interrupted_thread_is_a_new_pass_not_a_resume() -> None:
    plan_ = plan({"x": 1})
    assert not plan_.needs_state()
    req = plan_.request("/threads/t", STATE_ONE)
    assert req.path.endswith("/runs/stream") and req.json["input"] == {"x": 1} and "command" not in req.json


def test_resume_is_a_runs_api_command_answering_the_interrupt_by_id() -> None:
    assert plan(Command(resume="yes")).needs_state()
    req = start(Command(resume="yes", update={"x": 1}, goto="b"), STATE_ONE)
    assert req.path == "/threads/t/runs/stream" and req.json["input"] is None
    assert req.json["command"] == {"resume": {"i1": "yes"}, "update": {"x": 1}, "goto": "b"}
    assert req.json["stream_resumable"] is True


def test_resume_keeps_the_run_options() -> None:
    req = start(Command(resume="yes"), STATE_ONE, interrupt_after=["a"], durability="exit")
    assert req.json["command"] == {"resume": {"i1": "yes"}}
    assert req.json["interrupt_after"] == ["a"] and req.json["durability"] == "exit"


def test_update_and_goto_without_resume_are_a_run_command() -> None:
    req = start(Command(update=[("x", 5)], goto=[Send("b", {"x": 1}), "a"]))
    assert req.json["command"] == {"update": [["x", 5]], "goto": [{"node": "b", "input": {"x": 1}}, "a"]}
    with pytest.raises(ValueError, match="graph="):
        start(Command(graph=Command.PARENT, goto="a"))
    with pytest.raises(TypeError, match="node names or Send"):
        start(Command(goto=[1]))


def test_resume_by_id_map_and_ambiguity() -> None:
    req = start(Command(resume={"a": 1, "b": 2}), STATE_TWO)
    assert req.json["command"]["resume"] == {"a": 1, "b": 2}
    with pytest.raises(RuntimeError, match="2 pending interrupts"):
        start(Command(resume="x"), STATE_TWO)


# The server's state of a thread that ran and waits for nothing.
STATE_DONE = {"values": {"x": 2}, "tasks": [], "interrupts": [], "checkpoint": {"checkpoint_id": "c1"}}


@pytest.mark.parametrize(
    "state", [None, {"values": {}, "tasks": [], "checkpoint": None}], ids=["no thread", "never ran"]
)
def test_a_resume_on_a_thread_with_no_checkpoint_runs_from_the_start(state: dict[str, object] | None) -> None:
    # Locally, ``Command(resume=...)`` on a thread with no checkpoint runs the
    # graph from the start, as an empty input does: no error, nothing resumed.
    req = start(Command(resume="x"), state)
    assert req.json["input"] == {} and "command" not in req.json
    # An update (or goto) beside the resume still applies; the resume has nothing to answer.
    req = start(Command(resume="x", update={"x": 5}), state)
    assert req.json["command"] == {"update": {"x": 5}} and req.json["input"] is None


def test_a_resume_on_a_thread_waiting_for_nothing_sends_the_value_as_it_is() -> None:
    # Locally the graph then has nothing to resume and returns the thread's state;
    # the server does the same with a plain resume value.
    req = start(Command(resume="x"), STATE_DONE)
    assert req.json["command"] == {"resume": "x"}


def test_run_options_refuse_what_would_be_dropped() -> None:
    with pytest.raises(TypeError, match="context must be a mapping"):
        RunOptions.from_kwargs({"context": object()})
    with pytest.raises(TypeError, match="interrupt_before"):
        RunOptions.from_kwargs({"interrupt_before": "a"})
    with pytest.raises(ValueError, match="durability"):
        RunOptions.from_kwargs({"durability": "forever"})
    with pytest.raises(NotImplementedError, match="whatever"):
        RunOptions.from_kwargs({"whatever": 1})
    with pytest.raises(ValueError, match="multitask_strategy"):
        RunOptions.from_kwargs({"multitask_strategy": "sometimes"})
    assert RunOptions.from_kwargs({"context": None}) == RunOptions()


def test_wire_config_keeps_checkpoint_id_and_drops_process_local_keys() -> None:
    thread, config, given = wire_config(
        {
            "configurable": {
                "thread_id": "t",
                "checkpoint_id": "c",
                "checkpoint_ns": "x",
                "__pregel_send": object(),
                "user": 1,
            },
            "callbacks": [object()],
            "tags": ["a"],
        }
    )
    # A thread id that is not a UUID is sent as the UUID it maps to.
    assert (thread, given) == (str(uuid5(THREAD_ID_NAMESPACE, "t")), True)
    assert config == {"configurable": {"checkpoint_id": "c", "user": 1}, "tags": ["a"]}
    _, _, given = wire_config(None)
    assert not given
    thread, _, _ = wire_config({"configurable": {"thread_id": "a/b"}}, lambda value: f"mapped {value}")
    assert thread == "mapped a/b"
