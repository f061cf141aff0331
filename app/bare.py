"""A module with no ``stream_transformers()`` hook: the server sends its defaults only.

Without the hook the wire has no ``updates`` and no ``custom``: a message a
node returns without streaming it is found in the next ``values`` alone.

Self-contained: the server loads each module of ``langgraph.json`` by path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class BareState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build_bare_agent() -> StateGraph:
    def agent(state: BareState) -> dict[str, Any]:
        if not any(isinstance(m, ToolMessage) for m in state["messages"]):
            call = {"id": "call_1", "name": "lookup", "args": {"q": "weather"}}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="it is sunny")]}

    def tools(state: BareState) -> dict[str, Any]:
        return {"messages": [ToolMessage(content="sunny", tool_call_id="call_1")]}

    def route(state: BareState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = StateGraph(BareState)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g


BUILDERS: dict[str, Callable[[], StateGraph]] = {"bare_agent": build_bare_agent}

bare_agent = build_bare_agent().compile()
