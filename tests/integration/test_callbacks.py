"""Callback handlers on a remote run, as on a local one, on [local, remote] x [sync, async].

A handler passed in ``config["callbacks"]`` sees the graph's run and every run
inside it: each node's chain (and the chains inside the node), each chat model's
start, tokens and end, each tool's start and end, a node's error and an
interrupt's ``GraphInterrupt``, with the same names, tags, metadata and parent
runs. Compared: the tree of runs a recording handler saw, each run with the calls
it got in order and what they carried (``record_tree``), for ``invoke``,
``stream`` (``messages`` mode: the models stream their tokens), a failing run,
a paused run, and a remote child inside a local parent, at the root and in a node.
"""

from __future__ import annotations

import contextlib
import json
import operator
import re
from collections.abc import Sequence
from typing import Annotated, Any
from uuid import UUID

import httpx
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langchain_core.outputs import ChatGenerationChunk, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.graph import START, StateGraph
from langgraph.types import Send
from langgraph_sdk.client import SyncLangGraphClient
from typing_extensions import TypedDict

from remote_graph import RemoteGraph
from tests.integration.lanes import GATE, LINEAR, Lane, Scenarios, compare, norm
from tests.integration.server_kinds import drops_sends_in_events, null_sends

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

QUESTION = {"messages": [HumanMessage("what is 3 + 4?")]}
# What a run's metadata says of where it ran; the rest is the caller's own ("m") or
# the server's bookkeeping, which the client strips (test_classic_events.py checks it).
_WHERE = ("m", "langgraph_node", "langgraph_step", "langgraph_triggers", "langgraph_path", "ls_integration")


class Recorder(BaseCallbackHandler):
    """Records every callback with its arguments, in the order made."""

    run_inline = True  # in order on the async lanes too

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *args, **kwargs: self.calls.append((name, args, kwargs))
        return object.__getattribute__(self, name)


def _sends(value: Any) -> Any:
    """``Send``s (a routing function's output) as dicts, for ``norm``."""
    if isinstance(value, Send):
        return {"send": value.node, "arg": _sends(value.arg)}
    if isinstance(value, (list, tuple)):
        return [_sends(item) for item in value]
    if isinstance(value, dict):
        return {key: _sends(item) for key, item in value.items()}
    return value


def _payload(method: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    if method == "on_llm_new_token":
        chunk = kwargs.get("chunk")
        assert isinstance(chunk, ChatGenerationChunk)
        return {"token": kwargs.get("token"), "chunk": norm(chunk.message.content)}
    if method == "on_llm_end":
        result = args[0]
        assert isinstance(result, LLMResult)
        return [norm(g.message) for g in result.generations[0]]  # type: ignore[attr-defined]
    if method.endswith("_error"):
        error = args[0]
        if isinstance(error, GraphInterrupt):
            return [type(error).__name__, norm(list(error.args[0]))]
        return [type(error).__name__, str(error)]
    if method.endswith("_start"):
        return norm(_sends(args[1]))
    return norm(_sends(args[0]))


def _name(method: str, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    serialized = args[0] if args and isinstance(args[0], dict) else {}
    return str(kwargs.get("name") or serialized.get("name") or (serialized.get("id") or ["?"])[-1])


def record_tree(recorder: Recorder) -> dict[str, Any]:
    """The runs the handler saw, as a tree from the graph's run: each run's name,
    tags, metadata and its calls in order, its child runs sorted (parallel runs
    take turns in any order). Also checks that each run started before and ended
    after its children, and that no call names a run that never started."""
    runs: dict[UUID, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    open_runs: list[UUID] = []
    kids: dict[UUID, Any] = {}  # a run's parent
    for method, args, kwargs in recorder.calls:
        run_id = kwargs["run_id"]
        if method == "on_custom_event":
            continue
        if method.endswith("_start"):
            metadata = kwargs.get("metadata") or {}
            run = {
                "name": _name(method, args, kwargs),
                "tags": sorted(kwargs.get("tags") or []),
                "metadata": norm({k: metadata[k] for k in _WHERE if k in metadata}),
                "calls": [],
                "children": [],
            }
            runs[run_id] = run
            parent = kwargs.get("parent_run_id")
            (runs[parent]["children"] if parent in runs else roots).append(run)
            if parent in runs:
                assert parent in open_runs, f"{run['name']} started inside a run that had ended"
            open_runs.append(run_id)
            kids[run_id] = parent
        assert run_id in runs, f"{method} for a run that never started"
        runs[run_id]["calls"].append([method, _payload(method, args, kwargs)])
        if method.endswith(("_end", "_error")):
            open_runs.remove(run_id)
            inner = [other for other in open_runs if kids.get(other) == run_id]
            assert not inner, f"{runs[run_id]['name']} ended before its children"
    assert not open_runs, f"runs never ended: {[runs[r]['name'] for r in open_runs]}"
    for run in runs.values():
        run["children"].sort(key=lambda child: json.dumps(child, sort_keys=True, default=str))
    assert len(roots) == 1, [r["name"] for r in roots]
    return roots[0]


def graph(lane: Lane, name: str, *, as_name: str = "LangGraph") -> Any:
    """The served graph ``name``; the remote one named as a local graph compiled
    without a name is (see the divergences' root-name row)."""
    if lane.kind == "local":
        return lane.graph(name)
    return RemoteGraph(name, url=lane.server_url, name=as_name)


def config(lane: Lane, recorder: Recorder) -> dict[str, Any]:
    # The server's default recursion limit is not a local graph's (a prebuilt agent's
    # remaining_steps shows it), so both are given one.
    return {
        **lane.thread(),
        "callbacks": [recorder],
        "tags": ["caller"],
        "metadata": {"m": 1},
        "recursion_limit": 25,
    }


@scenario
def callbacks_of_invoke(lane: Lane) -> Any:
    recorder = Recorder()
    out = lane.invoke(graph(lane, "linear"), LINEAR, config(lane, recorder))
    return {"out": out, "runs": record_tree(recorder)}


@scenario
def callbacks_of_a_streamed_agent(lane: Lane) -> Any:
    recorder = Recorder()
    lane.stream(graph(lane, "react"), QUESTION, config(lane, recorder), stream_mode="messages")
    return record_tree(recorder)


@scenario
def callbacks_of_a_failing_run(lane: Lane) -> Any:
    recorder = Recorder()
    with pytest.raises(Exception) as caught:
        lane.invoke(graph(lane, "boom"), LINEAR, config(lane, recorder))
    return {"raised": type(caught.value).__name__, "runs": record_tree(recorder)}


@scenario
def callbacks_of_a_paused_run(lane: Lane) -> Any:
    recorder = Recorder()
    out = lane.invoke(graph(lane, "gate"), GATE, config(lane, recorder))
    return {"out": norm(out), "runs": record_tree(recorder)}


class EntriesState(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def parent(lane: Lane, *, called: bool) -> Any:
    """A local parent whose ``child`` node is ``linear``: the graph itself, or invoked in a node."""
    child = graph(lane, "linear")

    def call(state: EntriesState, config: RunnableConfig) -> Any:
        return child.invoke(state, config)

    async def acall(state: EntriesState, config: RunnableConfig) -> Any:
        return await child.ainvoke(state, config)

    node = (call if lane.flavour == "sync" else acall) if called else child
    builder = StateGraph(EntriesState)
    builder.add_node("child", node)
    builder.add_edge(START, "child")
    return builder.compile(checkpointer=InMemorySaver())


@scenario
def callbacks_of_a_remote_child_as_a_node(lane: Lane) -> Any:
    recorder = Recorder()
    out = lane.invoke(parent(lane, called=False), LINEAR, config(lane, recorder))
    return {"out": out, "runs": record_tree(recorder)}


@scenario
def callbacks_of_a_remote_child_invoked_in_a_node(lane: Lane) -> Any:
    recorder = Recorder()
    out = lane.invoke(parent(lane, called=True), LINEAR, config(lane, recorder))
    return {"out": out, "runs": record_tree(recorder)}


@scenario
def callbacks_of_astream_events(lane: Lane) -> Any:
    """A local ``astream_events`` calls the config's handlers too (async only: a
    sync ``stream_events(version="v2")`` raises, locally and remotely)."""
    if lane.flavour == "sync":
        return None
    recorder = Recorder()
    events = lane.events(graph(lane, "linear"), LINEAR, config(lane, recorder), version="v2")
    return {"events": [e["event"] for e in events], "runs": record_tree(recorder)}


_EXCEPTION_LINE = re.compile(r"^(?:\w+\.)*(\w+: .*)$")


def run_tree(run: Any) -> dict[str, Any]:
    """A traced run as langchain's tracers (LangSmith's among them) record it."""
    return {
        "name": run.name,
        "run_type": run.run_type,
        "tags": sorted(run.tags or []),
        # The exception's type, unqualified (a rebuilt one lives in another module),
        # and message: the traceback is the process's own.
        "error": [m.group(1) for m in map(_EXCEPTION_LINE.match, (run.error or "").splitlines()) if m][-1:],
        "tokens": sum(1 for event in run.events if event.get("name") == "new_token"),
        "children": sorted((run_tree(child) for child in run.child_runs), key=lambda t: json.dumps(t, sort_keys=True)),
    }


@scenario
def a_langchain_tracer_records_the_same_runs(lane: Lane) -> Any:
    """langchain's ``BaseTracer`` machinery, which LangSmith's tracer is built on, builds
    the same tree of runs, with their types, tags, errors and tokens."""
    trees = []
    for name, input in (("react", QUESTION), ("boom", LINEAR)):
        collector = RunCollectorCallbackHandler()
        settings = {**config(lane, Recorder()), "callbacks": [collector]}
        with contextlib.suppress(Exception):
            lane.stream(graph(lane, name), input, settings, stream_mode="messages")
        assert len(collector.traced_runs) == 1
        trees.append(run_tree(collector.traced_runs[0]))
    return trees


def _sends_as_null(tree: Any) -> Any:
    """A recorded tree with each ``Send`` an ``on_chain_end`` carries as ``None``,
    as langgraph-api 0.11 serializes it (``server_kinds.drops_sends_in_events``)."""
    if isinstance(tree, list):
        if len(tree) == 2 and tree[0] == "on_chain_end":
            return ["on_chain_end", null_sends(tree[1])]
        return [_sends_as_null(item) for item in tree]
    if isinstance(tree, dict):
        return {key: _sends_as_null(item) for key, item in tree.items()}
    return tree


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_callbacks_equal_remote_callbacks(
    name: str, flavour: str, server_url: str, request: pytest.FixtureRequest
) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    if drops_sends_in_events(request):
        local, remote = _sends_as_null(local), _sends_as_null(remote)
    assert remote == local


def test_only_a_call_with_handlers_asks_the_server_for_events(server_url: str) -> None:
    """Callbacks cost nothing when there are none: the run is asked for no ``events``;
    with a handler it is, and the chunks the caller gets are the same."""
    modes: list[list[str]] = []

    def seen(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/runs/stream"):
            modes.append(sorted(json.loads(request.read())["stream_mode"]))

    http = httpx.Client(base_url=server_url, event_hooks={"request": [seen]}, timeout=30)
    remote = RemoteGraph("linear", sync_client=SyncLangGraphClient(http))
    plain = remote.stream(LINEAR, stream_mode="values")
    chunks = list(plain)
    recorder = Recorder()
    assert list(remote.stream(LINEAR, {"callbacks": [recorder]}, stream_mode="values")) == chunks
    assert recorder.calls, "the handler saw nothing"
    assert modes == [["updates", "values"], ["events", "updates", "values"]]
    http.close()


def test_handlers_given_with_config_are_called(server_url: str) -> None:
    """Handlers bound with ``with_config`` (the graph's own config) are the run's, as locally."""
    recorder = Recorder()
    remote = RemoteGraph("linear", url=server_url).with_config(callbacks=[recorder], run_name="bound")
    remote.invoke(LINEAR)
    starts = [kwargs.get("name") for method, _, kwargs in recorder.calls if method == "on_chain_start"]
    assert starts == ["bound", "a", "b"]


# --- divergences kept on purpose (README: "Divergences from local") ---------------------


def test_probe_invoke_relays_tokens_where_a_local_model_does_not_stream(server_url: str) -> None:
    """To send a run's callbacks, the server runs it with langchain's event stream,
    whose handler makes every chat model stream: ``invoke`` with a handler gets the
    model's tokens, where a local ``invoke`` calls a model that does not stream by
    itself without streaming (the handler sees its start and end only)."""
    from tests.integration.lanes import local_twin

    tokens = []
    for g in (local_twin("react"), RemoteGraph("react", url=server_url)):
        recorder = Recorder()
        g.invoke(QUESTION, {"configurable": {"thread_id": str(UUID(int=7))}, "callbacks": [recorder]})
        tokens.append(sum(1 for method, _, _ in recorder.calls if method == "on_llm_new_token"))
    assert tokens[0] == 0 and tokens[1] > 0


def test_probe_a_v3_run_stream_calls_no_callback_handler_and_warns(server_url: str) -> None:
    """A local v3 run calls the config's handlers for every run inside it; the server
    streams a run either as v3 events or as the ``astream_events`` events its callbacks
    make, never both, so a remote v3 run calls none of them, and says so."""
    from tests.integration.lanes import local_twin

    local, remote = Recorder(), Recorder()
    thread = {"configurable": {"thread_id": "callbacks-v3"}}
    with local_twin("linear").stream_events(LINEAR, {**thread, "callbacks": [local]}, version="v3") as run:
        assert run.output == {"x": 20, "log": ["a", "b"]}
    assert [k.get("name") for m, _, k in local.calls if m == "on_chain_start"] == ["LangGraph", "a", "b"]
    with pytest.warns(UserWarning, match="a v3 run stream calls none of the config's callback handlers"):
        run = RemoteGraph("linear", url=server_url).stream_events(LINEAR, {"callbacks": [remote]}, version="v3")
    with run:
        assert run.output == {"x": 20, "log": ["a", "b"]}
    assert remote.calls == []


def test_probe_serialized_holds_only_the_runs_name(server_url: str) -> None:
    """The events a run's callbacks make carry a model's name, not its ``dumpd``."""
    from tests.integration.lanes import local_twin

    starts = []
    for g in (local_twin("react"), RemoteGraph("react", url=server_url)):
        recorder = Recorder()
        g.invoke(QUESTION, {"configurable": {"thread_id": str(UUID(int=8))}, "callbacks": [recorder]})
        starts.append(next(args[0] for method, args, _ in recorder.calls if method == "on_chat_model_start"))
    assert starts[0]["id"][-1] == "ScriptedChatModel" and len(starts[0]["id"]) > 1
    assert starts[1] == {"name": "ScriptedChatModel", "id": ["ScriptedChatModel"]}


def test_probe_graph_lifecycle_callbacks_are_not_called_for_a_remote_run(server_url: str) -> None:
    """langgraph's own ``GraphCallbackHandler.on_interrupt`` / ``on_resume`` are called by a
    local graph's loop; the server's loop calls them in its process, and its event stream
    does not carry them."""
    from langgraph.callbacks import GraphCallbackHandler
    from langgraph.types import Command

    from tests.integration.lanes import local_twin

    class Lifecycle(GraphCallbackHandler):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_interrupt(self, event: Any) -> None:
            self.seen.append("interrupt")

        def on_resume(self, event: Any) -> None:
            self.seen.append("resume")

    seen = []
    for g in (local_twin("gate"), RemoteGraph("gate", url=server_url)):
        handler = Lifecycle()
        settings = {"configurable": {"thread_id": str(UUID(int=9 + len(seen)))}, "callbacks": [handler]}
        g.invoke(GATE, settings)
        g.invoke(Command(resume="yes"), settings)
        seen.append(handler.seen)
    assert seen == [["interrupt", "resume"], []]
