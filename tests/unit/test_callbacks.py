"""``CallbackRelay`` and ``CallbackTap``: a remote run's events as the handler calls a local run makes.

Every transition of a run the relay tracks is driven here from scripted
``astream_events`` v2 events: a start opens a run below its parent (the remote
root stands for the caller's run), an end or error closes it, a model's stream
is its tokens, and ``close`` ends what is left open, innermost first. The tap's
calls go through langchain's own ``handle_event`` / ``ahandle_event``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.outputs import ChatGenerationChunk, LLMResult
from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt

from remote_graph._callbacks import CallbackTap
from remote_graph._core.callbacks import CallbackRelay, UnendedRunError

ROOT, NODE, MODEL, TOOL, RETRIEVER = (str(uuid4()) for _ in range(5))
CALLER = uuid4()


def event(
    kind: str, run_id: str, parents: list[str], data: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "event": kind,
        "run_id": run_id,
        "parent_ids": parents,
        "name": extra.pop("name", "n"),
        "tags": extra.pop("tags", ["t"]),
        "metadata": extra.pop("metadata", {"langgraph_node": "agent"}),
        "data": data or {},
    }


def methods(calls: list[Any]) -> list[str]:
    return [call.method for call in calls]


def test_the_remote_root_is_the_callers_run_and_its_end_gives_the_output() -> None:
    relay = CallbackRelay(CALLER)
    assert relay.feed(event("on_chain_start", ROOT, [], {"input": {"x": 1}})) == []
    start = relay.feed(event("on_chain_start", NODE, [ROOT], {"input": {"x": 1}}, name="agent"))
    assert methods(start) == ["on_chain_start"]
    assert start[0].args == (None, {"x": 1})
    assert start[0].kwargs == {
        "run_id": UUID(NODE),
        "parent_run_id": CALLER,
        "tags": ["t"],
        "metadata": {"langgraph_node": "agent"},
        "name": "agent",
    }
    end = relay.feed(event("on_chain_end", NODE, [ROOT], {"output": {"x": 2}}))
    assert (end[0].method, end[0].args, end[0].kwargs["parent_run_id"]) == ("on_chain_end", ({"x": 2},), CALLER)
    assert relay.feed(event("on_chain_end", ROOT, [], {"output": {"x": 2}})) == []
    assert relay.root_output == {"x": 2}
    assert relay.close(RuntimeError("late")) == []


def test_a_chat_model_starts_streams_tokens_and_ends_with_an_llm_result() -> None:
    relay = CallbackRelay(CALLER)
    question = [[HumanMessage("q")]]
    start = relay.feed(event("on_chat_model_start", MODEL, [ROOT, NODE], {"input": {"messages": question}}, name="M"))
    assert (start[0].method, start[0].ignore) == ("on_chat_model_start", "ignore_chat_model")
    assert start[0].args == ({"name": "M", "id": ["M"]}, question)
    assert start[0].kwargs["parent_run_id"] == UUID(NODE)
    token = relay.feed(event("on_chat_model_stream", MODEL, [ROOT, NODE], {"chunk": AIMessageChunk(content="hi")}))
    assert (token[0].method, token[0].args, token[0].kwargs["token"]) == ("on_llm_new_token", (), "hi")
    assert isinstance(token[0].kwargs["chunk"], ChatGenerationChunk)
    end = relay.feed(event("on_chat_model_end", MODEL, [ROOT, NODE], {"output": AIMessage("hi")}))
    assert (end[0].method, end[0].ignore) == ("on_llm_end", "ignore_llm")
    result = end[0].args[0]
    assert isinstance(result, LLMResult) and result.generations[0][0].message == AIMessage("hi")  # type: ignore[attr-defined]


def test_a_tool_and_a_retriever_get_their_own_calls() -> None:
    relay = CallbackRelay(CALLER)
    tool = relay.feed(event("on_tool_start", TOOL, [ROOT, NODE], {"input": {"a": 1}}, name="add"))
    assert (tool[0].method, tool[0].ignore, tool[0].args) == (
        "on_tool_start",
        "ignore_agent",
        ({"name": "add", "id": ["add"]}, "{'a': 1}"),
    )
    assert tool[0].kwargs["inputs"] == {"a": 1}
    done = relay.feed(event("on_tool_end", TOOL, [ROOT, NODE], {"output": "2"}, name="add"))
    assert (done[0].method, done[0].args, done[0].kwargs["name"]) == ("on_tool_end", ("2",), "add")
    failed = relay.feed(event("on_tool_error", TOOL, [ROOT, NODE], {"error": {"error": "ValueError", "message": "no"}}))
    assert failed[0].method == "on_tool_error" and isinstance(failed[0].args[0], ValueError)
    query = relay.feed(event("on_retriever_start", RETRIEVER, [ROOT, NODE], {"input": {"query": "q"}}, name="R"))
    assert (query[0].method, query[0].args[1]) == ("on_retriever_start", "q")
    docs = relay.feed(
        event("on_retriever_end", RETRIEVER, [ROOT, NODE], {"output": [{"page_content": "p", "metadata": {}}]})
    )
    assert docs[0].args == ([Document(page_content="p")],)


def test_prompts_and_parsers_are_chains_and_custom_events_pass_as_they_are() -> None:
    relay = CallbackRelay(CALLER)
    assert methods(relay.feed(event("on_prompt_start", NODE, [ROOT], {"input": {}}))) == ["on_chain_start"]
    assert methods(relay.feed(event("on_parser_end", NODE, [ROOT], {"output": 1}))) == ["on_chain_end"]
    custom = relay.feed({**event("on_custom_event", NODE, [ROOT], {"k": 1}), "name": "progress"})
    assert (custom[0].method, custom[0].args) == ("on_custom_event", ("progress", {"k": 1}))
    # Streams of chains have no callback; unknown and malformed events are passed over.
    assert relay.feed(event("on_chain_stream", NODE, [ROOT], {"chunk": 1})) == []
    assert relay.feed(event("on_mystery_start", NODE, [ROOT])) == []
    assert relay.feed({"event": "on_chain_start", "run_id": "not a uuid", "parent_ids": [ROOT]}) == []


def test_close_ends_what_is_left_open_innermost_first_with_the_error() -> None:
    relay = CallbackRelay(CALLER)
    relay.feed(event("on_chain_start", NODE, [ROOT]))
    relay.feed(event("on_chat_model_start", MODEL, [ROOT, NODE], {"input": {"messages": []}}))
    relay.feed(event("on_tool_start", TOOL, [ROOT, NODE], {"input": "x"}))
    relay.feed(event("on_tool_end", TOOL, [ROOT, NODE], {"output": "y"}))
    error = GraphInterrupt((Interrupt("why?"),))
    closed = relay.close(error)
    assert [(c.method, c.kwargs["run_id"]) for c in closed] == [
        ("on_llm_error", UUID(MODEL)),
        ("on_chain_error", UUID(NODE)),
    ]
    assert all(c.args == (error,) for c in closed)
    assert relay.close(error) == []


def test_a_run_that_failed_and_was_handled_ends_with_an_error_before_the_run_around_it() -> None:
    relay = CallbackRelay(CALLER)
    relay.feed(event("on_chain_start", NODE, [ROOT]))
    relay.feed(event("on_chat_model_start", MODEL, [ROOT, NODE], {"input": {"messages": []}}))
    relay.feed(event("on_chain_start", TOOL, [ROOT]))  # a sibling, still going
    calls = relay.feed(event("on_chain_end", NODE, [ROOT], {"output": 1}))
    assert [(c.method, c.kwargs["run_id"]) for c in calls] == [
        ("on_llm_error", UUID(MODEL)),
        ("on_chain_end", UUID(NODE)),
    ]
    assert isinstance(calls[0].args[0], UnendedRunError) and "failed and the failure was handled" in str(
        calls[0].args[0]
    )
    # The run completed with a run open: it too failed and was handled.
    assert [(c.method, type(c.args[0])) for c in relay.close(None)] == [("on_chain_error", UnendedRunError)]


class Recorder(BaseCallbackHandler):
    run_inline = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.seen.append(("chain_start", kwargs["name"]))

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.seen.append(("chain_end", outputs))

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        self.seen.append(("chain_error", type(error).__name__))

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.seen.append(("token", token))


def test_a_config_without_handlers_gets_no_tap() -> None:
    assert CallbackTap.of({}, {"x": 1}, "g") is None
    assert CallbackTap.of({"callbacks": []}, {"x": 1}, "g") is None


def test_handlers_a_context_adds_get_a_tap_as_a_local_run_calls_them() -> None:
    """``CallbackManager.configure`` adds handlers no config names (a usage counter
    here): the tap finds them as it does."""
    from langchain_core.callbacks import get_usage_metadata_callback

    with get_usage_metadata_callback():
        tap = CallbackTap.of({}, {"x": 1}, "g")
    assert tap is not None and tap.relays


@pytest.mark.parametrize("outcome", ["completed", "interrupted", "failed"])
def test_the_tap_starts_relays_and_ends_the_callers_run(outcome: str) -> None:
    recorder = Recorder()
    tap = CallbackTap.of({"callbacks": [recorder], "tags": ["c"], "run_name": "named"}, {"x": 1}, "g")
    assert tap is not None and tap.relays and tap.tags == ["c"] and tap.metadata["ls_integration"] == "langgraph"
    tap.deliver(tap.start())
    tap.deliver(tap.event(event("on_chain_start", ROOT, [])))
    tap.deliver(tap.event(event("on_chain_start", NODE, [ROOT], name="node")))
    tap.deliver(tap.event(event("on_chat_model_stream", MODEL, [ROOT, NODE], {"chunk": AIMessageChunk(content="a")})))
    if outcome == "completed":
        tap.deliver(tap.event(event("on_chain_end", NODE, [ROOT], {"output": 1})))
        tap.deliver(tap.event(event("on_chain_end", ROOT, [], {"output": {"x": 2}})))
        tap.deliver(tap.end())
        tail = [("chain_end", 1), ("chain_end", {"x": 2})]
    elif outcome == "interrupted":
        tap.deliver(tap.event(event("on_chain_end", ROOT, [], {"output": {"x": 2}})))
        tap.deliver(tap.end(interrupts=(Interrupt("?"),)))
        tail = [("chain_error", "GraphInterrupt"), ("chain_end", {"x": 2})]
    else:
        tap.deliver(tap.end(KeyError("x")))
        tail = [("chain_error", "KeyError"), ("chain_error", "KeyError")]
    assert recorder.seen == [("chain_start", "named"), ("chain_start", "node"), ("token", "a"), *tail]
    # Ended once: later calls add nothing.
    tap.deliver(tap.end(RuntimeError("again")))
    tap.deliver(tap.event(event("on_chain_start", TOOL, [ROOT])))
    assert len(recorder.seen) == 3 + len(tail)


async def test_the_async_tap_passes_a_token_by_position_as_langchains_async_manager_does() -> None:
    recorder = Recorder()
    tap = CallbackTap.of({"callbacks": [recorder]}, {}, "g", always=True)
    assert tap is not None
    await tap.adeliver(tap.start())
    await tap.adeliver(tap.event(event("on_chain_start", NODE, [ROOT], name="node")))
    await tap.adeliver(
        tap.event(event("on_chat_model_stream", MODEL, [ROOT, NODE], {"chunk": AIMessageChunk(content="b")}))
    )
    await tap.adeliver(tap.event(event("on_chain_end", NODE, [ROOT], {"output": 3})))
    await tap.adeliver(tap.end(output={"done": True}))
    assert recorder.seen == [
        ("chain_start", "g"),
        ("chain_start", "node"),
        ("token", "b"),
        ("chain_end", 3),
        ("chain_end", {"done": True}),
    ]
