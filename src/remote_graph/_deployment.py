"""What a call needs from the deployed graph it talks to, as one explicit object.

``RemoteGraph`` is the public facade; every call it makes hands a
``Deployment`` down to the modules that build the call (``_classic``,
``_state``, ``nesting``), and they touch nothing of ``RemoteGraph`` itself. A
``Deployment`` holds the assistant, the SDK clients, the bounds, the thread-id
maps and the caches learned from the server (the graph's schemas, the named
channels earlier runs received), and it knows how a root run is planned and
how a run's driver and I/O source are built. Arrows point down: this module
imports the shells and the core, never a module above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.stream.transformers import (
    CustomTransformer,
    LifecycleTransformer,
    SubgraphTransformer,
    UpdatesTransformer,
    ValuesTransformer,
)

from remote_graph._aio import AsyncRequests, AsyncRunSource
from remote_graph._clients import SdkClients
from remote_graph._core.actions import Timeouts
from remote_graph._core.commands import RunOptions, StartPlan, wire_config
from remote_graph._core.join import JoinFrom
from remote_graph._core.limits import Limits
from remote_graph._core.run import RunDriver
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.thread_ids import ThreadIdMap, server_thread_id
from remote_graph._core.v3_formats import V3Formats
from remote_graph._core.wire import Wire
from remote_graph._private import (
    StreamMux,
    merge_tracing_headers,
    normalize_stream_transformer_factories,
    required_modes,
)
from remote_graph._sync import SyncRequests, SyncRunSource
from remote_graph.transformers import RemoteMessagesTransformer, WireChannelsTransformer

__all__ = ["Deployment", "RootRun", "TransformerFactory"]

TransformerFactory = Callable[[tuple[str, ...]], Any]

# What stands for a deployed module's opt-in transformers when the caller names none:
# the server sends ``updates`` and ``custom`` exactly when its module registers them.
_SERVER_SIDE: tuple[TransformerFactory, ...] = (UpdatesTransformer, CustomTransformer)


@dataclass(frozen=True, slots=True)
class RootRun:
    """How a root run (no local parent) starts, decided before anything is sent.

    Attributes:
        plan: What the start request sends.
        config: The call's config merged over the graph's.
        thread_id: The server thread the run executes on.
        thread_given: Whether the caller named the thread (else a fresh one was minted).
    """

    plan: StartPlan
    config: RunnableConfig
    thread_id: str
    thread_given: bool


@dataclass(frozen=True, slots=True)
class Deployment:
    """The deployed graph one call talks to; see the module docstring.

    Built by ``RemoteGraph`` for each call from its current settings; the
    caches (``schemas``, ``wire_channels``) and the clients are the graph's own
    objects, shared by every call.

    Attributes:
        assistant_id: The assistant ID or graph name the runs start.
        name: The graph's name (``RemoteGraph.get_name()``), which names its root run.
        config: The graph's own config, merged under every call's.
        clients: The SDK clients.
        timeouts: Bounds on every wait.
        limits: Bounds on what a run may make the client hold.
        schemas: What the server says of the graph's schemas, learned once.
        map_thread_id: Maps a thread id that is not a UUID to the server's.
        child_thread_id: The thread of a run inside a local parent's task.
        distributed_tracing: Whether runs carry LangSmith's tracing headers.
        stream_transformers: The caller's stand-ins for the module's opt-in
            transformers (``None``: ``run.updates`` and ``run.custom``).
        wire_channels: The server module's named channels earlier runs received.
    """

    assistant_id: str
    name: str
    config: RunnableConfig | None
    clients: SdkClients
    timeouts: Timeouts
    limits: Limits
    schemas: GraphSchemas
    map_thread_id: ThreadIdMap
    child_thread_id: Callable[[str, str], str]
    distributed_tracing: bool
    stream_transformers: tuple[TransformerFactory, ...] | None
    wire_channels: set[str]

    # --- starting a run ------------------------------------------------------------

    def root_run(self, input: Any, config: RunnableConfig | None, options: RunOptions, **stream: Any) -> RootRun:
        """How a root run of this graph starts, v3 and classic alike (``stream``
        holds a classic run's ``stream_mode`` and ``stream_subgraphs``)."""
        merged = merge_configs(self.config, config)
        thread_id, wire, thread_given = wire_config(merged, lambda value: server_thread_id(value, self.map_thread_id))
        plan = self.start_plan(input, wire, options, thread_given=thread_given, **stream)
        return RootRun(plan, merged, thread_id, thread_given)

    def start_plan(self, input: Any, wire: dict[str, Any], options: RunOptions, **settings: Any) -> StartPlan:
        """What a run of this graph sends to start: ``wire`` is the config as it
        crosses the wire (``commands.wire_config``); ``settings`` the rest of
        ``StartPlan``'s fields (the thread, a parent's resume, a classic run's modes)."""
        return StartPlan(assistant_id=self.assistant_id, input=input, config=wire, options=options, **settings)

    def driver(
        self,
        plan: StartPlan,
        thread_id: str,
        wire: Wire | None = None,
        *,
        schemas: bool = True,
        join: JoinFrom | None = None,
    ) -> RunDriver:
        """The run's driver, bounded by this graph's timeouts and limits.

        Args:
            wire: The run's stream format (a v3 run's when ``None``).
            schemas: Whether the run learns the graph's schemas before it
                starts (a classic run revives state by them).
            join: Follow this run, started elsewhere, instead of starting one.
        """
        return RunDriver(
            plan,
            thread_id,
            timeouts=self.timeouts,
            schemas=self.schemas if schemas else None,
            wire=wire,
            limits=self.limits,
            join=join,
        )

    def run_headers(self, options: RunOptions) -> dict[str, str] | None:
        """The headers a run's requests carry: the call's, with tracing headers when asked for."""
        if not self.distributed_tracing:
            return options.headers
        return merge_tracing_headers(options.headers)

    def run_mux(
        self, driver: RunDriver, transformers: Sequence[TransformerFactory] | None, *, is_async: bool
    ) -> StreamMux:
        """The mux of ``driver``'s v3 run (``mux``), its wire told the modes the mux
        requires (a server without the v3 protocol streams more: only those reach
        it) and those the caller's own transformers do (a v3 server that sends none
        of them is named at the run's end)."""
        mux = self.mux(transformers, is_async=is_async)
        if isinstance(driver.wire, V3Formats):
            own = [*(transformers or ()), *(self.stream_transformers or ())]
            driver.wire.serve(required_modes(mux), wanted=frozenset(m for f in own for m in _modes_of(f)))
        return mux

    def mux(self, transformers: Sequence[TransformerFactory] | None, *, is_async: bool) -> StreamMux:
        """The mux of a v3 run: langgraph's built-in projections, the stand-ins
        for the module's opt-in ones, the call's own, and the module's named channels."""
        chosen = _SERVER_SIDE if self.stream_transformers is None else self.stream_transformers
        known = self.wire_channels

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

    # --- the shells ------------------------------------------------------------------

    def sync_source(self, driver: RunDriver, headers: dict[str, str] | None) -> SyncRunSource:
        """The sync I/O shell of one run, on the sync client."""
        return SyncRunSource(self.clients.sync_client().http.client, driver, headers, owner=self.clients)

    def async_source(self, driver: RunDriver, headers: dict[str, str] | None) -> AsyncRunSource:
        """The async I/O shell of one run, on the running loop's client."""
        return AsyncRunSource(self.clients.async_client().http.client, driver, headers, owner=self.clients)

    def sync_requests(self, headers: dict[str, str] | None = None) -> SyncRequests:
        """REST requests on the sync client (the thread methods' conversations)."""
        return SyncRequests(self.clients.sync_client().http.client, self.timeouts, dict(headers or {}))

    def async_requests(self, headers: dict[str, str] | None = None) -> AsyncRequests:
        """REST requests on the running loop's async client."""
        return AsyncRequests(self.clients.async_client().http.client, self.timeouts, dict(headers or {}))


def _modes_of(factory: TransformerFactory) -> tuple[str, ...]:
    """The modes a transformer factory's transformers require, when it says (a class does)."""
    modes = getattr(factory, "required_stream_modes", ())
    return tuple(m for m in modes if isinstance(m, str)) if isinstance(modes, (tuple, list)) else ()
