"""A remote run inside a local parent's v3 run, as the parent's stream sees it.

A local compiled child writes its chunks into the parent task's stream under
the task's namespace; the parent's v3 mux then finds a ``run.subgraphs``
handle, lifecycle events and projections for it. ``NestedRun`` does the same
for a remote run: it is fed the run's v2 parts (from ``WireConverter``) and
returns the ``(namespace, mode, payload)`` chunks to write, then decides what
the node returns or raises. It never does I/O.

Three things a local child produces that the wire lacks are made up here:

* the handle: the parent's mux opens one on the first ``tasks`` event inside
  the child's namespace, which the wire never sends for the remote's root, so
  one is synthesized where a local child's first node would start (after the
  first root ``values``, which a local parent misses the same way);
* interrupts on the child's ``values``: put back as ``__interrupt__``, the key
  the parent's output step moves into the part's ``interrupts``;
* unique message routing keys across every remote run in the parent.

A parent that is not streaming v3 events (plain ``invoke``, v1/v2
``stream``) gets a classic run instead (``classic_nested.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Interrupt

Namespace = tuple[str, ...]
Chunk = tuple[Namespace, str, Any]
_MISSING: Any = object()


@dataclass(frozen=True)
class ParentResume:
    """What the parent's resume holds for interrupts raised by this remote run.

    Attributes:
        by_id: The parent's ``Command(resume={interrupt_id: value})`` map.
        value: The parent's plain ``Command(resume=value)``, if it had one.
    """

    by_id: Mapping[str, Any] = field(default_factory=dict)
    value: Any = _MISSING

    def responses(self, pending: list[str]) -> tuple[dict[str, Any] | None, bool]:
        """Resume values for the pending interrupt ids (``None`` if there are none),
        and whether the parent's plain value was used (a local ``interrupt()``
        would consume it)."""
        chosen = {i: self.by_id[i] for i in pending if i in self.by_id}
        if chosen:
            return chosen, False
        if self.value is not _MISSING and len(pending) == 1:
            return {pending[0]: self.value}, True
        if self.value is not _MISSING and pending:
            # langgraph's own error (type and words) for the same resume of a local child.
            raise RuntimeError(
                "When there are multiple pending interrupts, you must specify the interrupt id when resuming: "
                f"the remote child has {len(pending)} pending interrupts ({', '.join(pending)}); "
                "resume the parent with Command(resume={interrupt_id: value, ...})."
            )
        return None, False


class NestedRun:
    """Turns one remote v3 run's parts into chunks for the parent task's stream.

    Args:
        caller_ns: The parent task's checkpoint namespace, split on ``|``.
        modes: The stream modes the parent's stream accepts.
        key_prefix: Makes message routing keys unique in the parent.
        metadata: User metadata a local child's first task would carry; its
            ``lc_agent_name`` makes the parent treat the child as a subagent
            (its graph name, and the tool call that spawned it as ``cause``).
    """

    def __init__(
        self,
        caller_ns: Namespace,
        modes: frozenset[str],
        *,
        key_prefix: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.caller_ns = caller_ns
        self.metadata = dict(metadata or {})
        self.modes = modes
        self.key_prefix = key_prefix
        self.output: Any = None
        self._opened = False
        self._seen_values = False

    def feed(self, part: Mapping[str, Any]) -> list[Chunk]:
        """The chunks one remote part becomes in the parent's stream."""
        mode: str = part["type"]
        rel: Namespace = tuple(part["ns"])
        chunks: list[Chunk] = []
        is_root_values = mode == "values" and not rel
        if is_root_values:
            self.output = part["data"]
        if not self._opened and not (is_root_values and not self._seen_values):
            chunks.extend(self._open())
        if is_root_values:
            self._seen_values = True
        ns = self.caller_ns + rel
        if mode == "values":
            payload = dict(part["data"]) if isinstance(part["data"], Mapping) else part["data"]
            if part.get("interrupts") and isinstance(payload, dict):
                payload["__interrupt__"] = tuple(part["interrupts"])
            chunks.append((ns, mode, payload))
        elif mode == "messages":
            event, metadata = part["data"]
            meta = dict(metadata)
            meta["run_id"] = f"{self.key_prefix}:{meta.get('run_id')}"
            meta["langgraph_checkpoint_ns"] = "|".join(ns)
            chunks.append((ns, mode, (event, meta)))
        else:
            chunks.append((ns, mode, part["data"]))
        return [c for c in chunks if c[1] in self.modes]

    def finish(self) -> list[Chunk]:
        """Chunks owed once the run is over (a run with no events still opens its handle)."""
        return [c for c in self._open() if c[1] in self.modes]

    def result(
        self, status: str, interrupts: list[Interrupt], output_keys: frozenset[str] | None = None
    ) -> tuple[Any, tuple[Interrupt, ...]]:
        """What the node returns (the output schema's keys of the last state, as a
        local ``invoke`` returns), and the interrupts it must raise (empty unless paused)."""
        output = self.output
        if output_keys is not None and isinstance(output, Mapping):
            output = {key: value for key, value in output.items() if key in output_keys}
        if status == "interrupted" and interrupts:
            return output, tuple(interrupts)
        return output, ()

    def _open(self) -> list[Chunk]:
        if self._opened:
            return []
        self._opened = True
        start: dict[str, Any] = {
            "id": self.key_prefix,
            "name": self.caller_ns[-1].partition(":")[0],
            "input": None,
            "triggers": (),
        }
        if self.metadata:
            start["metadata"] = self.metadata
        return [(self.caller_ns, "tasks", start)]
