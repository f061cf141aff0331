"""A remote child's messages as a v1/v2 parent sees a local child's.

The server runs every remote child with v3 events, so its chat models return
messages in the v1 output format (``content`` a list of content blocks,
``response_metadata["output_version"] == "v1"``) and stream protocol events
(``message-start``, ``content-block-delta``, ...). A local child inside a
parent run with plain ``invoke`` or v1/v2 ``stream`` returns messages with
string content, and its tokens reach a ``stream_mode="messages"`` parent as
``(AIMessageChunk, metadata)`` pairs. This module turns the first into the
second; it never does I/O.

* ``to_v0`` rewrites messages in the v1 output format to the string content a
  model returns by default: text blocks joined, tool-call blocks dropped (they
  are the message's ``tool_calls``). Other blocks (reasoning, images) have no
  provider-neutral string form, so a message holding any keeps its blocks.
* ``V1Messages`` turns the run's message events into chunks: one per text or
  tool-call-args delta, the last one marked ``chunk_position="last"`` (with the
  usage the wire reports), as langchain's ``stream`` marks it; a tool call's
  name and id ride on its first args chunk. Whole messages a node returned
  (rebuilt from its update), tool results among them, are emitted whole, as
  the parent's handler emits a local child's node outputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage

Namespace = tuple[str, ...]
Payload = tuple[BaseMessage, dict[str, Any]]

__all__ = ["V1Messages", "to_v0"]

_TOOL_BLOCKS = frozenset({"tool_call", "tool_call_chunk", "invalid_tool_call", "server_tool_call", "server_tool_call_chunk"})


def _message_to_v0(message: BaseMessage) -> BaseMessage:
    metadata = message.response_metadata
    if metadata.get("output_version") != "v1" or not isinstance(message.content, list):
        return message
    blocks = [b for b in message.content if not (isinstance(b, Mapping) and b.get("type") in _TOOL_BLOCKS)]
    texts = [b.get("text", "") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]
    content: Any = "".join(texts) if len(texts) == len(blocks) else blocks
    rest = {k: v for k, v in metadata.items() if k != "output_version"}
    return message.model_copy(update={"content": content, "response_metadata": rest})


def to_v0(value: Any) -> Any:
    """``value`` with every message in the v1 output format rewritten to string
    content (see the module docstring); containers are copied, never mutated."""
    if isinstance(value, BaseMessage):
        return _message_to_v0(value)
    if isinstance(value, dict):
        return {k: to_v0(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_v0(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_v0(v) for v in value)
    return value


@dataclass
class _Stream:
    """One message streaming at one namespace."""

    id: str | None
    node: str | None
    held: AIMessageChunk | None = None
    # A tool call's start (id, name) waits for its first args delta.
    tool_starts: dict[int, Mapping[str, Any]] = field(default_factory=dict)


class V1Messages:
    """Turns a remote run's parts into the ``messages`` payloads of a v1/v2 parent.

    Args:
        emits: Whether the parent's messages handler emits messages from a
            graph namespace (the parent's own, or a subgraph's when it streams
            with ``subgraphs=True``); nothing is produced for the others.
    """

    def __init__(self, emits: Callable[[Namespace], bool]) -> None:
        self.emits = emits
        self._streams: dict[Namespace, _Stream] = {}
        self._seen: set[str] = set()
        # Id-less messages a node returned, waiting for the state that gives them their ids.
        self._pending: dict[Namespace, list[tuple[str | None, BaseMessage]]] = {}

    def feed(self, ns: Namespace, part: Mapping[str, Any]) -> list[Payload]:
        """Payloads owed for one part at ``ns`` (the namespace in the parent's stream)."""
        kind = part["type"]
        if kind == "values":
            out = self._resolve(ns, part["data"])
            self._see(part["data"])
            return out
        if not self.emits(ns):
            return []
        if kind == "updates":
            return self._tool_results(ns, part["data"])
        if kind != "messages":
            return []
        event, metadata = part["data"]
        node = metadata.get("langgraph_node") if isinstance(metadata, Mapping) else None
        node = node if isinstance(node, str) else None
        if isinstance(event, BaseMessage):
            return self._whole(ns, node, event)
        return self._event(ns, node, event) if isinstance(event, Mapping) else []

    # --- whole messages -----------------------------------------------------

    def _see(self, value: Any) -> None:
        if isinstance(value, BaseMessage):
            if value.id is not None:
                self._seen.add(value.id)
        elif isinstance(value, Mapping):
            for item in value.values():
                self._see(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                self._see(item)

    def waiting(self, ns: Namespace) -> bool:
        """Whether messages at ``ns`` wait for the next state there to be emitted."""
        return bool(self._pending.get(ns))

    def finish(self) -> list[tuple[Namespace, Payload]]:
        """Payloads still owed when the run ends (the chunk a message cut off
        before its finish held, id-less messages no state named), with their namespaces."""
        out: list[tuple[Namespace, Payload]] = []
        for ns, stream in self._streams.items():
            if stream.held is not None:
                # Not marked last: as locally, a model stopped mid-stream sends no last chunk.
                out.append((ns, (stream.held, _metadata(ns, stream.node, "langchain_chat_model"))))
        self._streams.clear()
        for ns, items in self._pending.items():
            for node, message in items:
                message.id = str(uuid4())
                out.append((ns, self._emit(ns, node, message, message.id)))
        self._pending.clear()
        return out

    def _whole(self, ns: Namespace, node: str | None, message: BaseMessage) -> list[Payload]:
        if message.id is None:
            # A local handler gives an id-less message an id in place, so the
            # state keeps it and the parent knows it as seen; here the state's
            # copy has its reducer's id, which the next state at ``ns`` tells.
            self._pending.setdefault(ns, []).append((node, message))
            return []
        return [self._emit(ns, node, message, message.id)]

    def _emit(self, ns: Namespace, node: str | None, message: BaseMessage, message_id: str) -> Payload:
        self._seen.add(message_id)
        message = _message_to_v0(message).model_copy(update={"id": message_id})
        return message, _metadata(ns, node, "langgraph")

    def _resolve(self, ns: Namespace, values: Any) -> list[Payload]:
        pending = self._pending.pop(ns, [])
        if not pending:
            return []
        candidates = [m for m in _messages(values) if m.id is not None and m.id not in self._seen]
        out = []
        for node, message in pending:
            match = next((m for m in candidates if _same(m, message)), None)
            if match is not None:
                candidates.remove(match)
            # In place, as the local handler names it: the node's update holds this same object.
            message.id = match.id if match is not None and match.id else str(uuid4())
            out.append(self._emit(ns, node, message, message.id))
        return out

    def _tool_results(self, ns: Namespace, update: Any) -> list[Payload]:
        """Tool messages a node returned: the v3 stream leaves them out, a v1 handler emits them."""
        if not isinstance(update, Mapping):
            return []
        out: list[Payload] = []
        for node, writes in update.items():
            for write in writes if isinstance(writes, list) else [writes]:
                values = write.values() if isinstance(write, Mapping) else [write]
                for value in values:
                    for item in value if isinstance(value, (list, tuple)) else [value]:
                        if isinstance(item, ToolMessage) and (item.id is None or item.id not in self._seen):
                            out.extend(self._whole(ns, node if isinstance(node, str) else None, item))
        return out

    # --- streamed messages --------------------------------------------------

    def _event(self, ns: Namespace, node: str | None, event: Mapping[str, Any]) -> list[Payload]:
        kind = event.get("event")
        if kind == "message-start":
            message_id = event.get("id")
            self._streams[ns] = _Stream(id=message_id if isinstance(message_id, str) else None, node=node)
            if isinstance(message_id, str):
                self._seen.add(message_id)
            return []
        stream = self._streams.get(ns)
        if stream is None:
            return []
        index = event.get("index", 0)
        if kind == "content-block-start":
            block = event.get("content") or {}
            if block.get("type") == "tool_call_chunk":
                if block.get("args"):
                    return self._push(ns, stream, _tool_chunk(block, block.get("args"), index))
                stream.tool_starts[index] = block
                return []
            if block.get("type") == "text":
                return self._push(ns, stream, {"content": block["text"]}) if block.get("text") else []
            return self._push(ns, stream, {"content": [dict(block)]})
        if kind == "content-block-delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text-delta":
                return self._push(ns, stream, {"content": delta.get("text", "")})
            if delta.get("type") == "tool-call-delta":
                start = stream.tool_starts.pop(index, {})
                return self._push(ns, stream, _tool_chunk(start, delta.get("args", ""), index))
            if delta.get("type") == "reasoning-delta":
                return self._push(ns, stream, {"content": [{"type": "reasoning", "reasoning": delta.get("reasoning", ""), "index": index}]})
            fields = delta.get("fields") if delta.get("type") == "block-delta" else delta
            return self._push(ns, stream, {"content": [{**(fields or {}), "index": index}]})
        if kind == "content-block-finish":
            if index not in stream.tool_starts:
                return []
            start = stream.tool_starts.pop(index)
            # A tool call with no args delta: its args are only in the finished block.
            args = (event.get("content") or {}).get("args")
            return self._push(ns, stream, _tool_chunk(start, json.dumps(args) if args is not None else "", index))
        if kind in ("message-finish", "error"):
            del self._streams[ns]
            last = stream.held if stream.held is not None else AIMessageChunk(content="", id=stream.id)
            update: dict[str, Any] = {"chunk_position": "last"}
            usage = event.get("usage")
            if isinstance(usage, Mapping) and kind == "message-finish":
                update["usage_metadata"] = _usage(usage)
            return [(last.model_copy(update=update), _metadata(ns, stream.node, "langchain_chat_model"))]
        return []

    def _push(self, ns: Namespace, stream: _Stream, fields: dict[str, Any]) -> list[Payload]:
        """Hold the new chunk and emit the one before: the last one is marked when the message finishes."""
        previous, stream.held = stream.held, AIMessageChunk(id=stream.id, **{"content": "", **fields})
        return [] if previous is None else [(previous, _metadata(ns, stream.node, "langchain_chat_model"))]


def _messages(value: Any) -> list[BaseMessage]:
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, Mapping):
        return [m for item in value.values() for m in _messages(item)]
    if isinstance(value, (list, tuple)):
        return [m for item in value for m in _messages(item)]
    return []


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    return type(a) is type(b) and a.content == b.content and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)


def _tool_chunk(start: Mapping[str, Any], args: Any, index: int) -> dict[str, Any]:
    chunk = {"name": start.get("name"), "args": args, "id": start.get("id"), "index": start.get("index", index), "type": "tool_call_chunk"}
    return {"content": "", "tool_call_chunks": [chunk]}


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    inputs, outputs = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    out: dict[str, Any] = {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": int(usage.get("total_tokens") or inputs + outputs)}
    for key in ("input_token_details", "output_token_details"):
        if usage.get(key):
            out[key] = dict(usage[key])
    return out


def _metadata(ns: Namespace, node: str | None, integration: str) -> dict[str, Any]:
    # A local chunk's langgraph_checkpoint_ns also names the node's task
    # (``...|node:<task id>``); the wire has no task ids, so it names the graph.
    checkpoint_ns = "|".join(ns)
    return {"langgraph_node": node, "langgraph_checkpoint_ns": checkpoint_ns, "checkpoint_ns": checkpoint_ns, "ls_integration": integration}
