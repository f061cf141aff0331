"""Wire events -> the v2 stream parts that langgraph's own ``StreamMux`` consumes.

A local v3 run is ``GraphRunStream(graph_iter, mux)`` where ``graph_iter``
yields ``{"type", "ns", "data", "interrupts"}`` parts. Converting the wire back
into those parts lets langgraph's transformers build every projection exactly
as they do locally. Three things the wire lost are rebuilt here:

* interrupts: the server strips ``__interrupt__`` from ``updates`` and
  ``values`` and sends ``input.requested`` instead; the parts get them back as
  ``Interrupt`` objects, on the same events a local run carries them on;
* subgraph lifecycle: langgraph's lifecycle and subgraph transformers infer it
  from ``tasks`` events, which the server never sends; the wire's
  ``lifecycle`` events are turned into the equivalent ``tasks`` start/result
  parts;
* message routing: ``messages`` events carry no metadata, so each namespace's
  current message gets a stable routing key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Interrupt

from remote_graph._core.revive import revive

Part = dict[str, Any]
Namespace = tuple[str, ...]


@dataclass
class _Subgraph:
    task_id: str
    name: str | None


@dataclass
class WireConverter:
    """Stateful converter for the events of one run (root lifecycle excluded)."""

    interrupts: list[tuple[Namespace, Interrupt]] = field(default_factory=list)
    # Namespace of an ``updates`` event the server emptied by stripping its interrupt.
    _held: Namespace | None = None
    # Interrupt ids already carried by an ``updates`` / ``values`` part at a namespace.
    _on_updates: dict[Namespace, set[str]] = field(default_factory=dict)
    _on_values: dict[Namespace, set[str]] = field(default_factory=dict)
    _open: dict[Namespace, _Subgraph] = field(default_factory=dict)
    _message_keys: dict[Namespace, str] = field(default_factory=dict)
    _message_count: int = 0

    def convert(self, method: str, ns: Namespace, data: Any) -> list[Part]:
        """Convert one wire event (``method``, ``params.namespace``, ``params.data``)."""
        if method == "input.requested":
            return self._interrupt(ns, data)
        parts = self._release_held()
        if method == "updates" and data == {}:
            self._held = ns
            return parts
        if method == "values":
            parts.append(
                {"type": "values", "ns": ns, "data": revive(data), "interrupts": self._claim(self._on_values, ns)}
            )
        elif method == "updates":
            parts.append({"type": "updates", "ns": ns, "data": revive(data)})
        elif method == "messages":
            parts.append(self._message(ns, data))
        elif method == "lifecycle":
            parts.extend(self._lifecycle(ns, data))
        elif method == "tools":
            parts.append({"type": "tools", "ns": ns, "data": revive(data)})
        else:
            parts.append({"type": method, "ns": ns, "data": data})
        return parts

    def finish(self, *, interrupted: bool) -> list[Part]:
        """Parts owed at the end of the run.

        An interrupted run's subgraph ``interrupted`` lifecycle can trail the
        run's last events; close such subgraphs from the interrupts already
        known instead of waiting for it.
        """
        parts = self._release_held()
        if interrupted:
            for sub_ns in sorted(self._open, key=len, reverse=True):
                if self._below(sub_ns):
                    parts.extend(self._terminal(sub_ns, "interrupted", None))
        return parts

    # --- interrupts -------------------------------------------------------

    def _interrupt(self, ns: Namespace, data: Any) -> list[Part]:
        if not isinstance(data, dict) or not isinstance(data.get("interrupt_id"), str):
            return []
        interrupt_id = data["interrupt_id"]
        if any(known.id == interrupt_id for _, known in self.interrupts):
            return []
        self.interrupts.append((ns, Interrupt(value=revive(data.get("payload")), id=interrupt_id)))
        if self._held == ns:
            return self._release_held()
        return []

    def _below(self, ns: Namespace) -> list[Interrupt]:
        return [i for at, i in self.interrupts if at[: len(ns)] == ns]

    def _claim(self, claimed: dict[Namespace, set[str]], ns: Namespace) -> tuple[Interrupt, ...]:
        seen = claimed.setdefault(ns, set())
        fresh = tuple(i for i in self._below(ns) if i.id not in seen)
        seen.update(i.id for i in fresh)
        return fresh

    def _release_held(self) -> list[Part]:
        held, self._held = self._held, None
        if held is None:
            return []
        fresh = self._claim(self._on_updates, held)
        # Locally a step that paused carries `__interrupt__`, empty for interrupt_before/after.
        data: dict[str, Any] = {"__interrupt__": fresh}
        return [{"type": "updates", "ns": held, "data": data}]

    # --- messages ---------------------------------------------------------

    def _message(self, ns: Namespace, data: Any) -> Part:
        if isinstance(data, dict) and data.get("event") == "message-start":
            self._message_count += 1
            self._message_keys[ns] = f"{'|'.join(ns)}#{self._message_count}"
        key = self._message_keys.get(ns, "|".join(ns))
        metadata = {"langgraph_node": None, "langgraph_checkpoint_ns": "|".join(ns), "run_id": key}
        return {"type": "messages", "ns": ns, "data": (data, metadata)}

    # --- subgraph lifecycle -> tasks ----------------------------------------

    def _lifecycle(self, ns: Namespace, data: Any) -> list[Part]:
        if not isinstance(data, dict) or not ns:
            return []
        event = data.get("event")
        if event == "started":
            return self._started(ns, data)
        if event in ("completed", "failed", "interrupted", "drained"):
            error = data.get("error")
            return self._terminal(ns, event, str(error) if error is not None else None)
        return []

    def _started(self, ns: Namespace, data: dict[str, Any]) -> list[Part]:
        segment_name, _, segment_id = ns[-1].partition(":")
        task_id = str(data.get("trigger_call_id") or segment_id or ns[-1])
        graph_name = data.get("graph_name")
        name = graph_name if isinstance(graph_name, str) else segment_name
        self._open[ns] = _Subgraph(task_id=task_id, name=name)
        parts: list[Part] = []
        start: dict[str, Any] = {"id": task_id, "name": segment_name, "input": None, "triggers": ()}
        if name != segment_name:
            # The server names agent subgraphs by lc_agent_name; keep that name.
            start["metadata"] = {"lc_agent_name": name}
        cause = data.get("cause")
        if isinstance(cause, dict) and isinstance(cause.get("tool_call_id"), str):
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
