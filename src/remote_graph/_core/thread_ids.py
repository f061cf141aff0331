"""Which server thread a thread id names.

Locally any value is a thread id: a compiled graph keys its checkpoints by
``str(thread_id)``, so ``"user-42"``, ``"tenant/7"``, ``5`` and even ``""``
each name a thread. A LangGraph server takes only UUIDs (it parses every
thread id with ``uuid.UUID`` and answers ``422 Invalid thread ID`` otherwise).
So every thread id the library sends goes through ``server_thread_id``:

* a ``uuid.UUID``, or a string ``uuid.UUID()`` reads (the server's own test),
  is that UUID, sent in its canonical form;
* anything else is a *name*: ``str(value)`` is mapped to a UUID, by default
  ``default_map_thread_id``, a UUID5 of the name under ``THREAD_ID_NAMESPACE``.
  The same name always maps to the same thread, on every client and every
  run, so a conversation started as ``"user-42"`` is continued as
  ``"user-42"``.

What a server thread id is sent as is a UUID's canonical form, so no thread
id can reach the URL path mangled (``.``, ``..``, ``/``, the empty string are
names like any other). Results read back from the server carry the caller's
name again (see ``rename_thread``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID, uuid5

from langgraph.types import PregelTask, StateSnapshot

__all__ = [
    "THREAD_ID_NAMESPACE",
    "ThreadIdMap",
    "default_map_thread_id",
    "rename_thread",
    "server_thread_id",
    "thread_name",
]

THREAD_ID_NAMESPACE = UUID("8b8a8146-9882-42b7-ab3c-207d7d9cc17d")
"""The UUID5 namespace ``default_map_thread_id`` maps thread names under.

Fixed for good: changing it would move every named thread to a new, empty
server thread. Any client can find a named thread's server thread with
``uuid.uuid5(THREAD_ID_NAMESPACE, name)``.
"""

ThreadIdMap = Callable[[str], "str | UUID"]
"""Maps a thread name (a thread id that is not a UUID) to the UUID of its server thread."""


def default_map_thread_id(thread_id: str) -> str:
    """The server thread of a thread name: ``str(uuid5(THREAD_ID_NAMESPACE, thread_id))``."""
    return str(uuid5(THREAD_ID_NAMESPACE, thread_id))


def _as_uuid(value: object) -> str | None:
    """``value``'s canonical UUID string, if it is a UUID or a string ``uuid.UUID()`` reads."""
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, str):
        try:
            return str(UUID(value))
        except ValueError:
            return None
    return None


def thread_name(value: object) -> str:
    """The thread id as a local graph reports it back: ``str(value)``."""
    return value if isinstance(value, str) else str(value)


def server_thread_id(
    value: object, map_thread_id: ThreadIdMap = default_map_thread_id, name: str = "configurable.thread_id"
) -> str:
    """The UUID of the server thread ``value`` names, as a canonical string.

    A UUID (or a string ``uuid.UUID()`` reads) is itself; anything else is
    ``map_thread_id(str(value))``.

    Raises:
        ValueError: ``map_thread_id`` did not return a UUID (naming ``name``).
    """
    if value is None:
        raise TypeError(f"{name} may not be None")
    known = _as_uuid(value)
    if known is not None:
        return known
    text = thread_name(value)
    mapped = map_thread_id(text)
    result = _as_uuid(mapped)
    if result is None:
        raise ValueError(
            f"map_thread_id must return a UUID (a uuid.UUID or its string), got {mapped!r} for {name} {text!r}: "
            "the server accepts only UUID thread ids"
        )
    return result


def rename_thread(value: Any, server_id: str, thread_id: str) -> Any:
    """``value`` with every config's ``configurable.thread_id`` equal to ``server_id`` set to ``thread_id``.

    Reads the shapes the inherited methods return: a ``StateSnapshot`` (its
    ``config``, ``parent_config`` and each task's ``state``, recursively; its
    values are the graph's and stay as they are), a ``RunnableConfig``, and
    mappings, lists and tuples holding them (stream parts, the checkpoint
    payloads of ``stream_mode="checkpoints"`` / ``"debug"``). Only a
    ``configurable`` mapping's ``thread_id`` changes. Nothing is mutated;
    parts without such a config are returned as they are.
    """
    if server_id == thread_id:
        return value
    return _rename(value, server_id, thread_id)


def _rename(value: Any, server_id: str, thread_id: str) -> Any:
    if isinstance(value, StateSnapshot):
        return value._replace(
            config=_rename(value.config, server_id, thread_id),
            parent_config=_rename(value.parent_config, server_id, thread_id),
            tasks=tuple(_rename(task, server_id, thread_id) for task in value.tasks),
        )
    if isinstance(value, PregelTask):
        return value._replace(state=_rename(value.state, server_id, thread_id))
    if isinstance(value, Mapping):
        changed = {}
        for key, item in value.items():
            if key == "configurable" and isinstance(item, Mapping) and item.get("thread_id") == server_id:
                changed[key] = {**item, "thread_id": thread_id}
            elif isinstance(item, (Mapping, list, tuple)):
                new = _rename(item, server_id, thread_id)
                if new is not item:
                    changed[key] = new
        return {**value, **changed} if changed else value
    if isinstance(value, (list, tuple)):
        items = [_rename(item, server_id, thread_id) for item in value]
        if all(new is old for new, old in zip(items, value)):
            return value
        if isinstance(value, list):
            return items
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value
