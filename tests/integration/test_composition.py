"""Composition conformance: a local parent graph whose child is a local
compiled graph in one lane and a ``RemoteGraph`` of the same graph in the
other, streamed with v3, sync and async, compared.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable
from typing import Annotated, Any

import graphs
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from remote_graph import RemoteGraph
from tests.integration.lanes import GATE, LINEAR, Lane, Scenarios, compare, norm, norm_event, remote_without_state_reads

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS


def _join(a: str, b: str) -> str:
    return "|".join(sorted(v for v in (a, b) if v))


class PairState(TypedDict):
    """Two gate children write it in one step."""

    x: Annotated[int, operator.add]
    answer: Annotated[str, _join]


def child(lane: Lane, name: str, saver: Any = None) -> Any:
    """The child graph: compiled locally, or the deployed one."""
    if lane.kind == "local":
        return graphs.BUILDERS[name]().compile(checkpointer=saver)
    return RemoteGraph(name, url=lane.server_url)


def parent_of(lane: Lane, state: Any, *nodes: tuple[str, Any]) -> Any:
    """A local parent running ``nodes`` in parallel from START."""
    g = StateGraph(state)
    for name, node in nodes:
        g.add_node(name, node)
        g.add_edge(START, name)
    return g.compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS)


def handles(lane: Lane, run: Any) -> list[dict[str, Any]]:
    out = lane.subgraphs(run, depth=2)
    for h in out:
        h.pop("status_seen", None)
    return norm(out)


# --- 1. events surface like a local child's ------------------------------------


@scenario
def child_node_raw_events(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.NestedState, ("child", child(lane, "nested")))
    run = lane.start(parent, LINEAR)
    return {"events": [norm_event(e) for e in lane.collect(run, "events")], "output": lane.output(run)}


@scenario
def child_node_handle_and_lifecycle(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.NestedState, ("child", child(lane, "nested")))
    lifecycle = norm(lane.collect(lane.start(parent, LINEAR), "lifecycle"))
    run = lane.start(parent, LINEAR)
    return {"lifecycle": lifecycle, "handles": handles(lane, run), "output": lane.output(run)}


@scenario
def child_messages_reach_the_parent_as_v3_message_events(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.ChatState, ("child", child(lane, "chat")))
    run = lane.start(parent, {"messages": [("user", "hi")]})
    events = [e for e in lane.collect(run, "events") if e["method"] == "messages"]
    return [{"ns": norm(e["params"]["namespace"]), "data": norm(e["params"]["data"][0])} for e in events]


@scenario
def child_agent_tool_events_and_updates(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.ChatState, ("child", child(lane, "agent")))
    run = lane.start(parent, {"messages": [("user", "add")]})
    events = [norm_event(e) for e in lane.collect(run, "events") if e["method"] in ("tools", "updates", "values")]
    return {"events": events, "output": norm(lane.output(run))}


@scenario
def child_returns_its_output_schema_only(lane: Lane) -> Any:
    sub = child(lane, "narrow")

    def call(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [repr(sorted(sub.invoke({"x": state["x"], "log": [], "scratch": ""})))]}

    async def acall(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [repr(sorted(await sub.ainvoke({"x": state["x"], "log": [], "scratch": ""})))]}

    parent = parent_of(lane, graphs.LinearState, ("child", child(lane, "narrow")))
    called = parent_of(lane, graphs.LinearState, ("caller", call if lane.flavour == "sync" else acall))
    return {"as_node": lane.output(lane.start(parent, LINEAR)), "called": lane.output(lane.start(called, LINEAR))}


@scenario
def child_called_inside_a_node(lane: Lane) -> Any:
    sub = child(lane, "linear")

    def call(state: dict[str, Any]) -> dict[str, Any]:
        out = sub.invoke({"x": state["x"], "log": []})
        return {"x": out["x"], "log": ["called"]}

    async def acall(state: dict[str, Any]) -> dict[str, Any]:
        out = await sub.ainvoke({"x": state["x"], "log": []})
        return {"x": out["x"], "log": ["called"]}

    parent = parent_of(lane, graphs.LinearState, ("caller", call if lane.flavour == "sync" else acall))
    run = lane.start(parent, LINEAR)
    return {"events": [norm_event(e) for e in lane.collect(run, "events")], "output": lane.output(run)}


# --- 2. interrupt and resume through the parent -----------------------------------


@scenario
def child_interrupt_pauses_the_parent_and_resume_continues_it(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.GateState, ("child", child(lane, "gate")))
    config = lane.thread()
    turns = []
    for turn in range(2):
        run = lane.start(parent, {"x": turn + 1, "answer": ""}, config)
        paused = {
            "lifecycle": norm(lane.collect(run, "lifecycle")),
            "interrupted": lane.interrupted(run),
            "interrupts": norm(lane.interrupts(run)),
            "output": lane.output(run),
        }
        resumed = lane.start(parent, Command(resume=f"yes-{turn}"), config)
        turns.append(
            {
                "paused": paused,
                "resumed": [norm_event(e) for e in lane.collect(resumed, "events")],
                "interrupted": lane.interrupted(resumed),
                "output": lane.output(resumed),
            }
        )
    return turns


@scenario
def child_interrupt_handle_is_interrupted(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.GateState, ("child", child(lane, "gate")))
    run = lane.start(parent, GATE)
    return {"handles": handles(lane, run), "interrupts": norm(lane.interrupts(run))}


@scenario
def two_parallel_children_interrupt_and_resume_by_id(lane: Lane) -> Any:
    parent = parent_of(lane, PairState, ("left", child(lane, "gate")), ("right", child(lane, "gate")))
    config = lane.thread()
    run = lane.start(parent, GATE, config)
    interrupts = lane.interrupts(run)
    answers = {i.id: f"answer-{n}" for n, i in enumerate(interrupts)}
    resumed = lane.start(parent, Command(resume=answers), config)
    return {
        "interrupts": norm(interrupts),
        "resumed_interrupted": lane.interrupted(resumed),
        "output": lane.output(resumed),
        "answers": sorted(answers.values()),
    }


@scenario
def resuming_one_of_two_paused_children_leaves_the_other_asking(lane: Lane) -> Any:
    parent = parent_of(lane, PairState, ("left", child(lane, "gate")), ("right", child(lane, "gate")))
    config = lane.thread()
    first = lane.interrupts(lane.start(parent, GATE, config))
    partial = lane.start(parent, Command(resume={first[0].id: "only-one"}), config)
    left = lane.interrupts(partial)
    final = lane.start(parent, Command(resume={left[0].id: "the-other"}), config)
    return {
        "partial": norm(left),
        "same_id": [i.id for i in left] == [first[1].id],
        "final": lane.output(final),
        "state": norm(lane.state(parent, config).values),
    }


@scenario
def a_node_asking_after_its_child_asks_again_after_the_childs_resume(lane: Lane) -> Any:
    sub = child(lane, "gate")

    def node(state: dict[str, Any]) -> dict[str, Any]:
        out = sub.invoke({"x": state["x"], "answer": ""})
        confirm = interrupt({"confirm": out["answer"]})
        return {"x": out["x"], "answer": f"{out['answer']}+{confirm}"}

    async def anode(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        with graphs.node_context(config):  # the ambient config, on Python 3.10 too
            out = await sub.ainvoke({"x": state["x"], "answer": ""})
            confirm = interrupt({"confirm": out["answer"]})
        return {"x": out["x"], "answer": f"{out['answer']}+{confirm}"}

    parent = parent_of(lane, graphs.GateState, ("node", node if lane.flavour == "sync" else anode))
    config = lane.thread()
    steps = [lane.start(parent, GATE, config)]
    for answer in ("child-yes", "node-ok"):
        lane.output(steps[-1])
        steps.append(lane.start(parent, Command(resume=answer), config))
    return [{"interrupts": norm(lane.interrupts(run)), "output": lane.output(run)} for run in steps]


@scenario
def child_failure_fails_the_parent(lane: Lane) -> Any:
    parent = parent_of(lane, graphs.LinearState, ("child", child(lane, "boom")))
    run = lane.start(parent, LINEAR)
    try:
        lane.output(run)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "no error"


# --- 6. subagent identity ---------------------------------------------------------------

CALLS = [
    {"id": "call_a", "name": "research", "args": {"topic": "ab"}},
    {"id": "call_b", "name": "research", "args": {"topic": "abcd"}},
]


def tool_fanout_parent(lane: Lane, sub: Any) -> Any:
    """An agent whose two parallel tool calls each run ``sub`` (one Send per call)."""

    def research(topic: str) -> str:
        return f"{topic}:{sub.invoke({'x': len(topic), 'log': []})['x']}"

    async def aresearch(topic: str) -> str:
        return f"{topic}:{(await sub.ainvoke({'x': len(topic), 'log': []}))['x']}"

    tool = StructuredTool.from_function(
        func=research, coroutine=aresearch, name="research", description="Research a topic."
    )

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        done = any(isinstance(m, ToolMessage) for m in state["messages"])
        reply = AIMessage(content="done") if done else AIMessage(content="", tool_calls=CALLS)
        return {"messages": [graphs.FakeToolChatModel(messages=iter([reply])).invoke(state["messages"])]}

    def route(state: dict[str, Any]) -> Any:
        last = state["messages"][-1]
        if not getattr(last, "tool_calls", None):
            return END
        return [
            Send("tools", {"__type": "tool_call_with_context", "tool_call": call, "state": state})
            for call in last.tool_calls
        ]

    g = StateGraph(graphs.ChatState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([tool]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS)


@scenario
def tool_spawned_children_are_attributed_to_their_tool_calls(lane: Lane) -> Any:
    sub = child(lane, "linear").with_config({"metadata": {"lc_agent_name": "researcher"}})
    parent = tool_fanout_parent(lane, sub)
    run = lane.start(parent, {"messages": [("user", "go")]})
    started = {}
    for event in lane.collect(run, "lifecycle"):
        if event["event"] == "started":
            started[tuple(event["namespace"])] = (
                event.get("graph_name"),
                (event.get("cause") or {}).get("tool_call_id"),
            )
    by_call = sorted((name, call) for name, call in started.values())
    tools = [m.content for m in lane.output(run)["messages"] if isinstance(m, ToolMessage)]
    return {"started": by_call, "tool_results": sorted(tools)}


@scenario
def tool_spawned_child_cause_matches_its_own_output(lane: Lane) -> Any:
    sub = child(lane, "linear").with_config({"metadata": {"lc_agent_name": "researcher"}})
    parent = tool_fanout_parent(lane, sub)
    run = lane.start(parent, {"messages": [("user", "go")]})
    # Subscribe to both projections before the run moves, then read each.
    if lane.flavour == "sync":
        lifecycle, handles = iter(run.lifecycle), iter(run.subgraphs)
        events = list(lifecycle)
        outputs = {tuple(h.path): h.output["x"] for h in handles}
    else:

        async def go() -> tuple[list[Any], dict[tuple[str, ...], int]]:
            lifecycle, handles = run.lifecycle.__aiter__(), run.subgraphs.__aiter__()
            events = [e async for e in lifecycle]
            return events, {tuple(h.path): (await h.output())["x"] async for h in handles}

        events, outputs = lane.call(go)
    cause = {
        tuple(e["namespace"]): e["cause"]["tool_call_id"] for e in events if e["event"] == "started" and e.get("cause")
    }
    # Each child's own output must belong to the tool call that spawned it.
    return sorted((cause.get(ns), x) for ns, x in outputs.items())


# --- 3. checkpoint coordinates ---------------------------------------------------------


def coordinate_case(
    lane: Lane, make_config: Callable[[str], Any], with_config: Any = None, child_thread: str | None = None
) -> Any:
    """Two parent turns whose node invokes the child with ``make_config(parent_thread)``;
    with ``child_thread``, the child's own state on it is read back after each turn."""
    saver = InMemorySaver()
    sub = child(lane, "linear", saver)
    if with_config is not None:
        sub = sub.with_config(with_config)
    parent_thread = str(uuid.uuid4())

    def call(state: dict[str, Any]) -> dict[str, Any]:
        out = sub.invoke({"x": state["x"], "log": []}, make_config(parent_thread))
        return {"x": out["x"], "log": out["log"]}

    async def acall(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        with graphs.node_context(config):  # the ambient config, on Python 3.10 too
            return call(state) if lane.kind == "local" else await _acall(state)

    async def _acall(state: dict[str, Any]) -> dict[str, Any]:
        out = await sub.ainvoke({"x": state["x"], "log": []}, make_config(parent_thread))
        return {"x": out["x"], "log": out["log"]}

    g = StateGraph(graphs.LinearState)
    g.add_node("p", call if lane.flavour == "sync" else acall)
    g.add_edge(START, "p")
    parent = g.compile(checkpointer=saver, transformers=graphs.TRANSFORMERS)
    config = {"configurable": {"thread_id": parent_thread}}
    turns = []
    for x in (1, 2):
        run = lane.start(parent, {"x": x, "log": []}, config)
        subgraphs = [h["graph_name"] for h in lane.subgraphs(run, depth=1)]
        turn = {"output": lane.output(run), "subgraph_handles": subgraphs}
        if child_thread is not None:
            read = {"configurable": {"thread_id": child_thread or parent_thread}}
            turn["child_state"] = lane.state(sub, read).values
        turns.append(turn)
    return turns


@scenario
def coordinates_1_no_config_inherits_the_parent(lane: Lane) -> Any:
    return coordinate_case(lane, lambda parent: None)


@scenario
def coordinates_2_new_thread_is_its_own_lineage(lane: Lane) -> Any:
    thread = str(uuid.uuid4())
    return coordinate_case(lane, lambda parent: {"configurable": {"thread_id": thread}}, child_thread=thread)


@scenario
def coordinates_3_parent_thread_is_its_own_root_lineage(lane: Lane) -> Any:
    turns = coordinate_case(lane, lambda parent: {"configurable": {"thread_id": parent}}, child_thread="")
    # Locally the child's root lineage on the parent's thread is the parent's own
    # (one checkpointer); a remote child's lives on the server. Both are readable
    # and carry on across turns; only that is compared (see docs/composition.md).
    logs = [len(turn.pop("child_state")["log"]) for turn in turns]
    return {"turns": turns, "child_state_carries_on": logs[0] > 0 and logs[1] > logs[0]}


@scenario
def coordinates_4_non_coordinate_key_keeps_the_ambient(lane: Lane) -> Any:
    return coordinate_case(lane, lambda parent: {"configurable": {"ls_agent_type": "subagent"}})


@scenario
def coordinates_5_with_config_merges_with_an_invoke_thread(lane: Lane) -> Any:
    thread = str(uuid.uuid4())
    return coordinate_case(
        lane,
        lambda parent: {"configurable": {"thread_id": thread}},
        with_config={"configurable": {"ls_agent_type": "root"}},
        child_thread=thread,
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_child_equals_remote_child(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def test_probe_a_remote_childs_message_keeps_the_node_named_at_its_start(server_url: str) -> None:
    # A root run corrects a message's node from the node's update (see
    # test_zero_config.py); in a parent, the parent's message transformer read
    # it once, at the message's start, when the child's state could not be read.
    nodes = {}
    children = (("local", graphs.build_chat().compile()), ("remote", remote_without_state_reads("chat", server_url)))
    for kind, sub in children:
        g = StateGraph(graphs.ChatState)
        g.add_node("child", sub)
        g.add_edge(START, "child")
        parent = g.compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS)
        run = parent.stream_events({"messages": [("user", "hi")]}, Lane.thread(), version="v3")
        messages, at_start = [], []
        for handle in run.subgraphs:
            for message in handle.messages:
                messages.append(message)
                at_start.append(message.node)
                "".join(message.text)
        run.output
        nodes[kind] = {"at_start": at_start, "at_end": [m.node for m in messages]}
    assert nodes["local"] == {"at_start": ["chat"], "at_end": ["chat"]}
    assert nodes["remote"] == {"at_start": [None], "at_end": [None]}


def _child_on_the_parents_thread(sub: Any, saver: InMemorySaver) -> dict[str, Any]:
    """One parent turn whose node invokes ``sub`` on the parent's own thread: the
    child's state there, and the ``next`` of each of the parent's checkpoints."""
    config = Lane.thread()

    def call(state: dict[str, Any]) -> dict[str, Any]:
        out = sub.invoke({"x": state["x"], "log": []}, config)
        return {"x": out["x"], "log": ["p"]}

    g = StateGraph(graphs.LinearState)
    g.add_node("p", call)
    g.add_edge(START, "p")
    parent = g.compile(checkpointer=saver)
    assert parent.invoke({"x": 1, "log": []}, config) == {"x": 20, "log": ["p"]}
    return {
        "child_state": sub.get_state(config).values,
        "parent_steps": [s.next for s in parent.get_state_history(config)],
    }


def test_probe_a_remote_child_on_the_parents_thread_keeps_its_own_state(server_url: str) -> None:
    # Locally the child shares the parent's checkpointer, so its run on the
    # parent's thread is in the parent's root lineage; a remote child's is on the server.
    saver = InMemorySaver()
    local = _child_on_the_parents_thread(graphs.build_linear().compile(checkpointer=saver), saver)
    assert local["child_state"] == {"x": 20, "log": ["p"]}  # the parent's own state
    assert len(local["parent_steps"]) > 3  # the child's checkpoints among the parent's
    remote = _child_on_the_parents_thread(RemoteGraph("linear", url=server_url), InMemorySaver())
    assert remote == {"child_state": {"x": 20, "log": ["a", "b"]}, "parent_steps": [(), ("p",), ("__start__",)]}
