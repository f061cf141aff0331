"""Pieces both I/O shells share: JSON encoding, what an answer is to the core,
error translation with credentials redacted, and the answer check on SDK clients."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson
from langchain_core.messages import BaseMessage

from remote_graph._core.actions import Broken, OpenStream, Request, Response, Timeouts
from remote_graph._core.failure import answer_error
from remote_graph._core.message_wire import message_payload
from remote_graph._private import sdk_orjson_default
from remote_graph._redact import credential_forms, redact, scrub, secrets_of
from remote_graph.errors import RemoteConnectionError, RemoteGraphError, RemoteProtocolError, RemoteTimeoutError


def encode(body: Any) -> bytes:
    """Serialize a request body exactly as the SDK's REST paths do (pydantic
    models, messages, sets), messages in the form the server rebuilds exactly
    (``_core.message_wire``); a value the SDK cannot encode fails with TypeError."""
    return orjson.dumps(body, _default, orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def _default(value: Any) -> Any:
    return message_payload(value) if isinstance(value, BaseMessage) else sdk_orjson_default(value)


def decode(content: bytes) -> Any:
    if not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return content.decode("utf-8", errors="replace")


# --- credentials in messages ------------------------------------------------------


def request_secrets(request: httpx.Request | None) -> frozenset[str]:
    """The credentials ``request`` carries: its credential headers and its URL's password."""
    if request is None:
        return frozenset()
    found = set(secrets_of(request.headers.multi_items()))
    if request.url.password:
        found |= credential_forms(request.url.password)
    return frozenset(found)


def _request_of(exc: BaseException) -> httpx.Request | None:
    if not isinstance(exc, httpx.HTTPError):
        return None
    try:
        return exc.request
    except RuntimeError:  # raised before a request was built
        return None


def describe(exc: BaseException) -> str:
    """``Type: message (METHOD url)`` for a transport error, without the credentials its request carried.

    The message is cut at 500 characters; the url leaves out its query.
    """
    message = str(exc)
    if len(message) > 500:
        message = message[:500] + "..."
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    request = _request_of(exc)
    if request is not None:
        # Which server, and which of its endpoints: what a caller checks first.
        text = f"{text} ({request.method} {request.url.copy_with(query=None, fragment=None)})"
    return redact(text, request_secrets(request))


def sanitize(exc: BaseException) -> BaseException:
    """``exc``, with any credential of its request redacted from its text, in place.

    ``exc`` becomes the ``__cause__`` (or ``__context__``) of the library's
    error, and a traceback prints it: an h11 error quotes an illegal header
    value, an SDK error the server's message, which may repeat the token it
    refused. Its ``args`` (and an SDK error's ``message`` and ``body``) are
    rewritten; the exception is the library's own once caught, so nothing
    else sees the change.
    """
    secrets = request_secrets(_request_of(exc))
    if not secrets:
        return exc
    exc.args = tuple(scrub(arg, secrets) for arg in exc.args)
    for name in ("message", "body"):
        value = getattr(exc, name, None)
        if value is not None:
            try:
                setattr(exc, name, scrub(value, secrets))
            except AttributeError:  # a read-only property
                pass
    return exc


def translate(exc: httpx.HTTPError, doing: str) -> RemoteGraphError:
    """Wrap a transport error so no raw httpx exception reaches the caller.

    The message says what failed in the error's own words, less any
    credential; ``__cause__`` is left to the caller (``sanitize`` it first).
    """
    detail = describe(exc)
    if isinstance(exc, httpx.TimeoutException):
        return RemoteTimeoutError(f"timed out while {doing}: {detail}")
    if isinstance(exc, (httpx.LocalProtocolError, httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return RemoteConnectionError(f"could not send the request while {doing}: it is not valid HTTP ({detail})")
    return RemoteConnectionError(f"connection failed while {doing}: {detail}")


def broken(exc: httpx.HTTPError) -> Broken:
    """A transport failure, handed to the core to decide on."""
    detail = describe(exc)
    return Broken(
        sanitize(exc),  # the core chains it as the cause of the run's error
        timed_out=isinstance(exc, httpx.TimeoutException),
        unreachable=isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)),
        local=isinstance(exc, (httpx.LocalProtocolError, httpx.UnsupportedProtocol, httpx.InvalidURL)),
        detail=detail,
    )


def closed_client(http: httpx.Client | httpx.AsyncClient) -> Broken | None:
    """A local failure for a request on a closed HTTP client, else ``None``.

    httpx raises a bare ``RuntimeError`` there; a run stream abandoned after its
    client was closed (collected late, or left open past a ``with`` block of
    the client) must still end its cleanup, and a run started on one must fail
    with an error that says why.
    """
    if not http.is_closed:
        return None
    what = "the HTTP client was closed (close the RemoteGraph, or the client you passed it, after its runs)"
    return Broken(RuntimeError(what), local=True, detail=what)


# --- requests and answers ------------------------------------------------------------


_JSON_HEADERS = {"content-type": "application/json"}
_SSE = "text/event-stream"
_SSE_HEADERS = {"accept": _SSE, "cache-control": "no-store"}
# How much of a body that is not an event stream is kept for the error message.
_PEEK = 2048
# Marks the shells' own requests: the core judges their answers, so the SDK
# clients' answer check (``check_answers``) leaves them alone.
_OWN = "remote_graph.core"


def request_args(action: Request, timeouts: Timeouts, headers: dict[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``client.request`` carrying out ``action``."""
    return {
        "method": action.method,
        "url": action.path,
        "content": encode(action.json) if action.json is not None else None,
        "params": action.params,
        "headers": {**_JSON_HEADERS, **headers},
        "timeout": timeouts.request if action.timeout is None else min(action.timeout, timeouts.request),
        "extensions": {_OWN: True},
    }


def stream_request(
    http: httpx.Client | httpx.AsyncClient, action: OpenStream, timeouts: Timeouts, headers: dict[str, str]
) -> httpx.Request:
    """The SSE request for ``action``; reads may be silent for ``timeouts.read``."""
    extra = {"last-event-id": action.last_event_id} if action.last_event_id is not None else {}
    if action.json is not None:
        extra["content-type"] = "application/json"
    return http.build_request(
        action.method,
        action.path,
        params=action.params or None,
        content=encode(action.json) if action.json is not None else None,
        headers={**_SSE_HEADERS, **headers, **extra},
        timeout=httpx.Timeout(timeouts.request, read=timeouts.read),
        extensions={_OWN: True},
    )


def is_event_stream(response: httpx.Response) -> bool:
    """Whether an opened stream is the event stream asked for."""
    return response.status_code == 200 and response.headers.get("content-type", "").startswith(_SSE)


def _body(response: httpx.Response, content: bytes) -> Any:
    """The core's view of a body. A success's JSON is data and stays as it is;
    anything an error may quote (a refusal's body, text that is not JSON) has
    the request's credentials redacted: a server may echo a token it refused."""
    body = decode(content)
    if response.is_success and not isinstance(body, str):
        return body
    return scrub(body, request_secrets(response.request))


def response_of(response: httpx.Response) -> Response:
    """The core's view of an answer that was read whole."""
    return Response(
        response.status_code,
        _body(response, response.content),
        response.headers.get("content-type", ""),
        response.headers.get("location"),
    )


def stream_response(response: httpx.Response, head: bytes, *, batched: bool = False) -> Response:
    """The core's view of an opened stream: its status, its content type, and
    (when it is not an event stream) the start of what it said instead.
    ``batched``: each read of the event stream hands over all it brought."""
    content_type = response.headers.get("content-type", "")
    location = response.headers.get("location")
    if is_event_stream(response):
        return Response(200, None, content_type, location, batched)
    return Response(response.status_code, _body(response, head[:_PEEK]), content_type, location)


# --- the answer check on SDK clients ------------------------------------------------------


def _wants_body(response: httpx.Response) -> bool:
    """Whether judging ``response`` needs its body: a success that is not the
    event stream asked for (an event stream is read by its consumer)."""
    return response.status_code in (200, 201) and not (_asks_stream(response) and _is_stream(response))


def _asks_stream(response: httpx.Response) -> bool:
    return _SSE in response.request.headers.get("accept", "")


def _is_stream(response: httpx.Response) -> bool:
    return str(response.headers.get("content-type", "")).startswith(_SSE)


def _judge(response: httpx.Response, follows: bool) -> RemoteProtocolError | None:
    """The error for an answer the SDK would mistake for a good one, or ``None``.

    The SDK raises for statuses of 400 and more; it takes a redirect, or a
    success with no body or no JSON, as data (``None`` state snapshots,
    ``'NoneType' object is not subscriptable``). Its own requests are the
    core's to judge.
    """
    request = response.request
    if request.extensions.get(_OWN):
        return None
    status = response.status_code
    doing = f"{request.method} {request.url.path}"
    if 300 <= status < 400:
        if follows and response.has_redirect_location:
            return None  # a client the caller set to follow redirects
        error = answer_error(response_of_head(response), doing)
        return error if isinstance(error, RemoteProtocolError) else None
    if status not in (200, 201):
        return None
    if _asks_stream(response):
        if _is_stream(response):
            return None
        error = answer_error(response_of(response), doing, "an event stream")
    elif not response.content or "json" not in response.headers.get("content-type", "json"):
        error = answer_error(response_of(response), doing)
    else:
        return None
    return error if isinstance(error, RemoteProtocolError) else None


def response_of_head(response: httpx.Response) -> Response:
    """The core's view of an answer whose body is not read."""
    return Response(
        response.status_code, None, response.headers.get("content-type", ""), response.headers.get("location")
    )


def check_answers(client: httpx.Client) -> None:
    """Give ``client`` the answer check (once): a redirect it does not follow,
    or a success with an empty or non-JSON body where JSON is due, raises a
    ``RemoteProtocolError`` with the status, instead of reaching the SDK."""
    if _checked(client):
        return
    owner = weakref.ref(client)

    def check(response: httpx.Response) -> None:
        if _wants_body(response) and not _own(response):
            response.read()
        _raise_if_unusable(response, owner())

    _add_check(client, check)


def acheck_answers(client: httpx.AsyncClient) -> None:
    """``check_answers`` for an async client."""
    if _checked(client):
        return
    owner = weakref.ref(client)

    async def check(response: httpx.Response) -> None:
        if _wants_body(response) and not _own(response):
            await response.aread()
        _raise_if_unusable(response, owner())

    _add_check(client, check)


def _checked(client: httpx.Client | httpx.AsyncClient) -> bool:
    """Whether ``client`` carries the answer check already."""
    return any(getattr(hook, "_remote_graph_check", False) for hook in client.event_hooks.get("response", ()))


def _add_check(client: httpx.Client | httpx.AsyncClient, check: Callable[[httpx.Response], Any]) -> None:
    _mark(check)
    hooks = client.event_hooks
    client.event_hooks = {**hooks, "response": [*hooks.get("response", ()), check]}


def _raise_if_unusable(response: httpx.Response, client: httpx.Client | httpx.AsyncClient | None) -> None:
    # The client is weakly held: a hook must not keep it alive.
    error = _judge(response, client is not None and client.follow_redirects)
    if error is not None:
        raise error


def _own(response: httpx.Response) -> bool:
    return bool(response.request.extensions.get(_OWN))


def _mark(hook: Callable[[httpx.Response], None | Awaitable[None]]) -> None:
    hook._remote_graph_check = True  # type: ignore[attr-defined]
