"""Credentials never reach a message: bad header values fail at construction
naming the header, refusals that repeat a token are redacted, and the API key
comes from the environment as the SDK reads it. No LangGraph server: the SDK
clients run over an ``httpx.MockTransport``."""

from __future__ import annotations

import asyncio
import logging
import pickle
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph import RemoteCommandError, RemoteConnectionError, RemoteGraph, RemoteGraphError, Timeouts
from remote_graph._clients import API_KEY_VARIABLES, ClientSettings, SdkClients, check_url
from remote_graph._redact import check_headers, redact, secrets_of
from remote_graph._shell_common import broken, sanitize, translate
from tests.unit.test_bad_input import BASE, CALLS, Call, MockServer, ids, on_thread

TOKEN = "token-alice-7f3a9c"
_SHORT = Timeouts(request=1, read=1)
BAD_VALUES = {
    "a trailing newline": f"Bearer {TOKEN}\n",
    "a line break inside": f"Bearer {TOKEN}\r\nX-Injected: 1",
    "leading whitespace": f" Bearer {TOKEN}",
    "a non-ASCII character": f"Bearer {TOKEN}é",
    "a NUL": f"Bearer {TOKEN}\x00",
}


def chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and every exception chained to it."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo += [item.__cause__, item.__context__]


def assert_no_secret(error: BaseException, secret: str = TOKEN) -> None:
    for item in chain(error):
        assert secret not in str(item) and secret not in repr(item), (
            f"{type(item).__name__} quotes the secret: {item!r}"
        )


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in API_KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# --- a value HTTP cannot carry fails when the graph is built ---------------------------


@pytest.mark.parametrize("value", list(BAD_VALUES.values()), ids=list(BAD_VALUES))
def test_a_header_value_http_cannot_carry_fails_at_construction_naming_the_header(value: str) -> None:
    with pytest.raises(ValueError, match=r"headers\['Authorization'\] has a value HTTP cannot carry") as info:
        RemoteGraph("g", url=BASE, headers={"Authorization": value})
    assert_no_secret(info.value)


@pytest.mark.parametrize("value", list(BAD_VALUES.values()), ids=list(BAD_VALUES))
def test_an_api_key_http_cannot_carry_fails_at_construction(value: str) -> None:
    with pytest.raises(ValueError, match="api_key has a value HTTP cannot carry") as info:
        RemoteGraph("g", url=BASE, api_key=value)
    assert_no_secret(info.value)


def test_a_client_passed_in_with_a_bad_header_fails_at_construction() -> None:
    client = httpx.Client(base_url=BASE, headers={"x-api-key": f"{TOKEN}\n"})
    with pytest.raises(ValueError, match=r"sync_client's headers\['x-api-key'\]") as info:
        RemoteGraph("g", sync_client=SyncLangGraphClient(client))
    assert_no_secret(info.value)
    client.close()


def test_header_names_and_types_are_checked() -> None:
    with pytest.raises(ValueError, match="not a valid HTTP header name"):
        check_headers({"Bad Name": "x"})
    with pytest.raises(TypeError, match=r"headers\['X-N'\] must be a str"):
        check_headers({"X-N": 5})
    with pytest.raises(TypeError, match="must be a mapping"):
        check_headers([("a", "b")])
    check_headers({"Authorization": f"Bearer {TOKEN}", "X-Empty": "", "X-Inner": "a \t b"})


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
def test_a_bad_header_given_to_a_call_fails_before_anything_is_sent(name: str, call: Call, _: bool) -> None:
    server = MockServer(lambda request: httpx.Response(500))
    graph = server.graph()
    # A call that takes headers= (a run's, or the SDK's per-request headers).
    bad = {"Authorization": f"Bearer {TOKEN}\n"}
    with pytest.raises(ValueError, match=r"headers\['Authorization'\]") as info:
        if name.startswith("a"):
            asyncio.run(_call_async(graph, name, bad))
        else:
            _call_sync(graph, name, bad)
    assert_no_secret(info.value)
    assert server.requests == []


def _call_sync(graph: RemoteGraph, name: str, headers: dict[str, str]) -> Any:
    config: Any = on_thread()
    if name == "stream_events_v3":
        return graph.stream_events({"x": 1}, config, version="v3", headers=headers).output
    if name in ("invoke", "invoke_v2"):
        return graph.invoke({"x": 1}, config, headers=headers)
    if name == "stream":
        return list(graph.stream({"x": 1}, config, headers=headers))
    if name == "get_state":
        return graph.get_state(config, headers=headers)
    if name == "get_state_history":
        return list(graph.get_state_history(config, headers=headers))
    return graph.update_state(config, {"x": 2}, headers=headers)


async def _call_async(graph: RemoteGraph, name: str, headers: dict[str, str]) -> Any:
    config: Any = on_thread()
    if name == "astream_events_v3":
        run = await graph.astream_events({"x": 1}, config, version="v3", headers=headers)
        return await run.output()
    if name == "ainvoke":
        return await graph.ainvoke({"x": 1}, config, headers=headers)
    if name == "astream":
        return [part async for part in graph.astream({"x": 1}, config, headers=headers)]
    if name == "aget_state":
        return await graph.aget_state(config, headers=headers)
    if name == "aget_state_history":
        return [s async for s in graph.aget_state_history(config, headers=headers)]
    return await graph.aupdate_state(config, {"x": 2}, headers=headers)


# --- a refusal that repeats the credential ---------------------------------------------


def _echo(request: httpx.Request) -> httpx.Response:
    """A careless server: its refusal quotes the credential it was sent."""
    sent = request.headers.get("authorization") or request.headers.get("x-api-key")
    return httpx.Response(401, json={"detail": f"unknown token {sent!r}"})


def _graph_with(credential: str, **kwargs: Any) -> RemoteGraph:
    transport = httpx.MockTransport(_echo)
    headers = {"Authorization": f"Bearer {TOKEN}"} if credential == "headers" else {"x-api-key": TOKEN}
    return RemoteGraph(
        "g",
        client=LangGraphClient(httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)),
        sync_client=SyncLangGraphClient(httpx.Client(transport=transport, base_url=BASE, headers=headers)),
        **kwargs,
    )


@pytest.mark.timeout(10)
@pytest.mark.parametrize("credential", ["headers", "api_key"])
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
def test_a_refusal_quoting_the_credential_is_redacted(
    name: str, call: Call, _: bool, credential: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RemoteCommandError) as info:
        call(_graph_with(credential), on_thread())
    assert info.value.status == 401 and "unknown token" in str(info.value) and "***" in str(info.value)
    assert_no_secret(info.value)
    assert TOKEN not in caplog.text


def test_a_transport_error_quoting_a_header_is_redacted_and_its_cause_too() -> None:
    # What h11 raises for a header value it cannot send (the check at
    # construction keeps the library's own headers from getting there).
    request = httpx.Request("GET", f"{BASE}/threads", headers={"Authorization": f"Bearer {TOKEN}"})
    raised = httpx.LocalProtocolError(f"Illegal header value b'Bearer {TOKEN}\\n'", request=request)
    error = translate(raised, "starting the run")
    assert isinstance(error, RemoteConnectionError) and "could not send the request" in str(error)
    assert "connection failed" not in str(error)
    assert_no_secret(error)
    assert TOKEN not in str(sanitize(raised)) and TOKEN not in repr(raised)
    failure = broken(httpx.ConnectError(f"refused {TOKEN}", request=request))
    assert TOKEN not in failure.detail and TOKEN not in repr(failure) and TOKEN not in str(failure.error)


def test_the_forms_a_credential_takes_in_a_message_are_all_redacted() -> None:
    secrets = secrets_of({"Authorization": f"Bearer {TOKEN}\n", "X-Tenant": "acme-corporation"})
    for text in (f"Bearer {TOKEN}\n", f"b'Bearer {TOKEN}\\n'", f"token {TOKEN!r}", TOKEN):
        assert TOKEN not in redact(text, secrets)
    # Headers that carry no credential are left alone.
    assert redact("tenant acme-corporation", secrets) == "tenant acme-corporation"


def test_a_password_in_the_url_never_reaches_a_message(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError) as info:
        check_url("ftp://alice:pw-9f8e7d6c@example.test/")
    assert "pw-9f8e7d6c" not in str(info.value) and "alice:***@" in str(info.value)
    caplog.set_level(logging.INFO)
    graph = RemoteGraph("g", url="http://alice:pw-9f8e7d6c@127.0.0.1:9/", timeouts=_SHORT)
    with pytest.raises(RemoteConnectionError) as failed:
        graph.get_state(on_thread())
    assert_no_secret(failed.value, "pw-9f8e7d6c")
    assert "pw-9f8e7d6c" not in caplog.text


def test_settings_and_graphs_keep_credentials_out_of_their_repr() -> None:
    settings = ClientSettings(url=BASE, api_key=TOKEN, headers={"Authorization": f"Bearer {TOKEN}"})
    assert TOKEN not in repr(settings)
    graph = RemoteGraph("g", url=BASE, api_key=TOKEN, headers={"Authorization": f"Bearer {TOKEN}"})
    assert TOKEN not in repr(graph) and TOKEN not in repr(graph.__dict__)


def test_a_remote_error_pickles_without_losing_its_attributes() -> None:
    error = RemoteCommandError("http_401: refused", code="http_401", status=401)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is RemoteCommandError and str(back) == str(error)
    assert (back.code, back.status) == ("http_401", 401)
    assert isinstance(pickle.loads(pickle.dumps(RemoteGraphError("x"))), RemoteGraphError)


# --- the API key from the environment ----------------------------------------------------


def _sent_key(graph: RemoteGraph) -> str | None:
    seen: list[str | None] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("x-api-key"))
        if request.url.path == "/assistants/search":
            # As an auth that hides the assistants: the schemas stay unknown.
            return httpx.Response(403, json={"detail": "Forbidden"})
        return httpx.Response(200, json={"values": {}, "next": [], "tasks": [], "metadata": None, "created_at": None})

    assert graph.sync_client is not None
    graph.sync_client.http.client._transport = httpx.MockTransport(respond)
    graph.get_state(on_thread())
    return seen[0]


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"LANGGRAPH_API_KEY": "lg-key-1234"}, "lg-key-1234"),
        ({"LANGSMITH_API_KEY": "ls-key-1234"}, "ls-key-1234"),
        ({"LANGCHAIN_API_KEY": "lc-key-1234"}, "lc-key-1234"),
        ({"LANGSMITH_API_KEY": "ls-key-1234", "LANGGRAPH_API_KEY": "lg-key-1234"}, "lg-key-1234"),
        ({"LANGCHAIN_API_KEY": "lc-key-1234", "LANGSMITH_API_KEY": "ls-key-1234"}, "ls-key-1234"),
        # Read as the SDK reads it: a newline from `export X=$(cat file)` or quotes are stripped.
        ({"LANGSMITH_API_KEY": '"ls-key-1234"\n'}, "ls-key-1234"),
        ({}, None),
    ],
    ids=["langgraph", "langsmith", "langchain", "langgraph-first", "langsmith-before-langchain", "stripped", "none"],
)
def test_without_an_api_key_the_environment_gives_it_as_the_sdk_reads_it(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str | None
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert _sent_key(RemoteGraph("g", url=BASE)) == expected
    # An explicit key wins; an empty one sends none.
    assert _sent_key(RemoteGraph("g", url=BASE, api_key="explicit-key")) == "explicit-key"
    assert _sent_key(RemoteGraph("g", url=BASE, api_key="")) is None


def test_the_async_clients_take_the_key_from_the_environment_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_API_KEY", "ls-key-1234")
    clients = SdkClients(ClientSettings(url=BASE))

    async def headers() -> Any:
        return clients.async_client().http.client.headers.get("x-api-key")

    assert asyncio.run(headers()) == "ls-key-1234"


def test_a_key_in_the_environment_http_cannot_carry_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGSMITH_API_KEY", "ls-key-é-1234")
    with pytest.raises(ValueError, match=r"\$LANGSMITH_API_KEY: api_key has a value HTTP cannot carry") as info:
        RemoteGraph("g", url=BASE)
    assert "ls-key" not in str(info.value)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), CALLS, ids=ids(CALLS))
def test_a_request_that_cannot_be_sent_says_so_without_the_credential(name: str, call: Call, _: bool) -> None:
    # h11's error for a header it cannot send quotes the value; it is this
    # side's fault, not the connection's.
    def respond(request: httpx.Request) -> httpx.Response:
        raise httpx.LocalProtocolError(f"Illegal header value b'Bearer {TOKEN}\\n'")

    transport = httpx.MockTransport(respond)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    graph = RemoteGraph(
        "g",
        client=LangGraphClient(httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)),
        sync_client=SyncLangGraphClient(httpx.Client(transport=transport, base_url=BASE, headers=headers)),
    )
    with pytest.raises(RemoteConnectionError, match="could not send the request") as info:
        call(graph, on_thread())
    assert "connection failed" not in str(info.value)
    assert_no_secret(info.value)
