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

from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from contextlib import aclosing
from dataclasses import KW_ONLY, dataclass, field
from typing import Any
from urllib.parse import quote
from uuid import UUID, uuid4, uuid5

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphInterrupt, ParentCommand
from langgraph.types import GraphOutput, Interrupt

from remote_graph import _private
from remote_graph._callbacks import CallbackTap
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_nested import ClassicNestedRun
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.commands import RunOptions, wire_config
from remote_graph._core.events import revived_event, run_type
from remote_graph._core.handoff import is_handoff, parent_command
from remote_graph._core.nested import NestedRun, ParentResume
from remote_graph._core.run import RunDriver
from remote_graph._core.shape import CLASSIC_MODES, Shaper, server_modes
from remote_graph._core.thread_ids import ThreadIdMap, default_map_thread_id, server_thread_id, thread_name
from remote_graph._deployment import Deployment
from remote_graph._private import (
    PregelScratchpad,
    StreamMessagesHandler,
    StreamMessagesHandlerV2,
    ensure_config,
    events_handler,
    messages_handler_emits,
    messages_handler_seen,
    null_resume,
    send_event,
    subgraph_count,
)
from remote_graph.errors import RemoteRunError

__all__ = ["ChildThreadId", "NestedCall", "ParentTask", "default_child_thread_id", "nested_call", "parent_task"]

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
        checkpoint_ns: The task's checkpoint namespace as the parent's task
            runner knows it: the ``graph`` of a handoff meant for the parent.
        context: The parent's runtime context, which a local child called
            without its own ``context`` inherits (``None`` if it has none).
        parent_thread: The parent's thread id, as the parent's chunks name it.
        mark_seen: Tells the parent's messages handlers that messages (by id)
            were seen, as they see the messages a local child's nodes take.
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
    checkpoint_ns: str = ""
    context: Any = None
    v1_messages: Callable[[tuple[str, ...]], bool] | None = None
    parent_thread: str | None = None
    mark_seen: Callable[[list[str]], None] | None = None


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
    if _private.CONFIG_KEY_TASK_ID not in conf:
        return None
    checkpoint_ns = task_ns = str(conf.get(_private.CONFIG_KEY_CHECKPOINT_NS) or "")
    scratchpad = conf.get(_private.CONFIG_KEY_SCRATCHPAD)
    if isinstance(scratchpad, PregelScratchpad) and (count := subgraph_count(scratchpad)):
        # A second graph run in one task gets its own namespace, as a local child's does.
        checkpoint_ns = _private.NS_SEP.join((checkpoint_ns, str(count)))
    stream = conf.get(_private.CONFIG_KEY_STREAM)
    write = _marking_streamed_messages(stream, config.get("callbacks")) if stream is not None else None
    resume = None

    def consume() -> None:
        if isinstance(scratchpad, PregelScratchpad):
            null_resume(scratchpad, True)

    if conf.get(_private.CONFIG_KEY_RESUMING):
        value: Any = null_resume(scratchpad, False) if isinstance(scratchpad, PregelScratchpad) else None
        resume = ParentResume(
            by_id=dict(conf.get(_private.CONFIG_KEY_RESUME_MAP) or {}), **({} if value is None else {"value": value})
        )
    child = child_thread_id(str(conf.get("thread_id") or ""), checkpoint_ns)
    if not isinstance(child, (str, UUID)) or not child:
        raise TypeError(f"child_thread_id must return a non-empty str (or UUID) thread id, got {child!r}")
    return ParentTask(
        ns=tuple(checkpoint_ns.split(_private.NS_SEP)) if checkpoint_ns else (),
        thread_id=server_thread_id(child, map_thread_id, "the thread id child_thread_id returned"),
        write=write,
        modes=frozenset(getattr(stream, "modes", ()) or ()),
        v3_messages=bool(conf.get(_private.CONFIG_KEY_STREAM_MESSAGES_V2)),
        resume=resume,
        metadata={k: v for k, v in (config.get("metadata") or {}).items() if k in _TASK_METADATA_KEYS},
        consume_resume=consume,
        checkpoint_ns=task_ns,
        context=getattr(conf.get(_private.CONFIG_KEY_RUNTIME), "context", None),
        v1_messages=_v1_messages_scope(config.get("callbacks")),
        parent_thread=_parent_thread(config, conf),
        mark_seen=_seen_marker(config.get("callbacks")),
    )


def _parent_thread(config: RunnableConfig, conf: Mapping[str, Any]) -> str | None:
    """The thread id a local child's chunks would name: its config's metadata ``thread_id``.

    langgraph copies a configurable key into the metadata only where the metadata
    lacks it, so a child called with a ``thread_id`` of its own in its parent's task
    (langgraph-supervisor gives a served worker one) still names the parent's thread
    in its chunks' metadata. Without one there, the configurable's.
    """
    metadata = config.get("metadata") or {}
    value = metadata["thread_id"] if metadata.get("thread_id") is not None else conf.get("thread_id")
    return thread_name(value) if value is not None else None


def _handlers(callbacks: Any) -> list[Any]:
    handlers = getattr(callbacks, "handlers", callbacks)
    return list(handlers) if isinstance(handlers, (list, tuple)) else []


def _v1_messages_scope(callbacks: Any) -> Callable[[tuple[str, ...]], bool] | None:
    """Which namespaces the parent's v1 messages handlers emit from (``None`` without one).

    The rule is the handler's own (``on_chat_model_start``): its graph's
    namespace, every namespace with ``subgraphs=True``, and the namespace it
    was created in.
    """
    handlers = [
        h
        for h in _handlers(callbacks)
        if isinstance(h, StreamMessagesHandler) and not isinstance(h, StreamMessagesHandlerV2)
    ]
    if not handlers:
        return None

    def emits(ns: tuple[str, ...]) -> bool:
        return any(messages_handler_emits(h, ns) for h in handlers)

    return emits


def _seen_marker(callbacks: Any) -> Callable[[list[str]], None] | None:
    """Marks message ids seen in the parent's messages handlers (``None`` without one)."""
    seen = [messages_handler_seen(h) for h in _handlers(callbacks) if isinstance(h, StreamMessagesHandler)]
    if not seen:
        return None

    def mark(ids: list[str]) -> None:
        for known in seen:
            known.update(ids)

    return mark


def _marking_streamed_messages(stream: Callable[[Any], None], callbacks: Any) -> Callable[[Any], None]:
    """Write to the parent's stream, telling its message handlers which messages streamed.

    The parent's handler emits every message a node returns that it has not
    seen stream. A local child's tokens pass through that handler; a remote
    child's do not, so its streamed message ids are marked seen here, or the
    parent would emit each of them a second time at its root.
    """
    seen = [messages_handler_seen(h) for h in _handlers(callbacks) if isinstance(h, StreamMessagesHandler)]

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


# Config keys of the parent's task that stay local: the server sets its own.
_TASK_KEYS = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "run_id", "run_attempt"})


@dataclass(eq=False)
class NestedCall:
    """A ``RemoteGraph`` call (``invoke``, ``stream`` and their async variants) inside a local parent's task.

    The remote run is the parent task's subgraph: its chunks reach the
    parent's stream under the task's namespace, its interrupt pauses the
    parent (``GraphInterrupt``), and the parent's resume continues it. A run
    inside a v3 parent (one streaming v3 run streams) is a v3 run whose
    events become the parent mux's (``_core.nested.NestedRun``); inside any
    other parent it is a classic run streaming the parent's stream modes
    (``_core.classic_nested.ClassicNestedRun``), so the deployed graph's
    models return what a local child's return. Inside a parent streaming
    ``astream_events``, the run is one of the parent's runs, as a local
    child's is, and the deployed graph's events are the parent's too.

    ``nested_call`` reads the parent task from the config (merged with the ambient
    one, as a local child reads it: ``ensure_config``), and returns ``None``
    outside a parent's task.
    """

    task: ParentTask
    driver: RunDriver
    nested: NestedRun | ClassicNestedRun
    _: KW_ONLY
    deployment: Deployment
    input: Any
    config: RunnableConfig
    headers: dict[str, str] | None
    version: str
    shaper: Shaper | None
    tap: CallbackTap | None = None
    """The parent's callback handlers: the run is one of the parent's runs, as a
    local child's is, and its inner runs are the handlers' too (``_callbacks``)."""
    events: Any = field(init=False)

    def __post_init__(self) -> None:
        # Inside a parent streaming astream_events, the deployed graph's events are the parent's.
        self.events = (
            events_handler(self.config.get("callbacks")) if isinstance(self.nested, ClassicNestedRun) else None
        )

    # --- the shells -----------------------------------------------------------------

    def run(self) -> Any:
        """``invoke``: the node's result, the run driven on the caller's thread."""
        for _ in self.iterate():
            pass
        return self._result()

    async def arun(self) -> Any:
        """``ainvoke``: async variant of ``run``; cancelling it cancels the remote run."""
        async with aclosing(self.aiterate()) as chunks:
            async for _ in chunks:
                pass
        return self._result()

    def iterate(self) -> Iterator[Any]:
        """``stream``: the chunks the call yields (none for ``invoke``), as the run goes."""
        source = self.deployment.sync_source(self.driver, self.headers)
        tap = self.tap
        if tap is not None:
            tap.deliver(tap.start())
        try:
            try:
                for part in source:
                    if part["type"] == "events":
                        if tap is not None:
                            tap.deliver(tap.event(self._event(part["data"])))
                        continue
                    yield from self._take(part)
            except Exception as exc:
                if (handoff := self._failed(exc)) is None:
                    raise
                raise handoff from None
            finally:
                source.close()
            self._check_ended()
        except BaseException as exc:
            if tap is not None:
                tap.deliver(tap.end(exc))
            raise
        if tap is not None:
            tap.deliver(tap.end(output=self._output()))

    async def aiterate(self) -> AsyncGenerator[Any, None]:
        """``astream``: async variant of ``iterate``."""
        source = self.deployment.async_source(self.driver, self.headers)
        tap = self.tap
        if tap is not None:
            await tap.adeliver(tap.start())
        try:
            try:
                async for part in source:
                    if part["type"] == "events":
                        if tap is not None:
                            await tap.adeliver(tap.event(self._event(part["data"])))
                        continue
                    for chunk in self._take(part):
                        yield chunk
            except Exception as exc:
                if (handoff := self._failed(exc)) is None:
                    raise
                raise handoff from None
            finally:
                await source.aclose()
            self._check_ended()
        except BaseException as exc:
            if tap is not None:
                await tap.adeliver(tap.end(exc))
            raise
        if tap is not None:
            await tap.adeliver(tap.end(output=self._output()))

    # --- the parts ------------------------------------------------------------------

    def _take(self, part: Mapping[str, Any]) -> list[Any]:
        """Write what a part becomes to the parent's stream; return what the call yields."""
        self._write(self.nested.feed(part))
        return self.shaper.shape(dict(part)) if self.shaper is not None else []

    def _event(self, raw: Any) -> dict[str, Any] | None:
        """A remote event as one of the parent's run's events: handed to the parent's
        ``astream_events`` whole, and returned for the callback handlers (``None``
        when it is no event)."""
        assert isinstance(self.nested, ClassicNestedRun)
        metadata = self.nested.metadata
        view = self.driver.wire
        assert isinstance(view, ClassicWire)
        event = revived_event(raw, lambda value: metadata(view.reader.view.metadata(value)), view.reader.plain_keys)
        parents = event.get("parent_ids") if event is not None else None
        if event is None or not parents or self.events is None or self.tap is None:
            # The deployed graph's own run: this call's run stands for it.
            return event
        sent = {**event, "parent_ids": list(parents[1:])}
        send_event(self.events, sent, run_type(event["event"]), self.tap.run_id)
        return event

    def _write(self, chunks: list[Any]) -> None:
        if self.task.write is not None:
            for chunk in chunks:
                self.task.write(chunk)

    def _failed(self, error: Exception) -> ParentCommand | None:
        """The run failed: what it wrote still reaches the parent; a handoff to
        the parent becomes the ``ParentCommand`` a local child raises
        (``_core.handoff``), any other failure is raised as it is (``None``)."""
        self._write_owed()
        return parent_command(error, self.task.checkpoint_ns) if is_handoff(error) else None

    def _write_owed(self) -> None:
        """The child failed: what it produced before still reaches the parent, as a
        local child's chunks do before its error. A run the server never started
        produced nothing."""
        if self.driver.run_id is not None:
            self._write(self.nested.finish())

    def _check_ended(self) -> None:
        """A paused child pauses the parent; a cancelled one fails its node."""
        driver = self.driver
        self._write(self.nested.finish())
        if driver.plan.used_parent_value:
            self.task.consume_resume()
        if driver.status == "cancelled":
            raise RemoteRunError(
                f"the remote run {driver.run_id} on thread {driver.thread_id} was cancelled before it ended"
            )
        _, interrupts = self._outcome()
        if interrupts:
            raise GraphInterrupt(interrupts)

    def _outcome(self) -> tuple[Any, tuple[Interrupt, ...]]:
        driver = self.driver
        keys = driver.schemas.keys if driver.schemas is not None else None
        return self.nested.result(driver.status, driver.interrupts, keys)

    def _output(self) -> Any:
        return self._outcome()[0]

    def _result(self) -> Any:
        output = self._output()
        return GraphOutput(value=output, interrupts=()) if self.version == "v2" else output


def nested_call(
    deployment: Deployment,
    input: Any,
    config: RunnableConfig | None,
    kwargs: Mapping[str, Any],
    *,
    streaming: bool = False,
) -> NestedCall | None:
    """The ``RemoteGraph`` call inside the local parent task ``config`` (with the ambient config) names; else ``None``.

    ``streaming``: a ``stream`` call, whose ``stream_mode`` (``values`` by
    default, as a local child called as a node), ``subgraphs`` and
    ``version`` shape the chunks it yields.
    """
    merged = ensure_config(deployment.config, config)
    task = parent_task(merged, deployment.child_thread_id, deployment.map_thread_id)
    if task is None:
        return None
    rest = dict(kwargs)
    version = rest.pop("version", "v1")
    if version not in ("v1", "v2"):
        raise ValueError(f"version must be 'v1' or 'v2', got {version!r}")
    shaper = None
    if streaming:
        stream_mode = rest.pop("stream_mode", None) or "values"
        subgraphs = bool(rest.pop("subgraphs", False))
        shaper = Shaper(stream_mode, rest.pop("print_mode", None) or (), subgraphs=subgraphs, version=version)
    if rest.pop("params", None) is not None:
        raise NotImplementedError(
            "params= (extra query parameters) cannot be honoured by a remote run inside a parent task."
        )
    if not rest.get("context"):
        # As a local child given no context of its own inherits its parent's.
        rest["context"] = task.context
    options = RunOptions.from_kwargs(rest, "stream()" if streaming else "invoke()")
    configurable = {
        k: v for k, v in (merged.get("configurable") or {}).items() if k not in ("thread_id", "checkpoint_id")
    }
    # The parent's task bookkeeping stays local; the server sets its own.
    metadata = {
        k: v
        for k, v in (merged.get("metadata") or {}).items()
        if not k.startswith("langgraph_") and k not in _TASK_KEYS
    }
    _, wire, _ = wire_config({**merged, "configurable": configurable, "metadata": metadata})
    classic = not task.v3_messages
    modes: tuple[str, ...] | None = None
    # The parent's callback handlers see the run, and its inner runs, as a local child's
    # (a v3 parent's run cannot stream the events those come from).
    events = events_handler(merged.get("callbacks"))
    tap = CallbackTap.of(merged, input, deployment.name, always=events is not None) if classic else None
    if classic:
        # The parent's stream modes; and a parent streaming messages makes a
        # local child's models stream (its messages handler is theirs too),
        # even where it emits none of their tokens (subgraphs=False).
        wanted = {"values", *(task.modes & CLASSIC_MODES)}
        if task.v1_messages is not None:
            wanted.add("messages")
        if shaper is not None:
            wanted.update(shaper.modes())
        if events is not None or (tap is not None and tap.relays):
            wanted.add("events")
        modes = server_modes(sorted(wanted))
    # A local child writes its subgraphs' chunks when the parent streams subgraphs.
    subgraphs = task.write is not None or bool(shaper is not None and shaper.subgraphs)
    plan = deployment.start_plan(
        input,
        wire,
        options,
        thread_given=True,
        parent_resume=task.resume,
        stream_mode=modes,
        stream_subgraphs=subgraphs,
    )
    run: NestedRun | ClassicNestedRun
    wire_format: ClassicWire | None = None
    if classic:
        view = CallView(server_thread=task.thread_id, thread_name=task.parent_thread)
        thread_path = f"/threads/{quote(task.thread_id, safe='')}"
        wire_format = ClassicWire(ChunkReader(view, deployment.schemas), thread_path)
        run = ClassicNestedRun(
            task.ns, task.modes, parent_thread=task.parent_thread, emits=task.v1_messages, mark_seen=task.mark_seen
        )
    else:
        run = NestedRun(task.ns, task.modes, key_prefix=f"remote:{uuid4().hex}", metadata=task.metadata)
    driver = deployment.driver(plan, task.thread_id, wire_format)
    return NestedCall(
        task,
        driver,
        run,
        deployment=deployment,
        input=input,
        config=merged,
        headers=deployment.run_headers(options),
        version=version,
        shaper=shaper,
        tap=tap,
    )
