"""Graphs for the conformance of the classic graph surface: ``invoke``, ``stream`` in
every mode, ``batch``, state, and ``astream_events``.

Prebuilt agents (``create_react_agent``) over a scripted chat model that streams
its tool calls in pieces, an agent whose tool interrupts, an agent whose tool runs
a compiled child graph, a child that streams, pauses and streams again, and graphs
for failures, abandoned streams and the data path (150 custom events, 150 Sends).

Self-contained: the server loads each module of ``langgraph.json`` by path.
"""

from __future__ import annotations

import json
import operator
import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any

# A sibling module: `langgraph dev` puts the config's dependency directory on sys.path.
from graphs import node_context, pause
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, tool
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import create_react_agent
from langgraph.pregel import Pregel
from langgraph.stream.transformers import CustomTransformer, UpdatesTransformer
from langgraph.types import Send
from typing_extensions import TypedDict


def stream_transformers() -> list[Callable[[tuple[str, ...]], Any]]:
    """Put ``updates`` and ``custom`` on the v3 wire (the server's opt-in hook)."""
    return [UpdatesTransformer, CustomTransformer]


# --- a scripted chat model ------------------------------------------------------------


Script = Callable[[Sequence[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply is a function of the conversation, streamed as a provider streams.

    Text comes word by word (whitespace kept as tokens of its own). Each tool call
    comes in two chunks, its name and id with the first half of its JSON
    arguments, then the rest, so a client that does not merge chunks by
    ``index`` sees broken arguments. The reply depends on the messages only: the
    same conversation gets the same reply on every run, in any process.
    """

    script: Script

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        chunks = list(reply_chunks(self.script(messages)))
        chunks[-1].chunk_position = "last"
        for chunk in chunks:
            yield ChatGenerationChunk(message=chunk)


def reply_chunks(reply: AIMessage) -> Iterator[AIMessageChunk]:
    """The chunks a provider streams ``reply`` in: words, then each tool call in two pieces."""
    content = reply.content if isinstance(reply.content, str) else ""
    for token in re.split(r"(\s)", content) if content else ():
        if token:
            yield AIMessageChunk(content=token)
    for index, call in enumerate(reply.tool_calls):
        args = json.dumps(call["args"])
        half = len(args) // 2
        first = {"type": "tool_call_chunk", "id": call["id"], "name": call["name"], "args": args[:half], "index": index}
        yield AIMessageChunk(content="", tool_call_chunks=[first])  # type: ignore[list-item]
        rest = {"type": "tool_call_chunk", "id": None, "name": None, "args": args[half:], "index": index}
        yield AIMessageChunk(content="", tool_call_chunks=[rest])  # type: ignore[list-item]


def since_last_human(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages after the last human turn."""
    for position in range(len(messages) - 1, -1, -1):
        if isinstance(messages[position], HumanMessage):
            return list(messages[position + 1 :])
    return list(messages)


def tool_results(messages: Sequence[BaseMessage]) -> list[str]:
    return [str(m.content) for m in since_last_human(messages) if isinstance(m, ToolMessage)]


def prebuilt_agent(model: BaseChatModel, tools: Sequence[Any]) -> Pregel:
    """``create_react_agent(model, tools)``. langgraph points to ``langchain.agents.create_agent``
    instead, but ``langchain`` is no dependency here; this langgraph still ships the prebuilt one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(model, tools)


# --- react: a prebuilt agent, two tool calls in one message ---------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


REACT_CALLS = [
    {"id": "call_add", "name": "add", "args": {"a": 1, "b": 2}, "type": "tool_call"},
    {"id": "call_mul", "name": "multiply", "args": {"a": 3, "b": 4}, "type": "tool_call"},
]


def react_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """First the two tool calls (with a word of text), then a sentence of their results."""
    results = tool_results(messages)
    if not results:
        return AIMessage(content="Let me compute.", tool_calls=REACT_CALLS)
    return AIMessage(content=f"The results are {' and '.join(results)}.")


def build_react() -> Pregel:
    """``create_react_agent`` over the scripted model and ``add`` / ``multiply``."""
    return prebuilt_agent(ScriptedChatModel(script=react_script), [add, multiply])


# --- react_ask: a tool that interrupts ---------------------------------------------------


@tool
def transfer(amount: int, config: RunnableConfig) -> str:
    """Send ``amount`` once a human approves it."""
    answer = pause({"question": "send?", "amount": amount}, config)
    return f"sent {amount}" if answer == "yes" else f"not sent ({answer})"


def ask_script(messages: Sequence[BaseMessage]) -> AIMessage:
    results = tool_results(messages)
    if not results:
        return AIMessage(content="", tool_calls=[{"id": "call_transfer", "name": "transfer", "args": {"amount": 5}, "type": "tool_call"}])
    return AIMessage(content=f"transfer: {results[0]}")


def build_react_ask() -> Pregel:
    """A prebuilt agent whose ``transfer`` tool asks a human first (``interrupt()``)."""
    return prebuilt_agent(ScriptedChatModel(script=ask_script), [transfer])


# --- subagent: a compiled child graph run inside a tool ----------------------------------


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def notes_script(messages: Sequence[BaseMessage]) -> AIMessage:
    return AIMessage(content=f"notes on {messages[-1].content}")


def build_researcher() -> StateGraph:
    """The child: one node streaming its notes on the last message."""

    def write(state: ChatState, config: RunnableConfig) -> dict[str, Any]:
        model = ScriptedChatModel(script=notes_script)
        return {"messages": [model.invoke(state["messages"], config)]}

    g = StateGraph(ChatState)
    g.add_node("write", write)
    g.add_edge(START, "write")
    return g


RESEARCHER = build_researcher().compile(name="researcher")


def research(topic: str, config: RunnableConfig) -> str:
    """Research ``topic`` with the researcher subagent."""
    # The config is passed on: an async run below Python 3.11 gives the tool no context.
    out = RESEARCHER.invoke({"messages": [HumanMessage(topic)]}, config)
    return str(out["messages"][-1].content)


async def aresearch(topic: str, config: RunnableConfig) -> str:
    """Research ``topic`` with the researcher subagent."""
    out = await RESEARCHER.ainvoke({"messages": [HumanMessage(topic)]}, config)
    return str(out["messages"][-1].content)


RESEARCH = StructuredTool.from_function(func=research, coroutine=aresearch, name="research", description="Research a topic with the researcher subagent.")


def lead_script(messages: Sequence[BaseMessage]) -> AIMessage:
    results = tool_results(messages)
    if not results:
        return AIMessage(content="", tool_calls=[{"id": "call_research", "name": "research", "args": {"topic": "otters"}, "type": "tool_call"}])
    return AIMessage(content=f"summary: {results[0]}")


def build_subagent() -> Pregel:
    """A prebuilt agent whose ``research`` tool invokes the compiled ``researcher`` graph."""
    return prebuilt_agent(ScriptedChatModel(script=lead_script), [RESEARCH])


# --- ask_chat: a child that streams, pauses, and streams again ----------------------------


class AskChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def think_script(messages: Sequence[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, HumanMessage) and last.content in ("yes", "no"):
        return AIMessage(content=f"you said {last.content}")
    return AIMessage(content="thinking about it")


def build_ask_chat() -> StateGraph:
    """``think`` streams a reply, ``ask`` interrupts and adds the answer as a human
    message, ``reply`` streams a reply to it."""

    def think(state: AskChatState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [ScriptedChatModel(script=think_script).invoke(state["messages"], config)]}

    def ask(state: AskChatState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [HumanMessage(str(pause({"question": "continue?"}, config)))]}

    g = StateGraph(AskChatState)
    g.add_node("think", think)
    g.add_node("ask", ask)
    g.add_node("reply", think)
    g.add_edge(START, "think")
    g.add_edge("think", "ask")
    g.add_edge("ask", "reply")
    return g


# --- picky: fails on bad input with a builtin exception ------------------------------------


class PickyState(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def build_picky() -> StateGraph:
    """``check`` raises ``ValueError`` for a negative ``x``; otherwise ``double`` doubles it."""

    def check(state: PickyState) -> dict[str, Any]:
        if state["x"] < 0:
            raise ValueError(f"x must not be negative, got {state['x']}")
        return {"log": ["checked"]}

    def double(state: PickyState) -> dict[str, Any]:
        return {"x": state["x"] * 2, "log": ["doubled"]}

    g = StateGraph(PickyState)
    g.add_node("check", check)
    g.add_node("double", double)
    g.add_edge(START, "check")
    g.add_edge("check", "double")
    return g


# --- paced: a run still going when its consumer leaves ---------------------------------------

PACED_STEPS = 10
PACED_SECONDS = 0.3


def build_paced() -> StateGraph:
    """``PACED_STEPS`` nodes in a row, each taking ``PACED_SECONDS``: a run lasts about 3 s,
    so a stream abandoned after its first updates leaves a run that is still going."""

    def step(name: str) -> Callable[[PickyState], dict[str, Any]]:
        def node(state: PickyState) -> dict[str, Any]:
            time.sleep(PACED_SECONDS)
            return {"x": state["x"] + 1, "log": [name]}

        return node

    g = StateGraph(PickyState)
    previous = START
    for index in range(PACED_STEPS):
        name = f"p{index}"
        g.add_node(name, step(name))
        g.add_edge(previous, name)
        previous = name
    return g


# --- swarm: 150 custom events, then 150 Sends -------------------------------------------------

SWARM = 150


class SwarmState(TypedDict):
    n: int
    results: Annotated[list[int], operator.add]


def build_swarm() -> StateGraph:
    """``plan`` writes ``n`` custom events ``{"i": i}`` and fans out ``n`` Sends to ``work``,
    each writing ``{"worker": i}`` and returning ``i * i``."""

    def plan(state: SwarmState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            writer = get_stream_writer()
            for i in range(state["n"]):
                writer({"i": i})
        return {}

    def fan_out(state: SwarmState) -> list[Send]:
        return [Send("work", {"n": i, "results": []}) for i in range(state["n"])]

    def work(state: SwarmState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            get_stream_writer()({"worker": state["n"]})
        return {"results": [state["n"] * state["n"]]}

    g = StateGraph(SwarmState)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["work"])
    return g


BUILDERS: dict[str, Callable[[], StateGraph | Pregel]] = {
    "react": build_react,
    "react_ask": build_react_ask,
    "subagent": build_subagent,
    "researcher": build_researcher,
    "ask_chat": build_ask_chat,
    "picky": build_picky,
    "paced": build_paced,
    "swarm": build_swarm,
}

react = build_react()
react_ask = build_react_ask()
subagent = build_subagent()
researcher = build_researcher().compile()
ask_chat = build_ask_chat().compile()
picky = build_picky().compile()
paced = build_paced().compile()
swarm = build_swarm().compile()
