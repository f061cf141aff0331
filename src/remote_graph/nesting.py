"""Where a remote graph runs when a local parent graph calls it.

A ``RemoteGraph`` used as a node of a local graph, or invoked inside a node,
runs inside the parent's task. This module reads that task from the config the
parent hands over (the same keys a local compiled child reads): the task's
checkpoint namespace, the parent's stream, whether the task is being resumed
and with what, and the parent's thread.

The remote run gets its own server thread, derived from the parent's thread id
and the task's checkpoint namespace (node name and task id). It is therefore
stable across an interrupt and its resume, fresh on each new parent turn (as a
local subgraph's checkpoint namespace is), never the parent's own thread, and
valid for any parent thread id, UUID or not. Pass ``child_thread_id=`` to
``RemoteGraph`` to choose another mapping (it may return any thread id: one
that is not a UUID is mapped to one by the graph's ``map_thread_id``, as every
thread id is), or call the child with its own ``thread_id`` to address that
thread directly, as a local child would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid5

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from remote_graph._core.nested import ParentResume
from remote_graph._core.thread_ids import ThreadIdMap, default_map_thread_id, server_thread_id
from remote_graph._private import (
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_STREAM_MESSAGES_V2,
    CONFIG_KEY_TASK_ID,
    NS_SEP,
    PregelScratchpad,
    StreamMessagesHandler,
    StreamMessagesHandlerV2,
)

__all__ = ["ChildThreadId", "ParentTask", "default_child_thread_id", "parent_task"]

ChildThreadId = Callable[[str, str], str]
"""Maps (parent thread id, task checkpoint namespace) to the remote child's thread id."""

# Metadata a local task payload carries that changes what the parent's mux shows.
_TASK_METADATA_KEYS = frozenset({"lc_agent_name"})

_CHILD_THREADS = UUID("7c1b1f0e-5a8e-4d5c-9a53-1f0c3d2b6e41")


def default_child_thread_id(parent_thread_id: str, checkpoint_ns: str) -> str:
    """The remote child's thread: a UUID5 of the parent's thread id and the task's namespace."""
    return str(uuid5(_CHILD_THREADS, f"{parent_thread_id}\x1f{checkpoint_ns}"))


@dataclass(frozen=True)
class ParentTask:
    """The local parent task a remote run happens inside.

    Attributes:
        ns: The task's checkpoint namespace, split on ``|``: where the remote
            run's events go in the parent's stream.
        thread_id: The remote child's thread.
        write: The parent's stream, or ``None`` when the parent is not streaming.
        modes: The stream modes ``write`` accepts.
        v3_messages: Whether the parent streams v3 message events.
        resume: What the parent's resume holds, when the task is being resumed.
        metadata: The user metadata a local child's tasks would carry (the
            config's ``lc_agent_name`` among it).
        consume_resume: Uses up the parent's plain resume value, as a local
            ``interrupt()`` that took it does.
        context: The parent's runtime context, which a local child called
            without its own ``context`` inherits (``None`` if it has none).
        v1_messages: When the parent streams v1/v2 ``messages``: whether its
            messages handler emits messages from a graph namespace (its own,
            or a subgraph's when streamed with ``subgraphs=True``), as it
            decides for a local child's.
    """

    ns: tuple[str, ...]
    thread_id: str
    write: Callable[[Any], None] | None
    modes: frozenset[str]
    v3_messages: bool
    resume: ParentResume | None
    metadata: Mapping[str, Any]
    consume_resume: Callable[[], None] = lambda: None
    context: Any = None
    v1_messages: Callable[[tuple[str, ...]], bool] | None = None


def parent_task(
    config: RunnableConfig,
    child_thread_id: ChildThreadId = default_child_thread_id,
    map_thread_id: ThreadIdMap = default_map_thread_id,
) -> ParentTask | None:
    """The parent task ``config`` (already merged with the ambient config) runs in, if any.

    The child's thread is ``child_thread_id(parent thread id, namespace)``, as
    a server thread: a UUID as it is, any other id through ``map_thread_id``.

    A config with its own checkpoint coordinate (a ``thread_id``, say) has no
    task id left after merging, so it addresses its own lineage: ``None``.
    """
    conf: Mapping[str, Any] = config.get("configurable") or {}
    if CONFIG_KEY_TASK_ID not in conf:
        return None
    checkpoint_ns = str(conf.get(CONFIG_KEY_CHECKPOINT_NS) or "")
    scratchpad = conf.get(CONFIG_KEY_SCRATCHPAD)
    if isinstance(scratchpad, PregelScratchpad) and (count := scratchpad.subgraph_counter()):
        # A second graph run in one task gets its own namespace, as a local child's does.
        checkpoint_ns = NS_SEP.join((checkpoint_ns, str(count)))
    stream = conf.get(CONFIG_KEY_STREAM)
    write = _marking_streamed_messages(stream, config.get("callbacks")) if stream is not None else None
    resume = None

    def consume() -> None:
        if isinstance(scratchpad, PregelScratchpad):
            scratchpad.get_null_resume(True)

    if conf.get(CONFIG_KEY_RESUMING):
        value: Any = scratchpad.get_null_resume(False) if isinstance(scratchpad, PregelScratchpad) else None
        resume = ParentResume(by_id=dict(conf.get(CONFIG_KEY_RESUME_MAP) or {}), **({} if value is None else {"value": value}))
    child = child_thread_id(str(conf.get("thread_id") or ""), checkpoint_ns)
    if not isinstance(child, (str, UUID)) or not child:
        raise TypeError(f"child_thread_id must return a non-empty str (or UUID) thread id, got {child!r}")
    return ParentTask(
        ns=tuple(checkpoint_ns.split(NS_SEP)) if checkpoint_ns else (),
        thread_id=server_thread_id(child, map_thread_id, "the thread id child_thread_id returned"),
        write=write,
        modes=frozenset(getattr(stream, "modes", ()) or ()),
        v3_messages=bool(conf.get(CONFIG_KEY_STREAM_MESSAGES_V2)),
        resume=resume,
        metadata={k: v for k, v in (config.get("metadata") or {}).items() if k in _TASK_METADATA_KEYS},
        consume_resume=consume,
        context=getattr(conf.get(CONFIG_KEY_RUNTIME), "context", None),
        v1_messages=_v1_messages_scope(config.get("callbacks")),
    )


def _handlers(callbacks: Any) -> list[Any]:
    handlers = getattr(callbacks, "handlers", callbacks)
    return list(handlers) if isinstance(handlers, (list, tuple)) else []


def _v1_messages_scope(callbacks: Any) -> Callable[[tuple[str, ...]], bool] | None:
    """Which namespaces the parent's v1 messages handlers emit from (``None`` without one).

    The rule is the handler's own (``on_chat_model_start``): its graph's
    namespace, every namespace with ``subgraphs=True``, and the namespace it
    was created in.
    """
    handlers = [h for h in _handlers(callbacks) if isinstance(h, StreamMessagesHandler) and not isinstance(h, StreamMessagesHandlerV2)]
    if not handlers:
        return None

    def emits(ns: tuple[str, ...]) -> bool:
        return any(h.subgraphs or not ns or ns == h.parent_ns for h in handlers)

    return emits


def _marking_streamed_messages(stream: Callable[[Any], None], callbacks: Any) -> Callable[[Any], None]:
    """Write to the parent's stream, telling its message handlers which messages streamed.

    The parent's handler emits every message a node returns that it has not
    seen stream. A local child's tokens pass through that handler; a remote
    child's do not, so its streamed message ids are marked seen here, or the
    parent would emit each of them a second time at its root.
    """
    seen = [h.seen for h in _handlers(callbacks) if isinstance(h, StreamMessagesHandler)]

    def write(chunk: Any) -> None:
        _, mode, payload = chunk
        if seen and mode == "messages" and isinstance(payload[0], BaseMessage):
            # A v1 chunk or whole message (see ``_core.v1_messages``).
            if payload[0].id:
                for ids in seen:
                    ids.add(payload[0].id)
        elif seen and mode == "messages":
            event = payload[0]
            # The wire names the message ``id``; langgraph's own events say ``message_id``.
            message_id = event.get("message_id") or event.get("id") if isinstance(event, Mapping) else None
            if message_id and event.get("event") == "message-start":
                for ids in seen:
                    ids.add(message_id)
        stream(chunk)

    return write
