"""A thread's state from the server, as the ``StateSnapshot`` a local graph returns.

The server answers ``GET /threads/{id}/state`` (and the history, and a
checkpoint's state) with JSON: messages as dicts, interrupts as dicts, a
failed task's error as its repr, its own keys in the metadata (the assistant,
the run, the plan, auth, and, in a subgraph's checkpoint, the task that ran
it). ``snapshot`` rebuilds what a local ``get_state`` returns: values revived
(by the state schema at the root), ``Interrupt`` objects, tuples where local
has tuples, a subgraph task's nested snapshot or its config, configs with the
keys a local checkpoint's have, and only the metadata a local checkpoint keeps.
A thread the server does not have reads as an empty snapshot, as a local
thread with no checkpoint does (``empty_snapshot``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import PregelTask, StateSnapshot

from remote_graph._core.classic import SERVER_METADATA, ChunkReader, interrupts_of, tuples
from remote_graph.errors import remote_exception

__all__ = ["checkpoint_config", "empty_snapshot", "is_empty", "snapshot"]

Namespace = tuple[str, ...]

# Metadata the server keeps in a checkpoint that a local checkpoint does not:
# its own keys, and (in a subgraph's checkpoint) the task that ran the subgraph.
_CHECKPOINT_SERVER_KEYS = SERVER_METADATA | {
    "thread_id",
    "checkpoint_ns",
    "checkpoint_map",
    "langgraph_step",
    "langgraph_node",
    "langgraph_triggers",
    "langgraph_path",
    "langgraph_checkpoint_ns",
}


def checkpoint_config(checkpoint: Any) -> RunnableConfig | None:
    """A checkpoint's config as local has it: its coordinates (``checkpoint_map``
    only where it maps something, as in a subgraph's)."""
    if not isinstance(checkpoint, Mapping):
        return None
    configurable = {key: value for key, value in checkpoint.items() if key != "checkpoint_map" and value is not None}
    mapping = checkpoint.get("checkpoint_map")
    if isinstance(mapping, Mapping) and mapping:
        configurable["checkpoint_map"] = dict(mapping)
    return cast(RunnableConfig, {"configurable": configurable})


def empty_snapshot(config: Mapping[str, Any] | None) -> StateSnapshot:
    """The snapshot of a thread with no checkpoint: what a local graph returns for it."""
    configurable = dict((config or {}).get("configurable") or {})
    return StateSnapshot(
        values={},
        next=(),
        config={"configurable": configurable},
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(),
        interrupts=(),
    )


def is_empty(state: Mapping[str, Any]) -> bool:
    """Whether a server thread state holds no checkpoint: the answer for a
    checkpoint the server does not have, or (langgraph-api 0.11, where
    langgraph-api 0.16 answers 404) for a thread that never ran. aegra's has an
    empty metadata where langgraph-api's has none; a checkpoint always has both."""
    return not state.get("metadata") and state.get("created_at") is None


def _metadata(metadata: Any) -> Any:
    if not isinstance(metadata, Mapping):
        return metadata
    return {key: value for key, value in metadata.items() if key not in _CHECKPOINT_SERVER_KEYS}


def _error(error: Any) -> Any:
    """A failed task's error as a local snapshot holds it: the exception's repr, a string."""
    if isinstance(error, Mapping):
        rebuilt = remote_exception(
            error.get("error") if isinstance(error.get("error"), str) else None, str(error.get("message", ""))
        )
        return repr(rebuilt)
    return error


def snapshot(state: Mapping[str, Any], reader: ChunkReader, ns: Namespace = ()) -> StateSnapshot:
    """A server thread state (``ThreadState`` JSON) as a local ``StateSnapshot``.

    Args:
        state: The server's answer.
        reader: Revives values as a run's chunks are revived.
        ns: The namespace of the state (a subgraph's, for a nested state).
    """
    if is_empty(state):
        # The server's answer for a checkpoint it does not have.
        return empty_snapshot(checkpoint_config(state.get("checkpoint")))
    tasks = tuple(_task(task, reader, ns) for task in state.get("tasks") or () if isinstance(task, Mapping))
    next_nodes = state.get("next") or ()
    metadata = state.get("metadata")
    return StateSnapshot(
        values=reader.state(ns, state.get("values") if state.get("values") is not None else {}),
        next=tuple(next_nodes),
        config=checkpoint_config(_mapped(state.get("checkpoint"), metadata))
        or cast(RunnableConfig, {"configurable": {}}),
        metadata=_metadata(metadata),
        created_at=state.get("created_at"),
        parent_config=checkpoint_config(_mapped(state.get("parent_checkpoint"), metadata)),
        tasks=tasks,
        interrupts=tuple(i for task in tasks for i in task.interrupts),
    )


def _mapped(checkpoint: Any, metadata: Any) -> Any:
    """A subgraph's checkpoint with its ``checkpoint_map`` (the checkpoint of each
    namespace down to its own), where the server left it out (aegra): the
    checkpoint's metadata names its ancestors' (``parents``), as local maps them."""
    if not isinstance(checkpoint, Mapping) or checkpoint.get("checkpoint_map") or not checkpoint.get("checkpoint_ns"):
        return checkpoint
    parents = metadata.get("parents") if isinstance(metadata, Mapping) else None
    if not isinstance(parents, Mapping) or not parents:
        return checkpoint
    return {**checkpoint, "checkpoint_map": {**parents, checkpoint["checkpoint_ns"]: checkpoint.get("checkpoint_id")}}


def _task(task: Mapping[str, Any], reader: ChunkReader, ns: Namespace) -> PregelTask:
    name = str(task.get("name", ""))
    nested, checkpoint = task.get("state"), task.get("checkpoint")
    if isinstance(nested, Mapping) and set(nested) == {"configurable"}:
        # The subgraph's config, which langgraph-api sends as the task's
        # ``checkpoint`` and aegra as its ``state``.
        checkpoint = nested["configurable"]
        nested = None
    state: Any = None
    if isinstance(nested, Mapping):
        # A subgraph's own state (``subgraphs=True``), at the task's namespace.
        sub_ns = (*ns, f"{name}:{task.get('id')}")
        state = snapshot(nested, reader, sub_ns)
    elif isinstance(checkpoint, Mapping):
        # Its config, as local has it without ``subgraphs=True``.
        state = {"configurable": {key: value for key, value in checkpoint.items() if value is not None}}
    result = task.get("result")
    return PregelTask(
        id=str(task.get("id", "")),
        name=name,
        path=tuples(task.get("path") or ()),
        error=_error(task.get("error")),
        interrupts=interrupts_of(task.get("interrupts")),
        state=state,
        result=reader.state(ns, result) if result is not None else None,
    )
