"""Graphs that hand off to their parent: ``Command(graph=Command.PARENT, ...)``.

``handoff`` runs two steps, then its second node hands off to the parent's
node ``b`` with an update of the parent's ``entries``. ``alice`` and ``bob`` are
swarm agents (langgraph-swarm's handoff tool, written out, over the scripted chat model):
alice hands off to bob, bob hands back, and alice answers. ``researcher_worker`` and
``math_worker`` are the workers of a langgraph-supervisor supervisor: prebuilt agents
that call a tool of their own and answer; the supervisor hands work to them and they
return to it by its edges (they never hand off themselves).

Self-contained: the server loads each module of ``langgraph.json`` by path.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Annotated, Any

from classic import ScriptedChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import InjectedState, create_react_agent
from langgraph.pregel import Pregel
from langgraph.types import Command
from typing_extensions import TypedDict


class HandoffState(TypedDict):
    entries: Annotated[list[str], operator.add]


def build_handoff() -> StateGraph:
    """``one`` then ``two``; ``two`` hands off to the parent's ``b``."""

    def one(state: HandoffState) -> dict[str, Any]:
        return {"entries": ["one"]}

    def two(state: HandoffState) -> Command[Any]:
        return Command(
            graph=Command.PARENT, goto="b", update={"entries": [f"handed-off-after-{len(state['entries']) + 1}"]}
        )

    g = StateGraph(HandoffState)
    g.add_node("one", one)
    g.add_node("two", two)
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    return g


def build_handoff_odd() -> StateGraph:
    """Hands off to the parent's ``b`` with a value whose repr is no literal (a ``Decimal``)."""

    def odd(state: HandoffState) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="b", update={"entries": [Decimal("1.5")]})

    g = StateGraph(HandoffState)
    g.add_node("odd", odd)
    g.add_edge(START, "odd")
    return g


def _transferred_to(messages: Sequence[BaseMessage], name: str) -> bool:
    last = messages[-1] if messages else None
    return isinstance(last, ToolMessage) and str(last.content) == f"Successfully transferred to {name}"


def _handoff_call(to: str, turn: int) -> AIMessage:
    call = {"id": f"call_{to}_{turn}", "name": f"transfer_to_{to}", "args": {}, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]


def alice_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Hands a new question to bob; answers once bob hands it back."""
    if _transferred_to(messages, "alice"):
        return AIMessage(content="alice answers: 42")
    return _handoff_call("bob", len(messages))


def bob_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Hands straight back to alice."""
    return _handoff_call("alice", len(messages))


def create_handoff_tool(*, agent_name: str) -> BaseTool:
    """langgraph-swarm's handoff tool (``langgraph_swarm.create_handoff_tool``), written out
    so the served module needs no langgraph-swarm: the same name, metadata and command."""
    name = f"transfer_to_{agent_name}"

    @tool(name, description=f"Ask agent '{agent_name}' for help")
    def handoff_to_agent(
        state: Annotated[Any, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> Command[Any]:
        message = ToolMessage(content=f"Successfully transferred to {agent_name}", name=name, tool_call_id=tool_call_id)
        return Command(
            goto=agent_name,
            graph=Command.PARENT,
            update={"messages": [*state["messages"], message], "active_agent": agent_name},
        )

    handoff_to_agent.metadata = {"__handoff_destination": agent_name}
    return handoff_to_agent


def _agent(name: str, script: Callable[[Sequence[BaseMessage]], AIMessage], to: str) -> Pregel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(ScriptedChatModel(script=script), [create_handoff_tool(agent_name=to)], name=name)


def build_alice() -> Pregel:
    return _agent("alice", alice_script, "bob")


def build_bob() -> Pregel:
    return _agent("bob", bob_script, "alice")


# --- supervisor workers -------------------------------------------------------------------


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: two moons, Phobos and Deimos"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _tool_call(name: str, args: dict[str, Any], turn: int) -> AIMessage:
    call = {"id": f"call_{name}_{turn}", "name": name, "args": args, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]


def _tool_answer(messages: Sequence[BaseMessage], name: str) -> str | None:
    last = messages[-1] if messages else None
    return str(last.content) if isinstance(last, ToolMessage) and last.name == name else None


def researcher_worker_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Looks the topic up, then answers with what it found."""
    if (found := _tool_answer(messages, "lookup")) is not None:
        return AIMessage(content=f"research says {found}")
    return _tool_call("lookup", {"topic": "mars"}, len(messages))


def math_worker_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Adds two numbers, then answers with the sum."""
    if (total := _tool_answer(messages, "add")) is not None:
        return AIMessage(content=f"the sum is {total}")
    return _tool_call("add", {"a": 2, "b": 40}, len(messages))


def _worker(name: str, script: Callable[[Sequence[BaseMessage]], AIMessage], tools: Sequence[BaseTool]) -> Pregel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(ScriptedChatModel(script=script), list(tools), name=name)


def build_researcher_worker() -> Pregel:
    return _worker("researcher_worker", researcher_worker_script, [lookup])


def build_math_worker() -> Pregel:
    return _worker("math_worker", math_worker_script, [add])


BUILDERS: dict[str, Callable[[], StateGraph | Pregel]] = {
    "handoff": build_handoff,
    "handoff_odd": build_handoff_odd,
    "alice": build_alice,
    "bob": build_bob,
    "researcher_worker": build_researcher_worker,
    "math_worker": build_math_worker,
}

handoff = build_handoff().compile()
handoff_odd = build_handoff_odd().compile()
alice = build_alice()
bob = build_bob()
researcher_worker = build_researcher_worker()
math_worker = build_math_worker()
