"""``RemoteGraph``: a deployed graph that streams v3 runs like a local one."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, Literal, overload
from uuid import UUID, uuid4

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.errors import GraphInterrupt
from langgraph.types import GraphOutput, StateSnapshot
from langgraph.pregel.remote import RemoteGraph as _UpstreamRemoteGraph
from langgraph.stream.transformers import (
    CustomTransformer,
    LifecycleTransformer,
    SubgraphTransformer,
    UpdatesTransformer,
    ValuesTransformer,
)
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient
from langgraph_sdk.schema import ThreadState

from remote_graph._aio import AsyncRunSource
from remote_graph._clients import ClientSettings, SdkClients
from remote_graph._core.actions import Timeouts
from remote_graph._core.commands import RunOptions, StartPlan, wire_config
from remote_graph._core.context import context_payload
from remote_graph._core.limits import Limits
from remote_graph._core.nested import NestedRun, OutputSchema
from remote_graph._core.run import RunDriver
from remote_graph._core.thread_ids import ThreadIdMap, default_map_thread_id, server_thread_id, thread_name
from remote_graph._guard import check_config, guard_methods
from remote_graph._private import (
    StreamMux,
    ensure_config,
    merge_tracing_headers,
    normalize_stream_transformer_factories,
    reject_v3_invariant_kwargs,
)
from remote_graph._sync import SyncRunSource
from remote_graph.errors import RemoteRunError
from remote_graph.nesting import ChildThreadId, ParentTask, default_child_thread_id, parent_task
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream
from remote_graph.transformers import RemoteMessagesTransformer, WireChannelsTransformer

__all__ = ["RemoteGraph"]


# Marks a config whose configurable travels in the run's ``checkpoint`` field.
_CONTEXT_CALL = "__remote_graph_context_call"

_TASK_KEYS = frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "run_id", "run_attempt"})
# What stands for a deployed module's opt-in transformers when the caller names none:
# the server sends ``updates`` and ``custom`` exactly when its module registers them.
_SERVER_SIDE: tuple[TransformerFactory, ...] = (UpdatesTransformer, CustomTransformer)


def _write(task: ParentTask, chunks: list[Any]) -> None:
    if task.write is not None:
        for chunk in chunks:
            task.write(chunk)


def _nested_run(task: ParentTask) -> NestedRun:
    return NestedRun(
        task.ns,
        task.modes,
        v3_messages=task.v3_messages,
        key_prefix=f"remote:{uuid4().hex}",
        metadata=task.metadata,
        v1_messages=task.v1_messages,
    )


def _write_owed(task: ParentTask, run: NestedRun, driver: RunDriver) -> None:
    """The child failed: what it produced before (an update held for its
    messages' ids, those messages) still reaches the parent, as a local
    child's chunks do before its error. A run the server never started
    produced nothing."""
    if driver.run_id is not None:
        _write(task, run.finish())


def _node_result(task: ParentTask, run: NestedRun, driver: RunDriver, version: str) -> Any:
    _write(task, run.finish())
    if driver.plan.used_parent_value:
        task.consume_resume()
    if driver.status == "cancelled":
        raise RemoteRunError(f"the remote run {driver.run_id} on thread {driver.thread_id} was cancelled before it ended")
    keys = driver.output_schema.keys if driver.output_schema is not None else None
    output, interrupts = run.result(driver.status, driver.interrupts, keys)
    if interrupts:
        raise GraphInterrupt(interrupts)
    return GraphOutput(value=output, interrupts=()) if version == "v2" else output

TransformerFactory = Callable[[tuple[str, ...]], Any]


@guard_methods
class RemoteGraph(_UpstreamRemoteGraph):
    """A graph deployed on a LangGraph server, usable like a local compiled graph.

    ``stream_events(input, config, version="v3")`` and ``await
    astream_events(..., version="v3")`` return run streams with the local
    ``GraphRunStream`` / ``AsyncGraphRunStream`` surface: raw events,
    ``values``, ``messages``, ``lifecycle``, ``subgraphs``, opt-in projections,
    ``output``/``interrupted``/``interrupts``, ``abort()``, ``interleave``. The
    v1/v2 methods (``invoke``, ``stream``, ``get_state``, ``update_state``, ...)
    are langgraph's own ``RemoteGraph``'s, guarded: each checks its config
    before sending anything, waits no longer than ``timeouts``, and raises
    ``RemoteGraphError``s instead of httpx's errors.

    Thread ids are what they are locally: any string (``"user-42"``,
    ``"tenant/7"``), a UUID, or another value read as ``str(value)``. The
    server accepts only UUIDs, so every method sends a thread id that is not a
    UUID as the UUID ``map_thread_id`` maps it to (by default a UUID5 under
    ``remote_graph.THREAD_ID_NAMESPACE``: the same name always reaches the
    same server thread), and reads results back under the caller's id:
    ``run.thread_id``, ``run.snapshot().thread_id``, the ``config`` and
    ``parent_config`` of the ``StateSnapshot``s ``get_state`` and
    ``get_state_history`` return, the config ``update_state`` returns.
    ``server_thread_id(thread_id)`` tells which server thread an id names.

    Example:
        ```python
        from remote_graph import RemoteGraph

        graph = RemoteGraph("agent", url="http://127.0.0.1:2024")
        config = {"configurable": {"thread_id": thread_id}}
        with graph.stream_events({"messages": [("user", "hi")]}, config, version="v3") as run:
            for message in run.messages:
                for delta in message.text:
                    print(delta, end="")
        print(run.output)
        ```

    Args:
        assistant_id: The assistant ID or graph name of the deployed graph.
        url: The server's URL (``http://`` or ``https://``); builds default
            sync and async SDK clients, bounded by ``timeouts``.
        api_key: API key for the default clients.
        headers: Extra headers for the default clients.
        client: An async ``LangGraphClient`` to use instead of a default one,
            on the first event loop that uses this graph. An async client is
            bound to one loop, so every other loop gets one built from its
            ``base_url`` and ``headers`` (see ``RemoteGraph.client``).
        sync_client: A ``SyncLangGraphClient`` to use instead of a default one.
        config: A ``RunnableConfig`` merged under every call's config.
        name: Name of this graph when used as a node; defaults to ``assistant_id``.
        distributed_tracing: Whether to send LangSmith distributed tracing headers.
        stream_transformers: Overrides the client-side transformers that
            stand for the deployed module's ``stream_transformers()`` hook.
            By default (``None``) every v3 run has ``run.updates`` and
            ``run.custom`` (``UpdatesTransformer``, ``CustomTransformer``),
            which the server fills when its module registers them, and the
            module's own named channels (``custom:<name>`` on the wire) are
            ``run.extensions[name]``, learned from the wire. A sequence of
            factories replaces ``UpdatesTransformer`` and
            ``CustomTransformer``: ``()`` gives neither, as a local graph
            compiled without them has neither; a factory projecting a name
            the server also sends computes it on the client instead.
        timeouts: Bounds on every wait a run stream performs, and on every
            request the default clients send for the other methods.
        limits: Bounds on what a run's event stream may make the client hold
            (a frame's size, how many exception types failed runs may name);
            passing one fails the run with a ``RemoteProtocolError``.
        child_thread_id: Maps (parent thread id, task checkpoint namespace) to
            the server thread this graph runs on when a local parent graph
            calls it; see ``remote_graph.nesting``. What it returns is a thread
            id like any other: a name is mapped by ``map_thread_id``.
        map_thread_id: Maps a thread id that is not a UUID (``str(thread_id)``)
            to the UUID (a ``uuid.UUID`` or its string) of the server thread
            it names; it must be deterministic, or a thread cannot be found
            again. Defaults to ``remote_graph.default_map_thread_id``,
            ``uuid5(THREAD_ID_NAMESPACE, thread_id)``. UUIDs are never passed
            to it: they name their own server thread.

    Inside a local parent (as a node, or invoked in a node without its own
    ``thread_id``), ``invoke`` / ``ainvoke`` run like a local subgraph: the
    remote run's events reach the parent's stream under the task's namespace
    (a ``run.subgraphs`` handle, lifecycle, messages, updates), an interrupt
    pauses the parent, and the parent's ``Command(resume=...)`` resumes the
    remote run where it stopped.
    """

    def __init__(
        self,
        assistant_id: str,
        /,
        *,
        url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        client: LangGraphClient | None = None,
        sync_client: SyncLangGraphClient | None = None,
        config: RunnableConfig | None = None,
        name: str | None = None,
        distributed_tracing: bool = False,
        stream_transformers: Sequence[TransformerFactory] | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
        child_thread_id: ChildThreadId = default_child_thread_id,
        map_thread_id: ThreadIdMap = default_map_thread_id,
    ) -> None:
        if not isinstance(assistant_id, str) or not assistant_id:
            raise ValueError(f"assistant_id must be a non-empty string, got {assistant_id!r}")
        if not callable(map_thread_id):
            raise TypeError(f"map_thread_id must be callable, got {type(map_thread_id).__name__}")
        check_config(config)
        if (thread_id := ((config or {}).get("configurable") or {}).get("thread_id")) is not None:
            server_thread_id(thread_id, map_thread_id)
        timeouts = timeouts if timeouts is not None else Timeouts()
        # Set before upstream's __init__, which assigns client and sync_client
        # (properties here); url is kept from it so it builds no clients itself.
        self._clients = SdkClients(
            ClientSettings(url=url, api_key=api_key, headers=headers, client=client, sync_client=sync_client, timeouts=timeouts)
        )
        super().__init__(
            assistant_id,
            client=client,
            sync_client=sync_client,
            config=config,
            name=name,
            distributed_tracing=distributed_tracing,
        )
        # Validated now, like compile(transformers=...), so a bad factory fails at construction.
        if stream_transformers is not None:
            normalize_stream_transformer_factories(stream_transformers)
        self.stream_transformers: tuple[TransformerFactory, ...] | None = (
            None if stream_transformers is None else tuple(stream_transformers)
        )
        # Named channels earlier runs received: projections of later runs from their start.
        self._wire_channels: set[str] = set()
        self.timeouts = timeouts
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a remote_graph.Limits, got {type(limits).__name__}")
        self.limits = limits if limits is not None else Limits()
        if not callable(child_thread_id):
            raise TypeError(f"child_thread_id must be callable, got {type(child_thread_id).__name__}")
        self.child_thread_id = child_thread_id
        self.map_thread_id = map_thread_id
        self._output_schema = OutputSchema()

    def copy(self, update: dict[str, Any]) -> RemoteGraph:
        """A copy with ``update`` applied to the constructor arguments (private caches start fresh).

        The copy shares this graph's SDK clients unless ``update`` changes
        ``timeouts``, ``client`` or ``sync_client``.
        """
        update = dict(update)
        client_changes = {key: update.pop(key) for key in ("client", "sync_client") if key in update}
        attrs = {key: value for key, value in {**self.__dict__, **update}.items() if not key.startswith("_")}
        copy = self.__class__(attrs.pop("assistant_id"), **attrs)
        if client_changes or copy.timeouts != self.timeouts:
            copy._clients = self._clients.derive(timeouts=copy.timeouts, **client_changes)
        else:
            copy._clients = self._clients
        return copy

    def server_thread_id(self, thread_id: str | UUID) -> str:
        """The UUID of the server thread ``thread_id`` names, as every method sends it.

        A UUID is itself (in canonical form); any other id is
        ``map_thread_id(str(thread_id))``. Use it to reach a named thread
        through the SDK or LangGraph Studio.
        """
        return server_thread_id(thread_id, self.map_thread_id, "thread_id")

    # --- SDK clients -------------------------------------------------------------

    @property
    def client(self) -> LangGraphClient | None:
        """The async SDK client of the running event loop (``None`` without ``url`` or ``client``).

        An ``httpx.AsyncClient`` is bound to the loop that opened its
        connections, so each event loop gets its own: the ``client`` passed at
        construction on the first loop that uses it, and on every other loop
        one built from ``url`` or, without a ``url``, from that client's
        ``base_url`` and ``headers`` (with this graph's ``timeouts``). Outside
        a running loop this is the client of the most recent loop still open.
        The clients built here are closed when their loop shuts down
        (``asyncio.run()`` does this); the ones passed in are never closed here.
        """
        return self._clients.async_client() if self._clients.has_async else None

    @client.setter
    def client(self, value: LangGraphClient | None) -> None:
        if value is not self._clients.settings.client:
            self._clients = self._clients.derive(client=value)

    @property
    def sync_client(self) -> SyncLangGraphClient | None:
        """The sync SDK client, shared by every thread (``None`` without ``url`` or ``sync_client``)."""
        try:
            return self._clients.sync_client()
        except ValueError:
            return None

    @sync_client.setter
    def sync_client(self, value: SyncLangGraphClient | None) -> None:
        if value is not self._clients.settings.sync_client:
            self._clients = self._clients.derive(sync_client=value)

    def _validate_client(self) -> LangGraphClient:
        return self._clients.async_client()

    def _validate_sync_client(self) -> SyncLangGraphClient:
        return self._clients.sync_client()

    # --- state snapshots -----------------------------------------------------------

    def _create_state_snapshot(self, state: ThreadState) -> StateSnapshot:
        if state.get("metadata") is None and state.get("created_at") is None:
            # The server's answer for a checkpoint it does not have: an empty
            # state, returned as the empty snapshot a local graph returns.
            checkpoint = state.get("checkpoint") or {}
            return StateSnapshot(
                values=state.get("values") or {},
                next=(),
                config={"configurable": dict(checkpoint)},
                metadata=None,
                created_at=None,
                parent_config=None,
                tasks=(),
                interrupts=(),
            )
        return super()._create_state_snapshot(state)

    # --- inside a local parent ------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the remote graph and return its final state.

        Inside a local parent's task this runs as that task's subgraph (see the
        class docstring); elsewhere it is langgraph's ``RemoteGraph.invoke``.
        """
        nested = self._nested(input, config, kwargs)
        if nested is None:
            return super().invoke(input, config, **kwargs)
        task, driver, options = nested
        run = _nested_run(task)
        source = SyncRunSource(self._validate_sync_client().http.client, driver, self._headers(options), owner=self._clients)
        try:
            for part in source:
                _write(task, run.feed(part))
        except Exception:
            _write_owed(task, run, driver)
            raise
        finally:
            source.close()
        return _node_result(task, run, driver, kwargs.get("version", "v1"))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async variant of ``invoke``. Cancelling it cancels the remote run."""
        nested = self._nested(input, config, kwargs)
        if nested is None:
            return await super().ainvoke(input, config, **kwargs)
        task, driver, options = nested
        run = _nested_run(task)
        source = AsyncRunSource(self._validate_client().http.client, driver, self._headers(options), owner=self._clients)
        try:
            async for part in source:
                _write(task, run.feed(part))
        except Exception:
            _write_owed(task, run, driver)
            raise
        finally:
            await source.aclose()
        return _node_result(task, run, driver, kwargs.get("version", "v1"))

    def _nested(self, input: Any, config: RunnableConfig | None, kwargs: dict[str, Any]) -> tuple[ParentTask, RunDriver, RunOptions] | None:
        merged = ensure_config(self.config, config)
        task = parent_task(merged, self.child_thread_id, self.map_thread_id)
        if task is None:
            return None
        rest = dict(kwargs)
        if rest.pop("version", "v1") not in ("v1", "v2"):
            raise ValueError(f"version must be 'v1' or 'v2', got {kwargs['version']!r}")
        if rest.pop("params", None) is not None:
            raise NotImplementedError("params= (extra query parameters) cannot be honoured by a remote run inside a parent task.")
        if not rest.get("context"):
            # As a local child given no context of its own inherits its parent's.
            rest["context"] = task.context
        options = RunOptions.from_kwargs(rest)
        configurable = {k: v for k, v in (merged.get("configurable") or {}).items() if k not in ("thread_id", "checkpoint_id")}
        # The parent's task bookkeeping stays local; the server sets its own.
        metadata = {k: v for k, v in (merged.get("metadata") or {}).items() if not k.startswith("langgraph_") and k not in _TASK_KEYS}
        _, wire, _ = wire_config({**merged, "configurable": configurable, "metadata": metadata})
        plan = StartPlan(
            assistant_id=self.assistant_id, input=input, config=wire, options=options, thread_given=True, parent_resume=task.resume
        )
        return task, RunDriver(plan, task.thread_id, timeouts=self.timeouts, output_schema=self._output_schema, limits=self.limits), options

    # --- runtime context on upstream's runs ------------------------------------

    def stream(self, input: Any, config: RunnableConfig | None = None, *, context: Any = None, **kwargs: Any) -> Iterator[Any]:
        """langgraph's ``RemoteGraph.stream``, with ``context=`` as a local graph takes it.

        ``context`` (a mapping, dataclass or pydantic instance) becomes the
        run's runtime context, coerced on the server to the graph's
        ``context_schema``; the config's ``configurable`` is sent beside it.
        """
        config, kwargs = self._context_call(config, context, kwargs)
        yield from super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, *, context: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Async variant of ``stream``."""
        config, kwargs = self._context_call(config, context, kwargs)
        async for chunk in super().astream(input, config, **kwargs):
            yield chunk

    def _context_call(self, config: RunnableConfig | None, context: Any, kwargs: dict[str, Any]) -> tuple[RunnableConfig | None, dict[str, Any]]:
        """Upstream's arguments for a run with ``context``: the runs API refuses
        ``context`` next to a ``configurable``, so the configurable goes in
        ``checkpoint`` (see ``_core.context``)."""
        payload = context_payload(context)
        if payload is None:
            return config, kwargs
        configurable = dict(self._sanitize_config(merge_configs(self.config, config)).get("configurable") or {})
        configurable.pop("thread_id", None)
        config = {**(config or {}), "configurable": {**((config or {}).get("configurable") or {}), _CONTEXT_CALL: True}}
        kwargs = {**kwargs, "context": payload}
        if configurable:
            kwargs["checkpoint"] = {**(kwargs.get("checkpoint") or {}), **configurable}
        return config, kwargs

    def _sanitize_config(self, config: RunnableConfig) -> RunnableConfig:
        sanitized = super()._sanitize_config(config)
        configurable = sanitized.get("configurable")
        if configurable and configurable.get(_CONTEXT_CALL):
            # A run with context: the rest of the configurable is in ``checkpoint``.
            sanitized["configurable"] = {k: v for k, v in configurable.items() if k == "thread_id"}
        return sanitized

    # --- v3 --------------------------------------------------------------------

    def _mux(self, transformers: Sequence[TransformerFactory] | None, *, is_async: bool) -> StreamMux:
        chosen = _SERVER_SIDE if self.stream_transformers is None else self.stream_transformers
        known = self._wire_channels

        def wire_channels(scope: tuple[str, ...]) -> WireChannelsTransformer:
            return WireChannelsTransformer(scope, known if not scope else None)

        factories = [
            ValuesTransformer,
            RemoteMessagesTransformer,
            LifecycleTransformer,
            SubgraphTransformer,
            *normalize_stream_transformer_factories(chosen),
            *normalize_stream_transformer_factories(transformers),
            # Last, so a name another transformer projects is left to it.
            wire_channels,
        ]
        return StreamMux(factories=factories, scope=(), is_async=is_async)

    def _driver(self, input: Any, config: RunnableConfig | None, options: RunOptions) -> tuple[RunDriver, str]:
        """The run's driver, on the server thread, and the thread id the caller knows it by."""
        merged = merge_configs(self.config, config)
        thread_id, wire, thread_given = wire_config(merged, lambda value: server_thread_id(value, self.map_thread_id))
        plan = StartPlan(assistant_id=self.assistant_id, input=input, config=wire, options=options, thread_given=thread_given)
        name = thread_name(merged["configurable"]["thread_id"]) if thread_given else thread_id
        return RunDriver(plan, thread_id, timeouts=self.timeouts, limits=self.limits), name

    def _headers(self, options: RunOptions) -> dict[str, str] | None:
        if not self.distributed_tracing:
            return options.headers
        return merge_tracing_headers(options.headers)

    @overload  # type: ignore[override]
    def stream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v3"],
        transformers: Sequence[TransformerFactory] | None = None,
        **kwargs: Any,
    ) -> RemoteGraphRunStream: ...

    @overload
    def stream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2"] = "v2",
        **kwargs: Any,
    ) -> Any: ...

    def stream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[TransformerFactory] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Stream a run of the remote graph.

        With ``version="v3"``, returns a ``RemoteGraphRunStream`` that the
        caller drives by iterating, exactly like a local ``GraphRunStream``.
        Nothing is sent until the first pull.

        Args:
            input: The graph input, or a ``Command(resume=...)`` to resume.
            config: Run config; ``configurable.thread_id`` selects the thread
                (a new one is created when it is absent; an id that is not a
                UUID is mapped to one by ``map_thread_id``, and ``run.thread_id``
                reads it back as given) and ``configurable.checkpoint_id``
                forks from that checkpoint.
            version: ``"v3"`` for run streams; other versions are upstream's.
            transformers: Extra ``StreamTransformer`` factories, applied on
                the client to the remote run's events.
            **kwargs: ``context`` (the run's runtime context: a mapping,
                dataclass or pydantic instance, coerced on the server to the
                graph's ``context_schema``), ``metadata``,
                ``multitask_strategy``, ``headers``, ``interrupt_before``,
                ``interrupt_after`` and ``durability`` are honoured.
                ``stream_mode`` / ``subgraphs`` raise ``TypeError``
                as they do locally; any other keyword raises
                ``NotImplementedError`` naming it, since the v3 protocol would
                silently drop it.
        """
        if version != "v3":
            return super().stream_events(input, config, version=version, transformers=transformers, **kwargs)
        reject_v3_invariant_kwargs(kwargs)
        options = RunOptions.from_kwargs(kwargs)
        mux = self._mux(transformers, is_async=False)
        driver, name = self._driver(input, config, options)
        sync_client = self._validate_sync_client()
        source = SyncRunSource(sync_client.http.client, driver, self._headers(options), owner=self._clients)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The v3 streaming protocol on Pregel is experimental.")
            return RemoteGraphRunStream(source, mux, driver, thread_id=name)

    @overload  # type: ignore[override]
    def astream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v3"],
        transformers: Sequence[TransformerFactory] | None = None,
        **kwargs: Any,
    ) -> Awaitable[AsyncRemoteGraphRunStream]: ...

    @overload
    def astream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2"] = "v2",
        **kwargs: Any,
    ) -> Any: ...

    def astream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[TransformerFactory] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async variant of ``stream_events``.

        With ``version="v3"``, returns an awaitable of an
        ``AsyncRemoteGraphRunStream``. As locally, ``stream_mode`` and
        ``subgraphs`` are rejected at the call, and ``transformers`` at the
        ``await``.
        """
        if version != "v3":
            return super().astream_events(input, config, version=version, transformers=transformers, **kwargs)
        reject_v3_invariant_kwargs(kwargs)
        options = RunOptions.from_kwargs(kwargs)
        return self._astream_v3(input, config, transformers, options)

    async def _astream_v3(
        self,
        input: Any,
        config: RunnableConfig | None,
        transformers: Sequence[TransformerFactory] | None,
        options: RunOptions,
    ) -> AsyncRemoteGraphRunStream:
        mux = self._mux(transformers, is_async=True)
        driver, name = self._driver(input, config, options)
        client = self._validate_client()
        source = AsyncRunSource(client.http.client, driver, self._headers(options), owner=self._clients)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The v3 streaming protocol on Pregel is experimental.")
            return AsyncRemoteGraphRunStream(source, mux, driver, thread_id=name)
