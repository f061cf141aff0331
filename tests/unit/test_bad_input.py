"""Bad input and bad servers, without a LangGraph server.

Every method fails early on input it cannot send, never hangs past the
graph's ``timeouts``, and raises the library's errors instead of httpx's. The
server side is an ``httpx.MockTransport`` (which records what was sent) or a
local socket that accepts connections and never answers.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any
from uuid import uuid5

import httpx
import pytest
from langgraph.pregel.remote import RemoteGraph as UpstreamRemoteGraph
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph import (
    RemoteCommandError,
    RemoteConnectionError,
    RemoteGraph,
    RemoteGraphError,
    RemoteProtocolError,
    RemoteTimeoutError,
    Timeouts,
)
from remote_graph._core.thread_ids import THREAD_ID_NAMESPACE
from remote_graph._guard import GUARDED
from tests.fake_servers import SilentServer

BASE = "http://remote.test"
INPUT = {"x": 1, "log": []}
THREAD = "6f1c5a2e-8d9b-4e7a-9c3d-2b1a0f4e5d6c"


def on_thread(thread_id: Any = THREAD, **extra: Any) -> Any:
    return {"configurable": {"thread_id": thread_id, **extra}}


# --- the calls, sync and async ---------------------------------------------------

Call = Callable[[RemoteGraph, Any], Any]


async def _drain(items: Any) -> list[Any]:
    return [item async for item in items]


async def _v3_output(graph: RemoteGraph, config: Any) -> Any:
    run = await graph.astream_events(INPUT, config, version="v3")
    return await run.output()


# (name, call(graph, config), addresses one thread)
SYNC_CALLS: list[tuple[str, Call, bool]] = [
    ("invoke", lambda g, c: g.invoke(INPUT, c), False),
    ("invoke_v2", lambda g, c: g.invoke(INPUT, c, version="v2"), False),
    ("stream", lambda g, c: list(g.stream(INPUT, c)), False),
    ("stream_events_v3", lambda g, c: g.stream_events(INPUT, c, version="v3").output, False),
    ("get_state", lambda g, c: g.get_state(c), True),
    ("get_state_history", lambda g, c: list(g.get_state_history(c)), True),
    ("update_state", lambda g, c: g.update_state(c, {"x": 2}), True),
]
ASYNC_CALLS: list[tuple[str, Call, bool]] = [
    ("ainvoke", lambda g, c: asyncio.run(g.ainvoke(INPUT, c)), False),
    ("astream", lambda g, c: asyncio.run(_drain(g.astream(INPUT, c))), False),
    ("astream_events_v3", lambda g, c: asyncio.run(_v3_output(g, c)), False),
    ("aget_state", lambda g, c: asyncio.run(g.aget_state(c)), True),
    ("aget_state_history", lambda g, c: asyncio.run(_drain(g.aget_state_history(c))), True),
    ("aupdate_state", lambda g, c: asyncio.run(g.aupdate_state(c, {"x": 2})), True),
]
CALLS = SYNC_CALLS + ASYNC_CALLS
# Calls that take no config: they only meet the server.
SERVER_CALLS: list[tuple[str, Call, bool]] = [
    ("get_graph", lambda g, c: g.get_graph(), False),
    ("aget_graph", lambda g, c: asyncio.run(g.aget_graph()), False),
]
# Calls that only check the config: they send nothing either way.
CONFIG_ONLY_CALLS: list[tuple[str, Call, bool]] = [
    ("get_graph", lambda g, c: g.get_graph(c), False),
    ("aget_graph", lambda g, c: asyncio.run(g.aget_graph(c)), False),
    ("bulk_update_state", lambda g, c: g.bulk_update_state(c, []), False),
    ("abulk_update_state", lambda g, c: asyncio.run(g.abulk_update_state(c, [])), False),
    ("stream_events_v2", lambda g, c: g.stream_events(INPUT, c), False),
    ("with_config", lambda g, c: g.with_config(c), False),
]


def ids(calls: list[tuple[str, Call, bool]]) -> list[str]:
    return [name for name, _, _ in calls]


# --- fake servers ---------------------------------------------------------------


class MockServer:
    """SDK clients over an ``httpx.MockTransport`` that records every request.

    Args:
        respond: Answers every request, except (unless ``assistants``) the
            search for the graph's assistant: that is refused, as by an auth
            that hides assistants, so the graph's schemas stay unknown and
            ``respond`` sees only what the method itself sends.
        assistants: ``respond`` answers the assistant search too.
    """

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response], *, assistants: bool = False) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond
        self._assistants = assistants

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self._assistants and (request.method, request.url.path) == ("POST", "/assistants/search"):
            return httpx.Response(403, json={"detail": "Forbidden"})
        return self._respond(request)

    def graph(self, **kwargs: Any) -> RemoteGraph:
        # A graph per call: the async client passed in serves the first loop that uses it.
        transport = httpx.MockTransport(self)
        return RemoteGraph(
            "linear",
            client=LangGraphClient(httpx.AsyncClient(transport=transport, base_url=BASE)),
            sync_client=SyncLangGraphClient(httpx.Client(transport=transport, base_url=BASE)),
            **kwargs,
        )


def thread_requests(server: MockServer) -> list[httpx.Request]:
    """What was sent about a thread: a graph's first call also reads its assistant's schemas."""
    return [request for request in server.requests if not request.url.path.startswith("/assistants")]


def _refuse(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"nothing should be sent, got {request.method} {request.url}")


@pytest.fixture
def nothing_sent() -> Iterator[MockServer]:
    server = MockServer(_refuse)
    yield server
    assert server.requests == []


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        left_open = server.stop()
    assert server.accepted, "the client never connected"
    assert left_open == [], "the client left connections open"


# --- C: bad input fails early, naming the problem ----------------------------------


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS + CONFIG_ONLY_CALLS, ids=ids(CALLS + CONFIG_ONLY_CALLS))
@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("abc", "config"),
        (["thread"], "config"),
        ({"configurable": "abc"}, "configurable"),
        ({"metadata": 1}, "metadata"),
    ],
    ids=["str", "list", "configurable-str", "metadata-int"],
)
def test_a_config_that_is_not_a_mapping_is_a_type_error_naming_it(
    nothing_sent: MockServer, name: str, call: Call, _: bool, config: Any, named: str
) -> None:
    with pytest.raises(TypeError, match=named):
        call(nothing_sent.graph(), config)


def _not_found(request: httpx.Request) -> httpx.Response:
    # A refusal every method raises on (a missing thread, 404, reads as an empty one).
    return httpx.Response(409, json={"detail": "no such thread"})


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
@pytest.mark.parametrize(
    ("thread_id", "named"),
    [("user-42", "user-42"), (".", "."), ("..", ".."), ("", ""), ("a/b", "a/b"), ("../runs", "../runs"), (5, "5")],
    ids=["name", "dot", "dotdot", "empty", "slash", "dotdot-slash", "int"],
)
def test_a_thread_id_that_is_not_a_uuid_is_sent_as_its_uuid5(
    name: str, call: Call, _: bool, thread_id: Any, named: str
) -> None:
    # Locally each of these names a thread (str(thread_id)); the server takes
    # only UUIDs, so every method addresses the name's UUID5, and no id can
    # reach the URL path mangled (a dot segment, an empty or split segment).
    server = MockServer(_not_found)
    with pytest.raises(RemoteCommandError):
        call(server.graph(), on_thread(thread_id))
    sent = thread_requests(server)
    assert sent
    expected = f"/threads/{uuid5(THREAD_ID_NAMESPACE, named)}/"
    assert all(request.url.path.startswith(expected) for request in sent), [r.url.path for r in sent]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
@pytest.mark.parametrize(
    "thread_id",
    [THREAD, THREAD.upper(), "{" + THREAD + "}", THREAD.replace("-", "")],
    ids=["canonical", "upper", "braces", "hex"],
)
def test_a_uuid_thread_id_is_sent_as_itself(name: str, call: Call, _: bool, thread_id: str) -> None:
    server = MockServer(_not_found)
    with pytest.raises(RemoteCommandError):
        call(server.graph(), on_thread(thread_id))
    sent = thread_requests(server)
    assert sent
    assert all(request.url.path.startswith(f"/threads/{THREAD}/") for request in sent)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
def test_a_map_that_returns_no_uuid_is_refused_before_sending(
    nothing_sent: MockServer, name: str, call: Call, _: bool
) -> None:
    with pytest.raises(ValueError, match="map_thread_id must return a UUID.*'user-42'"):
        call(nothing_sent.graph(map_thread_id=lambda thread_id: f"x-{thread_id}"), on_thread("user-42"))


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), [c for c in CALLS if c[2]], ids=ids([c for c in CALLS if c[2]]))
@pytest.mark.parametrize("config", [None, {}, {"configurable": {}}], ids=["none", "empty", "no-thread"])
def test_a_thread_method_without_a_thread_names_the_missing_thread_id(
    nothing_sent: MockServer, name: str, call: Call, _: bool, config: Any
) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        call(nothing_sent.graph(), config)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
def test_a_top_level_thread_id_names_the_thread_as_langchain_reads_it(name: str, call: Call, _: bool) -> None:
    # langchain's ensure_config reads a top-level key that is no config key as configurable's.
    server = MockServer(_not_found)
    with pytest.raises(RemoteCommandError):
        call(server.graph(), {"thread_id": "user-42"})
    sent = thread_requests(server)
    assert sent
    expected = f"/threads/{uuid5(THREAD_ID_NAMESPACE, 'user-42')}/"
    assert all(request.url.path.startswith(expected) for request in sent), [r.url.path for r in sent]


def test_a_graph_without_a_server_fails_at_construction_saying_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"RemoteGraph\('g'\) has no server to talk to: pass url="):
        RemoteGraph("g")


@pytest.mark.timeout(10)
def test_a_thread_id_in_the_graphs_own_config_is_mapped_like_any_other() -> None:
    server = MockServer(_not_found)
    graph = server.graph(config=on_thread("user-42"))
    with pytest.raises(RemoteCommandError):
        graph.get_state({"configurable": {"user": "u"}})
    with pytest.raises(RemoteCommandError):
        graph.with_config({"configurable": {"thread_id": ".."}}).invoke(INPUT)
    assert [r.url.path.split("/")[2] for r in thread_requests(server)] == [
        str(uuid5(THREAD_ID_NAMESPACE, "user-42")),
        str(uuid5(THREAD_ID_NAMESPACE, "..")),
    ]
    # A map that returns no UUID fails at construction, and in with_config.
    with pytest.raises(ValueError, match="map_thread_id must return a UUID"):
        server.graph(config=on_thread("user-42"), map_thread_id=str.upper)
    graph = server.graph(map_thread_id=str.upper)
    with pytest.raises(ValueError, match="map_thread_id must return a UUID"):
        graph.with_config(on_thread("user-42"))


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("127.0.0.1:2024", "http"),
        ("localhost:2024", "http"),
        ("ftp://127.0.0.1:2024", "http"),
        ("http://", "http"),
        (" http://127.0.0.1:2024", "http"),
        ("http://127.0.0.1:port", "not a valid URL"),
    ],
)
def test_a_url_that_is_not_http_fails_at_construction_naming_it(url: str, named: str) -> None:
    with pytest.raises(ValueError, match=f"url.*{named}"):
        RemoteGraph("linear", url=url)


# --- B: transport and HTTP errors are the library's, with their cause -------------------


def _raise(error: type[httpx.TransportError]) -> Callable[[httpx.Request], httpx.Response]:
    def respond(request: httpx.Request) -> httpx.Response:
        raise error("injected", request=request)

    return respond


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "call", "_"), CALLS + SERVER_CALLS, ids=ids(CALLS + SERVER_CALLS))
@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (httpx.ConnectError, RemoteConnectionError),
        (httpx.ReadTimeout, RemoteTimeoutError),
        (httpx.ConnectTimeout, RemoteTimeoutError),
        (httpx.RemoteProtocolError, RemoteConnectionError),
    ],
    ids=["connect-error", "read-timeout", "connect-timeout", "protocol-error"],
)
def test_a_transport_error_is_a_remote_error_caused_by_it(
    name: str, call: Call, _: bool, raised: type[httpx.TransportError], expected: type[RemoteGraphError]
) -> None:
    server = MockServer(_raise(raised))
    with pytest.raises(expected) as info:
        call(server.graph(), on_thread())
    assert server.requests
    assert isinstance(info.value.__cause__, raised) or name.endswith("_v3")
    # It names the request it was on: which server, which endpoint.
    assert any(f"({sent.method} {BASE}{sent.url.path})" in str(info.value) for sent in server.requests), info.value


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "call", "_"), CALLS + SERVER_CALLS, ids=ids(CALLS + SERVER_CALLS))
@pytest.mark.parametrize("status", [400, 404, 409, 422, 500, 503])
def test_an_http_error_status_is_a_command_error_with_that_status(name: str, call: Call, _: bool, status: int) -> None:
    if status == 404 and name.removeprefix("a") in ("get_state", "get_state_history"):
        pytest.skip("a thread the server does not have reads as an empty one, as a local thread with no checkpoint")

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"detail": f"refused with {status}"})

    with pytest.raises(RemoteCommandError) as info:
        call(MockServer(respond).graph(), on_thread())
    assert info.value.status == status
    # The server's own words: every method says what it refused.
    assert "refused with" in str(info.value)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "call", "_"), CALLS + SERVER_CALLS, ids=ids(CALLS + SERVER_CALLS))
def test_a_server_answering_html_is_a_remote_error(name: str, call: Call, _: bool) -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>hello</html>", headers={"content-type": "text/html"})

    with pytest.raises(RemoteGraphError) as info:
        call(MockServer(respond).graph(), on_thread())
    if name in ("get_state", "aget_state", "update_state", "aupdate_state", "get_graph", "aget_graph"):
        assert isinstance(info.value, RemoteProtocolError)


SILENT = Timeouts(request=1, read=1)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "call", "_"), CALLS + SERVER_CALLS, ids=ids(CALLS + SERVER_CALLS))
def test_a_server_that_never_answers_times_out_within_the_graphs_timeouts(
    silent: SilentServer, name: str, call: Call, _: bool
) -> None:
    graph = RemoteGraph("linear", url=silent.url, timeouts=SILENT)
    started = time.monotonic()
    try:
        with pytest.raises(RemoteTimeoutError):
            call(graph, on_thread())
    finally:
        assert graph.sync_client is not None
        graph.sync_client.close()
    # One request times out once; a run's start may wait on two (state, then run).
    assert time.monotonic() - started < 3 * SILENT.read + 2


# --- answers that are not errors --------------------------------------------------


@pytest.mark.timeout(10)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_an_unknown_checkpoint_reads_as_an_empty_snapshot_like_local(flavour: str) -> None:
    # What the server answers for a checkpoint id it does not have.
    empty: dict[str, Any] = {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": None,
        "created_at": None,
        "checkpoint": {"checkpoint_id": "garbage", "thread_id": THREAD},
        "parent_checkpoint": None,
        "interrupts": [],
        "checkpoint_id": "garbage",
        "parent_checkpoint_id": None,
    }
    graph = MockServer(lambda request: httpx.Response(200, json=empty)).graph()
    config: Any = on_thread(checkpoint_id="garbage")
    snapshot = graph.get_state(config) if flavour == "sync" else asyncio.run(graph.aget_state(config))
    assert snapshot.values == {} and snapshot.next == () and snapshot.metadata is None and snapshot.tasks == ()
    assert snapshot.config == {"configurable": {"checkpoint_id": "garbage", "thread_id": THREAD}}


# --- the guard keeps each method's shape --------------------------------------------


@pytest.mark.parametrize("name", list(GUARDED))
def test_guarded_methods_keep_their_kind_and_signature(name: str) -> None:
    ours = getattr(RemoteGraph, name)
    wrapped = inspect.unwrap(ours)
    for kind in (inspect.iscoroutinefunction, inspect.isasyncgenfunction, inspect.isgeneratorfunction):
        assert kind(ours) == kind(wrapped)
    assert inspect.signature(ours) == inspect.signature(wrapped)
    assert ours.__doc__ == wrapped.__doc__
    assert getattr(UpstreamRemoteGraph, name, None) is not None
