"""``RemoteGraph``: a deployed graph that streams v3 runs like a local one."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, overload

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.pregel.main import _normalize_stream_transformer_factories, _reject_v3_invariant_kwargs
from langgraph.pregel.remote import RemoteGraph as _UpstreamRemoteGraph
from langgraph.stream._mux import StreamMux
from langgraph.stream.transformers import LifecycleTransformer, SubgraphTransformer, ValuesTransformer
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph._aio import AsyncRunSource
from remote_graph._core.actions import Timeouts
from remote_graph._core.commands import RunOptions, StartPlan, wire_config
from remote_graph._core.protocol import RunProtocol
from remote_graph._sync import SyncRunSource
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream
from remote_graph.transformers import RemoteMessagesTransformer

__all__ = ["RemoteGraph"]

TransformerFactory = Callable[[tuple[str, ...]], Any]


class RemoteGraph(_UpstreamRemoteGraph):
    """A graph deployed on a LangGraph server, usable like a local compiled graph.

    ``stream_events(input, config, version="v3")`` and ``await
    astream_events(..., version="v3")`` return run streams with the local
    ``GraphRunStream`` / ``AsyncGraphRunStream`` surface: raw events,
    ``values``, ``messages``, ``lifecycle``, ``subgraphs``, opt-in projections,
    ``output``/``interrupted``/``interrupts``, ``abort()``, ``interleave``. The
    v1/v2 methods (``invoke``, ``stream``, ``get_state``, ``update_state``, ...)
    are langgraph's own ``RemoteGraph``'s.

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
        url: The server's URL; builds default sync and async SDK clients.
        api_key: API key for the default clients (read from the environment when omitted).
        headers: Extra headers for the default clients.
        client: An async ``LangGraphClient`` to use instead of a default one.
        sync_client: A ``SyncLangGraphClient`` to use instead of a default one.
        config: A ``RunnableConfig`` merged under every call's config.
        name: Name of this graph when used as a node; defaults to ``assistant_id``.
        distributed_tracing: Whether to send LangSmith distributed tracing headers.
        stream_transformers: Transformer factories that mirror the ones the
            deployed graph was compiled with (or its module's
            ``stream_transformers()``), e.g. ``[UpdatesTransformer,
            CustomTransformer]``. Like a compiled graph's
            ``stream_transformers``, they are registered on every v3 run, so
            ``run.updates`` / ``run.custom`` exist exactly when they do locally.
        timeouts: Bounds on every wait a run stream performs.
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
        stream_transformers: Sequence[TransformerFactory] = (),
        timeouts: Timeouts | None = None,
    ) -> None:
        if not isinstance(assistant_id, str) or not assistant_id:
            raise ValueError(f"assistant_id must be a non-empty string, got {assistant_id!r}")
        super().__init__(
            assistant_id,
            url=url,
            api_key=api_key,
            headers=headers,
            client=client,
            sync_client=sync_client,
            config=config,
            name=name,
            distributed_tracing=distributed_tracing,
        )
        # Validated now, like compile(transformers=...), so a bad factory fails at construction.
        _normalize_stream_transformer_factories(stream_transformers)
        self.stream_transformers: tuple[TransformerFactory, ...] = tuple(stream_transformers)
        self.timeouts = timeouts if timeouts is not None else Timeouts()

    # --- v3 --------------------------------------------------------------------

    def _mux(self, transformers: Sequence[TransformerFactory] | None, *, is_async: bool) -> StreamMux:
        factories = [
            ValuesTransformer,
            RemoteMessagesTransformer,
            LifecycleTransformer,
            SubgraphTransformer,
            *_normalize_stream_transformer_factories(self.stream_transformers),
            *_normalize_stream_transformer_factories(transformers),
        ]
        return StreamMux(factories=factories, scope=(), is_async=is_async)

    def _protocol(self, input: Any, config: RunnableConfig | None, options: RunOptions) -> RunProtocol:
        thread_id, wire, thread_given = wire_config(merge_configs(self.config, config))
        plan = StartPlan(assistant_id=self.assistant_id, input=input, config=wire, options=options, thread_given=thread_given)
        return RunProtocol(plan, thread_id, timeouts=self.timeouts)

    def _headers(self, options: RunOptions) -> dict[str, str] | None:
        if not self.distributed_tracing:
            return options.headers
        from langgraph.pregel.remote import _merge_tracing_headers

        return _merge_tracing_headers(options.headers)

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
                (a new one is created when it is absent) and
                ``configurable.checkpoint_id`` forks from that checkpoint.
            version: ``"v3"`` for run streams; other versions are upstream's.
            transformers: Extra ``StreamTransformer`` factories, applied on
                the client to the remote run's events.
            **kwargs: ``metadata``, ``multitask_strategy`` and ``headers`` are
                honoured. ``stream_mode`` / ``subgraphs`` raise ``TypeError``
                as they do locally; any other keyword raises
                ``NotImplementedError`` naming it, since the v3 protocol would
                silently drop it.
        """
        if version != "v3":
            return super().stream_events(input, config, version=version, transformers=transformers, **kwargs)
        _reject_v3_invariant_kwargs(kwargs)
        options = RunOptions.from_kwargs(kwargs)
        mux = self._mux(transformers, is_async=False)
        protocol = self._protocol(input, config, options)
        sync_client = self._validate_sync_client()
        source = SyncRunSource(sync_client.http.client, protocol, self._headers(options))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The v3 streaming protocol on Pregel is experimental.")
            return RemoteGraphRunStream(source, mux, protocol)

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
        _reject_v3_invariant_kwargs(kwargs)
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
        protocol = self._protocol(input, config, options)
        client = self._validate_client()
        source = AsyncRunSource(client.http.client, protocol, self._headers(options))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The v3 streaming protocol on Pregel is experimental.")
            return AsyncRemoteGraphRunStream(source, mux, protocol)
