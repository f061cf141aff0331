"""Graphs served by the embedded server, the compose stack and the demo.

Each graph exists twice: a ``build_*`` function returning the uncompiled
``StateGraph`` (the conformance suite compiles it locally with a checkpointer)
and a module-level compiled graph that ``langgraph.json`` points the server at.

The local twins also run on Python 3.10, where an async run gives its nodes no
config context (asyncio tasks take a context only from 3.11): ``interrupt()`` and
the custom stream writer fail there, and a model invoked without its config
streams no tokens. So nodes take their ``config``, pass it on to models, and
interrupt or write custom events inside ``node_context(config)``.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.stream.transformers import CustomTransformer, UpdatesTransformer
from langgraph.types import Send, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict


def stream_transformers() -> list[Callable[[tuple[str, ...]], Any]]:
    """Put ``updates`` and ``custom`` on the wire (the server's opt-in hook)."""
    return [UpdatesTransformer, CustomTransformer]


TRANSFORMERS = tuple(stream_transformers())


@contextmanager
def node_context(config: RunnableConfig) -> Iterator[None]:
    """Where ``interrupt()`` and ``get_stream_writer()`` work, on any Python.

    Both read the node's config from a context variable, which an async run sets
    only on Python 3.11+; below, it is set here from the node's ``config`` argument.
    """
    if sys.version_info >= (3, 11):
        yield
        return
    token = var_child_runnable_config.set(config)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def pause(value: Any, config: RunnableConfig) -> Any:
    """``interrupt(value)`` from a node given its ``config`` (see ``node_context``)."""
    with node_context(config):
        return interrupt(value)


class Boom(Exception):
    """A user-defined exception, so errors can be told apart by type name."""


# --- linear ---------------------------------------------------------------


class LinearState(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def build_linear() -> StateGraph:
    def a(state: LinearState) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": ["a"]}

    def b(state: LinearState) -> dict[str, Any]:
        return {"x": state["x"] * 10, "log": ["b"]}

    g = StateGraph(LinearState)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g


# --- nested subgraphs (parent -> sub -> gc) --------------------------------


class NestedState(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def build_nested() -> StateGraph:
    def gc_node(state: NestedState) -> dict[str, Any]:
        return {"x": state["x"] + 1000, "log": ["gc"]}

    grandchild = StateGraph(NestedState)
    grandchild.add_node("gc_node", gc_node)
    grandchild.add_edge(START, "gc_node")

    def c(state: NestedState) -> dict[str, Any]:
        return {"x": state["x"] + 100, "log": ["c"]}

    child = StateGraph(NestedState)
    child.add_node("c", c)
    child.add_node("gc", grandchild.compile())
    child.add_edge(START, "c")
    child.add_edge("c", "gc")

    def a(state: NestedState) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": ["a"]}

    def b(state: NestedState) -> dict[str, Any]:
        return {"log": ["b"]}

    g = StateGraph(NestedState)
    g.add_node("a", a)
    g.add_node("sub", child.compile())
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "sub")
    g.add_edge("sub", "b")
    return g


# --- chat: a node streaming tokens through a fake chat model ---------------


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


CHAT_REPLY = "hello there from the fake model"


def build_chat() -> StateGraph:
    def chat(state: ChatState, config: RunnableConfig) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([CHAT_REPLY]))
        return {"messages": [model.invoke(state["messages"], config)]}

    g = StateGraph(ChatState)
    g.add_node("chat", chat)
    g.add_edge(START, "chat")
    return g


# --- interrupt gate ----------------------------------------------------------


class GateState(TypedDict):
    x: int
    answer: str


def build_gate() -> StateGraph:
    def prep(state: GateState) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    def ask(state: GateState, config: RunnableConfig) -> dict[str, Any]:
        answer = pause({"question": "approve?", "x": state["x"]}, config)
        return {"answer": str(answer)}

    def finish(state: GateState) -> dict[str, Any]:
        return {"x": state["x"] * 10}

    g = StateGraph(GateState)
    g.add_node("prep", prep)
    g.add_node("ask", ask)
    g.add_node("finish", finish)
    g.add_edge(START, "prep")
    g.add_edge("prep", "ask")
    g.add_edge("ask", "finish")
    return g


# --- two parallel interrupts -------------------------------------------------


class TwoAskState(TypedDict):
    out: Annotated[list[str], operator.add]


def build_twoask() -> StateGraph:
    def ask_a(state: TwoAskState, config: RunnableConfig) -> dict[str, Any]:
        return {"out": [f"ans-{pause('A?', config)}"]}

    def ask_b(state: TwoAskState, config: RunnableConfig) -> dict[str, Any]:
        return {"out": [f"ans-{pause('B?', config)}"]}

    g = StateGraph(TwoAskState)
    g.add_node("ask_a", ask_a)
    g.add_node("ask_b", ask_b)
    g.add_edge(START, "ask_a")
    g.add_edge(START, "ask_b")
    return g


# --- interrupt inside a subgraph --------------------------------------------


def build_subask() -> StateGraph:
    def inner_ask(state: GateState, config: RunnableConfig) -> dict[str, Any]:
        return {"answer": str(pause({"question": "inner?"}, config))}

    inner = StateGraph(GateState)
    inner.add_node("inner_ask", inner_ask)
    inner.add_edge(START, "inner_ask")

    def before(state: GateState) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    g = StateGraph(GateState)
    g.add_node("before", before)
    g.add_node("inner", inner.compile())
    g.add_edge(START, "before")
    g.add_edge("before", "inner")
    return g


# --- a node that raises --------------------------------------------------------


def build_boom() -> StateGraph:
    def ok(state: LinearState) -> dict[str, Any]:
        return {"x": state["x"] + 1, "log": ["ok"]}

    def explode(state: LinearState) -> dict[str, Any]:
        raise Boom("kaboom from node")

    g = StateGraph(LinearState)
    g.add_node("ok", ok)
    g.add_node("explode", explode)
    g.add_edge(START, "ok")
    g.add_edge("ok", "explode")
    return g


# --- custom writer events plus a Send fan-out ---------------------------------


class FanState(TypedDict):
    n: int
    results: Annotated[list[int], operator.add]


def build_custom() -> StateGraph:
    def plan(state: FanState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            writer = get_stream_writer()
            for i in range(state["n"]):
                writer({"i": i, "msg": f"event {i}"})
        return {}

    def fan_out(state: FanState) -> list[Send]:
        return [Send("work", {"n": i, "results": []}) for i in range(3)]

    def work(state: FanState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            get_stream_writer()({"worker": state["n"]})
        return {"results": [state["n"] * state["n"]]}

    g = StateGraph(FanState)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["work"])
    return g


# --- parallel writers on one reducer channel -------------------------------


class ParallelState(TypedDict):
    items: Annotated[list[str], operator.add]
    total: int


def build_parallel() -> StateGraph:
    """Three tasks append to ``items`` in one step, then a join sums them."""

    def writer(name: str) -> Callable[[ParallelState], dict[str, Any]]:
        def node(state: ParallelState) -> dict[str, Any]:
            return {"items": [f"{name}-{len(state['items'])}"]}

        return node

    def join(state: ParallelState) -> dict[str, Any]:
        return {"total": len(state["items"])}

    g = StateGraph(ParallelState)
    for name in ("w_c", "w_a", "w_b"):
        g.add_node(name, writer(name))
        g.add_edge(START, name)
        g.add_edge(name, "join")
    g.add_node("join", join)
    return g


# --- a graph with an output schema narrower than its state -------------------


class NarrowState(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]
    scratch: str


class NarrowOutput(TypedDict):
    x: int


def build_narrow() -> StateGraph:
    def work(state: NarrowState) -> dict[str, Any]:
        return {"x": state["x"] * 3, "log": ["work"], "scratch": "internal"}

    g = StateGraph(NarrowState, output_schema=NarrowOutput)
    g.add_node("work", work)
    g.add_edge(START, "work")
    return g


# --- a slow graph, for abort and cancellation ---------------------------------


def build_slow() -> StateGraph:
    def tick(state: LinearState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            writer = get_stream_writer()
            for i in range(state["x"]):
                writer({"tick": i})
                time.sleep(0.1)
        return {"log": ["ticked"]}

    g = StateGraph(LinearState)
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    return g


def build_relay() -> StateGraph:
    """Three nodes ticking in turn (``x`` ticks each, 0.1 s apart), for the fault tests.

    Each node writes its process id to the file named by the run's
    ``configurable["pid_file"]``, if any: a test on several replicas reads it to
    learn which one executes the run. The events themselves are the same on
    every attempt, so a retried attempt's repeats can be told apart.
    """

    def leg(index: int) -> Callable[[LinearState, RunnableConfig], dict[str, Any]]:
        def run(state: LinearState, config: RunnableConfig) -> dict[str, Any]:
            if pid_file := config.get("configurable", {}).get("pid_file"):
                Path(pid_file).write_text(str(os.getpid()))
            with node_context(config):
                writer = get_stream_writer()
                for i in range(state["x"]):
                    writer({"tick": index * state["x"] + i})
                    time.sleep(0.1)
            return {"log": [f"leg{index}"]}

        return run

    g = StateGraph(LinearState)
    for index in range(3):
        g.add_node(f"leg{index}", leg(index))
    g.add_edge(START, "leg0")
    g.add_edge("leg0", "leg1")
    g.add_edge("leg1", "leg2")
    return g


# --- a tool-calling agent -----------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class FakeToolChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that also streams tool-call chunks and binds tools."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeToolChatModel:
        return self

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = next(self.messages)
        if not isinstance(message, AIMessage) or not message.tool_calls:
            self.messages = iter([message])
            yield from super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)
            return
        for index, call in enumerate(message.tool_calls):
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    id=message.id,
                    tool_call_chunks=[
                        {
                            "type": "tool_call_chunk",
                            "id": call["id"],
                            "name": call["name"],
                            "args": _json(call["args"]),
                            "index": index,
                        }
                    ],
                )
            )
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def build_agent() -> StateGraph:
    def agent(state: ChatState, config: RunnableConfig) -> dict[str, Any]:
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            reply: AIMessage = AIMessage(content="the sum is 3")
        else:
            reply = AIMessage(
                content="",
                tool_calls=[{"id": "call_1", "name": "add", "args": {"a": 1, "b": 2}}],
            )
        model = FakeToolChatModel(messages=iter([reply])).bind_tools([add])
        return {"messages": [model.invoke(state["messages"], config)]}

    g = StateGraph(ChatState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g


# --- ticks: many custom events, no sleep; the thread's state grows per turn -----


class TicksState(TypedDict):
    n: int
    turns: Annotated[list[int], operator.add]


def build_ticks() -> StateGraph:
    """Writes ``n`` custom events ``{"i": i}`` as fast as it can, then appends the
    turn's index (how many turns the thread had before) to ``turns``."""

    def tick(state: TicksState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            writer = get_stream_writer()
            for i in range(state["n"]):
                writer({"i": i})
        return {"turns": [len(state.get("turns") or [])]}

    g = StateGraph(TicksState)
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    return g


# --- tokens: a chat model streaming many chunks (the benchmark's messages workload) ---


class TokensState(TypedDict):
    n: int
    messages: Annotated[list[AnyMessage], add_messages]


def tokens_reply(n: int) -> str:
    """``n`` words; ``GenericFakeChatModel`` streams them as ``2n - 1`` chunks (words and spaces)."""
    return " ".join(f"w{i}" for i in range(n))


def build_tokens() -> StateGraph:
    """One node whose fake chat model streams a reply of ``n`` words, as fast as it can."""

    def talk(state: TokensState, config: RunnableConfig) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([tokens_reply(state["n"])]))
        return {"messages": [model.invoke(state["messages"], config)]}

    g = StateGraph(TokensState)
    g.add_node("talk", talk)
    g.add_edge(START, "talk")
    return g


# --- unicode: long multi-byte text in the state and in custom events -----------

# 1-, 2-, 3- and 4-byte UTF-8 characters (ASCII, accented/Cyrillic/Greek, CJK/kana, emoji/symbols).
UNICODE_ALPHABET = "aZ éñüßЖλø中文字ア한€✓😀🎉🚀𝄞🧪👍"


def unicode_text(size: int, seed: int) -> str:
    """``size`` characters drawn (deterministically from ``seed``) from ``UNICODE_ALPHABET``."""
    rng = random.Random(seed)
    return "".join(rng.choice(UNICODE_ALPHABET) for _ in range(size))


class UnicodeState(TypedDict):
    size: int
    text: str
    pieces: Annotated[list[str], operator.add]


def build_unicode() -> StateGraph:
    def write(state: UnicodeState, config: RunnableConfig) -> dict[str, Any]:
        pieces = [unicode_text(state["size"] // 10, seed) for seed in range(10)]
        with node_context(config):
            writer = get_stream_writer()
            for seed, piece in enumerate(pieces):
                writer({"seed": seed, "piece": piece})
        return {"text": unicode_text(state["size"], 42), "pieces": pieces}

    g = StateGraph(UnicodeState)
    g.add_node("write", write)
    g.add_edge(START, "write")
    return g


# --- pause_msgs: a pause in a step where a sibling adds id-less messages --------


class PauseMsgsState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]  # the reducer gives new messages ids
    notes: Annotated[list[AnyMessage], operator.add]  # messages stay id-less in the state
    answer: str


def build_pause_msgs() -> StateGraph:
    """``ask`` interrupts while ``say`` (same step) returns AIMessages created without ids."""

    def ask(state: PauseMsgsState, config: RunnableConfig) -> dict[str, Any]:
        return {"answer": str(pause({"question": "go on?"}, config))}

    def say(state: PauseMsgsState) -> dict[str, Any]:
        return {
            "messages": [AIMessage(content="first, no id"), AIMessage(content="second, no id")],
            "notes": [AIMessage(content="a note, no id")],
        }

    g = StateGraph(PauseMsgsState)
    g.add_node("ask", ask)
    g.add_node("say", say)
    g.add_edge(START, "ask")
    g.add_edge(START, "say")
    return g


# --- context: runtime context read by a node, for each kind of context_schema --------


@dataclass
class Settings:
    """A dataclass ``context_schema``: a dict context is coerced to it."""

    user: str
    currency: str = "USD"


class SettingsDict(TypedDict, total=False):
    """A ``TypedDict`` ``context_schema``: the context stays a dict."""

    user: str
    currency: str


class SettingsModel(BaseModel):
    """A pydantic ``context_schema``: a dict context is validated into it."""

    user: str
    currency: str = "USD"


class ContextState(TypedDict):
    seen: Annotated[list[Any], operator.add]


def describe_context(context: Any) -> list[Any]:
    """``[type name, fields]`` of a runtime context, as JSON."""
    if dataclasses.is_dataclass(context) and not isinstance(context, type):
        return [type(context).__name__, dataclasses.asdict(context)]
    if isinstance(context, BaseModel):
        return [type(context).__name__, context.model_dump()]
    return [type(context).__name__, context]


def build_context(schema: type[Any] = Settings) -> StateGraph:
    """One node recording its runtime context and its config's ``configurable.tier``."""

    def read(state: ContextState, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        return {"seen": [{"context": describe_context(runtime.context), "tier": config["configurable"].get("tier")}]}

    g = StateGraph(ContextState, context_schema=schema)
    g.add_node("read", read)
    g.add_edge(START, "read")
    return g


def build_context_dict() -> StateGraph:
    return build_context(SettingsDict)


def build_context_model() -> StateGraph:
    return build_context(SettingsModel)


BUILDERS: dict[str, Callable[[], StateGraph]] = {
    "linear": build_linear,
    "nested": build_nested,
    "chat": build_chat,
    "gate": build_gate,
    "twoask": build_twoask,
    "subask": build_subask,
    "boom": build_boom,
    "custom": build_custom,
    "slow": build_slow,
    "relay": build_relay,
    "parallel": build_parallel,
    "narrow": build_narrow,
    "agent": build_agent,
    "ticks": build_ticks,
    "tokens": build_tokens,
    "unicode": build_unicode,
    "pause_msgs": build_pause_msgs,
    "context": build_context,
    "context_dict": build_context_dict,
    "context_model": build_context_model,
}

linear = build_linear().compile()
nested = build_nested().compile()
chat = build_chat().compile()
gate = build_gate().compile()
twoask = build_twoask().compile()
subask = build_subask().compile()
boom = build_boom().compile()
custom = build_custom().compile()
slow = build_slow().compile()
relay = build_relay().compile()
parallel = build_parallel().compile()
narrow = build_narrow().compile()
agent = build_agent().compile()
ticks = build_ticks().compile()
tokens = build_tokens().compile()
unicode = build_unicode().compile()
pause_msgs = build_pause_msgs().compile()
context = build_context().compile()
context_dict = build_context_dict().compile()
context_model = build_context_model().compile()
