"""``RemoteGraph``: a deployed graph that streams v3 runs like a local one."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Literal, overload
from uuid import UUID

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.graph import Graph as DrawableGraph
from langchain_core.runnables.schema import StreamEvent
from langgraph.pregel import Pregel
from langgraph.pregel.protocol import PregelProtocol
from langgraph.pregel.remote import RemoteGraph as _UpstreamRemoteGraph
from langgraph.types import All, Durability, StateSnapshot, StateUpdate, StreamMode
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient
from pydantic import BaseModel

from remote_graph import runs as _runs
from remote_graph._classic import ClassicCall
from remote_graph._clients import ClientSettings, SdkClients
from remote_graph._core.actions import Timeouts
from remote_graph._core.commands import RunOptions
from remote_graph._core.events import EventFilters
from remote_graph._core.limits import Limits
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.thread_ids import ThreadIdMap, default_map_thread_id, server_thread_id
from remote_graph._deployment import Deployment, TransformerFactory
from remote_graph._guard import check_config, guard_methods
from remote_graph._invoke import InvokeCollector, collector_kwargs
from remote_graph._private import drawable_graph, normalize_stream_transformer_factories, reject_v3_invariant_kwargs
from remote_graph._schemas import output_model, published, published_model
from remote_graph._state import ThreadCalls
from remote_graph._v3 import V3Call
from remote_graph.nesting import ChildThreadId, NestedCall, default_child_thread_id, nested_call
from remote_graph.runs import AsyncRunChunks, AsyncRunHandle, RunChunks, RunHandle
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream

__all__ = ["RemoteGraph"]

# The named arguments of ``stream`` / ``astream``, handed on as they are.
_STREAM_ARGS = (
    "context",
    "stream_mode",
    "print_mode",
    "interrupt_before",
    "interrupt_after",
    "durability",
    "subgraphs",
    "debug",
    "version",
)


def _no_params(params: Any, method: str) -> None:
    if params is not None:
        raise NotImplementedError(f"RemoteGraph.{method} cannot honour params=: extra query parameters are not sent.")


@guard_methods
class RemoteGraph(_UpstreamRemoteGraph):
    """A graph deployed on a LangGraph server, usable like a local compiled graph.

    Every method a compiled graph has works as it does locally and returns the
    objects a local graph returns: ``stream_events(input, config,
    version="v3")`` and ``await astream_events(..., version="v3")`` give run
    streams with the local ``GraphRunStream`` / ``AsyncGraphRunStream``
    surface (raw events, ``values``, ``messages``, ``lifecycle``,
    ``subgraphs``, opt-in projections, ``output`` / ``interrupted`` /
    ``interrupts``, ``abort()``); ``invoke``, ``batch``, ``stream`` in every
    stream mode and ``astream_events(version="v1"/"v2")`` give local chunks
    and events; ``get_state``, ``get_state_history``, ``update_state``,
    ``bulk_update_state`` and ``get_subgraphs`` give ``StateSnapshot``s and
    configs. Each method that starts a run takes the same data path: it
    resumes after a lost connection with nothing lost or repeated, ends on the
    server's verdict, cancels the run on the server when the caller abandons
    it, and waits no longer than ``timeouts``. Every failure is a
    ``RemoteGraphError`` (a node's exception is rebuilt under its own name).

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
        if url is None and client is None and sync_client is None:
            raise ValueError(
                f"RemoteGraph({assistant_id!r}) has no server to talk to: pass url='http://host:port' "
                "(or an SDK client= / sync_client=)"
            )
        if not callable(map_thread_id):
            raise TypeError(f"map_thread_id must be callable, got {type(map_thread_id).__name__}")
        check_config(config)
        if (thread_id := ((config or {}).get("configurable") or {}).get("thread_id")) is not None:
            server_thread_id(thread_id, map_thread_id)
        timeouts = timeouts if timeouts is not None else Timeouts()
        # Set before upstream's __init__, which assigns client and sync_client
        # (properties here); url is kept from it so it builds no clients itself.
        self._clients = SdkClients(
            ClientSettings(
                url=url, api_key=api_key, headers=headers, client=client, sync_client=sync_client, timeouts=timeouts
            )
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
        self._schemas = GraphSchemas()

    def _deployment(self) -> Deployment:
        """What a call needs from this graph, handed down to the modules that build the call."""
        return Deployment(
            assistant_id=self.assistant_id,
            name=self.get_name(),
            config=self.config,
            clients=self._clients,
            timeouts=self.timeouts,
            limits=self.limits,
            schemas=self._schemas,
            map_thread_id=self.map_thread_id,
            child_thread_id=self.child_thread_id,
            distributed_tracing=self.distributed_tracing,
            stream_transformers=self.stream_transformers,
            wire_channels=self._wire_channels,
        )

    def _threads(self) -> ThreadCalls:
        return ThreadCalls(self._deployment())

    def copy(self, update: dict[str, Any]) -> RemoteGraph:
        """A copy with ``update`` applied to the constructor arguments (private caches start fresh).

        The copy shares this graph's SDK clients unless ``update`` changes
        ``timeouts``, ``client`` or ``sync_client``.
        """
        update = dict(update)
        client_changes = {key: update.pop(key) for key in ("client", "sync_client") if key in update}
        attrs = {key: value for key, value in {**self.__dict__, **update}.items() if not key.startswith("_")}
        # The same server, so the copy is valid as built; its clients are then set below.
        # A graph built from ``url`` hands over the sync client it built rather than the
        # url: building one costs tens of milliseconds, and the copy would drop it.
        server = self._clients.settings
        given: dict[str, Any] = {"client": server.client, "sync_client": server.sync_client}
        if server.url is not None and server.client is None and server.sync_client is None:
            given["sync_client"] = self._clients.sync_client()
        copy = self.__class__(attrs.pop("assistant_id"), **given, **attrs)
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

    # --- thread state -----------------------------------------------------------
    #
    # Each method and its async variant keep a compiled graph's signature, which
    # sync and async syntax spell twice; their bodies hand one conversation
    # (``_state.ThreadCalls``, ``_classic``, ``_v3``) to the sync or async shell.

    def get_state(
        self,
        config: RunnableConfig,
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> StateSnapshot:
        """The thread's state, as a local graph's ``get_state`` returns it.

        Values hold message objects (revived by the deployed graph's state
        schema), tasks their ``Interrupt``s and, with ``subgraphs=True``, their
        subgraph's own snapshot; a thread the server does not have reads as an
        empty snapshot, as a local thread with no checkpoint does. A
        ``checkpoint_id`` (and ``checkpoint_ns``) in the config reads that
        checkpoint.
        """
        _no_params(params, "get_state")
        return (threads := self._threads()).sync(headers).run(threads.state(config, subgraphs))

    async def aget_state(
        self,
        config: RunnableConfig,
        *,
        subgraphs: bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> StateSnapshot:
        """Async variant of ``get_state``."""
        _no_params(params, "aget_state")
        return await (threads := self._threads()).async_(headers).run(threads.state(config, subgraphs))

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints, newest first, as a local graph's ``get_state_history`` yields them.

        All of them unless ``limit`` is given (read from the server page by
        page, as the caller iterates); ``before`` starts below a checkpoint,
        ``filter`` matches checkpoint metadata. A thread the server does not
        have has no history.
        """
        _no_params(params, "get_state_history")
        threads = self._threads()
        yield from threads.sync(headers).items(threads.history(config, filter=filter, before=before, limit=limit))

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> AsyncIterator[StateSnapshot]:
        """Async variant of ``get_state_history``."""
        _no_params(params, "aget_state_history")
        threads = self._threads()
        async for state in threads.async_(headers).items(
            threads.history(config, filter=filter, before=before, limit=limit)
        ):
            yield state

    # A compiled graph's signature (task_id), which upstream's RemoteGraph lacks.
    def update_state(  # type: ignore[override]
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        task_id: str | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> RunnableConfig:
        """Write ``values`` to the thread as if node ``as_node`` had; the new checkpoint's config.

        As locally, a thread with no checkpoint yet gets its first one (the
        server's thread is created for the deployed graph first).
        """
        threads = self._threads()
        return threads.sync(headers).run(threads.update(config, values, as_node, task_id))

    async def aupdate_state(  # type: ignore[override]
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        task_id: str | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> RunnableConfig:
        """Async variant of ``update_state``."""
        threads = self._threads()
        return await threads.async_(headers).run(threads.update(config, values, as_node, task_id))

    # A compiled graph's signature: supersteps of StateUpdates.
    def bulk_update_state(self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]) -> RunnableConfig:  # type: ignore[override]
        """Apply ``supersteps`` of ``StateUpdate``s (``(values, as_node)``) to the thread, in order.

        Each superstep's updates become one checkpoint, as locally (the server
        applies them through its threads API, creating the thread when it has
        none). Returns the last checkpoint's config.
        """
        threads = self._threads()
        return threads.sync(None).run(threads.bulk(config, supersteps))

    async def abulk_update_state(  # type: ignore[override]
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """Async variant of ``bulk_update_state``."""
        threads = self._threads()
        return await threads.async_(None).run(threads.bulk(config, supersteps))

    # --- schemas, from the server's published ones ---------------------------

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """A pydantic model of the graph's input, from the JSON schema the server publishes.

        Its ``model_json_schema()`` is the published input schema, which is what
        a local graph's ``get_input_jsonschema()`` gives; ``input_schema`` and
        ``as_tool`` read it. The schemas are asked for once per ``RemoteGraph``.
        """
        return published_model(self.get_name("Input"), self._published().get("input_schema"))

    def get_output_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """A pydantic model of the graph's output, from the JSON schema the server publishes.

        As a local graph's, it is named ``{name}Output`` and each of its keys
        is optional (``None`` by default).
        """
        return output_model(self.get_name("Output"), self._published().get("output_schema"))

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        """The graph's input JSON schema, as the server publishes it."""
        return self.get_input_schema(config).model_json_schema()

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        """The graph's output JSON schema, as the server publishes it."""
        return published_model(self.get_name("Output"), self._published().get("output_schema")).model_json_schema()

    @property
    def context_schema(self) -> type[BaseModel] | None:
        """A pydantic model of the graph's runtime context, or ``None`` when it has no context schema."""
        context = self._published().get("context_schema")
        return published_model(self.get_name("Context"), context) if context else None

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The graph's context JSON schema as the server publishes it, or ``None`` when it has none."""
        model = self.context_schema
        return model.model_json_schema() if model is not None else None

    def config_schema(self, *, include: Sequence[str] | None = None) -> type[BaseModel]:
        """The graph's config as a local graph's ``config_schema`` gives it (deprecated
        there too, for ``get_context_jsonschema``): ``configurable`` typed by the
        published context schema, and the ``RunnableConfig`` keys ``include`` names.

        langgraph's own ``Pregel.config_schema``, on this graph's ``context_schema``
        and name.
        """
        return Pregel.config_schema(self, include=include)  # type: ignore[arg-type]

    def get_config_jsonschema(self, *, include: Sequence[str] | None = None) -> dict[str, Any]:
        """The JSON schema of ``config_schema``, as a local graph's (deprecated there too)."""
        return Pregel.get_config_jsonschema(self, include=include)  # type: ignore[arg-type]

    def _published(self) -> Mapping[str, Any]:
        return self._deployment().sync_requests().run(published(self.assistant_id, self._schemas))

    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, PregelProtocol[Any, Any, Any, Any]]]:
        """The deployed graph's subgraphs by namespace, as the server describes them.

        Each is a ``RemoteSubgraph``: its schemas are the server's, but it
        cannot run on its own (the server runs only deployed graphs), so its
        run methods raise ``NotImplementedError`` saying so.
        """
        threads = self._threads()
        for namespace_, subgraph in threads.sync(None).run(threads.subgraphs(namespace, recurse)):
            yield namespace_, subgraph  # type: ignore[misc]

    async def aget_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, PregelProtocol[Any, Any, Any, Any]]]:
        """Async variant of ``get_subgraphs``."""
        threads = self._threads()
        for namespace_, subgraph in await threads.async_(None).run(threads.subgraphs(namespace, recurse)):
            yield namespace_, subgraph  # type: ignore[misc]

    def get_graph(
        self,
        config: RunnableConfig | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> DrawableGraph:
        """The deployed graph's drawing, as the server describes it (``xray``: with its subgraphs').

        Asked of the graph's assistant by its UUID, which every server knows (aegra
        does not take a graph name there). A graph name the server does not serve
        fails with a ``RemoteCommandError`` naming the graphs it serves.
        """
        threads = self._threads()
        return drawable_graph(self, threads.sync(headers).run(threads.drawing(xray, params)))

    async def aget_graph(
        self,
        config: RunnableConfig | None = None,
        *,
        xray: int | bool = False,
        headers: dict[str, str] | None = None,
        params: Any = None,
    ) -> DrawableGraph:
        """Async variant of ``get_graph``."""
        threads = self._threads()
        return drawable_graph(self, await threads.async_(headers).run(threads.drawing(xray, params)))

    # --- inside a local parent ------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the remote graph and return its final state.

        As a local ``invoke``: it streams the run (``stream_mode="values"``,
        with the updates that carry interrupts) and returns the last state,
        with ``__interrupt__`` holding the ``Interrupt``s of a paused run
        (``version="v2"``: a ``GraphOutput``); with another ``stream_mode``,
        the list of chunks. Inside a local parent's task this runs as that
        task's subgraph (see the class docstring).
        """
        nested = nested_call(self._deployment(), input, config, kwargs)
        if nested is not None:
            return nested.run()
        collect = InvokeCollector(**collector_kwargs(kwargs))
        for chunk in self.stream(input, config, **collect.stream_kwargs(kwargs)):
            collect.add(chunk)
        return collect.result()

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async variant of ``invoke``. Cancelling it cancels the remote run."""
        nested = nested_call(self._deployment(), input, config, kwargs)
        if nested is not None:
            return await nested.arun()
        collect = InvokeCollector(**collector_kwargs(kwargs))
        async with aclosing(self.astream(input, config, **collect.stream_kwargs(kwargs))) as chunks:
            async for chunk in chunks:
                collect.add(chunk)
        return collect.result()

    # --- classic runs -----------------------------------------------------------
    #
    # ``stream`` and ``astream`` keep a compiled graph's signature, keyword by keyword
    # (langchain's Runnable.stream takes only **kwargs), and sync and async syntax spell
    # it twice: a duplicate-code report lists the pair. Their bodies are one line each,
    # handing the same planned call (``_stream_call``) to the sync or async shell.
    def stream(  # type: ignore[override]
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        durability: Durability | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Stream a run of the remote graph, exactly as a local ``stream()`` streams.

        The run executes on the server as the same call executes locally (the
        requested stream modes, no v3 events), on the one data path every run
        takes: resumed after a lost connection with nothing lost or repeated,
        ended on the server's verdict, cancelled on the server when the caller
        stops iterating (``break``, or closing the generator). Chunks are what
        a local run yields: messages and chunks as objects, ``(chunk,
        metadata)`` pairs in ``messages`` mode, ``Interrupt``s, namespaces as
        tuples with ``subgraphs=True``, ``StreamPart`` dicts with
        ``version="v2"``; ``print_mode`` and ``debug`` print as locally. A run
        that fails raises the node's exception, rebuilt (``RemoteRunError``).

        Args:
            input: The graph input, or a ``Command`` (``resume``, ``update``, ``goto``).
            config: Run config; ``configurable.thread_id`` selects the thread
                (see ``RemoteGraph``) and ``configurable.checkpoint_id`` forks.
            context: The run's runtime context (a mapping, dataclass or
                pydantic instance), coerced on the server to the graph's
                ``context_schema``.
            stream_mode: ``values``, ``updates``, ``messages``, ``custom``,
                ``debug``, ``tasks``, ``checkpoints``, or a list of them;
                ``updates`` (a compiled ``StateGraph``'s default) when omitted.
            print_mode: Modes printed to the console as they arrive, as locally.
            interrupt_before: Nodes to pause before.
            interrupt_after: Nodes to pause after.
            durability: ``sync``, ``async`` or ``exit``.
            subgraphs: Stream subgraphs' chunks too, with their namespace.
            debug: Print each step's updates and values, as locally.
            version: ``v1`` (tuples) or ``v2`` (``StreamPart`` dicts).
            **kwargs: ``output_keys`` (applied to the chunks as locally),
                ``metadata``, ``multitask_strategy`` and ``headers`` are
                honoured; ``control``, ``params`` and unknown keywords raise
                ``NotImplementedError`` naming them.
        """
        named = locals()
        call = self._stream_call(input, config, {key: named[key] for key in _STREAM_ARGS}, kwargs, "stream()")
        yield from call.iterate()

    async def astream(  # type: ignore[override]
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        print_mode: StreamMode | Sequence[StreamMode] = (),
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        durability: Durability | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        version: Literal["v1", "v2"] = "v1",
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Async variant of ``stream``; cancelling it, or closing it early, cancels the run."""
        named = locals()
        call = self._stream_call(input, config, {key: named[key] for key in _STREAM_ARGS}, kwargs, "astream()")
        # Closed with the caller's generator: an async for does not close what it iterates.
        chunks = call.aiterate()
        async with aclosing(chunks):
            async for chunk in chunks:
                yield chunk

    def _stream_call(
        self, input: Any, config: RunnableConfig | None, named: dict[str, Any], kwargs: dict[str, Any], method: str
    ) -> NestedCall | ClassicCall:
        """The run a ``stream()`` / ``astream()`` call starts: a child run of the local
        parent task the config names, or a root classic run (nothing is sent yet).

        Args:
            named: The call's named arguments (``stream_mode``, ``context``, ...).
            kwargs: The rest, checked by the run.
            method: The method's name, for error messages.
        """
        shape = {key: named.pop(key) for key in ("stream_mode", "print_mode", "subgraphs", "debug", "version")}
        run_kwargs = {**named, **kwargs}
        nested_kwargs = {
            **run_kwargs,
            **{key: shape[key] for key in ("stream_mode", "print_mode", "subgraphs", "version")},
        }
        deployment = self._deployment()
        nested = nested_call(deployment, input, config, nested_kwargs, streaming=True)
        if nested is not None:
            return nested
        return ClassicCall.start(deployment, input, config, **shape, kwargs=run_kwargs, method=method)

    # --- v3 --------------------------------------------------------------------

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
            version: ``"v3"`` for run streams; ``"v1"`` / ``"v2"`` ask for
                LangChain's sync event stream, which raises
                ``NotImplementedError`` as a local graph's does (use
                ``astream_events``).
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
        return V3Call(self._deployment(), input, config, transformers, options).run_stream()

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
    ) -> AsyncIterator[StreamEvent]: ...

    def astream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[TransformerFactory] | None = None,
        include_names: Sequence[str] | None = None,
        include_types: Sequence[str] | None = None,
        include_tags: Sequence[str] | None = None,
        exclude_names: Sequence[str] | None = None,
        exclude_types: Sequence[str] | None = None,
        exclude_tags: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async variant of ``stream_events``, and LangChain's event stream.

        With ``version="v3"``, returns an awaitable of an
        ``AsyncRemoteGraphRunStream``. As locally, ``stream_mode`` and
        ``subgraphs`` are rejected at the call, and ``transformers`` at the
        ``await``.

        With ``version="v2"`` (the default) or ``"v1"``, returns the async
        iterator of LangChain ``StreamEvent``s a local graph's
        ``astream_events`` yields: the same events in the same order, with
        their names, tags, metadata, ``parent_ids`` and revived payloads (the
        root run is named as this graph: ``name``, by default the assistant
        id). ``include_*`` / ``exclude_*`` filter them as locally; other
        keyword arguments are ``astream``'s. The run is the one data path every
        run takes; leaving the iterator early cancels it.
        """
        if version not in ("v1", "v2"):
            if version != "v3":
                raise ValueError(f"version must be 'v1', 'v2' or 'v3', got {version!r}")
            reject_v3_invariant_kwargs(kwargs)
            options = RunOptions.from_kwargs(kwargs)
            return self._astream_v3(input, config, transformers, options)
        if transformers is not None:
            raise TypeError("transformers= is a v3 run stream's option; astream_events(version='v1'/'v2') takes none")
        filters = EventFilters(
            include_names=include_names,
            include_types=include_types,
            include_tags=include_tags,
            exclude_names=exclude_names,
            exclude_types=exclude_types,
            exclude_tags=exclude_tags,
        )
        return self._astream_classic_events(input, config, version, filters, kwargs)

    async def _astream_classic_events(
        self,
        input: Any,
        config: RunnableConfig | None,
        version: Literal["v1", "v2"],
        filters: EventFilters,
        kwargs: dict[str, Any],
    ) -> AsyncIterator[StreamEvent]:
        call = ClassicCall.start_events(
            self._deployment(), input, config, version=version, filters=filters, kwargs=kwargs
        )
        async with aclosing(call.aiterate()) as events:
            async for event in events:
                yield event  # type: ignore[misc]

    async def _astream_v3(
        self,
        input: Any,
        config: RunnableConfig | None,
        transformers: Sequence[TransformerFactory] | None,
        options: RunOptions,
    ) -> AsyncRemoteGraphRunStream:
        # Built when awaited, on the awaiting loop (its client).
        return V3Call(self._deployment(), input, config, transformers, options).async_run_stream()

    # --- runs that outlive the caller ----------------------------------------------

    def start(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        subgraphs: bool = False,
        **kwargs: Any,
    ) -> RunHandle:
        """Start a run and return once the server accepted it, without following it.

        The run goes on with no client connected: after this process exits or
        crashes, ``join`` follows it from any process, and the handle (or
        ``get_run``) reads, waits for and cancels it. The run is started as the
        kind of run a later join reads: without ``stream_mode`` a v3 run (join
        it with ``version="v3"`` for a run stream), with ``stream_mode`` a
        classic run (join it with the same ``stream_mode`` for ``stream()``'s
        chunks).

        Args:
            input: The graph input, or a ``Command`` (``resume``, ``update``, ``goto``).
            config: Run config; ``configurable.thread_id`` selects the thread (a
                new one is created when it is absent; ``handle.thread_id`` names it).
            stream_mode: The stream modes of a classic run, as ``stream()`` takes them.
            subgraphs: Whether a classic run streams its subgraphs' chunks.
            **kwargs: What ``stream_events(version="v3")`` (no ``stream_mode``)
                or ``stream()`` (with one) honours: ``context``, ``metadata``,
                ``multitask_strategy``, ``headers``, ``interrupt_before``,
                ``interrupt_after``, ``durability``.

        Returns:
            A ``RunHandle`` with the run's ``run_id`` and ``thread_id``, status ``running``.
        """
        deployment = self._deployment()
        return _runs.start(
            deployment, _runs.starting(deployment, input, config, stream_mode, subgraphs, kwargs, "start()")
        )

    async def astart(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        subgraphs: bool = False,
        **kwargs: Any,
    ) -> AsyncRunHandle:
        """Async variant of ``start``; the handle's methods are awaited."""
        deployment = self._deployment()
        started = _runs.starting(deployment, input, config, stream_mode, subgraphs, kwargs, "astart()")
        return await _runs.astart(deployment, started)

    @overload
    def join(
        self,
        run_id: str,
        *,
        thread_id: str | UUID,
        after: str | None = None,
        version: Literal["v3"] = "v3",
        transformers: Sequence[TransformerFactory] | None = None,
    ) -> RemoteGraphRunStream: ...

    @overload
    def join(
        self,
        run_id: str,
        *,
        thread_id: str | UUID,
        after: str | None = None,
        version: Literal["v1", "v2"],
        stream_mode: StreamMode | Sequence[StreamMode],
        subgraphs: bool = False,
    ) -> RunChunks: ...

    def join(
        self,
        run_id: str,
        *,
        thread_id: str | UUID,
        after: str | None = None,
        version: Literal["v1", "v2", "v3"] = "v3",
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        subgraphs: bool = False,
        transformers: Sequence[TransformerFactory] | None = None,
    ) -> RemoteGraphRunStream | RunChunks:
        """Follow a run started elsewhere (another call, another process), finished or not.

        With ``version="v3"``, returns the ``RemoteGraphRunStream`` a
        ``stream_events(version="v3")`` call gives, from the run's first event:
        every projection, handle, interrupt and error, resumed after a cut,
        ended on the server's verdict, the run cancelled by ``abort()``. With
        ``version="v1"`` / ``"v2"`` and the ``stream_mode`` the run was started
        with, returns the chunks ``stream(..., stream_mode=...)`` yields for it
        (a ``RunChunks`` iterator). Either one's ``cursor``, read after an
        event, is a string to store: joining with ``after=cursor`` yields
        exactly the events after that one. A finished run is replayed and the
        join ends. Nothing is sent until the first pull.

        Args:
            run_id: The run's id (``handle.run_id``, ``run.run_id``).
            thread_id: The run's thread, as the caller named it (mapped as
                every method maps it).
            after: A ``cursor`` taken from a join or a run stream of this run.
            version: ``"v3"`` for a run stream; ``"v1"`` / ``"v2"`` for classic chunks.
            stream_mode: A classic join's stream modes (the run's own, or some of them).
            subgraphs: A classic join's ``subgraphs``, as the run was started.
            transformers: Extra ``StreamTransformer`` factories of a v3 join.

        Raises:
            RunCursorError: ``after`` is not a cursor (at the call).
            RunMismatchError: ``after`` was taken from another run (at the call);
                the run belongs to another graph, or is not the kind of run
                joined (on the first pull).
            RunNotFoundError: The thread has no such run, or these credentials
                may not see it (on the first pull).
            RunEventsGoneError: The server no longer holds the events the join
                needs (on the first pull), instead of a short stream.
        """
        join = _runs.JoinCall(
            self._deployment(), run_id, thread_id, after, version, stream_mode, subgraphs, transformers, "join()"
        )
        return join.run_stream()

    async def ajoin(
        self,
        run_id: str,
        *,
        thread_id: str | UUID,
        after: str | None = None,
        version: Literal["v1", "v2", "v3"] = "v3",
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        subgraphs: bool = False,
        transformers: Sequence[TransformerFactory] | None = None,
    ) -> AsyncRemoteGraphRunStream | AsyncRunChunks:
        """Async variant of ``join``: an ``AsyncRemoteGraphRunStream``, or ``AsyncRunChunks``."""
        join = _runs.JoinCall(
            self._deployment(), run_id, thread_id, after, version, stream_mode, subgraphs, transformers, "ajoin()"
        )
        return join.async_run_stream()

    def get_run(self, run_id: str, *, thread_id: str | UUID) -> RunHandle:
        """A handle on a run of the thread ``thread_id``, read from the server.

        Raises:
            RunNotFoundError: The thread has no such run, or these credentials may not see it.
        """
        return _runs.get_run(self._deployment(), run_id, thread_id)

    async def aget_run(self, run_id: str, *, thread_id: str | UUID) -> AsyncRunHandle:
        """Async variant of ``get_run``."""
        return await _runs.aget_run(self._deployment(), run_id, thread_id)

    def list_runs(
        self, thread_id: str | UUID, *, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> list[RunHandle]:
        """The thread's runs, newest first, as handles.

        Args:
            thread_id: The thread, as the caller names it.
            limit: How many runs at most.
            offset: How many of the newest to skip.
            status: Only runs the server records with this status (``pending``,
                ``running``, ``success``, ``error``, ``timeout``, ``interrupted``).
        """
        return _runs.list_thread_runs(self._deployment(), thread_id, limit, offset, status)

    async def alist_runs(
        self, thread_id: str | UUID, *, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> list[AsyncRunHandle]:
        """Async variant of ``list_runs``."""
        return await _runs.alist_thread_runs(self._deployment(), thread_id, limit, offset, status)
