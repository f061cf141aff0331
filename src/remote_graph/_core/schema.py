"""What the server says about a deployed graph's schemas, learned once per ``RemoteGraph``.

Two things a local graph knows that JSON on the wire does not carry:

* its output keys: a local ``invoke`` returns only the output schema's keys,
  where the wire's ``values`` carry the whole state;
* which state keys hold messages: a local run hands out ``BaseMessage``
  objects, the wire their dicts. The state schema's JSON schema names the
  message types a key takes (``$ref``s to ``AIMessage``, ``HumanMessage``,
  ...), so a key that takes messages is revived, a key whose schema names none
  is left as it is (a user dict that looks like a message stays a dict), and
  only a key the schema does not describe is revived by the message shape.

When the server cannot say, everything is revived by shape and the whole state
is returned, as before.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any
from urllib.parse import quote
from uuid import UUID

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.failure import json_body, reply_or_raise
from remote_graph.errors import RemoteCommandError

__all__ = ["GraphSchemas", "learn_schemas", "names_messages"]

# The message classes langchain's JSON schemas name (chunks included).
_MESSAGE_DEFS = frozenset(
    f"{kind}{suffix}"
    for kind in (
        "AIMessage",
        "HumanMessage",
        "ChatMessage",
        "SystemMessage",
        "FunctionMessage",
        "ToolMessage",
        "RemoveMessage",
        "BaseMessage",
    )
    for suffix in ("", "Chunk")
)
# The fields every langchain message's schema has: a definition with them all is one.
_MESSAGE_FIELDS = frozenset({"content", "additional_kwargs", "response_metadata", "type"})


def _is_message_def(definition: Any) -> bool:
    properties = definition.get("properties") if isinstance(definition, Mapping) else None
    return isinstance(properties, Mapping) and _MESSAGE_FIELDS <= set(properties)


def names_messages(schema: Any, defs: Mapping[str, Any], _seen: frozenset[str] = frozenset()) -> bool:
    """Whether a JSON schema (a state key's) admits a langchain message anywhere inside."""
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            if name in _MESSAGE_DEFS or _is_message_def(defs.get(name)):
                return True
            if name in _seen:
                return False
            return names_messages(defs.get(name), defs, _seen | {name})
        return any(names_messages(value, defs, _seen) for key, value in schema.items() if key != "$defs")
    if isinstance(schema, list):
        return any(names_messages(item, defs, _seen) for item in schema)
    return False


class GraphSchemas:
    """The deployed graph's output keys and message-holding state keys.

    Attributes:
        known: Whether the server was asked (whatever it answered).
        graph_id: The deployed graph's id (its name in ``langgraph.json``), when known.
        assistant_id: The assistant's UUID, when known (a graph name names its default assistant).
        keys: The output schema's keys, or ``None`` when unknown.
        message_keys: State keys whose schema admits messages.
        plain_keys: State keys whose schema admits no message.
        published: The server's schemas as it published them (empty when unknown).
    """

    def __init__(self) -> None:
        self.known = False
        self.graph_id: str | None = None
        self.assistant_id: str | None = None
        self.keys: frozenset[str] | None = None
        self.message_keys: frozenset[str] = frozenset()
        self.plain_keys: frozenset[str] = frozenset()
        self.published: Mapping[str, Any] = {}

    def learn(self, schemas: Any) -> None:
        """Record the body of ``GET /assistants/{id}/schemas`` (``None``: the server could not say)."""
        self.known = True
        self.published = dict(schemas) if isinstance(schemas, Mapping) else {}
        graph_id = schemas.get("graph_id") if isinstance(schemas, Mapping) else None
        self.graph_id = graph_id if isinstance(graph_id, str) and graph_id else None
        output = schemas.get("output_schema") if isinstance(schemas, Mapping) else None
        properties = output.get("properties") if isinstance(output, Mapping) else None
        self.keys = frozenset(properties) if isinstance(properties, Mapping) and properties else None
        state = schemas.get("state_schema") if isinstance(schemas, Mapping) else None
        if not isinstance(state, Mapping) or not isinstance(state.get("properties"), Mapping):
            return
        state_properties: Mapping[str, Any] = state["properties"]
        raw_defs = state.get("$defs")
        defs: Mapping[str, Any] = raw_defs if isinstance(raw_defs, Mapping) else {}
        messages = {key for key, value in state_properties.items() if names_messages(value, defs)}
        self.message_keys = frozenset(messages)
        self.plain_keys = frozenset(state_properties) - self.message_keys


def learn_schemas(assistant_id: str, schemas: GraphSchemas) -> Generator[Request, Response | Broken, None]:
    """Ask the server for the assistant's schemas and record them.

    The schemas endpoint takes an assistant id; a graph name names its
    default assistant, the one its runs use, found by search: first among the
    assistants the server made itself (``created_by: system``, in
    langgraph-api and aegra alike), then among any of the graph's, since an
    assistant a caller made may be newer and hold another config. A graph name the search finds no
    assistant of (a 404, or none) fails, naming the graphs the server serves.
    An assistant the server does not let the caller see (a search refused with
    403, its schemas answered 403 or 404) leaves the schemas unknown, and they
    are not asked for again: the methods then
    shape what they return from the answers alone. Anything else the server
    cannot answer fails the call that needed the schemas, and they are asked
    for again on the next.

    Raises:
        RemoteCommandError: The server has no graph of that name (``code``
            ``"unknown_graph"``, ``status`` 404).
        RemoteGraphError: A failed request, a refusal other than those, or an
            answer that is not the API's (``failure.reply_or_raise``).
    """
    if not _is_uuid(assistant_id):
        doing = f"finding the assistant of graph {assistant_id!r}"
        for only in (_DEFAULT, {}):
            query = {"graph_id": assistant_id, **only, "limit": 1}
            reply = reply_or_raise((yield Request("POST", "/assistants/search", json=query)), doing, allow=_UNSEEN)
            found = [] if reply.status in _UNSEEN else json_body(reply, doing, list)
            if found or reply.status in _UNSEEN or _says_unknown(reply, assistant_id):
                break
        if _says_unknown(reply, assistant_id) or not found and reply.status not in _UNSEEN:
            # langgraph-api answers 404 naming a graph it does not serve; another server may find none.
            raise (yield from _unknown_graph(assistant_id))
        if not found or not isinstance(found[0], Mapping) or not found[0].get("assistant_id"):
            schemas.learn(None)
            return
        assistant_id = str(found[0]["assistant_id"])
    doing = f"reading the schemas of assistant {assistant_id}"
    reply = reply_or_raise(
        (yield Request("GET", f"/assistants/{quote(assistant_id, safe='')}/schemas")), doing, allow=_UNSEEN
    )
    schemas.learn(None if reply.status in _UNSEEN else json_body(reply, doing))
    schemas.assistant_id = assistant_id


def _says_unknown(reply: Response, name: str) -> bool:
    """Whether a refused search says the graph is unknown (langgraph-api: 404, its detail naming it),
    rather than that the endpoint or the assistant is not there for the caller."""
    detail = reply.body.get("detail") if reply.status == 404 and isinstance(reply.body, Mapping) else None
    return isinstance(detail, str) and repr(name) in detail


def _unknown_graph(name: str) -> Generator[Request, Response | Broken, RemoteCommandError]:
    """The error for a graph name the server has no assistant of, naming the graphs it serves."""
    # Only a hint for the message: a listing that fails must not hide what is wrong.
    # 100 is the most every server takes (aegra refuses more with 422).
    reply = yield Request("POST", "/assistants/search", json={"limit": _LISTED})
    ok = isinstance(reply, Response) and 200 <= reply.status < 300 and isinstance(reply.body, list)
    assistants = reply.body if ok and isinstance(reply, Response) else None
    if assistants is None:
        listed = "it did not list them"
    else:
        served = sorted({str(a["graph_id"]) for a in assistants if isinstance(a, Mapping) and a.get("graph_id")})
        listed = ", ".join(served) if served else "none"
        if len(assistants) >= _LISTED:
            listed += ", ... (the first 100 assistants' graphs)"
    return RemoteCommandError(
        f"the server has no graph {name!r} (no assistant of that graph id); the graphs it serves: {listed}",
        code="unknown_graph",
        status=404,
    )


# The search for a graph's default assistant: the one the server made at start.
_DEFAULT: Mapping[str, Any] = {"metadata": {"created_by": "system"}}
# An assistant the caller cannot see: no such assistant, or one the server's auth hides.
_UNSEEN = (403, 404)
# The assistants an unknown graph's error lists the graphs of.
_LISTED = 100


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except ValueError:
        return False
    return True
