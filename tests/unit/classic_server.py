"""What the LangGraph server streams for a classic run, made from a local run of the same graph.

The server runs a classic run with ``graph.astream(stream_mode=[...],
subgraphs=...)`` and sends each chunk as a frame named after its mode
(``values``, ``updates|<ns>``...), its data the chunk in the server's JSON: a
message is its ``model_dump()``, an ``Interrupt`` its fields, a ``Send``
``{"node", "args"}``, a tuple a list, and an exception ``{"error": type,
"message": ...}`` (the message hidden unless the type is one the server trusts
to say it). It also adds keys of its own: its run, assistant and version
metadata on every message and task, its auth and request keys in every
checkpoint's configurable, and its thread's UUID where the caller's thread id
was. ``served`` does that to a local run's chunks (measured on ``langgraph
dev``, langgraph-api 0.16.7), so a test can feed the frames to the client and
compare what it yields with what the local run yielded.

``probe_graph`` is a small graph with every kind of chunk: a chat model
streaming tokens (of multi-byte text), a tool message, a user dict shaped like
a message, a subgraph writing custom events, and a node that interrupts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

import orjson
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.pregel import Pregel
from langgraph.types import Send, StreamWriter, interrupt
from typing_extensions import TypedDict

from tests.unit.fake_run import RID, TID, Frame, Wire

__all__ = [
    "events_frames",
    "HIDDEN",
    "Kaput",
    "failing_graph",
    "local_failure",
    "local_chunks",
    "LOCAL_THREAD",
    "PROBE_SCHEMAS",
    "SERVER_THREAD",
    "Chunk",
    "classic_frames",
    "classic_run",
    "probe_graph",
    "served",
    "server_json",
]

Chunk = tuple[tuple[str, ...], str, Any]
"""A local run's chunk with ``subgraphs=True`` and a list of modes: ``(ns, mode, payload)``."""

LOCAL_THREAD = "t1"
# The fake server's thread: the UUID the server's payloads name.
SERVER_THREAD = TID

_ASSISTANT = "48528212-457f-5d25-96eb-28212162677b"
_RUN_METADATA = {
    "created_by": "system",
    "graph_id": "probe",
    "assistant_id": _ASSISTANT,
    "run_attempt": 1,
    "langgraph_version": "1.2.24",
    "langgraph_api_version": "0.16.7",
    "langgraph_plan": "enterprise",
    "langgraph_host": "self-hosted",
    "langgraph_api_url": "http://127.0.0.1:2024",
    "run_id": RID,
}
_RUN_CONFIGURABLE = {
    "langgraph_auth_user": None,
    "langgraph_auth_user_id": "",
    "langgraph_auth_permissions": [],
    "langgraph_request_id": "05404b04-b5fc-422b-b84d-fcb6ded887da",
    "__request_start_time_ms__": 1796126260813,
    "__after_seconds__": 0,
    "run_id": RID,
    "graph_id": "probe",
    "assistant_id": _ASSISTANT,
    "user_id": "",
}
# Exceptions whose message the server sends; every other one's it hides.
_SAID = (ValueError, TypeError, KeyError, AttributeError, RuntimeError, RecursionError, TimeoutError)
HIDDEN = "An internal error occurred"


def _default(value: Any) -> Any:
    if isinstance(value, Send):
        return {"node": value.node, "args": value.arg}
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump()
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value) if isinstance(value, _SAID) else HIDDEN}
    if isinstance(value, (set, frozenset)):
        return list(value)
    raise TypeError(f"the server would not send {value!r}")


def server_json(value: Any) -> str:
    """``value`` as the server's JSON text."""
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()


def _thread(value: Any) -> Any:
    return SERVER_THREAD if value == LOCAL_THREAD else value


def _metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(_RUN_METADATA)
    out.update({key: _thread(value) if key == "thread_id" else value for key, value in metadata.items()})
    return out


def _config(config: Any) -> Any:
    if not isinstance(config, Mapping):
        return config
    configurable = {**_RUN_CONFIGURABLE, **config.get("configurable", {})}
    configurable["thread_id"] = _thread(configurable.get("thread_id"))
    return {**config, "configurable": configurable}


def _task(task: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(task)
    if "input" in out:
        # A task's start: the server's run metadata (a local task carries none).
        out["metadata"] = dict(_RUN_METADATA)
    return out


def _checkpoint(payload: Mapping[str, Any], *, debug: bool) -> dict[str, Any]:
    out = {**payload, "config": _config(payload["config"]), "parent_config": _config(payload.get("parent_config"))}
    tasks = []
    for task in payload.get("tasks", ()):
        task = dict(task)
        state = task.get("state")
        if isinstance(state, Mapping) and "configurable" in state:
            configurable = {**state["configurable"], "thread_id": _thread(state["configurable"].get("thread_id"))}
            if debug:
                # The server's debug checkpoints name a subgraph task's checkpoint, not its state.
                del task["state"]
                task["checkpoint"] = configurable
            else:
                task["state"] = {"configurable": configurable}
        tasks.append(task)
    out["tasks"] = tasks
    if debug:
        # And carry the two configs once more, flat.
        for key, config in (("checkpoint", out["config"]), ("parent_checkpoint", out["parent_config"])):
            out[key] = None if config is None else {k: config["configurable"].get(k) for k in _FLAT}
    return out


_FLAT = ("checkpoint_id", "thread_id", "checkpoint_ns")


def served(mode: str, payload: Any) -> Any:
    """A local chunk's payload as the server sends it (before JSON)."""
    if mode == "messages":
        message, metadata = payload
        return [message, _metadata(metadata)]
    if mode == "tasks":
        return _task(payload)
    if mode == "checkpoints":
        return _checkpoint(payload, debug=False)
    if mode == "debug":
        if payload["type"] == "checkpoint":
            return {**payload, "payload": _checkpoint(payload["payload"], debug=True)}
        return {**payload, "payload": _task(payload["payload"])}
    return payload


def classic_run(chunks: Iterable[Chunk], *, per_millisecond: int = 3) -> Wire:
    """The frames of a classic run that streamed ``chunks``, after its
    ``metadata`` frame: ``per_millisecond`` frames share each id, as on the
    in-memory server. More frames may be added to the ``Wire``."""
    wire = Wire().metadata()
    for index, (ns, mode, payload) in enumerate(chunks):
        if index % per_millisecond == 0:
            wire.tick()
        wire.chunk(mode, server_json(served(mode, payload)), ns)
    return wire


def classic_frames(chunks: Iterable[Chunk], *, per_millisecond: int = 3) -> list[Frame]:
    """``classic_run(chunks).frames``."""
    return classic_run(chunks, per_millisecond=per_millisecond).frames


# --- the probe graph -----------------------------------------------------------------------


class ProbeState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    note: dict[str, Any]
    count: int


class SubState(TypedDict, total=False):
    count: int


def _chat(state: ProbeState, config: RunnableConfig, writer: StreamWriter) -> dict[str, Any]:
    model = GenericFakeChatModel(messages=iter([AIMessage(content="héllo 中文 😀", id="ai-1")]))
    # The config and the writer come as arguments because below Python 3.11 an async
    # run's context does not reach its nodes (langgraph's documented requirement).
    reply = model.invoke(state["messages"], config)
    writer({"said": reply.content})
    return {
        "messages": [reply, ToolMessage("done", tool_call_id="c1")],
        # A user's own dict that looks like a message: the state schema says it is not one.
        "note": {"type": "human", "content": "not a message"},
    }


def _inner(state: SubState, writer: StreamWriter) -> dict[str, Any]:
    writer({"tick": 1})
    writer({"tick": 2})
    return {"count": state.get("count", 0) + 1}


def _ask(state: ProbeState) -> dict[str, Any]:
    answer = interrupt({"question": "ok?"})
    return {"count": 100 if answer == "yes" else -1}


def probe_graph(*, ask: bool = True) -> Pregel:
    """chat (a streamed reply, a custom event, a tool message) -> sub (custom events) -> ask (interrupts)."""
    sub = StateGraph(SubState)
    sub.add_node("inner", _inner)
    sub.add_edge(START, "inner")
    graph = StateGraph(ProbeState)
    graph.add_node("chat", _chat)
    graph.add_node("sub", sub.compile())
    graph.add_edge(START, "chat")
    graph.add_edge("chat", "sub")
    if ask:
        graph.add_node("ask", _ask)
        graph.add_edge("sub", "ask")
    return graph.compile(checkpointer=InMemorySaver())


PROBE_SCHEMAS = {
    "graph_id": "probe",
    "state_schema": {
        "properties": {
            "messages": {
                "type": "array",
                "items": {"anyOf": [{"$ref": "#/$defs/AIMessage"}, {"$ref": "#/$defs/ToolMessage"}]},
            },
            "note": {"type": "object", "additionalProperties": True},
            "count": {"type": "integer"},
        },
    },
    "output_schema": {"properties": {"messages": {}, "note": {}, "count": {}}},
}
"""The schemas the server gives for the probe graph (its state keys; only ``messages`` holds messages)."""


def local_chunks(
    graph: Pregel, input: Any, modes: Sequence[str], config: Mapping[str, Any] | None = None
) -> list[Chunk]:
    """Every chunk a local run streams in ``modes``, subgraphs' too."""
    config = dict(config or {"configurable": {"thread_id": LOCAL_THREAD}})
    return [
        (ns, mode, payload)
        for ns, mode, payload in graph.stream(input, config, stream_mode=list(modes), subgraphs=True)
    ]


class Kaput(Exception):
    """A user's exception: the server hides its message in the stream (not in the thread's state)."""


def _prepare(state: ProbeState, writer: StreamWriter) -> dict[str, Any]:
    writer({"step": "prepared"})
    return {"count": 1}


def _fail(state: ProbeState) -> dict[str, Any]:
    raise Kaput("it broke")


def failing_graph() -> Pregel:
    """prepare (a custom event) -> fail (raises ``Kaput("it broke")``)."""
    graph = StateGraph(ProbeState)
    graph.add_node("prepare", _prepare)
    graph.add_node("fail", _fail)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "fail")
    return graph.compile(checkpointer=InMemorySaver())


def local_failure(graph: Pregel, input: Any, modes: Sequence[str]) -> tuple[list[Chunk], BaseException]:
    """The chunks a local run streams before it fails, and what it raises."""
    chunks: list[Chunk] = []
    config = {"configurable": {"thread_id": LOCAL_THREAD}}
    try:
        for ns, mode, payload in graph.stream(input, config, stream_mode=list(modes), subgraphs=True):
            chunks.append((ns, mode, payload))
    except Exception as exc:
        return chunks, exc
    raise AssertionError("the run did not fail")


def events_frames(
    events: Iterable[Mapping[str, Any]], root_mode: str = "updates", *, aegra: bool = False
) -> list[Frame]:
    """The frames the server streams for a run asked for ``events`` (and ``root_mode``)
    that yielded ``events`` (a local ``astream_events(version="v2")`` run's).

    The server names the root run by its graph id and turns each of the root's
    ``on_chain_stream`` events into a chunk of ``root_mode``; every other event
    is a frame of its own, with the server's metadata. aegra (``aegra=True``)
    also sends the root's stream events, each chunk a ``[mode, payload]`` of the
    modes it runs the graph with, its own ``debug`` among them.
    """
    wire = Wire().metadata()
    root: Any = None
    for index, event in enumerate(events):
        if index % 3 == 0:
            wire.tick()
        if root is None:
            root = event["run_id"]
        if event["event"] == "on_chain_stream" and event["run_id"] == root:
            wire.chunk(root_mode, server_json(served(root_mode, event["data"]["chunk"])))
            if aegra:
                for chunk in (["debug", {"type": "task_result", "step": index}], [root_mode, event["data"]["chunk"]]):
                    stream = {**event, "name": "probe", "data": {"chunk": chunk}}
                    wire.chunk("events", server_json({**stream, "metadata": _metadata(event.get("metadata") or {})}))
            continue
        sent = {**event, "metadata": _metadata(event.get("metadata") or {})}
        if event["run_id"] == root:
            sent["name"] = "probe"
        wire.chunk("events", server_json(sent))
    return wire.frames
