"""A langgraph-supervisor supervisor over served workers, on [local, remote] x [sync, async].

The workers (``researcher_worker`` and ``math_worker``, ``app/handoff.py``) are
local compiled agents in one lane and ``RemoteGraph``s of the same served agents
in the other; the supervisor and its scripted model are local in both. The
supervisor hands the question to the researcher, then to the mathematician, then
answers: each handoff is its handoff tool's ``Command(graph=Command.PARENT, ...)``
(a ``transfer_to_<worker>`` tool message), each return the supervisor's own
``transfer_back_to_supervisor`` pair, added after the worker's call. Compared: the
routing (the parent's ``updates``, and with ``subgraphs=True`` the workers' own
steps), the messages (types, contents, names, tool calls) in both output modes and
without handoff messages, and the final answer, over two turns on one thread; the
workers' tokens in the parent's ``messages`` stream; the workers' subgraph handles
in a v3 run; a supervisor without a checkpointer. The probes record what differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import handoff
import pytest
from classic import ScriptedChatModel, since_last_human
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph_supervisor import create_supervisor

from remote_graph import RemoteGraph
from tests.integration.lanes import LANES, Lane, Scenarios, compare
from tests.integration.objects import UUID, objects

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

WORKERS = ("researcher_worker", "math_worker")


def supervisor_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Hands the turn's question to each worker in order; answers with their answers."""
    answers = [
        str(m.content)
        for m in since_last_human(messages)
        if isinstance(m, AIMessage) and m.name in WORKERS and not m.tool_calls and m.content
    ]
    if len(answers) < len(WORKERS):
        name = f"transfer_to_{WORKERS[len(answers)]}"
        call = {"id": f"call_{name}_{len(messages)}", "name": name, "args": {}, "type": "tool_call"}
        return AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]
    return AIMessage(content="supervisor answers: " + "; ".join(answers))


def renamed_uuids(value: Any, names: dict[str, str] | None = None) -> Any:
    """``value`` with each UUID string renamed ``uuid#n`` in order of first appearance:
    the handoff-back pair's tool call id is a fresh ``uuid4()`` on every call."""
    names = {} if names is None else names
    if isinstance(value, str) and UUID.fullmatch(value):
        return names.setdefault(value, f"uuid#{len(names)}")
    if isinstance(value, dict):
        return {k: renamed_uuids(v, names) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(renamed_uuids(v, names) for v in value)
    return value


def worker(lane: Lane, name: str, served: Sequence[str]) -> Any:
    """Worker ``name``: the deployed agent in the remote lane when ``served`` names it."""
    if lane.kind == "remote" and name in served:
        return RemoteGraph(name, url=lane.server_url, name=name)
    return handoff.BUILDERS[name]()


def supervisor(lane: Lane, served: Sequence[str], *, whole: bool = False, **kwargs: Any) -> Any:
    """The supervisor over the workers; ``whole``: its model replies in one piece."""
    workers = [worker(lane, name, served) for name in WORKERS]
    model = ScriptedChatModel(script=supervisor_script, disable_streaming=whole)
    return create_supervisor(workers, model=model, **kwargs).compile(checkpointer=InMemorySaver())


def two_turns(lane: Lane, served: Sequence[str], **kwargs: Any) -> Any:
    """A streamed turn (its routing), then an invoked one on the same thread."""
    app = supervisor(lane, served, **kwargs)
    config = lane.thread()
    updates = lane.stream(app, {"messages": [HumanMessage("question")]}, config, stream_mode="updates")
    out = lane.invoke(app, {"messages": [HumanMessage("again")]}, config)
    return renamed_uuids(
        objects(
            {
                "routing": [list(u) for u in updates],
                "messages": out["messages"],
                "answer": out["messages"][-1].content,
            }
        )
    )


@scenario
def a_served_worker_between_local_ones(lane: Lane) -> Any:
    return two_turns(lane, ["math_worker"])


@scenario
def a_served_worker_first(lane: Lane) -> Any:
    return two_turns(lane, ["researcher_worker"])


@scenario
def every_worker_served(lane: Lane) -> Any:
    return two_turns(lane, WORKERS)


@scenario
def every_worker_served_with_their_full_history(lane: Lane) -> Any:
    return two_turns(lane, WORKERS, output_mode="full_history")


@scenario
def a_served_worker_without_handoff_messages(lane: Lane) -> Any:
    return two_turns(lane, ["math_worker"], add_handoff_messages=False)


@scenario
def the_workers_steps_in_the_parents_stream(lane: Lane) -> Any:
    app = supervisor(lane, WORKERS)
    chunks = lane.stream(
        app, {"messages": [HumanMessage("question")]}, lane.thread(), stream_mode="updates", subgraphs=True
    )
    return objects([(ns, list(update)) for ns, update in chunks])


@scenario
def the_supervisor_as_a_v3_run(lane: Lane) -> Any:
    # The scripted model streams a tool call's arguments in two pieces, which a v3 run
    # leaves unmerged (an invalid tool call), locally as remotely: the supervisor replies
    # whole so that its handoffs route; the workers' own tool calls do not parse, so each
    # worker answers with its invalid call. Such a message crossing to a served worker is
    # rebuilt there with its invalid calls in ``additional_kwargs`` (see the probe below),
    # so of each handle's output only the worker's last message is compared.
    run = lane.start(supervisor(lane, WORKERS, whole=True), {"messages": [HumanMessage("question")]})
    handles = [
        {"path": h["path"], "graph_name": h["graph_name"], "status": h["status"], "last": h["output"]["messages"][-1]}
        for h in lane.subgraphs(run, depth=1)
    ]
    return renamed_uuids(objects({"subgraphs": handles, "output": lane.output(run)}))


@scenario
def the_workers_tokens_in_the_parents_messages_stream(lane: Lane) -> Any:
    """The workers' tokens under their tasks, with the metadata of a local child's: the
    parent's thread among it, though langgraph-supervisor hands a served worker a thread
    of its own (``nesting._parent_thread``)."""
    app = supervisor(lane, WORKERS)
    config = lane.thread()
    chunks = lane.stream(app, {"messages": [HumanMessage("question")]}, config, stream_mode="messages", subgraphs=True)
    keys = ("thread_id", "langgraph_node", "langgraph_checkpoint_ns", "checkpoint_ns")
    thread = config["configurable"]["thread_id"]
    return renamed_uuids(
        objects(
            [
                (ns, type(m).__name__, m.content, {k: meta.get(k) for k in keys}, meta.get("thread_id") == thread)
                for ns, (m, meta) in chunks
            ]
        )
    )


@scenario
def a_supervisor_without_a_checkpointer(lane: Lane) -> Any:
    workers = [worker(lane, name, WORKERS) for name in WORKERS]
    app = create_supervisor(workers, model=ScriptedChatModel(script=supervisor_script)).compile()
    return renamed_uuids(objects(lane.invoke(app, {"messages": [HumanMessage("question")]})))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_workers_equal_served_workers(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


def test_the_routing_and_the_answer(server_url: str) -> None:
    """What the scenarios compare is the supervisor's work: each worker is handed the
    question and hands back, and the answer holds both workers' answers."""
    lane = LANES[("remote", "sync")](server_url)
    app = supervisor(lane, WORKERS)
    out = lane.invoke(app, {"messages": [HumanMessage("question")]}, lane.thread())
    tools = [m.name for m in out["messages"] if isinstance(m, ToolMessage)]
    assert tools == [
        "transfer_to_researcher_worker",
        "transfer_back_to_supervisor",
        "transfer_to_math_worker",
        "transfer_back_to_supervisor",
    ]
    assert out["messages"][-1].content == (
        "supervisor answers: research says mars: two moons, Phobos and Deimos; the sum is 42"
    )


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def wrapped(server_url: str, name: str) -> Any:
    """A served worker inside a local graph of its name: no longer a ``RemoteGraph`` to
    langgraph-supervisor, which then hands it the parent task's config as it is."""
    g = StateGraph(MessagesState)
    g.add_node(name, RemoteGraph(name, url=server_url, name=name))
    g.add_edge(START, name)
    return g.compile(name=name)


def test_probe_a_served_worker_needs_a_uuid_parent_thread(server_url: str) -> None:
    """langgraph-supervisor gives a worker that is a langgraph ``RemoteGraph`` (this
    library's is one) the thread ``uuid5(UUID(parent thread id), name)``: under a parent
    thread id that is not a UUID, the call fails before the worker runs; local workers
    run. A served worker wrapped in a local graph is called as a local one is."""
    config = {"configurable": {"thread_id": "user-42"}}
    question = {"messages": [HumanMessage("question")]}
    local = LANES[("local", "sync")](server_url)
    answer = local.invoke(supervisor(local, WORKERS), question, config)["messages"][-1].content
    assert answer.startswith("supervisor answers: research says")
    remote = LANES[("remote", "sync")](server_url)
    with pytest.raises(ValueError, match="badly formed hexadecimal UUID string"):
        remote.invoke(supervisor(remote, WORKERS), question, config)
    workers = [wrapped(server_url, name) for name in WORKERS]
    app = create_supervisor(workers, model=ScriptedChatModel(script=supervisor_script))
    out = app.compile(checkpointer=InMemorySaver()).invoke(question, config)
    assert out["messages"][-1].content == answer


def test_probe_an_ai_messages_usage_and_invalid_calls_reach_a_served_graph_in_its_additional_kwargs(
    server_url: str,
) -> None:
    """The server rebuilds an input message with langchain's ``convert_to_messages``,
    which puts the fields it does not know (``usage_metadata``, ``invalid_tool_calls``)
    into ``additional_kwargs``. A served worker that hands its whole history back
    (``output_mode="full_history"``) so changes the supervisor's own messages in the
    parent's state, which a local worker leaves as they are."""
    usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    invalid = [{"type": "invalid_tool_call", "id": "call_1", "name": "add", "args": "{", "error": None}]
    sent = AIMessage(content="noted", usage_metadata=usage, invalid_tool_calls=invalid)  # type: ignore[arg-type]
    worker_graph = RemoteGraph("math_worker", url=server_url, name="math_worker")
    back = worker_graph.invoke({"messages": [HumanMessage("question"), sent, HumanMessage("go on")]})["messages"][1]
    assert (back.usage_metadata, back.invalid_tool_calls) == (None, [])
    assert back.additional_kwargs == {"usage_metadata": usage, "invalid_tool_calls": invalid}

    def counted(messages: Sequence[BaseMessage]) -> AIMessage:
        reply = supervisor_script(messages)
        reply.usage_metadata = usage  # type: ignore[assignment]
        return reply

    def first_reply(lane: Lane) -> AIMessage:
        workers = [worker(lane, name, WORKERS) for name in WORKERS]
        model = ScriptedChatModel(script=counted, disable_streaming=True)
        app = create_supervisor(workers, model=model, output_mode="full_history").compile()
        out = lane.invoke(app, {"messages": [HumanMessage("question")]})
        return next(m for m in out["messages"] if isinstance(m, AIMessage) and m.name == "supervisor")

    local = first_reply(LANES[("local", "sync")](server_url))
    remote = first_reply(LANES[("remote", "sync")](server_url))
    assert (local.usage_metadata, local.additional_kwargs) == (usage, {})
    assert (remote.usage_metadata, remote.additional_kwargs) == (None, {"usage_metadata": usage})
