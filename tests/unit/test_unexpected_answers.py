"""Every answer a method cannot use is a ``RemoteGraphError`` that says what came
back, with its ``status``: redirects (never followed), refusals with no body,
successes with no body or no JSON, an event stream that is not one. No
LangGraph server: the SDK clients run over an ``httpx.MockTransport``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from remote_graph import RemoteCommandError, RemoteGraph, RemoteProtocolError
from remote_graph._core.actions import Response
from remote_graph._core.failure import answer_error
from tests.unit.test_bad_input import BASE, CALLS, SERVER_CALLS, Call, MockServer, ids, on_thread

ELSEWHERE = "http://elsewhere.test/moved/here"
EVERY_CALL = CALLS + SERVER_CALLS


@pytest.mark.timeout(10)
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(("name", "call", "_"), EVERY_CALL, ids=ids(EVERY_CALL))
def test_a_redirect_is_not_followed_and_names_its_status_and_location(
    name: str, call: Call, _: bool, status: int
) -> None:
    server = MockServer(lambda request: httpx.Response(status, headers={"location": ELSEWHERE}))
    with pytest.raises(RemoteProtocolError) as info:
        call(server.graph(), on_thread())
    error = info.value
    assert error.status == status and error.location == ELSEWHERE
    assert str(status) in str(error) and ELSEWHERE in str(error) and "not followed" in str(error)
    # Nothing left for the other address: the credentials stay with the server asked.
    assert server.requests and all(request.url.host == "remote.test" for request in server.requests)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), EVERY_CALL, ids=ids(EVERY_CALL))
def test_a_redirect_through_a_client_built_from_url_is_not_followed(name: str, call: Call, _: bool) -> None:
    server = MockServer(lambda request: httpx.Response(307, headers={"location": ELSEWHERE}))
    graph = RemoteGraph("g", url=BASE, headers={"Authorization": "Bearer token-alice-0042"})
    assert graph.sync_client is not None
    graph.sync_client.http.client._transport = httpx.MockTransport(server)
    graph._clients._build_async = _mocked_async(graph._clients._build_async, server)  # type: ignore[method-assign]
    with pytest.raises(RemoteProtocolError) as info:
        call(graph, on_thread())
    assert info.value.status == 307 and info.value.location == ELSEWHERE
    assert all(request.url.host == "remote.test" for request in server.requests)


def _mocked_async(build: Any, server: MockServer) -> Any:
    def built() -> Any:
        client = build()
        client.http.client._transport = httpx.MockTransport(server)
        return client

    return built


@pytest.mark.timeout(10)
@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize(("name", "call", "_"), EVERY_CALL, ids=ids(EVERY_CALL))
def test_a_refusal_with_an_empty_body_names_its_status(name: str, call: Call, _: bool, status: int) -> None:
    # A reverse proxy's refusal: no body at all.
    with pytest.raises(RemoteCommandError) as info:
        call(MockServer(lambda request: httpx.Response(status)).graph(), on_thread())
    assert info.value.status == status and info.value.code == f"http_{status}"
    assert str(status) in str(info.value) and "None" not in str(info.value)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), EVERY_CALL, ids=ids(EVERY_CALL))
def test_a_success_with_an_empty_body_is_a_protocol_error_with_its_status(name: str, call: Call, _: bool) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        call(MockServer(lambda request: httpx.Response(200)).graph(), on_thread())
    assert info.value.status == 200 and "empty body" in str(info.value)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("name", "call", "_"), EVERY_CALL, ids=ids(EVERY_CALL))
def test_a_success_that_is_not_json_says_what_came(name: str, call: Call, _: bool) -> None:
    # A captive portal, or a proxy's page: 200 and HTML.
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>sign in</html>", headers={"content-type": "text/html"})

    with pytest.raises(RemoteProtocolError) as info:
        call(MockServer(respond).graph(), on_thread())
    assert info.value.status == 200 and "text/html" in str(info.value) and "<html>sign in" in str(info.value)
    if name.startswith(("invoke", "ainvoke", "stream", "astream")):
        due = "where the run's event stream ('text/event-stream') was due"  # the answer to the run's start
    else:
        due = "where a JSON list was due" if "history" in name else "where a JSON object was due"
    assert due in str(info.value)


def test_a_refusal_message_keeps_the_servers_words_and_the_status() -> None:
    error = answer_error(Response(404, {"detail": "Thread or assistant not found."}), "starting the run")
    assert isinstance(error, RemoteCommandError) and error.status == 404 and error.code == "http_404"
    assert (
        str(error)
        == "http_404: Thread or assistant not found. (the server's answer to starting the run: 404 Not Found)"
    )
    text = answer_error(Response(502, "<html>bad gateway</html>", "text/html"), "starting the run")
    assert isinstance(text, RemoteCommandError) and "502 Bad Gateway: '<html>bad gateway</html>'" in str(text)


def test_an_answer_not_an_event_stream_says_what_came() -> None:
    error = answer_error(
        Response(200, {"status": "ok"}, "application/json"), "opening the event stream of run r", "an event stream"
    )
    assert isinstance(error, RemoteProtocolError) and error.status == 200
    assert "'application/json'" in str(error) and "where an event stream was due" in str(error)
