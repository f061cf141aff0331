"""Which node streams a message, from the thread's state, to name it at its start.

The wire's message events carry no node, and the server forwards no task
events. The thread's state does name tasks: those of its latest checkpoint,
each with its ``result`` once it has finished. While the client reads a
message's start, that checkpoint is the step streaming it, an earlier one
(the step's own checkpoint is not written yet) or a later one (the server ran
ahead of the client). ``step_node`` only answers when the state tells which:

1. a state that holds the message (in its values or in a task's result) is
   past the message: the server ran ahead, so the ``updates`` event that
   names the writer is already on its way, and the converter holds the
   message until it comes. A module that sends no ``updates`` ends the wait
   with the step's ``values``: the thread's recent states then name the task
   whose result holds the message (``history_writer``). (A task's result is not enough: a node returns
   what the ``@task`` functions it called wrote, and those calls are no
   tasks of the checkpoint.)
2. else the message is still streaming, so its task has not finished: the
   node, when the unfinished tasks at that namespace are all one node and
   nothing says that node calls ``@task`` functions: an update since the
   last state from a name neither the checkpoint's tasks nor the graph's
   nodes list (``strangers``, checked against ``node_names`` only when
   there are any).
   An earlier checkpoint's tasks have all finished, so it gives no answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

Namespace = tuple[str, ...]


class StepAnswer(NamedTuple):
    """What a thread state says of a message's node."""

    node: str | None
    # The state is past the message's step: its writer comes later on the wire.
    ahead: bool = False


def _holds(value: Any, message_id: str, *, removal: bool = True) -> bool:
    """Whether a state or a write holds the message ``message_id`` (as its wire dict);
    with ``removal=False`` a ``RemoveMessage`` of that id does not count."""
    if isinstance(value, Mapping):
        if value.get("id") == message_id and "content" in value:
            return removal or value.get("type") != "remove"
        return any(_holds(item, message_id, removal=removal) for item in value.values())
    if isinstance(value, list):
        return any(_holds(item, message_id, removal=removal) for item in value)
    return False


def writer(update: Any, message_id: Any) -> str | None:
    """The node of an ``updates`` event (as sent) whose writes hold message ``message_id``."""
    if not isinstance(update, Mapping) or not isinstance(message_id, str):
        return None
    return next((node for node, writes in update.items() if isinstance(node, str) and _holds(writes, message_id)), None)


def _snapshot(state: Any, ns: Namespace) -> Any:
    """The state of the (sub)graph at ``ns``: each segment ``name:task_id`` names the task to descend into."""
    snapshot = state
    for segment in ns:
        task_id = segment.partition(":")[2]
        tasks = snapshot.get("tasks") if isinstance(snapshot, Mapping) else None
        snapshot = next(
            (t.get("state") for t in tasks or () if isinstance(t, Mapping) and t.get("id") == task_id),
            None,
        )
    return snapshot


def strangers(state: Any, ns: Namespace, updated: Collection[str]) -> set[str]:
    """Names of ``updated`` that the checkpoint's tasks at ``ns`` do not list."""
    snapshot = _snapshot(state, ns)
    if not isinstance(snapshot, Mapping) or not updated:
        return set()
    listed = {t.get("name") for t in snapshot.get("tasks") or () if isinstance(t, Mapping)}
    return {name for name in updated if name not in listed}


def node_names(graph: Any) -> frozenset[str]:
    """Node names of a graph drawing (with ``xray``, a subgraph's nodes are ``sub:node``)."""
    nodes = graph.get("nodes") if isinstance(graph, Mapping) else None
    return frozenset(
        str(node["id"]).rpartition(":")[2]
        for node in nodes or ()
        if isinstance(node, Mapping) and node.get("id") is not None
    )


def step_node(state: Any, ns: Namespace, message_id: Any, calls: Collection[str] = ()) -> StepAnswer:
    """What ``state`` says of the node streaming message ``message_id`` at ``ns``.

    Args:
        state: The thread's state (``GET /threads/{id}/state``, with
            ``subgraphs=true`` when ``ns`` is not the root).
        ns: The namespace the message streams in; each segment
            ``name:task_id`` names the task whose subgraph state to descend into.
        message_id: The id in the message's ``message-start`` event.
        calls: Names of ``@task`` calls seen updating since the last state at ``ns``.
    """
    snapshot = _snapshot(state, ns)
    known = isinstance(message_id, str)
    if not isinstance(snapshot, Mapping):
        # The step's task is gone: finished, unless the state does not hold the message yet.
        return StepAnswer(None, ahead=known and _holds(state, message_id))
    tasks = [t for t in snapshot.get("tasks") or () if isinstance(t, Mapping)]
    if known and _holds(state, message_id):
        return StepAnswer(None, ahead=True)
    if calls:
        return StepAnswer(None)
    # A subgraph's task streams in its own namespace, not this one; only those have a state.
    running = [t for t in tasks if t.get("result") is None and not t.get("error") and not t.get("interrupts")]
    own = [t for t in running if t.get("state") is None] or running
    return StepAnswer(_one({t.get("name") for t in own}))


def history_writer(history: Any, message_id: str) -> str | None:
    """The node whose finished task wrote message ``message_id``, from a thread's
    recent states (``POST /threads/{id}/history``, newest first), or ``None``.

    A state lists the tasks of its step with their results; the oldest that
    holds the message in one task's result wrote it (a later node may return
    it again, or remove it: a ``RemoveMessage`` is not the message). A
    ``@task`` a node called is no task of the state: its message is the node's.
    """
    for snapshot in reversed(history) if isinstance(history, list) else ():
        tasks = snapshot.get("tasks") if isinstance(snapshot, Mapping) else None
        names = {
            t.get("name")
            for t in tasks or ()
            if isinstance(t, Mapping)
            and t.get("result") is not None
            and _holds(t.get("result"), message_id, removal=False)
        }
        if names:
            return _one(names)
    return None


def _one(names: set[Any]) -> str | None:
    if len(names) == 1:
        (name,) = names
        return name if isinstance(name, str) else None
    return None
