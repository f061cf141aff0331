"""Human-in-the-loop conformance: interrupts, resumes, Command(update/goto),
interrupt_before/after, time travel and state consistency, each run on the
local compiled graph and on ``RemoteGraph``, sync and async, compared.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Command, Send

from remote_graph import RemoteGraph
from tests.integration.lanes import GATE, LINEAR, Lane, Scenarios, compare, local_twin, norm, norm_event, parallel_steps

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS


def config_at(config: dict[str, Any], checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}


def snap(state: Any) -> dict[str, Any]:
    """The comparable part of a StateSnapshot."""
    return {"values": norm(state.values), "next": list(state.next), "interrupts": norm(list(state.interrupts))}


def outcome(lane: Lane, run: Any) -> dict[str, Any]:
    events = [norm_event(e) for e in lane.collect(run, "events")]
    return {
        "events": events,
        "output": lane.output(run),
        "interrupted": lane.interrupted(run),
        "interrupts": norm(lane.interrupts(run)),
    }


# --- 1. interrupts (root, subgraph and parallel ones live in test_conformance) --


@scenario
def interrupt_root_lifecycle_and_state(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    run = lane.start(graph, GATE, config)
    lifecycle = norm(lane.collect(run, "lifecycle"))
    return {"lifecycle": lifecycle, "interrupts": norm(lane.interrupts(run)), "state": snap(lane.state(graph, config))}


@scenario
def interrupt_ids_are_the_thread_state_ids(lane: Lane) -> Any:
    graph = lane.graph("twoask")
    config = lane.thread()
    run = lane.start(graph, {"out": []}, config)
    ids = sorted(i.id for i in lane.interrupts(run))
    return ids == sorted(i.id for i in lane.state(graph, config).interrupts) and len(ids) == 2


# --- 2. resume forms ----------------------------------------------------------


@scenario
def resume_by_interrupt_id(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    (interrupt,) = lane.interrupts(lane.start(graph, GATE, config))
    return outcome(lane, lane.start(graph, Command(resume={interrupt.id: "by-id"}), config))


@scenario
def resume_one_of_two_parallel_interrupts(lane: Lane) -> Any:
    graph = lane.graph("twoask")
    config = lane.thread()
    first = sorted(lane.interrupts(lane.start(graph, {"out": []}, config)), key=lambda i: str(i.value))
    partial = lane.start(graph, Command(resume={first[0].id: "only-A"}), config)
    result = {"partial": norm(lane.interrupts(partial)), "output": lane.output(partial)}
    (left,) = lane.interrupts(partial)
    result["same_id"] = left.id == first[1].id
    result["final"] = lane.output(lane.start(graph, Command(resume={left.id: "then-B"}), config))
    return result


@scenario
def resume_with_update_and_goto(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.output(lane.start(graph, GATE, config))
    updated = outcome(lane, lane.start(graph, Command(resume="yes", update={"x": 7}), config))
    config = lane.thread()
    lane.output(lane.start(graph, GATE, config))
    jumped = outcome(lane, lane.start(graph, Command(resume="skip", goto="prep"), config))
    # The jump runs `ask` (resumed) beside `prep`, then `finish` beside `ask` again.
    jumped["events"] = parallel_steps(jumped["events"])
    return {"updated": updated, "jumped": jumped, "state": snap(lane.state(graph, config))}


@scenario
def update_and_goto_without_resume(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.output(lane.start(graph, LINEAR, config))
    update = outcome(lane, lane.start(graph, Command(update={"x": 100, "log": ["u"]}, goto="b"), config))
    goto = outcome(lane, lane.start(graph, Command(goto=["a"]), config))
    send = outcome(lane, lane.start(graph, Command(goto=Send("b", {"x": 3, "log": ["sent"]})), config))
    return {"update": update, "goto": goto, "send": send, "state": snap(lane.state(graph, config))}


@scenario
def update_without_resume_on_an_interrupted_thread(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.output(lane.start(graph, GATE, config))
    run = lane.start(graph, Command(update={"x": 50}), config)
    return {"run": outcome(lane, run), "state": snap(lane.state(graph, config))}


# --- 3. new input on an interrupted thread ---------------------------------------


@scenario
def new_input_on_an_interrupted_thread_is_a_new_pass(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.output(lane.start(graph, GATE, config))
    again = lane.start(graph, {"x": 5, "answer": ""}, config)
    result = outcome(lane, again)
    result["resumed"] = lane.output(lane.start(graph, Command(resume="ok"), config))
    return result


# --- 5. time travel -------------------------------------------------------------


@scenario
def replay_from_an_earlier_checkpoint(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    for x in (1, 2):
        lane.output(lane.start(graph, {"x": x, "log": []}, config))
    history = lane.history(graph, config)
    # Replay from the checkpoint where the second run was about to run "b".
    before_b = next(s for s in history if s.next == ("b",))
    replay = lane.start(graph, None, config_at(config, before_b.config["configurable"]["checkpoint_id"]))
    return {
        "history": [snap(s) for s in history],
        "replay": outcome(lane, replay),
        "state": snap(lane.state(graph, config)),
    }


@scenario
def fork_with_new_input_from_an_earlier_checkpoint(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    for x in (1, 2):
        lane.output(lane.start(graph, {"x": x, "log": []}, config))
    first_done = next(s for s in lane.history(graph, config) if s.values.get("log") == ["a", "b"] and not s.next)
    fork = lane.start(graph, {"x": 3, "log": []}, config_at(config, first_done.config["configurable"]["checkpoint_id"]))
    return {"fork": outcome(lane, fork), "state": snap(lane.state(graph, config))}


@scenario
def fork_by_update_state_at_a_checkpoint(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    lane.output(lane.start(graph, LINEAR, config))
    before_b = next(s for s in lane.history(graph, config) if s.next == ("b",))
    forked = lane.update_state(graph, before_b.config, {"x": 40})
    run = lane.start(graph, None, config_at(config, forked["configurable"]["checkpoint_id"]))
    return {"run": outcome(lane, run), "state": snap(lane.state(graph, config))}


@scenario
def replaying_an_interrupted_step_asks_again(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.output(lane.start(graph, GATE, config))
    lane.output(lane.start(graph, Command(resume="first answer"), config))
    before_ask = next(s for s in lane.history(graph, config) if s.next == ("ask",))
    replay = lane.start(graph, None, config_at(config, before_ask.config["configurable"]["checkpoint_id"]))
    result = outcome(lane, replay)
    result["second"] = lane.output(lane.start(graph, Command(resume="second answer"), config))
    return result


# --- 6. state consistency -----------------------------------------------------------


@scenario
def state_equals_output_after_parallel_reducer_writes(lane: Lane) -> Any:
    graph = lane.graph("parallel")
    config = lane.thread()
    outputs = []
    for _ in range(2):
        run = lane.start(graph, {"items": [], "total": 0}, config)
        output = lane.output(run)
        outputs.append({"output": output, "state_matches": lane.state(graph, config).values == output})
    return outputs


@scenario
def state_equals_output_after_send_fanout(lane: Lane) -> Any:
    graph = lane.graph("custom")
    config = lane.thread()
    run = lane.start(graph, {"n": 2, "results": []}, config)
    output = lane.output(run)
    return {"output": output, "state_matches": lane.state(graph, config).values == output}


# --- 8. interrupt_before / interrupt_after / durability ---------------------------------


@scenario
def interrupt_before_pauses_at_the_node(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    paused = outcome(lane, lane.start(graph, LINEAR, config, interrupt_before=["b"]))
    state = snap(lane.state(graph, config))
    resumed = outcome(lane, lane.start(graph, None, config))
    return {"paused": paused, "state": state, "resumed": resumed}


@scenario
def interrupt_after_pauses_after_the_node(lane: Lane) -> Any:
    graph = lane.graph("nested")
    config = lane.thread()
    paused = outcome(lane, lane.start(graph, LINEAR, config, interrupt_after=["a"]))
    state = snap(lane.state(graph, config))
    resumed = outcome(lane, lane.start(graph, None, config, interrupt_after="*"))
    return {"paused": paused, "state": state, "resumed": resumed}


@scenario
def resume_with_interrupt_before_a_later_node(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    lane.output(lane.start(graph, GATE, config))
    resumed = outcome(lane, lane.start(graph, Command(resume="yes"), config, interrupt_before=["finish"]))
    return {"resumed": resumed, "state": snap(lane.state(graph, config))}


@scenario
def durability_exit_keeps_the_final_state(lane: Lane) -> Any:
    graph = lane.graph("linear")
    config = lane.thread()
    run = lane.start(graph, LINEAR, config, durability="exit")
    return {
        "run": outcome(lane, run),
        "state": snap(lane.state(graph, config)),
        "steps": len(lane.history(graph, config)),
    }


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


def test_a_plain_resume_of_several_interrupts_is_refused_as_locally(server_url: str) -> None:
    # Both refuse it with langgraph's RuntimeError, remotely before the resume is sent.
    raised = {}
    for kind, graph in (("local", local_twin("twoask")), ("remote", RemoteGraph("twoask", url=server_url))):
        config = Lane.thread()
        assert len(graph.stream_events({"out": []}, config, version="v3").interrupts) == 2
        with pytest.raises(Exception, match="you must specify the interrupt id when resuming") as refused:
            graph.stream_events(Command(resume="x"), config, version="v3").output
        raised[kind] = type(refused.value)
        assert graph.get_state(config).next == ("ask_a", "ask_b")  # nothing was resumed
    assert raised == {"local": RuntimeError, "remote": RuntimeError}


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------
