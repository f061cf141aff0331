"""Pieces both I/O shells share: JSON encoding and error translation."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from remote_graph._core.actions import Broken, OpenStream, Request, Response, Timeouts
from remote_graph._private import sdk_orjson_default
from remote_graph.errors import RemoteConnectionError, RemoteGraphError, RemoteTimeoutError

def encode(body: Any) -> bytes:
    """Serialize a request body exactly as the SDK's REST paths do (pydantic
    models, messages, sets); a value the SDK cannot encode fails with TypeError."""
    return orjson.dumps(body, sdk_orjson_default, orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def decode(content: bytes) -> Any:
    if not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return content.decode("utf-8", errors="replace")


def translate(exc: httpx.HTTPError, doing: str) -> RemoteGraphError:
    """Wrap a transport error so no raw httpx exception reaches the caller."""
    if isinstance(exc, httpx.TimeoutException):
        return RemoteTimeoutError(f"timed out while {doing}: {exc!r}")
    return RemoteConnectionError(f"connection failed while {doing}: {exc!r}")


def broken(exc: httpx.HTTPError) -> Broken:
    """A transport failure, handed to the core to decide on."""
    return Broken(
        exc,
        timed_out=isinstance(exc, httpx.TimeoutException),
        unreachable=isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)),
    )


_JSON_HEADERS = {"content-type": "application/json"}
_SSE_HEADERS = {"accept": "text/event-stream", "cache-control": "no-store"}
# How much of a body that is not an event stream is kept for the error message.
_PEEK = 2048


def request_args(action: Request, timeouts: Timeouts, headers: dict[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``client.request`` carrying out ``action``."""
    return {
        "method": action.method,
        "url": action.path,
        "content": encode(action.json) if action.json is not None else None,
        "params": action.params,
        "headers": {**_JSON_HEADERS, **headers},
        "timeout": timeouts.request if action.timeout is None else min(action.timeout, timeouts.request),
    }


def stream_request(http: httpx.Client | httpx.AsyncClient, action: OpenStream, timeouts: Timeouts, headers: dict[str, str]) -> httpx.Request:
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
    )


def is_event_stream(response: httpx.Response) -> bool:
    """Whether an opened stream is the event stream asked for."""
    return response.status_code == 200 and response.headers.get("content-type", "").startswith("text/event-stream")


def stream_response(response: httpx.Response, head: bytes) -> Response:
    """The core's view of an opened stream: its status, its content type, and
    (when it is not an event stream) the start of what it said instead."""
    content_type = response.headers.get("content-type", "")
    location = response.headers.get("location")
    if is_event_stream(response):
        return Response(200, None, content_type, location)
    return Response(response.status_code, decode(head[:_PEEK]), content_type, location)
