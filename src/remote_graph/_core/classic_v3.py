"""A v3 run on a server without the v3 protocol: its classic frames, as the parts a local v3 run has.

A server that does not speak the v3 protocol (aegra; langgraph-api releases
before it) ignores the run's v3 marker and streams the classic modes the run
asked for, with subgraphs: ``values``, ``updates``, ``messages-tuple``,
``custom``, ``tasks`` and ``checkpoints``. Those are the parts a local v3 run
feeds its mux (``Pregel.stream_events(version="v3")`` streams the same modes
with ``subgraphs=True`` and ``version="v2"``), but for three differences,
undone here:

* a ``values`` part carries the step's interrupts in an ``interrupts`` field,
  not under ``__interrupt__`` in its data;
* a chat model's tokens are protocol message events (``message-start``, each
  block's start, deltas and finish, ``message-finish``), not
  ``AIMessageChunk``s: each message's chunks are turned into those events as
  they come (``ChunkEvents``), keyed by the message's id. The message ends
  with its last chunk (``chunk_position="last"``), else when its node's
  update comes (the node's only message streaming there), else when its
  task's result comes, else when the run ends;
* a message a node returns is handed on whole, as locally, but a
  ``ToolMessage`` is not (a v3 run's messages handler skips tool results).
  aegra sends such a message as one ``AIMessageChunk``, unmarked: it is a
  one-chunk stream, ended by the node's update.

The chunks' metadata names each message's node, so no state read is needed.
Only the modes the caller's mux requires reach it (``modes``), as locally.
The frames themselves (repeats, retried attempts, failed tasks' errors) are
``ClassicWire``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage
from langgraph.types import Interrupt

from remote_graph._core.classic import ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.join import RunCursor
from remote_graph._core.sse import Frame
from remote_graph._core.wire import Namespace, Part, Prepare
from remote_graph._private import ChunkEvents

__all__ = ["DEFAULT_MODES", "ClassicV3Wire"]

DEFAULT_MODES = frozenset({"values", "messages", "tasks", "updates", "custom"})
"""The modes a v3 run's default mux requires (its built-in projections, ``updates`` and ``custom``)."""


@dataclass
class _Streaming:
    """A message whose chunks are coming."""

    ns: Namespace
    events: ChunkEvents
    metadata: dict[str, Any]

    @property
    def node(self) -> Any:
        return self.metadata.get("langgraph_node")

    @property
    def task(self) -> str | None:
        """The id of the task streaming it: its checkpoint namespace's last ``name:task_id``."""
        ns = self.metadata.get("langgraph_checkpoint_ns")
        return ns.rpartition("|")[2].partition(":")[2] or None if isinstance(ns, str) else None


class ClassicV3Wire:
    """The classic frames of one v3 run, as v3 parts; see the module docstring.

    Args:
        reader: Rebuilds each chunk's payload as a local run yields it.
        thread_path: ``/threads/{id}`` of the run's thread.
        run_label: Names the run in error messages.
    """

    def __init__(self, reader: ChunkReader, thread_path: str, run_label: str = "the run") -> None:
        self._classic = ClassicWire(reader, thread_path, run_label)
        self.modes: frozenset[str] = DEFAULT_MODES
        # By message id, in the order they started.
        self._streaming: dict[str, _Streaming] = {}

    @property
    def run_label(self) -> str:
        return self._classic.run_label

    @run_label.setter
    def run_label(self, label: str) -> None:
        self._classic.run_label = label

    @property
    def interrupts(self) -> list[tuple[Namespace, Interrupt]]:
        return self._classic.interrupts

    def joined(self, after: RunCursor | None) -> None:
        self._classic.joined(after)

    def mark(self) -> tuple[str | None, int]:
        return self._classic.mark()

    def reconnected(self) -> list[Part]:
        return self._v3(self._classic.reconnected())

    def attempt(self, number: int, frame_id: str | None) -> None:
        self._classic.attempt(number, frame_id)

    def accept(self, frame: Frame) -> tuple[Any, bool] | None:
        return self._classic.accept(frame)

    def rewind(self) -> str | None:
        return self._classic.rewind()

    def prepare(self, event: Any) -> Prepare | None:
        return self._classic.prepare(event)

    def convert(self, event: Any) -> list[Part]:
        return self._v3(self._classic.convert(event))

    def finish(self, *, interrupted: bool, completed: bool = False) -> list[Part]:
        parts = self._v3(self._classic.finish(interrupted=interrupted, completed=completed))
        return [*parts, *self._end(list(self._streaming))]

    def wind_up(self) -> Prepare | None:
        return self._classic.wind_up()

    # --- classic parts -> v3 parts ------------------------------------------------------

    def _v3(self, parts: Iterable[Part]) -> list[Part]:
        out: list[Part] = []
        for part in parts:
            mode, ns, data = part["type"], part["ns"], part["data"]
            if self._streaming and isinstance(data, dict) and mode in ("updates", "tasks"):
                # Whether or not the caller's mux takes these modes, they end messages.
                out.extend(self._end(self._ended_by(mode, ns, data)))
            if mode not in self.modes:
                continue
            if mode == "messages":
                out.extend(self._message(ns, data))
                continue
            if mode == "values":
                interrupts: tuple[Interrupt, ...] = ()
                if isinstance(data, dict) and "__interrupt__" in data:
                    interrupts = tuple(data["__interrupt__"])
                    data = {key: value for key, value in data.items() if key != "__interrupt__"}
                part = {"type": "values", "ns": ns, "data": data, "interrupts": interrupts}
            out.append(part)
        return out

    def _message(self, ns: Namespace, data: Any) -> list[Part]:
        if not isinstance(data, tuple) or len(data) != 2:
            return []
        message, metadata = data
        if isinstance(message, AIMessageChunk):
            key = message.id or "|".join(ns)
            streaming = self._streaming.get(key)
            if streaming is None:
                # The key routes the message's events to its handle (a v3 run's
                # messages handler keys them by the model call's run id).
                own = {**metadata, "run_id": key} if isinstance(metadata, dict) else {"run_id": key}
                streaming = self._streaming[key] = _Streaming(ns, ChunkEvents(), own)
            parts = [_part(streaming, event) for event in streaming.events.feed(message)]
            if message.chunk_position == "last":
                parts.extend(self._end([key]))
            return parts
        if isinstance(message, BaseMessage) and not isinstance(message, ToolMessage):
            return [{"type": "messages", "ns": ns, "data": (message, metadata)}]
        return []

    def _ended_by(self, mode: str, ns: Namespace, data: dict[str, Any]) -> list[str]:
        """The messages whose last chunk was not marked that an ``updates`` or ``tasks`` part ends.

        A task's result ends the messages streamed in it. A node's update ends
        its one message still streaming there; when several tasks of the node
        stream at once (``Send``), the update is one task's, so each waits for
        its own task's result.
        """
        if mode == "tasks":
            done = data.get("id") if "result" in data or "error" in data else None
            return [key for key, s in self._streaming.items() if done is not None and s.task == done]
        keys: list[str] = []
        for node in data:
            streaming = [key for key, s in self._streaming.items() if s.ns == ns and s.node == node]
            if len(streaming) == 1:
                keys.extend(streaming)
        return keys

    def _end(self, keys: list[str]) -> list[Part]:
        parts: list[Part] = []
        for key in keys:
            streaming = self._streaming.pop(key)
            parts.extend(_part(streaming, event) for event in streaming.events.finish())
        return parts


def _part(streaming: _Streaming, event: dict[str, Any]) -> Part:
    return {"type": "messages", "ns": streaming.ns, "data": (event, streaming.metadata)}
