"""A remote run inside a classic local parent's task, as the parent's stream sees it.

A local child called in a parent run with plain ``invoke`` or ``stream()``
(not a v3 run stream) runs as a classic run and writes its chunks, with its
namespace under the parent task's, into the parent's stream: the modes the
parent streams, subgraphs' too when the parent streams subgraphs. A remote
child does the same: it starts a classic run (so its models return what a
local child's return), asks the server for the parent's stream modes, and
``ClassicNestedRun`` turns each of the run's parts into the chunk a local
child would write. Message metadata names the chunk's place in the parent
(its checkpoint namespace under the parent task's, the parent's thread), and
messages go out only from the namespaces the parent's messages handler emits
from, as a local child's do. It never does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from langgraph.types import Interrupt

from remote_graph._core.revive import messages_in

__all__ = ["ClassicNestedRun"]

Namespace = tuple[str, ...]
Chunk = tuple[Namespace, str, Any]


@dataclass(eq=False)
class ClassicNestedRun:
    """Turns one remote classic run's parts into chunks for the parent task's stream.

    Args:
        caller_ns: The parent task's checkpoint namespace, split on ``|``.
        modes: The stream modes the parent's stream accepts (none when the
            parent is not streaming).
        parent_thread: The parent's thread id, as the parent's chunks name it.
        emits: Whether the parent's messages handler emits messages from a
            namespace (``None``: the parent has no such handler).
        mark_seen: Tells the parent's messages handler messages were seen.
            Locally it sees every message a child's node takes in its input
            (and so does not emit it again when the parent's node returns it);
            a remote child's states stand for those inputs.
    """

    caller_ns: Namespace
    modes: frozenset[str]
    _: KW_ONLY
    parent_thread: str | None
    emits: Callable[[Namespace], bool] | None = None
    mark_seen: Callable[[list[str]], None] | None = None
    output: Any = field(default=None, init=False)
    _prefix: str = field(init=False)

    def __post_init__(self) -> None:
        self._prefix = "|".join(self.caller_ns)

    def feed(self, part: Mapping[str, Any]) -> list[Chunk]:
        """The chunks one remote part becomes in the parent's stream."""
        mode: str = part["type"]
        rel: Namespace = tuple(part["ns"])
        ns = self.caller_ns + rel
        if mode == "values":
            if not rel:
                self.output = part["data"]
            if self.mark_seen is not None and self.emits is not None and self.emits(ns):
                self.mark_seen([m.id for m in messages_in(part["data"]) if m.id is not None])
        if mode not in self.modes:
            return []
        if mode == "messages":
            if self.emits is None or not self.emits(ns):
                return []
            message, metadata = part["data"]
            return [(ns, mode, (message, self.metadata(metadata)))]
        return [(ns, mode, part["data"])]

    def finish(self) -> list[Chunk]:
        """Chunks owed once the run is over: none (every chunk went out as it came)."""
        return []

    def result(
        self, status: str, interrupts: list[Interrupt], output_keys: frozenset[str] | None = None
    ) -> tuple[Any, tuple[Interrupt, ...]]:
        """What the node returns (the output schema's keys of the last state, as a
        local ``invoke`` returns), and the interrupts it must raise (empty unless paused)."""
        output = self.output
        if isinstance(output, Mapping) and "__interrupt__" in output:
            output = {key: value for key, value in output.items() if key != "__interrupt__"}
        if output_keys is not None and isinstance(output, Mapping):
            output = {key: value for key, value in output.items() if key in output_keys}
        if status == "interrupted" and interrupts:
            return output, tuple(interrupts)
        return output, ()

    def metadata(self, metadata: Any) -> Any:
        """Metadata of the remote run as a local child's: its place under the parent task."""
        if not isinstance(metadata, Mapping):
            return metadata
        out = dict(metadata)
        value = out.get("langgraph_checkpoint_ns")
        if isinstance(value, str) and self._prefix:
            out["langgraph_checkpoint_ns"] = f"{self._prefix}|{value}" if value else self._prefix
        if self._prefix:
            # langchain copies a config's checkpoint_ns into callback metadata
            # once, at the outermost task (the parent's): the path's first segment.
            out["checkpoint_ns"] = self._prefix.split("|", 1)[0]
        if "thread_id" in out and self.parent_thread is not None:
            out["thread_id"] = self.parent_thread
        return out
