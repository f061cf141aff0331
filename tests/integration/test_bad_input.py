"""Bad input and bad servers against a real LangGraph server, for every method.

Each case runs on every method it applies to: the sync and async v1/v2
methods langgraph's ``RemoteGraph`` provides, and v3 run streams (read to
their ``output``). Bad input fails early with an error naming the problem,
unreachable, silent and non-LangGraph servers fail with the library's errors
within the graph's timeouts, and nothing reaches the server that should not.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph.types import Command
from langgraph_sdk import get_sync_client

from remote_graph import (
    RemoteCommandError,
    RemoteConnectionError,
    RemoteGraph,
    RemoteTimeoutError,
    Timeouts,
)
from remote_graph.testing import free_port
from tests.conftest import shared_thread_param
from tests.fake_servers import SilentServer, plain_http_server

pytestmark = pytest.mark.integration

LINEAR = {"x": 1, "log": []}
SILENT = Timeouts(request=2, read=2)


def thread(thread_id: Any = None, **extra: Any) -> Any:
    return {"configurable": {"thread_id": str(uuid.uuid4()) if thread_id is None else thread_id, **extra}}


def on_thread(thread_id: Any) -> Callable[[], Any]:
    return lambda: thread(thread_id)


# --- methods ----------------------------------------------------------------------


async def _drain(items: Any) -> list[Any]:
    return [item async for item in items]


async def _v3_output(graph: RemoteGraph, input: Any, config: Any) -> Any:
    run = await graph.astream_events(input, config, version="v3")
    return await run.output()


@dataclass(frozen=True)
class Method:
    name: str
    call: Callable[[RemoteGraph, Any, Any], Any]  # (graph, input, config)
    kind: str  # "run": starts a run; "state": reads or writes one thread; "server": no config


METHODS = [
    Method("invoke", lambda g, i, c: g.invoke(i, c), "run"),
    Method("invoke_v2", lambda g, i, c: g.invoke(i, c, version="v2"), "run"),
    Method("stream", lambda g, i, c: list(g.stream(i, c)), "run"),
    Method("stream_events_v3", lambda g, i, c: g.stream_events(i, c, version="v3").output, "run"),
    Method("get_state", lambda g, i, c: g.get_state(c), "state"),
    Method("get_state_history", lambda g, i, c: list(g.get_state_history(c)), "state"),
    Method("update_state", lambda g, i, c: g.update_state(c, i), "state"),
    Method("ainvoke", lambda g, i, c: asyncio.run(g.ainvoke(i, c)), "run"),
    Method("astream", lambda g, i, c: asyncio.run(_drain(g.astream(i, c))), "run"),
    Method("astream_events_v3", lambda g, i, c: asyncio.run(_v3_output(g, i, c)), "run"),
    Method("aget_state", lambda g, i, c: asyncio.run(g.aget_state(c)), "state"),
    Method("aget_state_history", lambda g, i, c: asyncio.run(_drain(g.aget_state_history(c))), "state"),
    Method("aupdate_state", lambda g, i, c: asyncio.run(g.aupdate_state(c, i)), "state"),
    Method("get_graph", lambda g, i, c: g.get_graph(), "server"),
    Method("aget_graph", lambda g, i, c: asyncio.run(g.aget_graph()), "server"),
]
V3 = frozenset({"stream_events_v3", "astream_events_v3"})


# --- cases ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One bad input or bad server, and what every method it applies to must raise.

    Attributes:
        server: ``"langgraph"`` (the embedded server), ``"unknown"`` (it, with
            an assistant it does not serve), ``"down"``, ``"plain"`` or ``"silent"``.
        kinds: The method kinds the case applies to.
        also: Names of other methods it applies to.
        raises: The exception every such method raises, or ``{method: exception}``.
        match: A pattern the message must contain.
        statuses: For ``RemoteCommandError``, the HTTP statuses allowed.
        nothing_created: Check the server's thread count did not change.
    """

    id: str
    server: str
    kinds: frozenset[str]
    raises: type[BaseException] | dict[str, type[BaseException]]
    also: frozenset[str] = frozenset()
    config: Callable[[], Any] = thread
    input: Any = None
    match: str | None = None
    statuses: tuple[int, ...] = ()
    nothing_created: bool = False

    def applies_to(self, method: Method) -> bool:
        return method.kind in self.kinds or method.name in self.also

    def expected(self, method: Method) -> type[BaseException]:
        if isinstance(self.raises, dict):
            return self.raises.get(method.name, self.raises["*"])
        return self.raises


WITH_CONFIG = frozenset({"run", "state"})
ALL = frozenset({"run", "state", "server"})

CASES = [
    # C: bad input fails early, naming the problem.
    Case("config-str", "langgraph", WITH_CONFIG, TypeError, config=lambda: "abc", match="config"),
    Case("config-list", "langgraph", WITH_CONFIG, TypeError, config=lambda: [("thread_id", "t")], match="config"),
    Case(
        "configurable-str",
        "langgraph",
        WITH_CONFIG,
        TypeError,
        config=lambda: {"configurable": "t"},
        match="configurable",
    ),
    # Thread ids that are not UUIDs are not bad input: they name threads, as
    # locally (see test_every_method_takes_a_thread_id_that_is_not_a_uuid).
    Case(
        "no-thread",
        "langgraph",
        frozenset({"state"}),
        ValueError,
        config=lambda: {"configurable": {}},
        match="thread_id",
    ),
    # Kept working: each fails with the library's error.
    # Every method names the graph it did not find; the server's own 422 (a v3
    # run's start) lists the graphs it serves, and so does the client's 404.
    Case(
        "unknown-assistant",
        "unknown",
        ALL,
        RemoteCommandError,
        match="no-such-graph",
        statuses=(404, 422),
    ),
    Case(
        "unknown-graph-lists-the-served-ones",
        "unknown",
        frozenset({"state", "server"}),
        RemoteCommandError,
        match="no graph 'no-such-graph'.*serves: .*linear",
        statuses=(404,),
    ),
    # The SDK's transport retries a refused connection for about 7 s, so this
    # runs on one method of each family (the unit tests cover every method).
    Case(
        "server-down",
        "down",
        frozenset(),
        RemoteConnectionError,
        also=frozenset({"invoke", "stream_events_v3", "get_state", "ainvoke", "astream_events_v3", "aget_graph"}),
    ),
    Case(
        "not-json",
        "langgraph",
        frozenset({"run"}),
        TypeError,
        also=frozenset({"update_state", "aupdate_state"}),
        input={"x": object(), "log": []},
        match="JSON serializable",
    ),
    Case(
        "resume-nothing-pending",
        "langgraph",
        frozenset({"run"}),
        # Every run method runs from the start, as a local graph does on a
        # thread with no checkpoint, and node a finds no x: a KeyError, as locally.
        KeyError,
        input=Command(resume="yes"),
    ),
    Case("plain-http-server", "plain", ALL, RemoteCommandError, statuses=(404, 501)),
    # B: a server that never answers times out within the graph's timeouts.
    Case("silent-server", "silent", ALL, RemoteTimeoutError),
]

MATRIX = [
    pytest.param(case, method, id=f"{case.id}-{method.name}")
    for case in CASES
    for method in METHODS
    if case.applies_to(method)
]


# --- servers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_url() -> Iterator[str]:
    with plain_http_server() as url:
        yield url


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        left_open = server.stop()
    assert left_open == [], "the client left connections to the silent server open"


def thread_count(server_url: str) -> int:
    with get_sync_client(url=server_url) as client:
        return int(client.threads.count())


@pytest.fixture
def graph_for(
    server_url: str, plain_url: str, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], RemoteGraph]]:
    made: list[RemoteGraph] = []

    def make(server: str) -> RemoteGraph:
        if server == "silent":
            silent = request.getfixturevalue("silent_server")
            graph = RemoteGraph("linear", url=silent.url, timeouts=SILENT)
        else:
            url = {
                "langgraph": server_url,
                "unknown": server_url,
                "down": f"http://127.0.0.1:{free_port()}",
                "plain": plain_url,
            }[server]
            graph = RemoteGraph(
                "no-such-graph" if server == "unknown" else "linear", url=url, timeouts=Timeouts(request=10, read=10)
            )
        made.append(graph)
        return graph

    yield make
    for graph in made:
        if graph.sync_client is not None:
            graph.sync_client.close()


# --- tests ------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("case", "method"), MATRIX)
def test_every_method_fails_cleanly(
    case: Case, method: Method, server_url: str, graph_for: Callable[[str], RemoteGraph]
) -> None:
    graph = graph_for(case.server)
    before = thread_count(server_url) if case.nothing_created else None
    started = time.monotonic()
    with pytest.raises(case.expected(method), match=case.match) as info:
        method.call(graph, LINEAR if case.input is None else case.input, case.config())
    if case.statuses and isinstance(info.value, RemoteCommandError):
        assert info.value.status in case.statuses
    if case.server == "silent":
        # A call waits on at most two requests (a run's start may read the state first).
        assert time.monotonic() - started < 2 * SILENT.read + 3
    if before is not None:
        assert thread_count(server_url) == before, "a refused call reached the server"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("method", [m for m in METHODS if m.kind in WITH_CONFIG], ids=lambda m: m.name)
@pytest.mark.parametrize(
    "base",
    # The literal ids name one server thread for every method's test (and test_thread_ids').
    [*map(shared_thread_param, (".", "..", "")), "/", "a?b=1", "a b #c", "x" * 1000, shared_thread_param(5)],
    ids=["dot", "dotdot", "empty", "slash", "query", "space", "long", "int"],
)
def test_every_method_takes_a_thread_id_that_is_not_a_uuid(
    method: Method, base: Any, server_url: str, graph_for: Callable[[str], RemoteGraph]
) -> None:
    # Locally each names a thread (str(thread_id)); remotely it names its UUID5.
    # A random tail keeps the thread fresh where a literal allows one.
    thread_id = base if base in (".", "..", "", 5) else f"{uuid.uuid4().hex[:8]}{base}"
    graph = graph_for("langgraph")
    graph.invoke(LINEAR, thread(thread_id))
    method.call(graph, LINEAR, thread(thread_id))
    snapshot = graph.get_state(thread(thread_id))
    assert "x" in snapshot.values and snapshot.config["configurable"]["thread_id"] == str(thread_id)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_garbage_checkpoint_id(flavour: str, server_url: str, graph_for: Callable[[str], RemoteGraph]) -> None:
    graph = graph_for("langgraph")
    config = thread()
    assert graph.invoke(LINEAR, config) == {"x": 20, "log": ["a", "b"]}
    garbage = thread(config["configurable"]["thread_id"], checkpoint_id="not-a-checkpoint")
    if flavour == "sync":
        snapshot, history = graph.get_state(garbage), list(graph.get_state_history(garbage))
        with pytest.raises(RemoteCommandError, match="checkpoint") as info:
            graph.stream_events(LINEAR, garbage, version="v3").output
    else:
        snapshot = asyncio.run(graph.aget_state(garbage))
        history = asyncio.run(_drain(graph.aget_state_history(garbage)))
        with pytest.raises(RemoteCommandError, match="checkpoint") as info:
            asyncio.run(_v3_output(graph, LINEAR, garbage))
    # As a local graph reads a checkpoint it does not have: an empty snapshot, no history.
    assert snapshot.values == {} and snapshot.next == () and snapshot.metadata is None
    assert history == []
    assert info.value.status == 422


@pytest.mark.parametrize("url", ["127.0.0.1:2024", "localhost:2024", "ftp://127.0.0.1:2024", "http://"])
def test_a_url_without_an_http_scheme_fails_at_construction(url: str) -> None:
    with pytest.raises(ValueError, match="url"):
        RemoteGraph("linear", url=url)
