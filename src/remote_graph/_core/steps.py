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
   message until it comes. (A task's result is not enough: a node returns
   what the ``@task`` functions it called wrote, and those calls are no
   tasks of the checkpoint.)
2. else the message is still streaming, so its task has not finished: the
   node, when the unfinished tasks at that namespace are all one node and
   nothing in the step so far says that node calls ``@task`` functions (an
   update from a task the checkpoint does not list).
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


def _holds(value: Any, message_id: str) -> bool:
    """Whether a state or a write holds the message ``message_id`` (as its wire dict)."""
    if isinstance(value, Mapping):
        if value.get("id") == message_id and "content" in value:
            return True
        return any(_holds(item, message_id) for item in value.values())
    if isinstance(value, list):
        return any(_holds(item, message_id) for item in value)
    return False


def writer(update: Any, message_id: Any) -> str | None:
    """The node of an ``updates`` event (as sent) whose writes hold message ``message_id``."""
    if not isinstance(update, Mapping) or not isinstance(message_id, str):
        return None
    return next((node for node, writes in update.items() if isinstance(node, str) and _holds(writes, message_id)), None)


def step_node(state: Any, ns: Namespace, message_id: Any, updated: Collection[str] = ()) -> StepAnswer:
    """What ``state`` says of the node streaming message ``message_id`` at ``ns``.

    Args:
        state: The thread's state (``GET /threads/{id}/state``, with
            ``subgraphs=true`` when ``ns`` is not the root).
        ns: The namespace the message streams in; each segment
            ``name:task_id`` names the task whose subgraph state to descend into.
        message_id: The id in the message's ``message-start`` event.
        updated: The names the step's ``updates`` events at ``ns`` carried so far.
    """
    snapshot = state
    for segment in ns:
        task_id = segment.partition(":")[2]
        tasks = snapshot.get("tasks") if isinstance(snapshot, Mapping) else None
        snapshot = next(
            (t.get("state") for t in tasks or () if isinstance(t, Mapping) and t.get("id") == task_id),
            None,
        )
    known = isinstance(message_id, str)
    if not isinstance(snapshot, Mapping):
        # The step's task is gone: finished, unless the state does not hold the message yet.
        return StepAnswer(None, ahead=known and _holds(state, message_id))
    tasks = [t for t in snapshot.get("tasks") or () if isinstance(t, Mapping)]
    if known and _holds(state, message_id):
        return StepAnswer(None, ahead=True)
    if any(name not in {t.get("name") for t in tasks} for name in updated):
        return StepAnswer(None)
    # A subgraph's task streams in its own namespace, not this one; only those have a state.
    running = [t for t in tasks if t.get("result") is None and not t.get("error") and not t.get("interrupts")]
    own = [t for t in running if t.get("state") is None] or running
    return StepAnswer(_one({t.get("name") for t in own}))


def _one(names: set[Any]) -> str | None:
    if len(names) == 1:
        (name,) = names
        return name if isinstance(name, str) else None
    return None
