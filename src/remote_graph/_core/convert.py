"""Protocol events of a run's stream -> the v2 stream parts langgraph's ``StreamMux`` consumes.

A local v3 run is ``GraphRunStream(graph_iter, mux)`` where ``graph_iter``
yields ``{"type", "ns", "data", "interrupts"}`` parts. The per-run stream
carries the server mux's own main log: the same events a local mux would
log, as JSON. Turning them back into parts lets langgraph's transformers build
every projection exactly as they do locally. What JSON lost is rebuilt here:

* objects: messages and ``Interrupt`` objects are revived from their dicts;
* subgraph lifecycle: langgraph's lifecycle and subgraph transformers infer
  it from ``tasks`` events, which the server does not forward; the
  ``lifecycle`` events its own lifecycle transformer logged (root-scoped, the
  child's namespace in the data) are turned back into the equivalent
  ``tasks`` start / result parts;
* message routing: ``messages`` events carry no metadata, so each namespace's
  current message gets a stable routing key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Interrupt

from remote_graph._core.revive import revive

Part = dict[str, Any]
Namespace = tuple[str, ...]

_LIFECYCLE_ENDS = frozenset({"completed", "failed", "interrupted", "drained"})


@dataclass
class _Subgraph:
    task_id: str
    name: str | None


@dataclass
class WireConverter:
    """Stateful converter for the protocol events of one run."""

    interrupts: list[tuple[Namespace, Interrupt]] = field(default_factory=list)
    _interrupt_ids: set[str] = field(default_factory=set)
    _open: dict[Namespace, _Subgraph] = field(default_factory=dict)
    _message_keys: dict[Namespace, str] = field(default_factory=dict)
    _message_count: int = 0

    def convert(self, method: str, params: Mapping[str, Any]) -> list[Part]:
        """Convert one protocol event (its ``method`` and ``params``)."""
        ns: Namespace = tuple(params.get("namespace") or ())
        data = params.get("data")
        if method == "values":
            interrupts = self._interrupts(ns, params.get("interrupts"))
            return [{"type": "values", "ns": ns, "data": revive(data), "interrupts": interrupts}]
        if method == "updates":
            return [{"type": "updates", "ns": ns, "data": self._update(ns, data)}]
        if method == "messages":
            return [self._message(ns, data)]
        if method == "lifecycle":
            return self._lifecycle(data)
        if method == "tools":
            return [{"type": "tools", "ns": ns, "data": revive(data)}]
        return [{"type": method, "ns": ns, "data": data}]

    def finish(self, *, interrupted: bool) -> list[Part]:
        """Parts owed at the end of the run: subgraphs a paused run left open
        are closed as interrupted, as a local run closes them."""
        parts: list[Part] = []
        if interrupted:
            for sub_ns in sorted(self._open, key=len, reverse=True):
                if self._below(sub_ns):
                    parts.extend(self._terminal(sub_ns, "interrupted", None))
        return parts

    # --- interrupts -------------------------------------------------------

    def _interrupts(self, ns: Namespace, raw: Any) -> tuple[Interrupt, ...]:
        if not isinstance(raw, list) or not raw:
            return ()
        found = tuple(self._interrupt(item) for item in raw if isinstance(item, Mapping))
        for interrupt in found:
            if interrupt.id not in self._interrupt_ids:
                self._interrupt_ids.add(interrupt.id)
                self.interrupts.append((ns, interrupt))
        return found

    @staticmethod
    def _interrupt(item: Mapping[str, Any]) -> Interrupt:
        return Interrupt(value=revive(item.get("value")), id=str(item.get("id", "")))

    def _update(self, ns: Namespace, data: Any) -> Any:
        if isinstance(data, dict) and "__interrupt__" in data:
            rest = revive({key: value for key, value in data.items() if key != "__interrupt__"})
            # Locally the step that paused carries a tuple of Interrupt objects.
            return {**rest, "__interrupt__": self._interrupts(ns, data["__interrupt__"])}
        return revive(data)

    def _below(self, ns: Namespace) -> list[Interrupt]:
        return [i for at, i in self.interrupts if at[: len(ns)] == ns]

    # --- messages ---------------------------------------------------------

    def _message(self, ns: Namespace, data: Any) -> Part:
        if isinstance(data, dict) and data.get("event") == "message-start":
            self._message_count += 1
            self._message_keys[ns] = f"{'|'.join(ns)}#{self._message_count}"
        key = self._message_keys.get(ns, "|".join(ns))
        metadata = {"langgraph_node": None, "langgraph_checkpoint_ns": "|".join(ns), "run_id": key}
        return {"type": "messages", "ns": ns, "data": (data, metadata)}

    # --- subgraph lifecycle -> tasks ----------------------------------------

    def _lifecycle(self, data: Any) -> list[Part]:
        if not isinstance(data, Mapping):
            return []
        ns: Namespace = tuple(data.get("namespace") or ())
        if not ns:
            return []
        event = data.get("event")
        if event == "started":
            return self._started(ns, data)
        if event in _LIFECYCLE_ENDS:
            error = data.get("error")
            return self._terminal(ns, str(event), str(error) if error is not None else None)
        return []

    def _started(self, ns: Namespace, data: Mapping[str, Any]) -> list[Part]:
        segment_name, _, segment_id = ns[-1].partition(":")
        task_id = str(data.get("trigger_call_id") or segment_id or ns[-1])
        graph_name = data.get("graph_name")
        name = graph_name if isinstance(graph_name, str) else segment_name
        self._open[ns] = _Subgraph(task_id=task_id, name=name)
        parts: list[Part] = []
        start: dict[str, Any] = {"id": task_id, "name": segment_name, "input": None, "triggers": ()}
        cause = data.get("cause")
        caused_by_tool = isinstance(cause, Mapping) and isinstance(cause.get("tool_call_id"), str)
        if name != segment_name or caused_by_tool:
            # The server names agent subgraphs by lc_agent_name, and only a
            # subagent has a tool-call cause; both tell the client it is one.
            start["metadata"] = {"lc_agent_name": name}
        if caused_by_tool:
            assert isinstance(cause, Mapping)
            # The tasks transformers learn tool-call causes from the parent's task input.
            parts.append(
                {
                    "type": "tasks",
                    "ns": ns[:-1],
                    "data": {"id": task_id, "name": segment_name, "input": {"tool_call": {"id": cause["tool_call_id"]}}, "triggers": ()},
                }
            )
        parts.append({"type": "tasks", "ns": ns, "data": start})
        return parts

    def _terminal(self, ns: Namespace, status: str, error: str | None) -> list[Part]:
        sub = self._open.pop(ns, None)
        if sub is None:
            return []
        result: dict[str, Any] = {"id": sub.task_id, "name": sub.name, "result": None, "error": None, "interrupts": []}
        if status == "failed":
            result["error"] = error or "Subgraph failed"
        elif status == "interrupted":
            result["interrupts"] = self._below(ns) or [Interrupt(value=None, id="")]
        return [{"type": "tasks", "ns": ns[:-1], "data": result}]
