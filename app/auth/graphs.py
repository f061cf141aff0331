"""The graphs the auth tests' server serves (``langgraph.json`` here).

Small on purpose: a gate that asks a question (interrupt and resume), a
ticker whose stream is long enough for a proxy to cut, and a slow node to
abandon.
"""

from __future__ import annotations

import operator
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.stream.transformers import CustomTransformer, UpdatesTransformer
from langgraph.types import interrupt
from typing_extensions import TypedDict


def stream_transformers() -> list[Any]:
    """Put ``updates`` and ``custom`` on the wire (the server's opt-in hook)."""
    return [UpdatesTransformer, CustomTransformer]


@contextmanager
def node_context(config: RunnableConfig) -> Iterator[None]:
    """Where ``interrupt()`` and the stream writer find the node (asyncio tasks
    carry the config context only from Python 3.11)."""
    if sys.version_info >= (3, 11):
        yield
        return
    token = var_child_runnable_config.set(config)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


class GateState(TypedDict, total=False):
    x: int
    answer: str


def build_gate() -> StateGraph:
    def prep(state: GateState) -> dict[str, Any]:
        return {"x": state.get("x", 0) + 1}

    def ask(state: GateState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            return {"answer": interrupt(f"x is {state['x']}; go on?")}

    return StateGraph(GateState).add_node("prep", prep).add_node("ask", ask).add_edge(START, "prep").add_edge("prep", "ask")


class TicksState(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


def build_ticks() -> StateGraph:
    """``n`` custom events, 2 ms apart, each padded so the stream is long."""

    def tick(state: TicksState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            writer = get_stream_writer()
            for i in range(state["n"]):
                writer({"i": i, "pad": "." * 200})
                time.sleep(0.002)
        return {"log": ["ticked"]}

    return StateGraph(TicksState).add_node("tick", tick).add_edge(START, "tick")


def build_slow() -> StateGraph:
    """Sleeps ``n`` tenths of a second, one custom event each."""

    def nap(state: TicksState, config: RunnableConfig) -> dict[str, Any]:
        with node_context(config):
            writer = get_stream_writer()
            for i in range(state["n"]):
                writer({"nap": i})
                time.sleep(0.1)
        return {"log": ["napped"]}

    return StateGraph(TicksState).add_node("nap", nap).add_edge(START, "nap")


gate = build_gate().compile()
ticks = build_ticks().compile()
slow = build_slow().compile()
