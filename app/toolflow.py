"""A tool-calling flow served from a module with its own stream transformers.

The module's ``stream_transformers()`` hook registers ``NodeTrail``, whose
named channel reaches the wire as ``custom:node_trail``, next to
``UpdatesTransformer`` and ``CustomTransformer``. A client told nothing about
the module must still offer ``run.updates``, ``run.custom`` and
``run.extensions["node_trail"]``.

The agent node returns its tool call as an ``AIMessage`` it builds itself,
without streaming a model (as agents do before a tool node), then streams its
summary; a ``review`` subgraph streams a message of its own. ``planner`` is
the same in the functional API.

Self-contained: the server loads each module of ``langgraph.json`` by path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.stream import StreamChannel, StreamTransformer
from langgraph.stream.transformers import CustomTransformer, UpdatesTransformer
from typing_extensions import TypedDict

# A sibling module: `langgraph dev` puts the config's dependency directory on sys.path.
from graphs import node_context


class NodeTrail(StreamTransformer):
    """``{"node": name}`` on the named channel ``node_trail`` for each node update at its scope."""

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._scope_list = list(scope)
        self._trail: StreamChannel[dict[str, str]] = StreamChannel("node_trail")

    def init(self) -> dict[str, Any]:
        return {"node_trail": self._trail}

    def process(self, event: Any) -> bool:
        params = event["params"]
        if event["method"] == "updates" and params["namespace"] == self._scope_list and isinstance(params["data"], dict):
            for node in params["data"]:
                self._trail.push({"node": node})
        return True


def stream_transformers() -> list[Callable[[tuple[str, ...]], Any]]:
    """The server's opt-in hook: updates, custom and the module's own channel."""
    return [UpdatesTransformer, CustomTransformer, NodeTrail]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class FlowState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


SUMMARY = "summary: 1 + 2 = 3"
REVIEW = "review: looks right"


def build_toolflow() -> StateGraph:
    def agent(state: FlowState, config: RunnableConfig) -> dict[str, Any]:
        if not any(isinstance(m, ToolMessage) for m in state["messages"]):
            with node_context(config):
                get_stream_writer()({"planned": "add"})
            call = {"id": "call_1", "name": "add", "args": {"a": 1, "b": 2}}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        model = GenericFakeChatModel(messages=iter([SUMMARY]))
        return {"messages": [model.invoke(state["messages"], config)]}

    def critic(state: FlowState, config: RunnableConfig) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([REVIEW]))
        return {"messages": [model.invoke(state["messages"], config)]}

    def route(state: FlowState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "review"

    review = StateGraph(FlowState)
    review.add_node("critic", critic)
    review.add_edge(START, "critic")

    g = StateGraph(FlowState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([add]))
    g.add_node("review", review.compile())
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", "review"])
    g.add_edge("tools", "agent")
    g.add_edge("review", END)
    return g


class DripModel(GenericFakeChatModel):
    """Streams its reply a word every 50 ms, as a real model streams: its step is still running when the client reads the state."""

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for chunk in super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs):
            time.sleep(0.05)
            yield chunk


def build_drip() -> StateGraph:
    """``prep`` changes nothing (so no state is sent after its step), then ``talk`` streams slowly."""

    def prep(state: FlowState) -> None:
        return None

    def talk(state: FlowState, config: RunnableConfig) -> dict[str, Any]:
        model = DripModel(messages=iter(["one two three four five"]))
        return {"messages": [model.invoke(state["messages"], config)]}

    g = StateGraph(FlowState)
    g.add_node("prep", prep)
    g.add_node("talk", talk)
    g.add_edge(START, "prep")
    g.add_edge("prep", "talk")
    return g


@task
def plan(question: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"id": "call_7", "name": "lookup", "args": {"q": question}}])


@task
def conclude(question: str) -> AIMessage:
    return AIMessage(content=f"concluded: {question}")


def build_planner() -> Pregel:
    """The functional API: ``@task`` calls return messages their entrypoint returns again."""

    @entrypoint()
    def planner(inputs: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):  # calling a @task needs it, as interrupt() does
            call = plan(inputs["question"]).result()
            reply = conclude(inputs["question"]).result()
        return {"messages": [call, reply]}

    return planner


BUILDERS: dict[str, Callable[[], StateGraph | Pregel]] = {"toolflow": build_toolflow, "planner": build_planner, "drip": build_drip}

toolflow = build_toolflow().compile()
planner = build_planner()
drip = build_drip().compile()
