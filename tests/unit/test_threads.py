"""The thread-state conversations (``_core.threads``) against scripted answers, and the snapshots
they make compared with a local graph's.

A conversation yields ``Request``s and is sent each one's ``Response`` (or
``Broken``); ``Script`` answers them per ``(method, path)``, in order, and
records what was asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import StateSnapshot, StateUpdate

from remote_graph import RemoteGraph
from remote_graph._aio import AsyncRequests
from remote_graph._core.actions import Broken, Request, Response, Timeouts
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.snapshot import checkpoint_config, empty_snapshot, snapshot
from remote_graph._core.threads import (
    HISTORY_PAGE,
    HistoryPager,
    bulk_update,
    checkpoint_of,
    history_page,
    read_state,
    update_state,
)
from remote_graph._state import ThreadCalls
from remote_graph._sync import SyncRequests
from remote_graph.errors import RemoteCommandError, RemoteConnectionError, RemoteProtocolError
from tests.unit.classic_server import PROBE_SCHEMAS, probe_graph, server_json

T = TypeVar("T")
THREAD = "0c9e6a0b-3f8e-4b8f-9d59-5d2d3f1c7a11"
PATH = f"/threads/{THREAD}"
CONFIG = {"configurable": {"thread_id": THREAD}}
NOT_FOUND = Response(404, {"detail": f"Thread with ID {THREAD} not found"})
HTML_404 = Response(404, "<html><body>Not Found</body></html>", content_type="text/html")
NOTE = {"type": "human", "content": "not a message"}


class Script:
    """Answers a conversation's requests, per (method, path), in order (the last one repeats)."""

    def __init__(self, answers: Mapping[tuple[str, str], Response | Broken | list[Response | Broken]]) -> None:
        self.answers = {key: list(value) if isinstance(value, list) else [value] for key, value in answers.items()}
        self.asked: list[Request] = []

    def answer(self, request: Request) -> Response | Broken:
        self.asked.append(request)
        queue = self.answers.get((request.method, request.path))
        if not queue:
            raise AssertionError(f"unexpected request {request.method} {request.path}")
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def run(self, talk: Generator[Request, Any, T]) -> T:
        try:
            request = next(talk)
            while True:
                request = talk.send(self.answer(request))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def arun(self, talk: Generator[Request, Any, T]) -> T:
        return self.run(talk)

    def trail(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.asked]


def reader(known: Any = PROBE_SCHEMAS) -> ChunkReader:
    learned = GraphSchemas()
    learned.learn(known)
    return ChunkReader(CallView(server_thread=THREAD, thread_name=None), learned)


def schemas(known: Any = PROBE_SCHEMAS) -> GraphSchemas:
    learned = GraphSchemas()
    learned.learn(known)
    return learned


def state(checkpoint_id: str, step: int, values: Any = None, parent: str | None = None) -> dict[str, Any]:
    """A ThreadState as the server answers it."""
    coordinates = {"checkpoint_id": checkpoint_id, "thread_id": THREAD, "checkpoint_ns": ""}
    return {
        "values": values if values is not None else {"count": step},
        "next": [],
        "tasks": [],
        "metadata": {"source": "loop", "step": step, "parents": {}, "graph_id": "probe", "run_id": "r"},
        "created_at": f"2026-01-01T00:00:{step:02d}+00:00",
        "checkpoint": coordinates,
        "parent_checkpoint": {**coordinates, "checkpoint_id": parent} if parent else None,
        "interrupts": [],
    }


# --- read_state ---------------------------------------------------------------------------


def test_the_latest_state_is_read_and_revived_by_the_schema() -> None:
    answer = state("c2", 2, {"messages": [{"type": "human", "content": "hi", "id": "h1"}], "note": NOTE}, "c1")
    script = Script({("GET", f"{PATH}/state"): Response(200, answer)})
    got = script.run(read_state(PATH, CONFIG, reader(), subgraphs=False))
    assert script.asked == [Request("GET", f"{PATH}/state")]
    assert got.values == {"messages": [HumanMessage("hi", id="h1")], "note": NOTE}
    assert got.config == {"configurable": {"checkpoint_id": "c2", "thread_id": THREAD, "checkpoint_ns": ""}}
    assert got.parent_config == {"configurable": {"checkpoint_id": "c1", "thread_id": THREAD, "checkpoint_ns": ""}}
    # Only the metadata a local checkpoint keeps.
    assert got.metadata == {"source": "loop", "step": 2, "parents": {}}


def test_subgraphs_and_a_checkpoint_are_asked_for() -> None:
    script = Script(
        {
            ("GET", f"{PATH}/state"): Response(200, state("c2", 2)),
            ("POST", f"{PATH}/state/checkpoint"): Response(200, state("c1", 1)),
        }
    )
    script.run(read_state(PATH, CONFIG, reader(), subgraphs=True))
    at = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c1", "checkpoint_ns": ""}}
    got = script.run(read_state(PATH, at, reader(), subgraphs=True))
    assert got.config["configurable"]["checkpoint_id"] == "c1"
    assert script.asked == [
        Request("GET", f"{PATH}/state", params={"subgraphs": "true"}),
        Request(
            "POST",
            f"{PATH}/state/checkpoint",
            json={"checkpoint": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": "c1"}, "subgraphs": True},
        ),
    ]


def test_a_checkpoints_config_is_as_asked_for_when_the_server_adds_the_root_namespace() -> None:
    # langgraph-api 0.11 answers a checkpoint with ``checkpoint_ns: ""`` in its config.
    answer = state("c1", 1)
    assert answer["checkpoint"]["checkpoint_ns"] == ""
    script = Script({("POST", f"{PATH}/state/checkpoint"): Response(200, answer)})
    at = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c1"}}
    assert script.run(read_state(PATH, at, reader(), subgraphs=False)).config == at
    # Asked for with its namespace, it keeps it.
    with_ns = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c1", "checkpoint_ns": ""}}
    assert script.run(read_state(PATH, with_ns, reader(), subgraphs=False)).config == with_ns


def test_a_thread_the_server_does_not_have_reads_as_an_empty_snapshot() -> None:
    got = Script({("GET", f"{PATH}/state"): NOT_FOUND}).run(read_state(PATH, CONFIG, reader(), subgraphs=False))
    assert got == empty_snapshot({"configurable": {"thread_id": THREAD}})
    # As a local graph's snapshot of a thread with no checkpoint.
    local = probe_graph().get_state({"configurable": {"thread_id": "never-run"}})
    assert (got.values, got.next, got.metadata, got.tasks, got.interrupts) == (
        local.values,
        local.next,
        local.metadata,
        local.tasks,
        local.interrupts,
    )
    at = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c9"}}
    script = Script({("POST", f"{PATH}/state/checkpoint"): NOT_FOUND})
    assert script.run(read_state(PATH, at, reader(), subgraphs=False)).config == at


# langgraph-api 0.11's answer for a thread that never ran (0.16 answers 404).
NEVER_RAN = {
    "values": {},
    "next": [],
    "tasks": [],
    "metadata": None,
    "created_at": None,
    "checkpoint": None,
    "parent_checkpoint": None,
    "interrupts": [],
    "checkpoint_id": None,
    "parent_checkpoint_id": None,
}


def test_a_thread_that_never_ran_reads_as_the_404s_empty_snapshot() -> None:
    got = Script({("GET", f"{PATH}/state"): Response(200, NEVER_RAN)}).run(
        read_state(PATH, CONFIG, reader(), subgraphs=False)
    )
    missing = Script({("GET", f"{PATH}/state"): NOT_FOUND}).run(read_state(PATH, CONFIG, reader(), subgraphs=False))
    assert got == missing == empty_snapshot({"configurable": {"thread_id": THREAD}})


def test_a_checkpoint_the_server_does_not_have_reads_as_an_empty_snapshot() -> None:
    # The server answers 200 with a state that has no checkpoint behind it.
    answer = {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": None,
        "created_at": None,
        "checkpoint": {"thread_id": THREAD, "checkpoint_id": "c9", "checkpoint_ns": ""},
    }
    at = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c9"}}
    got = Script({("POST", f"{PATH}/state/checkpoint"): Response(200, answer)}).run(
        read_state(PATH, at, reader(), subgraphs=False)
    )
    assert got == empty_snapshot({"configurable": {"thread_id": THREAD, "checkpoint_id": "c9", "checkpoint_ns": ""}})


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (HTML_404, RemoteCommandError),
        (Response(404, None), RemoteCommandError),
        (Response(500, {"detail": "boom"}), RemoteCommandError),
        (Response(200, "not json", content_type="text/plain"), RemoteProtocolError),
        (Broken(httpx.ConnectError("refused")), RemoteConnectionError),
    ],
    ids=["html-404", "empty-404", "500", "not-json", "broken"],
)
def test_an_answer_that_is_not_the_apis_fails_the_read(answer: Response | Broken, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        Script({("GET", f"{PATH}/state"): answer}).run(read_state(PATH, CONFIG, reader(), subgraphs=False))
    assert "reading the thread's state" in str(raised.value)


# --- snapshots, compared with local ---------------------------------------------------------------


def server_state(local: StateSnapshot, thread: str) -> dict[str, Any]:
    """A local snapshot as the server answers it (``GET /threads/{id}/state``): JSON,
    the server's metadata keys, configs as flat checkpoints, tasks' states nested."""

    def coordinates(config: Any) -> Any:
        if config is None:
            return None
        out = {**config["configurable"], "thread_id": thread}
        return out

    tasks = []
    for task in local.tasks:
        nested = task.state
        tasks.append(
            {
                "id": task.id,
                "name": task.name,
                "path": list(task.path),
                "error": task.error,
                "interrupts": [{"id": i.id, "value": i.value} for i in task.interrupts],
                "checkpoint": coordinates(nested) if isinstance(nested, Mapping) else None,
                "state": server_state(nested, thread) if isinstance(nested, StateSnapshot) else None,
                "result": task.result,
            }
        )
    return __import__("orjson").loads(
        server_json(
            {
                "values": local.values,
                "next": list(local.next),
                "tasks": tasks,
                "metadata": {"graph_id": "probe", "run_id": "r", "thread_id": thread, **(local.metadata or {})},
                "created_at": local.created_at,
                "checkpoint": coordinates(local.config),
                "parent_checkpoint": coordinates(local.parent_config),
                "interrupts": [{"id": i.id, "value": i.value} for i in local.interrupts],
            }
        )
    )


def paused_probe() -> tuple[Any, dict[str, Any]]:
    graph = probe_graph()
    config = {"configurable": {"thread_id": THREAD}}
    graph.invoke({"messages": [HumanMessage("hello", id="h1")]}, config)
    return graph, config


@pytest.mark.parametrize("subgraphs", [False, True])
def test_a_snapshot_is_the_local_graphs(subgraphs: bool) -> None:
    graph, config = paused_probe()
    local = graph.get_state(config, subgraphs=subgraphs)
    assert local.interrupts and local.next == ("ask",)
    assert snapshot(server_state(local, THREAD), reader()) == local


def test_a_subgraphs_snapshot_without_its_checkpoint_map_gets_it_from_its_parents() -> None:
    # aegra leaves a nested state's checkpoint_map out; its metadata names the parents.
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    class State(TypedDict):
        x: int

    inner = StateGraph(State)
    inner.add_node("ask", lambda state: {"x": interrupt("ok?")})
    inner.add_edge(START, "ask")
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    graph = outer.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": THREAD}}
    graph.invoke({"x": 1}, config)
    local = graph.get_state(config, subgraphs=True)
    nested = next(task.state for task in local.tasks if isinstance(task.state, StateSnapshot))
    assert "checkpoint_map" in nested.config["configurable"]
    state = server_state(local, THREAD)
    for task in state["tasks"]:
        if task["state"] is not None:
            for key in ("checkpoint", "parent_checkpoint"):
                if task["state"][key] is not None:
                    task["state"][key].pop("checkpoint_map", None)
    assert snapshot(state, reader()) == local


def test_every_snapshot_of_the_history_is_the_local_graphs() -> None:
    graph, config = paused_probe()
    history = list(graph.get_state_history(config))
    assert len(history) > 3
    for local in history:
        assert snapshot(server_state(local, THREAD), reader()) == local


def test_a_subgraph_tasks_state_is_its_config_or_its_snapshot() -> None:
    graph, config = paused_probe()
    before_sub = next(s for s in graph.get_state_history(config) if s.next == ("sub",))
    (task,) = before_sub.tasks
    assert task.state == {"configurable": {"thread_id": THREAD, "checkpoint_ns": f"sub:{task.id}"}}
    assert snapshot(server_state(before_sub, THREAD), reader()).tasks == before_sub.tasks
    # aegra sends the subgraph's config as the task's state, not as its checkpoint.
    aegra = server_state(before_sub, THREAD)
    aegra["tasks"] = [{**aegra["tasks"][0], "checkpoint": None, "state": {"configurable": task.state["configurable"]}}]
    assert snapshot(aegra, reader()).tasks == before_sub.tasks


def test_a_failed_tasks_error_is_its_repr_as_locally() -> None:
    from tests.unit.classic_server import failing_graph

    graph = failing_graph()
    config = {"configurable": {"thread_id": THREAD}}
    with pytest.raises(Exception, match="it broke"):
        graph.invoke({"messages": []}, config)
    local = graph.get_state(config)
    (task,) = local.tasks
    assert task.error == "Kaput('it broke')"  # a local snapshot holds the repr
    assert snapshot(server_state(local, THREAD), reader()) == local
    # The stream's form of an error (type and message) is written as its repr too.
    wire_error = {**server_state(local, THREAD)}
    wire_error["tasks"] = [{**wire_error["tasks"][0], "error": {"error": "Kaput", "message": "it broke"}}]
    assert snapshot(wire_error, reader()).tasks[0].error == "Kaput('it broke')"


# --- history --------------------------------------------------------------------------------------


class History:
    """A thread with ``size`` checkpoints, answering ``POST /threads/{id}/history`` as the server does."""

    def __init__(self, size: int) -> None:
        # Newest first: c<size-1> ... c0.
        self.states = [state(f"c{i:04d}", i, parent=f"c{i - 1:04d}" if i else None) for i in reversed(range(size))]
        self.bodies: list[dict[str, Any]] = []
        self.pages: list[list[dict[str, Any]]] = []

    def answer(self, request: Request) -> Response:
        assert (request.method, request.path) == ("POST", f"{PATH}/history")
        body = request.json
        self.bodies.append(body)
        states = self.states
        before = (body.get("before") or {}).get("configurable", {}).get("checkpoint_id")
        if before is not None:
            states = [s for s in states if s["checkpoint"]["checkpoint_id"] < before]
        self.pages.append(states[: body["limit"]])
        return Response(200, states[: body["limit"]])


def history_graph(history: History, monkeypatch: pytest.MonkeyPatch) -> RemoteGraph:
    """A RemoteGraph whose thread calls ``history`` answers (no sockets)."""
    graph = RemoteGraph("probe", url="http://127.0.0.1:9")
    graph._schemas.learn(PROBE_SCHEMAS)
    # The shells' own ``items``, with each request answered by ``history``.
    requests = SyncRequests(httpx.Client(), Timeouts())
    requests.request = history.answer  # type: ignore[method-assign]
    arequests = AsyncRequests(httpx.AsyncClient(), Timeouts())

    async def answer(request: Request) -> Response:
        return history.answer(request)

    arequests.request = answer  # type: ignore[method-assign]
    monkeypatch.setattr(ThreadCalls, "sync", lambda self, headers: requests)
    monkeypatch.setattr(ThreadCalls, "async_", lambda self, headers: arequests)
    return graph


def read_history(flavour: str, graph: RemoteGraph, **kwargs: Any) -> list[StateSnapshot]:
    calls = graph._threads()
    if flavour == "sync":
        return list(calls.sync(None).items(calls.history(CONFIG, filter=None, **kwargs)))

    async def collect() -> list[StateSnapshot]:
        return [s async for s in calls.async_(None).items(calls.history(CONFIG, filter=None, **kwargs))]

    return asyncio.run(collect())


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("size", [0, 1, HISTORY_PAGE - 1, HISTORY_PAGE, HISTORY_PAGE + 1, 2 * HISTORY_PAGE + 30])
@pytest.mark.parametrize("limit", [None, 1, 50, HISTORY_PAGE, HISTORY_PAGE + 1, 2 * HISTORY_PAGE])
def test_history_reads_page_after_page_up_to_the_limit(
    size: int, limit: int | None, flavour: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = History(size)
    got = read_history(flavour, history_graph(history, monkeypatch), before=None, limit=limit)
    expected = [s["checkpoint"]["checkpoint_id"] for s in history.states][:limit]
    assert [s.config["configurable"]["checkpoint_id"] for s in got] == expected
    # Each page after the first starts before the oldest checkpoint of the one before.
    assert history.bodies[0].get("before") is None
    for page, body in zip(history.pages, history.bodies[1:]):
        assert body["before"]["configurable"]["checkpoint_id"] == page[-1]["checkpoint"]["checkpoint_id"]
    # No page is read once the limit is reached, nor after a page shorter than asked.
    if limit is not None and limit <= size:
        needed = -(-limit // HISTORY_PAGE)
    else:
        needed = size // HISTORY_PAGE + 1
    assert len(history.bodies) == needed
    assert all(body["limit"] <= HISTORY_PAGE for body in history.bodies)


def test_history_before_a_checkpoint_starts_there(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c0005", "checkpoint_ns": ""}}
    for flavour in ("sync", "async"):
        history = History(10)
        got = read_history(flavour, history_graph(history, monkeypatch), before=before, limit=3)
        assert [s.config["configurable"]["checkpoint_id"] for s in got] == ["c0004", "c0003", "c0002"]
        assert history.bodies == [{"limit": 3, "before": {"configurable": before["configurable"]}}]


def test_a_history_page_asks_for_a_checkpoint_and_a_metadata_filter() -> None:
    at = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c7", "checkpoint_ns": ""}}
    script = Script({("POST", f"{PATH}/history"): Response(200, [state("c7", 7)])})
    page = script.run(history_page(PATH, at, reader(), limit=5, before=None, filter={"source": "loop"}))
    assert [s.config["configurable"]["checkpoint_id"] for s in page] == ["c7"]
    assert script.asked[0].json == {"limit": 5, "checkpoint": at["configurable"], "metadata": {"source": "loop"}}
    # A thread the server does not have has no history; a page that is not a list fails.
    assert (
        Script({("POST", f"{PATH}/history"): NOT_FOUND}).run(
            history_page(PATH, CONFIG, reader(), limit=5, before=None, filter=None)
        )
        == []
    )
    with pytest.raises(RemoteCommandError):
        Script({("POST", f"{PATH}/history"): HTML_404}).run(
            history_page(PATH, CONFIG, reader(), limit=5, before=None, filter=None)
        )
    with pytest.raises(RemoteProtocolError):
        Script({("POST", f"{PATH}/history"): Response(200, {"not": "a list"})}).run(
            history_page(PATH, CONFIG, reader(), limit=5, before=None, filter=None)
        )


def test_a_server_without_the_namespace_path_gives_the_subgraph_picked_from_all() -> None:
    # aegra serves /assistants/{id}/subgraphs but not /subgraphs/{namespace} (404).
    graph = RemoteGraph("probe", url="http://127.0.0.1:9")
    graph._schemas.learn(PROBE_SCHEMAS)
    graph._schemas.assistant_id = "a-uuid"
    base = "/assistants/a-uuid/subgraphs"
    every = {"sub": {"graph_id": "probe"}, "sub|gc": {"graph_id": "probe"}}
    calls = graph._threads()
    for namespace, recurse, wanted in [
        ("sub", False, ["sub"]),
        ("sub|gc", False, []),  # a nested namespace only with recurse, as locally
        ("sub|gc", True, ["sub|gc"]),
        ("nope", True, []),
    ]:
        script = Script(
            {("GET", f"{base}/{quote(namespace, safe='')}"): NOT_FOUND, ("GET", base): Response(200, every)}
        )
        assert [ns for ns, _ in script.run(calls.subgraphs(namespace, recurse))] == wanted
        assert script.asked[-1].params == {"recurse": "true"}


def test_a_server_that_filters_no_history_by_metadata_is_read_whole_and_filtered_here() -> None:
    # aegra answers a metadata filter with a 500; the pages it answers whole are filtered
    # as a local checkpointer filters, the limit counting what matches.
    whole = [state(f"c{n:04d}", n) for n in range(250, 0, -1)]
    for index, item in enumerate(whole):
        item["metadata"]["source"] = "input" if index % 3 == 0 else "loop"

    def pages(request: Request) -> Response:
        body = request.json
        if "metadata" in body:
            return Response(500, {"detail": "aget_state_history() got an unexpected keyword argument 'metadata'"})
        start = 0
        if "before" in body:
            last = body["before"]["configurable"]["checkpoint_id"]
            start = next(i for i, item in enumerate(whole) if item["checkpoint"]["checkpoint_id"] == last) + 1
        return Response(200, whole[start : start + body["limit"]])

    script = Script({})
    script.answer = lambda request: (script.asked.append(request), pages(request))[1]  # type: ignore[method-assign]
    page = script.run(history_page(PATH, CONFIG, reader(), limit=90, before=None, filter={"source": "input"}))
    wanted = [item["checkpoint"]["checkpoint_id"] for item in whole if item["metadata"]["source"] == "input"]
    assert [s.config["configurable"]["checkpoint_id"] for s in page] == wanted[:90]
    # The filtered ask, then whole pages of 100 until 90 matched (the third page holds the 90th).
    assert [request.json.get("metadata") for request in script.asked] == [{"source": "input"}, None, None, None]
    assert all(request.json["limit"] == HISTORY_PAGE for request in script.asked[1:])
    script.asked.clear()
    page = script.run(history_page(PATH, CONFIG, reader(), limit=200, before=None, filter={"source": "input"}))
    assert [s.config["configurable"]["checkpoint_id"] for s in page] == wanted  # the history's end: a short page
    nothing = script.run(history_page(PATH, CONFIG, reader(), limit=5, before=None, filter={"source": "fork"}))
    assert nothing == []
    # A server that answers every page alike (it ignores ``before``) does not keep the read going.
    stuck = Script({("POST", f"{PATH}/history"): [Response(500, {}), Response(200, whole[:100])]})
    page = stuck.run(history_page(PATH, CONFIG, reader(), limit=90, before=None, filter={"source": "fork"}))
    assert page == [] and len(stuck.asked) == 3


def test_history_pages_stop_at_the_limit_or_a_short_page() -> None:
    # (Every paging case: test_history_pager.py.)
    full = [empty_snapshot(None)] * HISTORY_PAGE

    def walk(pages: list[list[StateSnapshot]], limit: int | None) -> tuple[int, int]:
        pager, served, asked = HistoryPager(limit, None), iter(pages), 0
        taken = 0
        while (ask := pager.next_page()) is not None:
            asked += 1
            taken += len(pager.take(next(served)[: ask[0]], ask[0]))
        return taken, asked

    assert walk([full, full[:3]], None) == (HISTORY_PAGE + 3, 2)
    assert walk([full, full], 150) == (150, 2)
    assert walk([full, full, full], HISTORY_PAGE) == (HISTORY_PAGE, 1)  # the limit was reached: no page more is read


# --- writes ---------------------------------------------------------------------------------------


WRITTEN = {"checkpoint": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": "c3", "checkpoint_map": None}}


def test_update_state_writes_as_the_node_and_returns_the_new_checkpoints_config() -> None:
    script = Script({("POST", f"{PATH}/state"): Response(200, WRITTEN)})
    at = {"configurable": {"thread_id": THREAD, "checkpoint_id": "c2"}}
    config = script.run(update_state(PATH, THREAD, at, {"count": 5}, "chat", schemas=schemas(), assistant_id="probe"))
    assert config == {"configurable": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": "c3"}}
    assert script.asked[0].json == {"values": {"count": 5}, "as_node": "chat", "checkpoint": at["configurable"]}
    # As a local graph's update_state returns it.
    graph, local_config = paused_probe()
    local = graph.update_state(local_config, {"count": 5}, as_node="ask")
    assert set(local["configurable"]) == set(config["configurable"])


def test_update_state_on_a_thread_the_server_does_not_have_creates_it_first() -> None:
    script = Script(
        {
            ("POST", f"{PATH}/state"): [NOT_FOUND, Response(200, WRITTEN)],
            ("POST", "/threads"): Response(200, {"thread_id": THREAD}),
        }
    )
    config = script.run(update_state(PATH, THREAD, CONFIG, {"count": 1}, None, schemas=schemas(), assistant_id="probe"))
    assert config["configurable"]["checkpoint_id"] == "c3"
    assert script.trail() == [("POST", f"{PATH}/state"), ("POST", "/threads"), ("POST", f"{PATH}/state")]
    assert script.asked[1].json == {"thread_id": THREAD, "if_exists": "do_nothing", "metadata": {"graph_id": "probe"}}
    assert script.asked[0].json == script.asked[2].json == {"values": {"count": 1}}


def test_creating_the_thread_learns_the_graph_id_first_when_unknown() -> None:
    script = Script(
        {
            ("POST", f"{PATH}/state"): [NOT_FOUND, Response(200, WRITTEN)],
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": "a-1"}]),
            ("GET", "/assistants/a-1/schemas"): Response(200, {**PROBE_SCHEMAS, "graph_id": "the-graph"}),
            ("POST", "/threads"): Response(200, {}),
        }
    )
    learned = GraphSchemas()
    script.run(update_state(PATH, THREAD, CONFIG, {"count": 1}, None, schemas=learned, assistant_id="my-assistant"))
    assert script.asked[3].json["metadata"] == {"graph_id": "the-graph"}


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        ({("POST", f"{PATH}/state"): HTML_404}, RemoteCommandError),
        ({("POST", f"{PATH}/state"): Response(200, {"checkpoint": None})}, RemoteProtocolError),
        ({("POST", f"{PATH}/state"): Response(422, {"detail": "Ambiguous update"})}, RemoteCommandError),
        (
            {("POST", f"{PATH}/state"): NOT_FOUND, ("POST", "/threads"): Response(409, {"detail": "conflict"})},
            RemoteCommandError,
        ),
    ],
    ids=["html-404", "no-checkpoint", "refused", "create-refused"],
)
def test_an_update_the_server_does_not_take_fails(answers: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Script(answers).run(
            update_state(PATH, THREAD, CONFIG, {"count": 1}, None, schemas=schemas(), assistant_id="probe")
        )


def test_bulk_update_applies_the_supersteps_and_returns_the_last_checkpoint() -> None:
    after = Response(200, state("c9", 9, parent="c8"))
    script = Script({("POST", "/threads"): Response(200, {}), ("GET", f"{PATH}/state"): [NOT_FOUND, after]})
    supersteps = [
        [StateUpdate({"count": 1}, "chat")],
        [StateUpdate({"count": 2}, "sub"), StateUpdate({"count": 3}, None)],
        [({"count": 4}, None)],  # a (values, as_node) pair, as local takes it
    ]
    config = script.run(bulk_update(PATH, THREAD, supersteps, schemas=schemas(), assistant_id="probe"))
    assert config == {"configurable": {"checkpoint_id": "c9", "thread_id": THREAD, "checkpoint_ns": ""}}
    # The thread's checkpoint before and after tells that the server applied them.
    assert [(r.method, r.path) for r in script.asked] == [
        ("GET", f"{PATH}/state"),
        ("POST", "/threads"),
        ("GET", f"{PATH}/state"),
    ]
    assert script.asked[1].json == {
        "thread_id": THREAD,
        "if_exists": "do_nothing",
        "metadata": {"graph_id": "probe"},
        "supersteps": [
            {"updates": [{"values": {"count": 1}, "as_node": "chat"}]},
            {"updates": [{"values": {"count": 2}, "as_node": "sub"}, {"values": {"count": 3}}]},
            {"updates": [{"values": {"count": 4}}]},
        ],
    }


def test_bulk_update_cannot_honour_a_task_id() -> None:
    with pytest.raises(NotImplementedError, match="task_id"):
        Script({}).run(
            bulk_update(PATH, THREAD, [[StateUpdate({"count": 1}, "chat", "t-1")]], schemas=schemas(), assistant_id="p")
        )


def test_a_server_that_ignores_the_supersteps_gets_them_one_update_at_a_time() -> None:
    # aegra takes POST /threads with supersteps and applies none: the checkpoint does not move.
    unchanged = Response(200, state("c1", 1))
    written = [
        Response(200, {"checkpoint": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": f"c{n}"}})
        for n in (2, 3)
    ]
    script = Script(
        {
            ("POST", "/threads"): Response(200, {}),
            ("GET", f"{PATH}/state"): unchanged,
            ("POST", f"{PATH}/state"): written,
        }
    )
    supersteps = [[StateUpdate({"count": 1}, "chat")], [({"count": 2}, None)]]
    config = script.run(bulk_update(PATH, THREAD, supersteps, schemas=schemas(), assistant_id="probe"))
    assert config["configurable"]["checkpoint_id"] == "c3"
    updates = [r.json for r in script.asked if r.path == f"{PATH}/state" and r.method == "POST"]
    assert updates == [{"values": {"count": 1}, "as_node": "chat"}, {"values": {"count": 2}}]
    # A superstep of several updates cannot be written so: it fails, naming why.
    with pytest.raises(NotImplementedError, match="superstep of several updates"):
        Script({("POST", "/threads"): Response(200, {}), ("GET", f"{PATH}/state"): unchanged}).run(
            bulk_update(PATH, THREAD, [[({"count": 1}, "a"), ({"count": 2}, "b")]], schemas=schemas(), assistant_id="p")
        )


def test_a_bulk_update_of_nothing_fails_before_anything_is_sent_as_locally() -> None:
    for supersteps, message in (([], "No supersteps provided"), ([[]], "No updates provided")):
        with pytest.raises(ValueError, match=message):
            Script({}).run(bulk_update(PATH, THREAD, supersteps, schemas=schemas(), assistant_id="p"))


def test_a_bulk_update_whose_state_names_no_checkpoint_fails() -> None:
    # Neither the threads API nor the state update wrote a checkpoint the state names.
    no_checkpoint = Response(200, {"values": {}})
    script = Script(
        {
            ("POST", "/threads"): Response(200, {}),
            ("GET", f"{PATH}/state"): no_checkpoint,
            ("POST", f"{PATH}/state"): Response(200, {"checkpoint": None}),
        }
    )
    with pytest.raises(RemoteProtocolError, match="without the checkpoint it wrote"):
        script.run(bulk_update(PATH, THREAD, [[StateUpdate({"count": 1}, None)]], schemas=schemas(), assistant_id="p"))


def test_checkpoint_coordinates_and_configs() -> None:
    config = {
        "configurable": {
            "thread_id": "t",
            "checkpoint_ns": "",
            "checkpoint_id": "c",
            "other": 1,
            "checkpoint_map": None,
        }
    }
    assert checkpoint_of(config) == {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}
    assert checkpoint_config({"thread_id": "t", "checkpoint_map": {"": "c0"}, "checkpoint_id": None}) == {
        "configurable": {"thread_id": "t", "checkpoint_map": {"": "c0"}}
    }
    assert checkpoint_config("odd") is None


def test_a_remote_graphs_first_state_read_learns_the_schema_before_it_revives() -> None:
    graph = RemoteGraph("probe", url="http://127.0.0.1:9")
    script = Script(
        {
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": "a-1"}]),
            ("GET", "/assistants/a-1/schemas"): Response(200, PROBE_SCHEMAS),
            ("GET", f"{PATH}/state"): Response(200, state("c1", 1, {"note": NOTE})),
        }
    )
    got = script.run(graph._threads().state(CONFIG, subgraphs=False))
    assert script.trail()[-1] == ("GET", f"{PATH}/state")
    assert got.values == {"note": NOTE}
