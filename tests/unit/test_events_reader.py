"""``EventReader``: a classic run's ``events`` frames as a local ``astream_events`` yields them.

The frames are what the server streams for a local ``astream_events(version="v2")``
run of the same graph (``classic_server.events_frames``); they go through the
driver and ``ClassicWire`` as a run's do, and the reader's events are compared
with the local run's: for ``version="v2"`` the very run the frames came from,
for ``version="v1"`` a local v1 run of the same graph (its run ids told apart
by order of appearance).
"""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import orjson
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.pregel import Pregel
from langgraph.types import Send, interrupt

from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.events import EventFilters, EventReader, revived_event, run_type
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.shape import Shaper
from remote_graph.errors import RemoteRunError
from tests.unit.classic_server import (
    LOCAL_THREAD,
    PROBE_SCHEMAS,
    SERVER_THREAD,
    events_frames,
    failing_graph,
    probe_graph,
    server_json,
)
from tests.unit.fake_run import RUN, THREAD, FakeServer, Response, Wire, run

pytestmark = pytest.mark.filterwarnings("ignore:astream_events version='v1' is deprecated")

VIEW = CallView(server_thread=SERVER_THREAD, thread_name=LOCAL_THREAD)
Event = dict[str, Any]
NOTE = {"type": "human", "content": "not a message"}


def json_of(value: Any) -> Any:
    return orjson.loads(server_json(value))


def ask() -> dict[str, Any]:
    return {"messages": [HumanMessage("hello", id="h1")]}


def local_events(
    graph: Pregel, input: Any, version: Literal["v1", "v2"], **kwargs: Any
) -> tuple[list[Event], BaseException | None]:
    """A local ``astream_events`` run's events, and what it raised."""
    config = {"configurable": {"thread_id": LOCAL_THREAD}, "run_id": uuid.uuid4()}

    async def collect() -> tuple[list[Event], BaseException | None]:
        events: list[Event] = []
        try:
            async for event in graph.astream_events(input, config, version=version, **kwargs):
                events.append(dict(event))
        except Exception as exc:
            return events, exc
        return events, None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return asyncio.run(collect())


def reader(
    version: Literal["v1", "v2"],
    input: Any,
    *,
    root_mode: str = "updates",
    filters: EventFilters | None = None,
    root_name: str = "LangGraph",
    schemas: GraphSchemas | None = None,
) -> EventReader:
    return EventReader(
        VIEW,
        version=version,
        root_name=root_name,
        root_chunks=Shaper(root_mode),
        input=input,
        filters=filters or EventFilters(),
        schemas=schemas if schemas is not None else probe_schemas(),
    )


def probe_schemas() -> GraphSchemas:
    learned = GraphSchemas()
    learned.learn(PROBE_SCHEMAS)
    return learned


def remote_events(
    frames: Any, events: EventReader, rest: dict[tuple[str, str], Any] | None = None
) -> tuple[list[Event], BaseException | None]:
    """The reader's events for a run serving ``frames``, and the run's error."""
    server = FakeServer(frames, rest=rest)
    _, out = run(server, wire=ClassicWire(ChunkReader(VIEW, probe_schemas()), THREAD))
    got = [event for part in out.parts for event in events.feed(part)]
    if out.error is not None:
        got += events.failed()
    return got, out.error


def canon(value: Any) -> str:
    """``value`` written out with sorted keys and its ids numbered by first appearance."""

    def write(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {write(v[k])}" for k in sorted(v, key=str)) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(write(x) for x in v) + "]"
        if isinstance(v, tuple):
            return "(" + ", ".join(write(x) for x in v) + ",)"
        return repr(v)

    seen: dict[str, str] = {}
    ids = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}"
    return re.sub(ids, lambda m: seen.setdefault(m.group(0), f"<id{len(seen)}>"), write(value))


def without_tool_message_ids(events: Sequence[Event]) -> list[Event]:
    """v1 copies a node's output as emitted, before the reducer names a returned
    tool message; the server's copy has the id (a divergence kept on purpose)."""

    def strip(v: Any) -> Any:
        if isinstance(v, ToolMessage):
            return v.model_copy(update={"id": None})
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(strip(x) for x in v)
        return v

    return [strip(event) for event in events]


# Below Python 3.11 an async run's context does not reach its nodes, so langgraph's
# interrupt() fails in a local astream_events run ("Called get_config outside of a
# runnable context"): there is no local reference to compare with.
interrupts_locally = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="a local async run cannot interrupt below Python 3.11"
)


# --- v2 --------------------------------------------------------------------------------


@pytest.mark.parametrize("interrupts", [False, pytest.param(True, marks=interrupts_locally)])
def test_v2_events_are_the_local_runs(interrupts: bool) -> None:
    input = ask()
    local, local_error = local_events(probe_graph(ask=interrupts), input, "v2")
    assert local_error is None
    remote, error = remote_events(events_frames(local), reader("v2", input))
    assert error is None
    assert canon(remote) == canon(local)
    # The very input the caller passed, on the first event.
    assert remote[0]["data"]["input"] is input


@pytest.mark.parametrize("key", ["error", "type"])  # langgraph-api's, aegra's
def test_an_error_events_error_is_the_exception_as_locally(key: str) -> None:
    raw = {"event": "on_tool_error", "name": "transfer", "run_id": "r1", "parent_ids": ["r0"], "tags": []}
    raw["data"] = {"error": {key: "GraphInterrupt", "message": "(Interrupt(value='ok?'),)"}, "input": {"a": 1}}
    (event,) = reader("v2", {}).feed({"type": "events", "ns": (), "data": raw})
    error = event["data"]["error"]
    assert isinstance(error, Exception) and type(error).__name__ == "GraphInterrupt"
    assert str(error) == "(Interrupt(value='ok?'),)"


def test_the_roots_stream_events_a_server_sends_are_left_for_its_chunks() -> None:
    # aegra sends the root's on_chain_stream events as well ([mode, payload] chunks,
    # its own debug mode among them); the root's chunks come from the run's modes.
    input = ask()
    local, _ = local_events(probe_graph(ask=False), input, "v2")
    remote, error = remote_events(events_frames(local, aegra=True), reader("v2", input))
    assert error is None and canon(remote) == canon(local)


def test_v2_keeps_parent_ids_tags_and_names_and_drops_the_servers_metadata() -> None:
    local, _ = local_events(probe_graph(ask=False), ask(), "v2")
    remote, _ = remote_events(events_frames(local), reader("v2", ask()))
    root = remote[0]
    assert root["event"] == "on_chain_start" and root["name"] == "LangGraph" and root["parent_ids"] == []
    chat = next(e for e in remote if e["event"] == "on_chat_model_start")
    assert chat["parent_ids"][0] == root["run_id"] and len(chat["parent_ids"]) == 2
    assert chat["tags"] == next(e for e in local if e["event"] == "on_chat_model_start")["tags"]
    for event in remote:
        assert not {"assistant_id", "run_id", "graph_id", "langgraph_host"} & set(event["metadata"])
        assert event["metadata"].get("thread_id", LOCAL_THREAD) == LOCAL_THREAD
        assert event["name"] != "probe"


def test_the_root_is_named_as_the_caller_names_it_whatever_the_server_calls_it() -> None:
    # langgraph-api names the root by its graph id (or the run_name), aegra by the
    # compiled graph's name ("LangGraph"): the caller's name (the config's run_name,
    # else the RemoteGraph's) is the one a local run would give.
    for server_name in ("probe", "LangGraph", "my run"):
        w = Wire().metadata()
        start = {
            "event": "on_chain_start",
            "name": server_name,
            "run_id": "r0",
            "parent_ids": [],
            "tags": [],
            "data": {},
        }
        w.chunk("events", server_json(start))
        w.chunk("events", server_json({**start, "event": "on_chain_end", "data": {"output": {"x": 1}}}))
        remote, _ = remote_events(w.frames, reader("v2", {"x": 0}, root_name="my run"))
        assert [e["name"] for e in remote] == ["my run", "my run"]
        assert remote[0]["data"] == {"input": {"x": 0}} and remote[1]["data"] == {"output": {"x": 1}}


def test_the_roots_stream_events_are_its_own_chunks_in_its_stream_mode() -> None:
    input = ask()
    local, _ = local_events(probe_graph(ask=False), input, "v2", stream_mode="values")
    remote, _ = remote_events(events_frames(local, "values"), reader("v2", input, root_mode="values"))
    assert canon(remote) == canon(local)
    streams = [e for e in remote if e["event"] == "on_chain_stream" and e["name"] == "LangGraph"]
    assert streams and all(set(e["data"]["chunk"]) >= {"messages"} for e in streams)


@pytest.mark.parametrize(
    "filters",
    [
        {"include_types": ["chat_model"]},
        {"include_names": ["chat", "GenericFakeChatModel"]},
        {"include_tags": ["graph:step:2"]},
        {"exclude_types": ["chain"]},
        {"exclude_names": ["LangGraph"]},
        {"include_types": ["chain"], "exclude_tags": ["graph:step:1"]},
    ],
    ids=lambda f: "-".join(f),
)
def test_filters_keep_what_local_keeps(filters: dict[str, list[str]]) -> None:
    input = ask()
    everything, _ = local_events(probe_graph(ask=False), input, "v2")
    graph = probe_graph(ask=False)
    kept = [e for e in everything if EventFilters(**filters).keeps(e)]
    remote, _ = remote_events(events_frames(everything), reader("v2", input, filters=EventFilters(**filters)))
    assert remote, "nothing kept"
    # The filtered local run itself agrees on what is kept (names, types, tags).
    filtered, _ = local_events(graph, input, "v2", **filters)
    assert [(e["event"], e["name"]) for e in filtered] == [(e["event"], e["name"]) for e in remote]
    # And the events themselves are the unfiltered run's (with the first kept one carrying the input).
    assert canon([{**e, "data": {}} for e in remote]) == canon([{**e, "data": {}} for e in kept])
    assert remote[0]["data"]["input"] is input


def test_sends_in_an_event_are_send_objects() -> None:
    raw = {
        "event": "on_chain_end",
        "name": "route",
        "run_id": "r1",
        "parent_ids": ["r0"],
        "tags": [],
        "metadata": {},
        "data": {"output": [{"node": "work", "args": {"i": 0}}, {"node": "work", "args": {"i": 1}}]},
    }
    event = revived_event(raw, VIEW.metadata)
    assert event is not None and event["data"]["output"] == [Send("work", {"i": 0}), Send("work", {"i": 1})]
    # A value that merely has the two keys among others is the user's.
    odd = {**raw, "data": {"output": {"node": "work", "args": 1, "more": 2}}}
    assert revived_event(odd, VIEW.metadata)["data"]["output"] == {"node": "work", "args": 1, "more": 2}  # type: ignore[index]


def event_at(kind: str, ns: str | None, data: Any, name: str = "node") -> dict[str, Any]:
    metadata = {} if ns is None else {"langgraph_checkpoint_ns": ns, "langgraph_node": name}
    return {
        "event": kind,
        "name": name,
        "run_id": "r",
        "parent_ids": [] if ns is None else ["root"],
        "tags": [],
        "metadata": metadata,
        "data": data,
    }


def test_the_root_graphs_states_in_events_keep_the_users_dicts() -> None:
    plain = {"note", "count"}
    state = json_of({"note": NOTE, "messages": [HumanMessage("hi", id="h1")]})
    for kind, ns in [("on_chain_start", None), ("on_chain_end", "chat:1"), ("on_chain_stream", "sub:2")]:
        event = revived_event(event_at(kind, ns, {"input": state}), VIEW.metadata, plain)
        assert event is not None and event["data"]["input"] == {"note": NOTE, "messages": [HumanMessage("hi", id="h1")]}
    # A subgraph's own states, and what is not a chain's, are revived by their shape.
    for kind, ns in [("on_chain_start", "sub:2|inner:3"), ("on_tool_start", "chat:1")]:
        event = revived_event(event_at(kind, ns, {"input": state}), VIEW.metadata, plain)
        assert event is not None and event["data"]["input"]["note"] == HumanMessage("not a message")


def test_events_read_schemas_learned_after_the_reader_was_made() -> None:
    learned = GraphSchemas()
    events = reader("v2", {}, root_name="graph", schemas=learned)
    learned.learn(PROBE_SCHEMAS)
    (event,) = events.feed(
        {"type": "events", "ns": (), "data": event_at("on_chain_end", "chat:1", {"output": {"note": NOTE}})}
    )
    assert event["data"]["output"] == {"note": NOTE}


def test_what_is_not_an_event_is_dropped() -> None:
    assert revived_event("text", VIEW.metadata) is None
    assert revived_event({"name": "no event"}, VIEW.metadata) is None
    assert run_type("on_chat_model_start") == "chat_model" and run_type("on_tool_end") == "tool"
    assert run_type("custom") == "custom"


# --- v1 --------------------------------------------------------------------------------


def test_v1_events_are_a_local_v1_runs() -> None:
    input = ask()
    v2, _ = local_events(probe_graph(ask=False), input, "v2")
    local, _ = local_events(probe_graph(ask=False), input, "v1")
    remote, error = remote_events(events_frames(v2), reader("v1", input))
    assert error is None
    assert canon(without_tool_message_ids(remote)) == canon(without_tool_message_ids(local))
    # The v1 shapes: no parent ids, no root metadata, a chat model's end as an LLMResult.
    assert all(e["parent_ids"] == [] for e in remote)
    assert remote[0]["metadata"] == {} and remote[-1]["metadata"] == {}
    end = next(e for e in remote if e["event"] == "on_chat_model_end")
    assert end["data"]["output"]["type"] == "LLMResult"
    assert isinstance(end["data"]["output"]["generations"][0][0]["message"], AIMessage)
    # The root's end output is its last chunk.
    assert (
        remote[-1]["data"]["output"]
        == next(e for e in reversed(remote) if e["event"] == "on_chain_stream")["data"]["chunk"]
    )


def paused_in_a_subgraph() -> Pregel:
    """sub (its node interrupts) beside other, from the start."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        count: int

    def inner(state: State) -> dict[str, Any]:
        return {"count": interrupt("inner?")}

    sub = StateGraph(State)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    graph = StateGraph(State)
    graph.add_node("prepare", lambda state: {"count": 1})
    graph.add_node("sub", sub.compile())
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "sub")
    return graph.compile(checkpointer=InMemorySaver())


@interrupts_locally
@pytest.mark.parametrize("where", ["root", "subgraph"])
def test_v1_ends_the_runs_an_interrupt_left_open_as_locally(where: str) -> None:
    # Locally, v1 ends the interrupted node's run (and the runs around it)
    # with no output before the root streams the interrupt; v2 does not.
    input = ask() if where == "root" else {"count": 0}
    graph = (lambda: probe_graph()) if where == "root" else paused_in_a_subgraph
    v2, _ = local_events(graph(), input, "v2")
    local, _ = local_events(graph(), input, "v1")
    remote, error = remote_events(events_frames(v2), reader("v1", input))
    assert error is None
    assert canon(without_tool_message_ids(remote)) == canon(without_tool_message_ids(local))
    ends = [e["name"] for e in remote if e["event"] == "on_chain_end" and e["data"].get("output", "") is None]
    assert ends == (["ask"] if where == "root" else ["inner", "LangGraph", "sub"])


# --- failed runs ---------------------------------------------------------------------------


def failed_frames(local_v2: list[Event], error: BaseException) -> list[Any]:
    w = Wire()
    w.frames = events_frames(local_v2)
    w.ms += 10_000
    w.raw("error", {"error": type(error).__name__, "message": "An internal error occurred"})
    return w.frames


FAILED = {
    ("GET", RUN): Response(200, {"status": "error"}),
    ("GET", f"{THREAD}/state"): Response(200, {"tasks": [{"id": "t", "name": "fail", "error": "Kaput('it broke')"}]}),
}


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_failed_run_ends_as_locally(version: Literal["v1", "v2"]) -> None:
    input = ask()
    v2, error = local_events(failing_graph(), input, "v2")
    assert type(error).__name__ == "Kaput"
    local, local_error = local_events(failing_graph(), input, version) if version == "v1" else (v2, error)
    remote, remote_error = remote_events(failed_frames(v2, error), reader(version, input), FAILED)
    assert isinstance(remote_error, RemoteRunError) and type(remote_error).__name__ == "Kaput"
    assert str(remote_error) == str(local_error) == "it broke"
    # v1 ends every run the failure left open (innermost first, but the
    # root's) with no output; v2 ends none.
    assert canon(remote) == canon(local)
    if version == "v1":
        assert [(e["event"], e["name"]) for e in remote][-1] == ("on_chain_end", "fail")
        assert remote[-1]["data"]["output"] is None
