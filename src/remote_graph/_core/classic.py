"""A classic run's ``stream_mode`` chunks, as a local ``stream()`` yields them.

The server runs a classic run with ``graph.astream(stream_mode=[...])`` and
sends each chunk as one frame named after its mode (``values``,
``updates|<ns>``, ...). The chunks are JSON; a local graph's are objects. Per
mode, ``ChunkReader.read`` rebuilds what a local run yields:

* ``values`` / ``updates``: messages revived (by the state schema where the
  server gives one, ``schema.GraphSchemas``), ``__interrupt__`` as a tuple of
  ``Interrupt``s;
* ``messages`` (``messages-tuple`` on the wire): an ``(AIMessageChunk, metadata)``
  pair (or a whole message a node returned);
* ``tasks``, ``checkpoints``, ``debug``: their payloads, with the tuples JSON
  turned into lists back, messages revived, and a task's error rebuilt;
* ``custom``: as it is.

The server also tells more than a local run does: its metadata and configs
carry keys of its own (the assistant, the run, the plan, auth) and its thread's
UUID. ``CallView`` reads them back in the caller's terms: server keys the
caller did not set are dropped, and the thread is the one the caller named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.types import Interrupt

from remote_graph._core.revive import message, messages_in, revive, revive_state, same_message
from remote_graph._core.schema import GraphSchemas
from remote_graph.errors import exception_from_repr, remote_exception

__all__ = ["CallView", "ChunkReader", "SERVER_METADATA", "interrupts_of", "tuples"]

Namespace = tuple[str, ...]

SERVER_METADATA = frozenset(
    {
        "assistant_id",
        "created_by",
        "graph_id",
        "langgraph_api_url",
        "langgraph_api_version",
        "langgraph_auth_permissions",
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_host",
        "langgraph_plan",
        "langgraph_request_id",
        "langgraph_version",
        "run_attempt",
        "run_id",
        "user_id",
        # aegra's.
        "user_display_name",
    }
)
"""Keys the server puts into every run's metadata and configurable that a local run has not."""

# Metadata a local run keeps as tuples (JSON made them lists).
_TUPLE_METADATA = ("langgraph_triggers", "langgraph_path")
# The server's message of an exception it will not show (its own serializer's placeholder).
HIDDEN_MESSAGE = "An internal error occurred"


def tuples(value: Any) -> Any:
    """``value`` with its lists (JSON's tuples) as tuples, at every depth."""
    return tuple(tuples(item) for item in value) if isinstance(value, (list, tuple)) else value


def interrupts_of(raw: Any) -> tuple[Interrupt, ...]:
    """``Interrupt``s from their JSON (``{"value", "id", ...}`` each)."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        Interrupt(value=revive(item.get("value")), id=str(item.get("id", "")))
        for item in raw
        if isinstance(item, Mapping)
    )


@dataclass(frozen=True)
class CallView:
    """The caller's side of a run, to read the server's answers back in its terms.

    Attributes:
        server_thread: The UUID of the server thread the run executes on.
        thread_name: The thread id as the caller named it, or ``None`` when it
            named none (a local run then has no thread id in its metadata).
        own_keys: The metadata and configurable keys the caller set itself:
            kept even when the server also uses the name.
    """

    server_thread: str
    thread_name: str | None
    own_keys: frozenset[str] = frozenset()

    def metadata(self, metadata: Any) -> Any:
        """Run or task metadata as a local run has it."""
        if not isinstance(metadata, Mapping):
            return metadata
        out: dict[str, Any] = {}
        for key, value in metadata.items():
            if key in SERVER_METADATA and key not in self.own_keys:
                continue
            if key == "thread_id" and key not in self.own_keys:
                if self.thread_name is None:
                    continue
                value = self.thread_name if value == self.server_thread else value
            elif key in _TUPLE_METADATA:
                value = tuples(value)
            out[key] = value
        return out

    def config(self, config: Any) -> Any:
        """A checkpoint's config as a local one: its own configurable keys, the caller's thread."""
        if not isinstance(config, Mapping):
            return config
        configurable = config.get("configurable")
        if not isinstance(configurable, Mapping):
            return dict(config)
        out: dict[str, Any] = {}
        for key, value in configurable.items():
            if key.startswith("__") or (key in SERVER_METADATA and key not in self.own_keys):
                continue
            if key == "thread_id" and value == self.server_thread and self.thread_name is not None:
                value = self.thread_name
            out[key] = value
        return {**config, "configurable": out}


class ChunkReader:
    """Rebuilds one classic run's chunks; see the module docstring.

    Args:
        view: The caller's side of the run.
        schemas: The deployed graph's schemas, when known (they tell which
            root state keys hold messages).
    """

    def __init__(self, view: CallView, schemas: GraphSchemas | None = None) -> None:
        self.view = view
        # Read at each use: a run learns the schemas after its reader is made
        # (the first call of a RemoteGraph), before its first chunk.
        self._schemas = schemas
        # Messages root updates handed out without an id (see ``name_idless``).
        self.idless: list[BaseMessage] = []
        # The last ``messages`` chunk's metadata, as it came and as handed out.
        # A local run hands every token of one model call the same metadata
        # dict, and the server repeats it with each token: equal metadata is
        # read once and shared, as locally.
        self._metadata: tuple[Any, Any] = (None, None)

    @property
    def plain_keys(self) -> frozenset[str]:
        """The root state's keys whose schema admits no message (none while the schemas are unknown)."""
        return self._schemas.plain_keys if self._schemas is not None else frozenset()

    def state(self, ns: Namespace, values: Any) -> Any:
        """State values at ``ns`` (the schema only describes the root graph's)."""
        values = revive_state(values, self.plain_keys if not ns else ())
        if isinstance(values, dict) and "__interrupt__" in values:
            values = {**values, "__interrupt__": interrupts_of(values["__interrupt__"])}
        return values

    def name_idless(self, values: Any) -> None:
        """Give the messages root updates handed out without an id the ids the state gave them.

        A node may return a message without an id (a tool's ``ToolMessage``);
        the state's reducer gives it one, and locally it does so on the very
        object the ``updates`` chunk handed out, after handing it out. The
        state that follows (the next root ``values``, or the thread's state at
        the run's end) holds the message with its id: it is set here on the
        object handed out, as locally.
        """
        if not self.idless:
            return
        candidates = [m for m in reversed(messages_in(values)) if m.id is not None]
        for pending in reversed(list(self.idless)):
            match = next((c for c in candidates if same_message(c, pending)), None)
            if match is not None:
                pending.id = match.id
                candidates.remove(match)
        self.idless = [m for m in self.idless if m.id is None]

    def read(self, mode: str, ns: Namespace, payload: Any) -> Any:
        """The payload a local run yields for one chunk of ``mode`` at ``ns``."""
        if mode == "values":
            values = self.state(ns, payload)
            if not ns:
                self.name_idless(values)
            return values
        if mode == "updates":
            update = self._update(ns, payload)
            if not ns:
                self.idless.extend(m for m in messages_in(update) if m.id is None)
            return update
        if mode == "messages":
            return self._message(payload)
        if mode == "tasks":
            return self.task(ns, payload)
        if mode == "checkpoints":
            return self.checkpoint(ns, payload)
        if mode == "debug":
            return self._debug(ns, payload)
        return payload

    def _update(self, ns: Namespace, update: Any) -> Any:
        if not isinstance(update, dict):
            return revive(update)
        out: dict[str, Any] = {}
        for node, value in update.items():
            if node == "__interrupt__":
                out[node] = interrupts_of(value)
            elif isinstance(value, list):
                # A node that ran more than once in the step (several Sends): one write each.
                out[node] = [self.state(ns, item) for item in value]
            else:
                out[node] = self.state(ns, value)
        return out

    def _message(self, payload: Any) -> Any:
        if not isinstance(payload, list) or len(payload) != 2:
            return payload
        chunk, metadata = payload
        revived = message(chunk)
        raw, read = self._metadata
        if metadata != raw or read is None:
            read = self.view.metadata(metadata)
            self._metadata = (metadata, read)
        return (revived if revived is not None else chunk, read)

    def task(self, ns: Namespace, payload: Any) -> Any:
        """A task's start (``input``, ``triggers``) or result (``result``, ``error``, ``interrupts``)."""
        if not isinstance(payload, dict):
            return payload
        out = dict(payload)
        if "input" in out:
            out["input"] = self.state(ns, out["input"])
        if "triggers" in out:
            out["triggers"] = tuples(out["triggers"])
        if "metadata" in out:
            out["metadata"] = self.view.metadata(out["metadata"])
            if not out["metadata"]:
                del out["metadata"]
        if "result" in out:
            out["result"] = self._result(ns, out["result"])
        if out.get("error") is not None:
            out["error"] = task_error(out["error"])
        return out

    def _result(self, ns: Namespace, result: Any) -> Any:
        # A task's writes by channel, each channel's value as the state holds it.
        return self.state(ns, result)

    def checkpoint(self, ns: Namespace, payload: Any) -> Any:
        """A checkpoint as a local ``checkpoints`` / debug ``checkpoint`` payload has it."""
        if not isinstance(payload, dict):
            return payload
        out = dict(payload)
        if "config" in out:
            # The server's own copies of the two configs, in its checkpoint form.
            out.pop("checkpoint", None)
            out.pop("parent_checkpoint", None)
        for key in ("config", "parent_config"):
            if out.get(key) is not None:
                out[key] = self.view.config(out[key])
        if "values" in out:
            out["values"] = self.state(ns, out["values"])
        if isinstance(out.get("metadata"), Mapping):
            out["metadata"] = self.view.metadata(out["metadata"])
        tasks = out.get("tasks")
        if isinstance(tasks, list):
            out["tasks"] = [self._checkpoint_task(ns, task) for task in tasks]
        return out

    def _checkpoint_task(self, ns: Namespace, task: Any) -> Any:
        if not isinstance(task, dict):
            return task
        out = dict(task)
        if "checkpoint" in out and "state" not in out:
            # The server moves a subgraph task's config to ``checkpoint``; locally it is ``state``.
            out["state"] = {"configurable": out.pop("checkpoint")}
        if "interrupts" in out:
            out["interrupts"] = tuples(out["interrupts"])
        if "result" in out:
            out["result"] = self._result(ns, out["result"])
        if out.get("error") is not None:
            out["error"] = task_error(out["error"])
        if isinstance(out.get("state"), Mapping):
            out["state"] = self.view.config(out["state"])
        return out

    def _debug(self, ns: Namespace, payload: Any) -> Any:
        if not isinstance(payload, dict):
            return payload
        kind = payload.get("type")
        inner = payload.get("payload")
        if kind == "checkpoint":
            inner = self.checkpoint(ns, inner)
        elif kind in ("task", "task_result"):
            inner = self.task(ns, inner)
        return {**payload, "payload": inner}


def task_error(error: Any) -> Any:
    """A failed task's error as the exception a local run records.

    The stream carries ``{"error": type name, "message": ...}`` (aegra:
    ``{"type": type name, ...}``); the thread's state the exception's repr.
    Either becomes a ``RemoteRunError`` named after the remote type (the
    message of an exception the server will not show is its placeholder; the
    run's own error is read from the state).
    """
    if isinstance(error, Mapping):
        name = error.get("error", error.get("type"))
        return remote_exception(name if isinstance(name, str) else None, str(error.get("message", "")))
    if isinstance(error, str):
        return exception_from_repr(error) or remote_exception(None, error)
    return error
