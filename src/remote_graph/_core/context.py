"""Runtime context (``context=``) on the wire.

Locally, ``graph.stream(..., context=...)`` hands ``context`` to the graph's
``Runtime`` (coerced to a dataclass or pydantic ``context_schema`` when it is
a dict), and a subgraph without its own ``context`` inherits its parent's.

The server takes a run's context as a JSON object in the run's ``context``
field, filters it to the keys of the graph's context schema, and coerces it
the same way. Two things in its runs API stand in the way:

* it refuses ``context`` next to a non-empty ``config.configurable`` (HTTP 400
  "Cannot specify both configurable and context"), and the configurable
  carries the marker that turns v3 events on;
* without ``context``, it makes the run's context out of ``configurable``
  (all of it, marker included, for a graph without a context schema), where
  a local run has none.

The run's ``checkpoint`` field is merged into ``configurable`` after both of
these, so the configurable travels there and ``context`` goes in its own
field: the graph sees the context it was given, or none, and the
configurable it was given, even when a key is in both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import BaseModel

from remote_graph._private import sdk_orjson_default

__all__ = ["context_payload", "place_configurable"]


def context_payload(context: Any) -> dict[str, Any] | None:
    """The JSON object the server takes for ``context`` (``None`` for no context).

    A mapping (a ``TypedDict`` among them) is sent as it is; a dataclass or
    pydantic instance as its fields, which the server coerces back to the
    graph's ``context_schema``, as a local graph coerces a dict.

    Raises:
        TypeError: ``context`` has no JSON-object form.
    """
    if context is None:
        return None
    if isinstance(context, Mapping):
        if not all(isinstance(key, str) for key in context):
            raise TypeError("context keys must be strings: the server takes context as a JSON object")
        payload = dict(context)
    elif dataclasses.is_dataclass(context) and not isinstance(context, type):
        payload = {field.name: getattr(context, field.name) for field in dataclasses.fields(context)}
    elif isinstance(context, BaseModel):
        return context.model_dump(mode="json")
    else:
        raise TypeError(
            "context must be a mapping, a dataclass instance or a pydantic model (the server takes a JSON object), "
            f"got {type(context).__name__}: {context!r:.80}"
        )
    _check_json(payload)
    return payload


def _check_json(payload: dict[str, Any]) -> None:
    """Fail now, naming the field, rather than when the run's request is encoded."""
    for key, value in payload.items():
        try:
            orjson.dumps(value, sdk_orjson_default, orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        except TypeError as exc:
            raise TypeError(
                f"context field {key!r} ({type(value).__name__}) cannot be sent to the server, which takes "
                f"context as JSON: {exc}. A remote child called without context= inherits its parent's "
                "context, as a local child does; give it a context= it can send."
            ) from exc


def place_configurable(body: dict[str, Any], context: dict[str, Any] | None) -> dict[str, Any]:
    """``body`` (a runs API request) with its ``config.configurable`` moved to
    ``checkpoint`` and ``context`` set when there is one."""
    body = dict(body)
    config = dict(body.get("config") or {})
    configurable = config.pop("configurable", None) or {}
    if configurable:
        body["checkpoint"] = {**(body.get("checkpoint") or {}), **configurable}
    body["config"] = config
    if context is not None:
        body["context"] = context
    return body
