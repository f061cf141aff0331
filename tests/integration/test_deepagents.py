"""deepagents' ``task`` tool with a served subagent, on [local, remote] x [sync, async].

A deep agent (``deepagents.create_deep_agent``, local in both lanes, over a scripted
model) delegates to a ``CompiledSubAgent`` whose runnable is the ``math_worker``
agent (``app/handoff.py``): compiled locally in one lane, a ``RemoteGraph`` of the
served agent in the other. Compared over two turns on one thread: the lead's
messages (types, contents, tool calls, the ``task`` tool's answer) and its final
answer; and the steps of the lead and of the subagent in the lead's ``updates``
stream with ``subgraphs=True``.

deepagents needs Python 3.11 or newer (the test extra installs it there only).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import handoff
import pytest
from classic import ScriptedChatModel, since_last_human
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from remote_graph import RemoteGraph
from tests.integration.lanes import Lane, Scenarios, compare
from tests.integration.objects import objects

deepagents = pytest.importorskip("deepagents", reason="deepagents needs Python 3.11+ (not installed here)")

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

TASK = {"description": "add two and forty", "subagent_type": "math"}


def lead_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Delegates the turn to the ``math`` subagent, then answers with what it said."""
    answered = [m for m in since_last_human(messages) if isinstance(m, ToolMessage) and m.name == "task"]
    if answered:
        return AIMessage(content=f"lead answers: {answered[-1].content}")
    call = {"id": f"call_task_{len(messages)}", "name": "task", "args": TASK, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]


def deep_agent(lane: Lane) -> Any:
    worker = (
        RemoteGraph("math_worker", url=lane.server_url, name="math_worker")
        if lane.kind == "remote"
        else handoff.BUILDERS["math_worker"]()
    )
    subagent = deepagents.CompiledSubAgent(name="math", description="adds numbers", runnable=worker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return deepagents.create_deep_agent(
            model=ScriptedChatModel(script=lead_script), subagents=[subagent], checkpointer=InMemorySaver()
        )


@scenario
def a_served_subagent_answers_the_task_tool(lane: Lane) -> Any:
    agent = deep_agent(lane)
    config = lane.thread()
    lane.invoke(agent, {"messages": [HumanMessage("question")]}, config)
    out = lane.invoke(agent, {"messages": [HumanMessage("again")]}, config)
    return objects({"messages": out["messages"], "answer": out["messages"][-1].content})


@scenario
def a_served_subagents_steps_in_the_leads_stream(lane: Lane) -> Any:
    agent = deep_agent(lane)
    chunks = lane.stream(
        agent, {"messages": [HumanMessage("question")]}, lane.thread(), stream_mode="updates", subgraphs=True
    )
    return objects([(len(ns), list(update)) for ns, update in chunks])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_subagent_equals_served_subagent(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local
