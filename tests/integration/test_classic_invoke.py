"""Classic ``invoke`` / ``ainvoke`` and ``batch`` / ``abatch``: the local compiled graph
and ``RemoteGraph``, sync and async, must return the same objects (see ``objects``):
messages as message objects, interrupts as ``Interrupt``s, ``GraphOutput`` for
``version="v2"``, a node's own exception, and the same printed debug output.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from tests.integration.lanes import (
    GATE,
    LINEAR,
    Lane,
    Scenarios,
    compare,
    lanes_server_url,
)
from tests.integration.objects import objects, printed

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS


def ask(text: str = "compute") -> dict[str, Any]:
    """A fresh input: ``add_messages`` gives an input message its id in place."""
    return {"messages": [HumanMessage(text)]}


def attempt(call: Callable[[], Any]) -> Any:
    """What ``call`` returns, or the exception it raises."""
    try:
        return call()
    except Exception as exc:
        return exc


def with_stdout(call: Callable[[], Any]) -> tuple[Any, str]:
    """What ``call`` returns and what it printed, ids and times masked."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        result = attempt(call)
    return result, printed(buffer.getvalue())


# --- plain ------------------------------------------------------------------------


@scenario
def invoke_plain(lane: Lane) -> Any:
    return lane.invoke(lane.graph("linear"), LINEAR)


@scenario
def invoke_returns_message_objects(lane: Lane) -> Any:
    return {name: lane.invoke(lane.graph(name), ask()) for name in ("chat", "agent", "react")}


@scenario
def invoke_same_thread_twice(lane: Lane) -> Any:
    graph = lane.graph("react")
    config = lane.thread()
    first = lane.invoke(graph, ask(), config)
    return {"first": first, "second": lane.invoke(graph, ask("again"), config)}


@scenario
def invoke_output_schema_and_output_keys(lane: Lane) -> Any:
    graph = lane.graph("linear")
    return {
        "narrow": lane.invoke(lane.graph("narrow"), {"x": 2, "log": [], "scratch": ""}),
        "one_key": lane.invoke(graph, LINEAR, output_keys="x"),
        "key_list": lane.invoke(graph, LINEAR, output_keys=["log"]),
    }


@scenario
def invoke_with_a_stream_mode_returns_its_chunks(lane: Lane) -> Any:
    graph = lane.graph("linear")
    return {mode: lane.invoke(graph, LINEAR, stream_mode=mode) for mode in ("values", "updates")}


@scenario
def invoke_version_v2_is_a_graph_output(lane: Lane) -> Any:
    out = {"plain": lane.invoke(lane.graph("linear"), LINEAR, version="v2")}
    out["interrupted"] = lane.invoke(lane.graph("gate"), GATE, version="v2")
    out["updates"] = lane.invoke(lane.graph("linear"), LINEAR, version="v2", stream_mode="updates")
    out["types"] = [type(out["plain"]).__name__, type(out["interrupted"]).__name__]
    return out


@scenario
def invoke_context(lane: Lane) -> Any:
    return {
        "dataclass": lane.invoke(lane.graph("context"), {"seen": []}, context={"user": "ann"}),
        "typed_dict": lane.invoke(lane.graph("context_dict"), {"seen": []}, context={"user": "bo", "currency": "EUR"}),
        "model": lane.invoke(lane.graph("context_model"), {"seen": []}, context={"user": "cy"}),
    }


# --- interrupts and resume -------------------------------------------------------------


@scenario
def invoke_interrupt_in_the_result(lane: Lane) -> Any:
    out = lane.invoke(lane.graph("gate"), GATE)
    return {"out": out, "interrupt_types": [type(i).__name__ for i in out["__interrupt__"]]}


@scenario
def invoke_two_interrupts_then_resume_by_id(lane: Lane) -> Any:
    graph = lane.graph("twoask")
    config = lane.thread()
    first = lane.invoke(graph, {"out": []}, config)
    answers = {i.id: f"<{i.value}>" for i in first["__interrupt__"]}
    first["__interrupt__"] = sorted(first["__interrupt__"], key=lambda i: str(i.value))
    return {"first": first, "resumed": lane.invoke(graph, Command(resume=answers), config)}


@scenario
def invoke_resume(lane: Lane) -> Any:
    graph = lane.graph("gate")
    config = lane.thread()
    paused = lane.invoke(graph, GATE, config)
    resumed = lane.invoke(graph, Command(resume="yes"), config)
    again = lane.invoke(graph, {"x": 5, "answer": ""}, config)
    return {
        "paused": paused,
        "resumed": resumed,
        "again": again,
        "v2": lane.invoke(graph, Command(resume="ok"), config, version="v2"),
    }


@scenario
def invoke_resume_in_a_subgraph(lane: Lane) -> Any:
    graph = lane.graph("subask")
    config = lane.thread()
    return {
        "paused": lane.invoke(graph, GATE, config),
        "resumed": lane.invoke(graph, Command(resume="inner-yes"), config),
    }


@scenario
def invoke_interrupt_before_and_after(lane: Lane) -> Any:
    graph = lane.graph("linear")
    before, after = lane.thread(), lane.thread()
    return {
        "before": lane.invoke(graph, LINEAR, before, interrupt_before=["b"]),
        "before_continued": lane.invoke(graph, None, before),
        "after": lane.invoke(graph, LINEAR, after, interrupt_after=["a"]),
        "after_continued": lane.invoke(graph, None, after, interrupt_after="*"),
        "after_done": lane.invoke(graph, None, after),
        "v2": lane.invoke(graph, LINEAR, interrupt_before=["a"], version="v2"),
    }


# --- errors ------------------------------------------------------------------------------


@scenario
def invoke_node_error_is_the_nodes_exception(lane: Lane) -> Any:
    boom = attempt(lambda: lane.invoke(lane.graph("boom"), LINEAR))
    bad = attempt(lambda: lane.invoke(lane.graph("picky"), {"x": -3, "log": []}))
    return {
        "boom": boom,
        "bad": bad,
        # A caller's `except ValueError` must catch a node's ValueError.
        "bad_is_a_value_error": isinstance(bad, ValueError),
        "boom_is_an_exception": isinstance(boom, Exception) and not isinstance(boom, ValueError),
    }


@scenario
def invoke_after_a_failure_on_the_same_thread(lane: Lane) -> Any:
    graph = lane.graph("picky")
    config = lane.thread()
    failed = attempt(lambda: lane.invoke(graph, {"x": -1, "log": []}, config))
    return {"failed": failed, "then": lane.invoke(graph, {"x": 4, "log": []}, config)}


# --- printed output ------------------------------------------------------------------------


@scenario
def invoke_debug_prints_as_locally(lane: Lane) -> Any:
    result, text = with_stdout(lambda: lane.invoke(lane.graph("linear"), LINEAR, debug=True))
    return {"result": result, "printed": text}


@scenario
def invoke_print_mode_prints_as_locally(lane: Lane) -> Any:
    out = {}
    for mode in ("updates", ("values", "custom")):
        result, text = with_stdout(
            lambda mode=mode: lane.invoke(lane.graph("custom"), {"n": 2, "results": []}, print_mode=mode)
        )
        out[str(mode)] = {"result": result, "printed": "\n".join(sorted(text.splitlines()))}
    return out


@scenario
def invoke_debug_on_an_interrupt_prints_as_locally(lane: Lane) -> Any:
    result, text = with_stdout(lambda: lane.invoke(lane.graph("gate"), GATE, print_mode="updates"))
    return {"result": result, "printed": text}


# --- batch -------------------------------------------------------------------------------------


@scenario
def batch_on_separate_threads(lane: Lane) -> Any:
    graph = lane.graph("linear")
    configs = [lane.thread() for _ in range(3)]
    out = lane.batch(graph, [{"x": x, "log": []} for x in (1, 2, 3)], configs)
    states = [lane.state(graph, c).values for c in configs]
    return {"out": out, "states": states}


@scenario
def batch_of_message_graphs(lane: Lane) -> Any:
    graph = lane.graph("react")
    return lane.batch(graph, [ask(), ask("twice")], [lane.thread(), lane.thread()])


@scenario
def batch_with_interrupts_and_resume(lane: Lane) -> Any:
    graph = lane.graph("gate")
    configs = [lane.thread(), lane.thread()]
    paused = lane.batch(graph, [GATE, {"x": 7, "answer": ""}], configs)
    return {"paused": paused, "resumed": lane.batch(graph, [Command(resume="a"), Command(resume="b")], configs)}


@scenario
def batch_with_a_failure(lane: Lane) -> Any:
    graph = lane.graph("picky")
    inputs = [{"x": 1, "log": []}, {"x": -2, "log": []}]
    kept = lane.batch(graph, inputs, [lane.thread(), lane.thread()], return_exceptions=True)
    raised = attempt(lambda: lane.batch(graph, inputs, [lane.thread(), lane.thread()]))
    return {"kept": kept, "raised": raised, "kept_types": [type(r).__name__ for r in kept]}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_classic_invoke_local_equals_remote(name: str, flavour: str, request: pytest.FixtureRequest) -> None:
    local, remote = compare(SCENARIOS[name], flavour, lanes_server_url(request))
    assert objects(remote) == objects(local)


# --- divergences kept on purpose (docs/divergences.md) ------------------------------------


@pytest.mark.parametrize("method", ["invoke", "stream", "ainvoke", "astream"])
def test_probe_an_unknown_keyword_is_refused_where_local_ignores_it(method: str, server_url: str) -> None:
    """Locally an unknown keyword argument is silently ignored; remotely it would be
    silently dropped on its way to the server, so it is refused, naming it, before
    anything is sent."""
    import asyncio

    from remote_graph import RemoteGraph

    graph = RemoteGraph("linear", url=server_url)
    calls: dict[str, Callable[[], Any]] = {
        "invoke": lambda: graph.invoke(LINEAR, not_an_option=1),
        "stream": lambda: list(graph.stream(LINEAR, not_an_option=1)),
        "ainvoke": lambda: asyncio.run(graph.ainvoke(LINEAR, not_an_option=1)),
        "astream": lambda: asyncio.run(_drain(graph.astream(LINEAR, not_an_option=1))),
    }
    with pytest.raises(NotImplementedError, match="not_an_option="):
        calls[method]()


async def _drain(items: Any) -> list[Any]:
    return [item async for item in items]
