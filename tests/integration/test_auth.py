"""Against a server with custom auth: credentials on every request, refusals fast, no secret anywhere.

The module starts its own embedded ``langgraph dev`` on ``app/auth/langgraph.json``:
bearer tokens for two users (``app/auth/auth.py``), threads stamped with their
owner and filtered by it. The server appends every request it authenticates to
a log (method, path, user, the token's tag), so a test reads back exactly what
the library sent. Each test's tokens carry a fresh tag (``token-alice.<tag>``),
so its requests are its own. Every method runs sync and async, with the token
passed both ways (``headers=``, ``api_key=``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from remote_graph import RemoteCommandError, RemoteGraph, RunStatus
from remote_graph.errors import RunNotFoundError
from remote_graph.pytest_plugin import server_python
from remote_graph.testing import LangGraphDevServer
from tests.integration.cutproxy import RESUME_CUT_BYTES, CuttingProxy

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).resolve().parents[2] / "app" / "auth" / "langgraph.json"


# --- the server and its log -----------------------------------------------------------


@dataclass
class AuthServer:
    url: str
    log: Path
    server: LangGraphDevServer

    def mark(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def since(self, mark: int) -> list[dict[str, Any]]:
        """The requests the server authenticated (or refused) after ``mark``."""
        if not self.log.exists():
            return []
        with self.log.open("rb") as log:
            log.seek(mark)
            return [json.loads(line) for line in log.read().decode().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def auth_server(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    log = tmp_path_factory.mktemp("auth") / "requests.jsonl"
    try:
        server = LangGraphDevServer(CONFIG, env={"AUTH_TEST_LOG": str(log)}, python=server_python(pytestconfig))
    except RuntimeError as exc:  # Python 3.10 with no server interpreter named
        pytest.skip(str(exc))
    with server:
        yield AuthServer(server.url, log, server)


@dataclass
class User:
    """One user's credential for one test: its token and the tag that marks its requests."""

    name: str
    tag: str

    @property
    def token(self) -> str:
        return f"token-{self.name}.{self.tag}"

    def graph(self, url: str, assistant: str, how: str = "headers", **kwargs: Any) -> RemoteGraph:
        if how == "headers":
            return RemoteGraph(assistant, url=url, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)
        return RemoteGraph(assistant, url=url, api_key=self.token, **kwargs)


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture
def alice(tag: str) -> User:
    return User("alice", tag)


@pytest.fixture
def bob(tag: str) -> User:
    return User("bob", tag)


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def no_secret_logged(caplog: pytest.LogCaptureFixture, tag: str) -> Iterator[None]:
    """No log record of any library, at any level, quotes a test's token."""
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "")
        assert tag not in text, f"a {record.name} record quotes a token: {text[:300]}"


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        item = todo.pop()
        if item is not None and id(item) not in seen:
            seen.add(id(item))
            yield item
            todo += [item.__cause__, item.__context__]


def assert_no_secret(error: BaseException, secret: str) -> None:
    for item in chain(error):
        assert secret not in str(item) and secret not in repr(item), f"{type(item).__name__} quotes the token: {item!r}"


def assert_all_by(entries: list[dict[str, Any]], user: User) -> None:
    """Every request the server saw came with ``user``'s token."""
    assert entries, "the server saw no request"
    strangers = [e for e in entries if (e["user"], e["tag"]) != (user.name, user.tag)]
    assert not strangers, f"requests without {user.name}'s token: {strangers}"


# --- every method, sync and async ----------------------------------------------------------


def every_method_sync(graph: RemoteGraph, config: dict[str, Any]) -> None:
    run = graph.stream_events({"x": 1}, config, version="v3")
    assert run.interrupted and run.interrupts[0].value == "x is 2; go on?"
    resumed = graph.stream_events(Command(resume="yes"), config, version="v3")
    assert resumed.output == {"x": 2, "answer": "yes"}
    assert graph.get_state(config).values == {"x": 2, "answer": "yes"}
    assert graph.update_state(config, {"x": 10})["configurable"]["thread_id"] == config["configurable"]["thread_id"]
    assert len(list(graph.get_state_history(config))) >= 4
    assert graph.invoke({"x": 1}, config)["x"] == 2
    assert [part for part in graph.stream({"x": 5}, config, stream_mode="values")][-1]["x"] == 6


async def every_method_async(graph: RemoteGraph, config: dict[str, Any]) -> None:
    run = await graph.astream_events({"x": 1}, config, version="v3")
    assert await run.interrupted() and (await run.interrupts())[0].value == "x is 2; go on?"
    resumed = await graph.astream_events(Command(resume="yes"), config, version="v3")
    assert await resumed.output() == {"x": 2, "answer": "yes"}
    assert (await graph.aget_state(config)).values == {"x": 2, "answer": "yes"}
    assert (await graph.aupdate_state(config, {"x": 10}))["configurable"]["thread_id"] == config["configurable"][
        "thread_id"
    ]
    assert len([s async for s in graph.aget_state_history(config)]) >= 4
    assert (await graph.ainvoke({"x": 1}, config))["x"] == 2
    assert [part async for part in graph.astream({"x": 5}, config, stream_mode="values")][-1]["x"] == 6


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["headers", "api_key"])
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_every_method_sends_the_credentials_on_every_request(
    auth_server: AuthServer, alice: User, flavour: str, how: str
) -> None:
    mark = auth_server.mark()
    graph, config = alice.graph(auth_server.url, "gate", how), thread()
    if flavour == "sync":
        every_method_sync(graph, config)
    else:
        asyncio.run(every_method_async(graph, config))
    entries = auth_server.since(mark)
    assert_all_by(entries, alice)
    asked = {
        (e["method"], e["path"].replace(str(graph.server_thread_id(config["configurable"]["thread_id"])), "{t}"))
        for e in entries
    }
    # The runs' own requests (state read before the resume, the start that
    # streams, the record read at the end, the rejoin that confirms it) and
    # the thread methods' requests.
    for expected in [
        ("GET", "/threads/{t}/state"),
        ("POST", "/threads/{t}/state"),
        ("POST", "/threads/{t}/history"),
        ("POST", "/threads/{t}/runs/stream"),
    ]:
        assert expected in asked, f"{expected} not among {sorted(asked)}"
    assert any(m == "GET" and p.endswith("/stream") and "/runs/" in p for m, p in asked)
    assert any(m == "GET" and "/runs/" in p and not p.endswith("/stream") for m, p in asked)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_reconnects_through_a_cutting_proxy_carry_the_credentials(
    auth_server: AuthServer, alice: User, flavour: str
) -> None:
    mark = auth_server.mark()
    with CuttingProxy(auth_server.url, cut_range=RESUME_CUT_BYTES, seed=3) as proxy:
        graph = alice.graph(proxy.url, "ticks")
        if flavour == "sync":
            run = graph.stream_events({"n": 300}, thread(), version="v3")
            custom, output = list(run.custom), run.output
        else:

            async def go() -> tuple[list[Any], Any]:
                run = await graph.astream_events({"n": 300}, thread(), version="v3")
                return [item async for item in run.custom], await run.output()

            custom, output = asyncio.run(go())
        assert [item["i"] for item in custom] == list(range(300)) and output["log"] == ["ticked"]
        assert proxy.cuts >= 3, "the proxy cut too little to test reconnects"
    entries = auth_server.since(mark)
    assert_all_by(entries, alice)
    streams = [e for e in entries if e["method"] == "GET" and e["path"].endswith("/stream")]
    assert len(streams) > proxy.cuts // 2, "the reconnects did not reach the server"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_the_cancel_on_abandon_carries_the_credentials(auth_server: AuthServer, alice: User, flavour: str) -> None:
    mark = auth_server.mark()
    graph, config = alice.graph(auth_server.url, "slow"), thread()
    if flavour == "sync":
        with graph.stream_events({"n": 100}, config, version="v3") as run:
            next(iter(run.custom))
        status = run.snapshot().status
    else:

        async def go() -> str:
            async with await graph.astream_events({"n": 100}, config, version="v3") as run:
                await run.custom.__aiter__().__anext__()
            return run.snapshot().status

        status = asyncio.run(go())
    assert status == "cancelled"
    entries = auth_server.since(mark)
    assert_all_by(entries, alice)
    assert any(e["method"] == "POST" and e["path"].endswith("/cancel") for e in entries)


# --- refusals fail fast ------------------------------------------------------------------

SYNC_CALLS: list[tuple[str, Callable[[RemoteGraph, dict[str, Any]], Any]]] = [
    ("stream_events_v3", lambda g, c: g.stream_events({"x": 1}, c, version="v3").output),
    ("stream_events_v3_resume", lambda g, c: g.stream_events(Command(resume="yes"), c, version="v3").output),
    ("invoke", lambda g, c: g.invoke({"x": 1}, c)),
    ("stream", lambda g, c: list(g.stream({"x": 1}, c))),
    ("get_state", lambda g, c: g.get_state(c)),
    ("update_state", lambda g, c: g.update_state(c, {"x": 99})),
    ("get_state_history", lambda g, c: list(g.get_state_history(c))),
]


async def _v3(graph: RemoteGraph, input: Any, config: dict[str, Any]) -> Any:
    run = await graph.astream_events(input, config, version="v3")
    return await run.output()


async def _all(items: Any) -> list[Any]:
    return [item async for item in items]


ASYNC_CALLS: list[tuple[str, Callable[[RemoteGraph, dict[str, Any]], Any]]] = [
    ("astream_events_v3", lambda g, c: asyncio.run(_v3(g, {"x": 1}, c))),
    ("astream_events_v3_resume", lambda g, c: asyncio.run(_v3(g, Command(resume="yes"), c))),
    ("ainvoke", lambda g, c: asyncio.run(g.ainvoke({"x": 1}, c))),
    ("astream", lambda g, c: asyncio.run(_all(g.astream({"x": 1}, c)))),
    ("aget_state", lambda g, c: asyncio.run(g.aget_state(c))),
    ("aupdate_state", lambda g, c: asyncio.run(g.aupdate_state(c, {"x": 99}))),
    ("aget_state_history", lambda g, c: asyncio.run(_all(g.aget_state_history(c)))),
]
CALLS = SYNC_CALLS + ASYNC_CALLS
CALL_IDS = [name for name, _ in CALLS]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["headers", "api_key"])
def test_a_wrong_token_fails_fast_with_the_servers_refusal(auth_server: AuthServer, tag: str, how: str) -> None:
    # The server's 401 repeats the token it refused; no error may.
    mallory = User("mallory", tag)
    mark = auth_server.mark()
    for name, call in CALLS:
        graph = mallory.graph(auth_server.url, "gate", how)
        with pytest.raises(RemoteCommandError) as info:
            call(graph, thread())
        assert info.value.status == 401, name
        assert "unknown token" in str(info.value) and "***" in str(info.value), name
        assert_no_secret(info.value, mallory.token)
        assert_no_secret(info.value, tag)
    entries = auth_server.since(mark)
    # Refused once per call, never retried: the v3 resume reads the state first, nothing more.
    assert all(e["user"] == "refused" for e in entries)
    assert len(entries) == len(CALLS), entries


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["headers", "api_key"])
@pytest.mark.parametrize(
    "value",
    ["{token}\n", "{token}\r\n", " {token}", "{token}é"],
    ids=["trailing-newline", "crlf", "leading-space", "non-ascii"],
)
def test_a_token_http_cannot_carry_fails_when_the_graph_is_built(
    auth_server: AuthServer, alice: User, how: str, value: str
) -> None:
    mark = auth_server.mark()
    with pytest.raises(ValueError) as info:
        if how == "headers":
            RemoteGraph(
                "gate", url=auth_server.url, headers={"Authorization": value.format(token=f"Bearer {alice.token}")}
            )
        else:
            RemoteGraph("gate", url=auth_server.url, api_key=value.format(token=alice.token))
    assert ("headers['Authorization']" if how == "headers" else "api_key") in str(info.value)
    assert "cannot carry" in str(info.value)
    assert_no_secret(info.value, alice.tag)
    assert auth_server.since(mark) == []


# --- another user's thread ----------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["headers", "api_key"])
def test_another_users_thread_is_out_of_reach_and_never_written(
    auth_server: AuthServer, alice: User, bob: User, how: str
) -> None:
    config = thread()
    owner = alice.graph(auth_server.url, "gate")
    assert owner.stream_events({"x": 1}, config, version="v3").interrupted
    before = owner.get_state(config)
    history = len(list(owner.get_state_history(config)))
    intruder = bob.graph(auth_server.url, "gate", how)
    mark = auth_server.mark()
    for name, call in CALLS:
        if "get_state" in name:
            # To bob the thread does not exist (the server answers 404), and a
            # thread that does not exist reads as empty, as locally.
            got = call(intruder, config)
            assert got == [] if "history" in name else (got.values, got.next, got.tasks) == ({}, (), ()), (name, got)
            continue
        with pytest.raises(RemoteCommandError) as info:
            call(intruder, config)
        # A run is refused as for a thread it cannot find; a write, which
        # first creates the thread it cannot find, as for one it cannot have.
        assert info.value.status == (409 if "update_state" in name else 404), (name, info.value)
        assert_no_secret(info.value, bob.token)
    assert_all_by(auth_server.since(mark), bob)
    after = owner.get_state(config)
    assert (after.values, after.next, after.config) == (before.values, before.next, before.config)
    assert len(list(owner.get_state_history(config))) == history
    # Still alice's to resume.
    assert owner.stream_events(Command(resume="mine"), config, version="v3").output == {"x": 2, "answer": "mine"}


# --- a resume on a thread with no checkpoint -------------------------------------------------


def local_gate() -> Any:
    """The served gate, compiled locally (``app/auth/graphs.py``, under a name of its own)."""
    name = "remote_graph_auth_app_graphs"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, CONFIG.parent / "graphs.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its annotations are resolved through it
        spec.loader.exec_module(module)
    return module.build_gate().compile(checkpointer=InMemorySaver())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_v3_resume_on_a_fresh_thread_runs_from_the_start_like_local(
    auth_server: AuthServer, alice: User, flavour: str
) -> None:
    local, config = local_gate(), thread()
    expected = local.stream_events(Command(resume="yes"), config, version="v3")
    expected_values, expected_interrupts = list(expected.values), [i.value for i in expected.interrupts]
    graph = alice.graph(auth_server.url, "gate")
    if flavour == "sync":
        run = graph.stream_events(Command(resume="yes"), thread(), version="v3")
        values, interrupts = list(run.values), [i.value for i in run.interrupts]
    else:

        async def go() -> tuple[list[Any], list[Any]]:
            run = await graph.astream_events(Command(resume="yes"), thread(), version="v3")
            return [v async for v in run.values], [i.value for i in await run.interrupts()]

        values, interrupts = asyncio.run(go())
    assert (values, interrupts) == (expected_values, expected_interrupts)
    assert values[-1] == {"x": 1} and interrupts == ["x is 1; go on?"]


@pytest.mark.timeout(60)
def test_an_invoke_resume_on_a_fresh_thread_runs_from_the_start_like_local(
    auth_server: AuthServer, alice: User
) -> None:
    expected = local_gate().invoke(Command(resume="yes"), thread())
    got = alice.graph(auth_server.url, "gate").invoke(Command(resume="yes"), thread())
    assert got["x"] == expected["x"] == 1 and [i.value for i in got["__interrupt__"]] == ["x is 1; go on?"]


# --- credentials from the environment -------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("variable", ["LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"])
def test_the_api_key_comes_from_the_environment_as_the_sdk_reads_it(
    auth_server: AuthServer, alice: User, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, alice.token + "\n")  # as `export X=$(cat token)` leaves it
    mark = auth_server.mark()
    graph, config = RemoteGraph("gate", url=auth_server.url), thread()
    assert graph.stream_events({"x": 1}, config, version="v3").interrupted
    assert asyncio.run(graph.aget_state(config)).next == ("ask",)
    assert_all_by(auth_server.since(mark), alice)
    # An empty api_key sends none, whatever the environment holds.
    with pytest.raises(RemoteCommandError) as info:
        RemoteGraph("gate", url=auth_server.url, api_key="").get_state(config)
    assert info.value.status == 401


def test_another_users_run_cannot_be_joined_or_managed(auth_server: AuthServer, alice: User, bob: User) -> None:
    """Bob may not see Alice's run: a join, a read and a cancel of it each fail as not found, and it goes on."""
    mine = alice.graph(auth_server.url, "ticks")
    handle = mine.start({"n": 3}, thread())
    theirs = bob.graph(auth_server.url, "ticks")
    with pytest.raises(RunNotFoundError, match="may not see it") as caught:
        list(theirs.join(handle.run_id, thread_id=handle.thread_id))
    assert_no_secret(caught.value, bob.token)
    with pytest.raises(RunNotFoundError):
        theirs.get_run(handle.run_id, thread_id=handle.thread_id)
    assert handle.wait(30).status is RunStatus.COMPLETED
    events = list(mine.join(handle.run_id, thread_id=handle.thread_id))
    assert [e["params"]["data"]["i"] for e in events if e["method"] == "custom"] == [0, 1, 2]
