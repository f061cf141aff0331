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
  ``tasks`` start / result parts. The server does not store ``lifecycle``
  events for a replay (only the run's stream modes are), and the Postgres +
  Redis runtime drops some of them live, so they can be missing. The server
  sends a subgraph's start right after the subgraph's first event, and its
  end right after the parent's update for the node it ran in: a start not
  there by the subgraph's second event is made there, an end not there by
  the next event is made before it (without updates on the wire, before the
  parent's next state), and a completed run closes what is left;
* message routing: ``messages`` events carry no metadata, so each namespace's
  current message gets a stable routing key, and the node the thread's state
  says the step runs (``steps.step_node``, asked for by the driver through
  ``wants_step`` / ``learn_step``);
* node-returned messages: the whole-message events a local run has for
  messages a node returns without streaming them are rebuilt from the node's
  update (``returned.ReturnedMessages``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Interrupt

from remote_graph._core.returned import ReturnedMessages
from remote_graph._core.revive import revive
from remote_graph._core.steps import history_writer, node_names, step_node, strangers, writer

Part = dict[str, Any]
Namespace = tuple[str, ...]

_LIFECYCLE_ENDS = frozenset({"completed", "failed", "interrupted", "drained"})


@dataclass
class _Subgraph:
    task_id: str
    name: str | None


@dataclass
class _Awaited:
    """A message whose start is held until the wire names its node."""

    ns: Namespace
    message_id: str
    metadata: dict[str, Any]


# The step's node is not known yet: the state said the server ran past it.
_AHEAD = object()


@dataclass
class WireConverter:
    """Stateful converter for the protocol events of one run."""

    interrupts: list[tuple[Namespace, Interrupt]] = field(default_factory=list)
    _interrupt_ids: set[str] = field(default_factory=set)
    _open: dict[Namespace, _Subgraph] = field(default_factory=dict)
    # Every subgraph namespace ever opened (one that ended is not opened again),
    # and the ones seen once whose start has not come yet.
    _opened: set[Namespace] = field(default_factory=set)
    _unopened: set[Namespace] = field(default_factory=set)
    # Subgraphs whose node's update in the parent just came: their end is next.
    _ending: list[Namespace] = field(default_factory=list)
    _message_keys: dict[Namespace, str] = field(default_factory=dict)
    _message_count: int = 0
    _returned: ReturnedMessages = field(default_factory=ReturnedMessages)
    # Per namespace: how many states and updates were sent, which tells steps
    # apart (a step that changes nothing sends no state), and the names the
    # updates since the last state carried.
    _steps: dict[Namespace, int] = field(default_factory=dict)
    _updated: dict[Namespace, list[str]] = field(default_factory=dict)
    # The deployed graph's node names, once read (see ``wants_nodes``).
    _nodes: frozenset[str] | None = None
    # (namespace, step index) -> the node that step runs there (None: not one
    # node, or unknown; _AHEAD: named later by the wire).
    _step_nodes: dict[tuple[Namespace, int, int], Any] = field(default_factory=dict)
    _message_nodes: dict[Namespace, str | None] = field(default_factory=dict)
    # Named-channel events wait for the event they were forwarded before.
    _forwarded: list[Part] = field(default_factory=list)
    # Messages whose start waits for their node, and the parts held meanwhile.
    _awaited: list[_Awaited] = field(default_factory=list)
    _held: list[Part] = field(default_factory=list)

    def convert(self, method: str, params: Mapping[str, Any]) -> list[Part]:
        """Convert one protocol event (its ``method`` and ``params``)."""
        ns: Namespace = tuple(params.get("namespace") or ())
        data = params.get("data")
        if method.startswith("custom:"):
            # A transformer's named channel. The server's mux logs a push just
            # before the event the transformer was processing, so a message
            # rebuilt for that event (below) must go before it, as locally.
            self._forwarded.append({"type": method, "ns": ns, "data": data})
            return []
        lost_ends = self._lost_ends(method, data)
        if method == "values" and self._open:
            lost_ends += self._ended_by_state(ns, params)
        returned, parts = self._convert(method, ns, params, data)
        if ns and method != "lifecycle":
            parts = [*self._unannounced(ns), *parts]
        if method == "updates" and self._open and isinstance(data, Mapping):
            self._ending = self._ended_by(ns, data)
        if lost_ends:
            parts = [*lost_ends, *parts]
        if returned or self._forwarded:
            parts = [*returned, *self._forwarded, *parts]
            self._forwarded.clear()
        if not self._awaited:
            return parts
        self._resolve(method, ns, data)
        self._held.extend(parts)
        if self._awaited:
            return []
        held, self._held = self._held, []
        return held

    def _convert(
        self, method: str, ns: Namespace, params: Mapping[str, Any], data: Any
    ) -> tuple[list[Part], list[Part]]:
        """The parts of one event, after the node-returned messages owed before them."""
        if method == "values":
            interrupts = self._interrupts(ns, params.get("interrupts"))
            self._steps[ns] = self._steps.get(ns, 0) + 1
            self._updated.pop(ns, None)
            values = revive(data)
            return self._returned.from_values(ns, values), [
                {"type": "values", "ns": ns, "data": values, "interrupts": interrupts}
            ]
        if method == "updates":
            if isinstance(data, Mapping):
                self._updated.setdefault(ns, []).extend(k for k in data if isinstance(k, str) and k != "__interrupt__")
            update = self._update(ns, data)
            return self._returned.from_update(ns, update), [{"type": "updates", "ns": ns, "data": update}]
        return [], self._plain(method, ns, data)

    def _plain(self, method: str, ns: Namespace, data: Any) -> list[Part]:
        if method == "messages":
            return [self._message(ns, data)]
        if method == "lifecycle":
            return self._lifecycle(data)
        if method == "tools":
            return [{"type": "tools", "ns": ns, "data": revive(data)}]
        return [{"type": method, "ns": ns, "data": data}]

    def finish(self, *, interrupted: bool, completed: bool = False) -> list[Part]:
        """Parts owed at the end of the run: the ones still held back, and
        subgraphs a paused run left open are closed as interrupted, as a local
        run closes them. A completed run has no subgraph left running: one
        still open lost its end on the way and is closed as completed."""
        parts: list[Part] = [*self._held, *self._forwarded, *self._lost_ends("", None)]
        self._held, self._forwarded, self._awaited = [], [], []
        if interrupted:
            for sub_ns in sorted(self._open, key=len, reverse=True):
                if self._below(sub_ns):
                    parts.extend(self._terminal(sub_ns, "interrupted", None))
        elif completed:
            for sub_ns in sorted(self._unopened, key=len):
                parts.extend(self._started(sub_ns, {}))
            for sub_ns in sorted(self._open, key=len, reverse=True):
                parts.extend(self._terminal(sub_ns, "completed", None))
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

    def wants_step(self, method: str, params: Mapping[str, Any]) -> Namespace | None:
        """The namespace whose step's node must be learned (``learn_step``) before
        this event converts, or ``None``: asked once per step that streams a message."""
        if method != "messages":
            return None
        data = params.get("data")
        if not isinstance(data, Mapping) or data.get("event") != "message-start":
            return None
        ns: Namespace = tuple(params.get("namespace") or ())
        return None if self._step_key(ns) in self._step_nodes else ns

    def _step_key(self, ns: Namespace) -> tuple[Namespace, int, int]:
        return ns, self._steps.get(ns, 0), len(self._updated.get(ns, ()))

    def wants_nodes(self, ns: Namespace, state: Any) -> bool:
        """Whether the deployed graph's node names are needed (``learn_nodes``)
        before ``learn_step``: an update since the last state came from a name
        the state's tasks do not list, a node of an earlier step or a ``@task``
        the running node called."""
        return self._nodes is None and bool(strangers(state, ns, self._updated.get(ns, ())))

    def learn_nodes(self, graph: Any) -> None:
        """Record the deployed graph's drawing (``GET /assistants/{id}/graph?xray=true``;
        ``None`` when it could not be read: every stranger counts as a ``@task``)."""
        self._nodes = node_names(graph)

    def learn_step(self, ns: Namespace, state: Any, message_id: Any) -> None:
        """Record what the thread's state, read as message ``message_id`` starts at
        ``ns``, says of the step's node (``state`` is ``None`` when it could not be
        read: the node stays unknown)."""
        node: Any = None
        if state is not None:
            calls = [
                name for name in strangers(state, ns, self._updated.get(ns, ())) if name not in (self._nodes or ())
            ]
            answer = step_node(state, ns, message_id, calls)
            node = _AHEAD if answer.ahead else answer.node
        self._step_nodes[self._step_key(ns)] = node

    def wants_writers(self, method: str, params: Mapping[str, Any]) -> Namespace | None:
        """The namespace whose held messages' writers must be read (``learn_writers``)
        before this event converts: a step's ``values`` ends the wait for the
        ``updates`` that names them, which a module without ``UpdatesTransformer``
        never sends; and such a state brings the messages nodes returned, which
        only it carries there."""
        if method != "values":
            return None
        ns: Namespace = tuple(params.get("namespace") or ())
        unnamed = any(a.ns == ns and a.metadata.get("langgraph_node") is None for a in self._awaited)
        return ns if unnamed or self._returned.unnamed(ns, params.get("data")) else None

    def learn_writers(self, ns: Namespace, history: Any, values: Any = None) -> None:
        """Name the held messages at ``ns``, and the returned ones the state
        ``values`` (as sent) brings, from the thread's recent states (``None``:
        they could not be read, and the messages go on without a node)."""
        for awaited in self._awaited:
            if awaited.ns == ns and awaited.metadata.get("langgraph_node") is None:
                awaited.metadata["langgraph_node"] = history_writer(history, awaited.message_id)
        unnamed = self._returned.unnamed(ns, values)
        if unnamed:
            self._returned.name({i: history_writer(history, i) for i in unnamed})

    def _resolve(self, method: str, ns: Namespace, data: Any) -> None:
        """Name the held messages' nodes from this event: the update holding a
        message names its writer; the state ending its step names no one."""
        if method not in ("updates", "values"):
            return
        waiting = []
        for awaited in self._awaited:
            if awaited.ns != ns:
                waiting.append(awaited)
            elif method == "updates" and (node := writer(data, awaited.message_id)) is not None:
                awaited.metadata["langgraph_node"] = node
            elif method == "updates":
                waiting.append(awaited)
        self._awaited = waiting

    def _message(self, ns: Namespace, data: Any) -> Part:
        start = isinstance(data, dict) and data.get("event") == "message-start"
        node = None
        if start:
            self._message_count += 1
            self._message_keys[ns] = f"{'|'.join(ns)}#{self._message_count}"
            node = self._step_nodes.get(self._step_key(ns))
            self._message_nodes[ns] = None if node is _AHEAD else node
            self._returned.streamed(data.get("id", data.get("message_id")))
        key = self._message_keys.get(ns, "|".join(ns))
        metadata = {
            "langgraph_node": self._message_nodes.get(ns),
            "langgraph_checkpoint_ns": "|".join(ns),
            "run_id": key,
        }
        if node is _AHEAD and isinstance(data.get("id"), str):
            # Held (with every part after it) until the wire names the writer.
            self._awaited.append(_Awaited(ns, data["id"], metadata))
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

    def _unannounced(self, ns: Namespace) -> list[Part]:
        """Starts for the subgraphs ``ns`` lies in whose ``lifecycle`` start was lost,
        outermost first: a start comes right after its subgraph's first event, so
        one missing at the second was lost."""
        parts: list[Part] = []
        for depth in range(1, len(ns) + 1):
            sub_ns = ns[:depth]
            if sub_ns in self._opened:
                continue
            if sub_ns in self._unopened:
                parts.extend(self._started(sub_ns, {}))
            else:
                self._unopened.add(sub_ns)
        return parts

    def _ended_by(self, ns: Namespace, update: Mapping[str, Any]) -> list[Namespace]:
        """The open subgraphs an update at ``ns`` ends: one per node it names that
        runs exactly one (parallel tasks of a node are not told apart by its update)."""
        ending: list[Namespace] = []
        for node in update:
            running = [sub for sub in self._open if sub[:-1] == ns and sub[-1].partition(":")[0] == node]
            if len(running) == 1:
                ending.append(running[0])
        return ending

    def _ended_by_state(self, ns: Namespace, params: Mapping[str, Any]) -> list[Part]:
        """Ends for the subgraphs directly under ``ns`` still open when its state
        comes: the step they ran in is over, and their end was lost (a module
        without ``UpdatesTransformer`` sends no update to tell it by). One
        paused there is left to the run's end, which closes it as interrupted."""
        if params.get("interrupts"):
            return []
        parts: list[Part] = []
        for sub_ns in [sub for sub in self._open if sub[:-1] == ns]:
            if not self._below(sub_ns):
                parts.extend(self._terminal(sub_ns, "completed", None))
        return parts

    def _lost_ends(self, method: str, data: Any) -> list[Part]:
        """Ends for the subgraphs whose end should have come right before this event
        (``method``, ``data``) and did not: it was lost on the way."""
        if not self._ending:
            return []  # the usual case, on every event: nothing just ended
        ending, self._ending = self._ending, []
        arriving = data.get("namespace") if method == "lifecycle" and isinstance(data, Mapping) else None
        parts: list[Part] = []
        for sub_ns in ending:
            if sub_ns in self._open and list(sub_ns) != arriving:
                parts.extend(self._terminal(sub_ns, "completed", None))
        return parts

    def _started(self, ns: Namespace, data: Mapping[str, Any]) -> list[Part]:
        if ns in self._opened:
            return []  # opened by its second event already: its start came late
        self._opened.add(ns)
        self._unopened.discard(ns)
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
                    "data": {
                        "id": task_id,
                        "name": segment_name,
                        "input": {"tool_call": {"id": cause["tool_call_id"]}},
                        "triggers": (),
                    },
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
