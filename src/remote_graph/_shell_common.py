"""Pieces both I/O shells share: JSON encoding and error translation."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from remote_graph.errors import RemoteConnectionError, RemoteGraphError, RemoteTimeoutError

try:  # encode inputs exactly as the SDK's REST paths do (pydantic models, messages, sets)
    from langgraph_sdk._shared.utilities import _orjson_default as _sdk_default
except ImportError:  # pragma: no cover - the SDK moved it; same rules, written here
    _sdk_default = None


def _default(obj: Any) -> Any:
    if _sdk_default is not None:
        return _sdk_default(obj)
    if hasattr(obj, "model_dump") and callable(obj.model_dump) and not isinstance(obj, type):
        return obj.model_dump()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    raise TypeError(f"Object of type {type(obj)} is not JSON serializable")


def encode(body: Any) -> bytes:
    """Serialize a request body; a value the SDK cannot encode fails with TypeError."""
    return orjson.dumps(body, _default, orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


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


JSON_HEADERS = {"content-type": "application/json"}
SSE_HEADERS = {"content-type": "application/json", "accept": "text/event-stream", "cache-control": "no-store"}
