"""``astream_events(version="v2"/"v1")`` events from a classic run's ``events`` frames.

Asked for the ``events`` stream mode, the server runs the graph with
``astream_events(version="v2")`` and sends every event it yields as a frame,
except the root run's ``on_chain_stream`` events: it turns each of those into
a chunk of the run's other stream modes, at the same place in the stream. So
``EventReader`` rebuilds what a local ``astream_events`` yields:

* payloads revived (chunks as ``AIMessageChunk``, tool outputs as
  ``ToolMessage``, states holding messages; the root graph's states and
  updates by its state schema, as chunks are), metadata without the server's
  own keys and with the caller's thread id (``classic.CallView``);
* the root run named as the caller knows the graph (``RemoteGraph``'s name;
  the server names it by its graph id), its first event carrying the input the
  caller passed, as locally;
* the root's ``on_chain_stream`` events put back from the root chunks, shaped
  as the root's own ``astream`` yields them (``updates`` by default);
* ``include_*`` / ``exclude_*`` filters applied as langchain applies them;
* for ``version="v1"``, the v1 shapes: no ``parent_ids``, no root metadata, a
  chat model's end output as an ``LLMResult``, the root's end output its last
  chunk, and an end (with no output) for each run an interrupt or a failure
  left open (the v2 events the server sends have none).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langgraph.types import Send

from remote_graph._core.classic import CallView, task_error
from remote_graph._core.revive import revive_state
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.shape import Shaper
from remote_graph._core.wire import Part
from remote_graph._private import RootEventFilter

__all__ = ["EventFilters", "EventReader", "revived_event", "run_type"]


def run_type(event_name: str) -> str:
    """The run type an event's name says (``on_chat_model_start``: ``chat_model``)."""
    return event_name[len("on_") :].rsplit("_", 1)[0] if event_name.startswith("on_") else event_name


def revived_event(raw: Any, metadata: Callable[[Any], Any], plain_keys: Collection[str] = ()) -> dict[str, Any] | None:
    """A server event as a local one: payloads revived, metadata read by ``metadata``.

    Args:
        raw: The server's event.
        metadata: Reads the event's metadata in the caller's terms.
        plain_keys: The root state's keys whose schema admits no message: in
            the root graph's states and updates (``_root_state``) a dict there
            stays the user's, however it looks.
    """
    if not isinstance(raw, Mapping) or not isinstance(raw.get("event"), str):
        return None
    event = dict(raw)
    data = event.get("data")
    plain = plain_keys if plain_keys and _root_state(event) else ()
    event["data"] = (
        {key: _sends(revive_state(value, plain)) for key, value in data.items()} if isinstance(data, Mapping) else {}
    )
    if event["event"].endswith("_error") and isinstance(event["data"].get("error"), Mapping):
        # A local error event holds the exception; the server writes its type and
        # message (langgraph-api under "error", aegra under "type").
        event["data"]["error"] = task_error(event["data"]["error"])
    event["metadata"] = metadata(event.get("metadata") or {})
    return event


def _root_state(event: Mapping[str, Any]) -> bool:
    """Whether an event's data are the root graph's states and updates: those of
    the root run's chains and of the chains of its nodes' tasks (the node, its
    routing, a subgraph's own graph taking the root's state). Deeper down, a
    subgraph's states follow a schema of its own, which the server does not give."""
    if not str(event.get("event")).startswith("on_chain_"):
        return False
    if not event.get("parent_ids"):
        return True
    metadata = event.get("metadata")
    ns = metadata.get("langgraph_checkpoint_ns") if isinstance(metadata, Mapping) else None
    return isinstance(ns, str) and "|" not in ns


class EventFilters:
    """``include_names``/``include_types``/``include_tags`` and their ``exclude_*``,
    applied as langchain's event stream applies them (the event's run type is its
    name's second word: ``on_chat_model_start`` is a ``chat_model``'s)."""

    def __init__(self, **filters: Sequence[str] | None) -> None:
        self._filter = RootEventFilter(**filters)

    def keeps(self, event: Mapping[str, Any]) -> bool:
        return bool(self._filter.include_event(event, run_type(str(event.get("event", "")))))  # type: ignore[arg-type]


@dataclass(eq=False)
class EventReader:
    """Rebuilds one run's ``astream_events`` events; see the module docstring.

    Args:
        view: The caller's side of the run (metadata and thread ids).
        version: ``"v2"`` or ``"v1"``.
        root_name: The root run's name: the config's ``run_name``, else the
            graph's as the caller knows it (the server's own name for the root
            is its graph id on langgraph-api, the compiled graph's on aegra).
        root_chunks: Shapes the root's own stream chunks (its ``on_chain_stream`` data).
        input: The input the caller passed, for the root's first event.
        filters: What to keep.
        schemas: The deployed graph's schemas (read as each event arrives: the
            run learns them after the reader is made).
    """

    view: CallView
    _: KW_ONLY
    version: Literal["v1", "v2"]
    root_name: str
    root_chunks: Shaper
    input: Any
    filters: EventFilters
    schemas: GraphSchemas | None = None
    _root: dict[str, Any] | None = field(default=None, init=False)
    _last_chunk: Any = field(default=None, init=False)
    # v1: the runs started and not yet ended (their start events), in start order.
    _open: dict[Any, dict[str, Any]] = field(default_factory=dict, init=False)
    _first: Any = field(default=None, init=False)

    def feed(self, part: Part) -> list[dict[str, Any]]:
        """The events one part of the run becomes."""
        if part["type"] == "events":
            event = self._event(part["data"])
            if event is None or not self.filters.keeps(event):
                return []
            if self._first is None:
                # As langchain does: the first event handed out carries the very
                # input the caller passed (meant for the root's start, which a
                # filter may have left out), and its run's end does without it.
                self._first = event.get("run_id")
                event["data"]["input"] = self.input
            elif event.get("run_id") == self._first and event["event"].endswith("_end"):
                event["data"].pop("input", None)
            return [event]
        if part["ns"] or self._root is None:
            return []
        out = []
        if self.version == "v1" and part["type"] == "updates" and _interrupts(part["data"]):
            # The step's interrupted nodes raised: v1 ends their runs (and the
            # runs around them), as a failure's, before the root streams the interrupt.
            out.extend(self._end_open())
        for chunk in self.root_chunks.shape(part):
            self._last_chunk = chunk
            stream = {**self._root, "event": "on_chain_stream", "data": {"chunk": chunk}}
            if self.filters.keeps(stream):
                out.append(stream)
        return out

    def _event(self, raw: Any) -> dict[str, Any] | None:
        plain = self.schemas.plain_keys if self.schemas is not None else ()
        event = revived_event(raw, self.view.metadata, plain)
        if event is None:
            return None
        root = self._root
        if root is None and not event.get("parent_ids") and event["event"].endswith("_start"):
            # The root run: named as the caller knows the graph (or as the
            # config's run_name names it), whatever the server calls it.
            event["name"] = self.root_name
            self._root = root = {
                "run_id": event.get("run_id"),
                "name": self.root_name,
                "tags": list(event.get("tags") or []),
                "metadata": event["metadata"] if self.version == "v2" else {},
                "parent_ids": [],
            }
        elif root is not None and event.get("run_id") == root["run_id"]:
            if event["event"] == "on_chain_stream":
                # aegra sends the root's stream events too, each chunk a
                # ``[mode, payload]`` of the modes it runs the graph with (its
                # own ``debug`` among them): they are made from the run's
                # modes here, as for langgraph-api, which sends none.
                return None
            event["name"] = self.root_name
            if self.version == "v1" and event["event"] == "on_chain_end":
                event["data"]["output"] = self._last_chunk
        if self.version == "v1":
            return self._v1(event, root)
        return event

    def failed(self) -> list[dict[str, Any]]:
        """Events owed when the run fails: in v1, an end (with no output) for every
        run the failure left open, innermost first, but the root's, as langchain's
        v1 stream ends them."""
        if self.version != "v1":
            return []
        return self._end_open()

    def _end_open(self) -> list[dict[str, Any]]:
        """v1: an end (with no output) for every run open but the root's, innermost first."""
        root = self._root["run_id"] if self._root is not None else None
        out = []
        for run_id, start in reversed(list(self._open.items())):
            if run_id == root:
                continue
            end = {
                **start,
                "event": start["event"].replace("_start", "_end"),
                "data": {"input": start["data"].get("input"), "output": None},
            }
            if self.filters.keeps(end):
                out.append(end)
        self._open.clear()
        return out

    def _v1(self, event: dict[str, Any], root: Mapping[str, Any] | None) -> dict[str, Any]:
        event["parent_ids"] = []
        kind = event["event"]
        if kind.endswith("_start"):
            self._open[event.get("run_id")] = event
        elif kind.endswith("_end"):
            self._open.pop(event.get("run_id"), None)
        if root is not None and event.get("run_id") == root["run_id"]:
            event["metadata"] = {}
        if event["event"] == "on_chat_model_end":
            output = event["data"].get("output")
            if isinstance(output, BaseMessage):
                event["data"]["output"] = _llm_result(output)
        return event


def _interrupts(update: Any) -> bool:
    """Whether a root ``updates`` chunk says nodes raised interrupts (not a pause before or after a node)."""
    return isinstance(update, Mapping) and bool(update.get("__interrupt__"))


def _sends(value: Any) -> Any:
    """A routing function's ``Send``s (the server writes each as ``{"node", "args"}``)."""
    if isinstance(value, list) and value and all(_is_send(item) for item in value):
        return [Send(item["node"], item["args"]) for item in value]
    if _is_send(value):
        return Send(value["node"], value["args"])
    return value


def _is_send(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == {"node", "args"} and isinstance(value["node"], str)


def _llm_result(message: BaseMessage) -> dict[str, Any]:
    """A chat model's end output as v1 events carry it: the ``LLMResult`` of one generation."""
    text = str(message.text)
    generation = {"text": text, "generation_info": None, "type": "ChatGeneration", "message": message}
    return {"generations": [[generation]], "llm_output": None, "run": None, "type": "LLMResult"}
