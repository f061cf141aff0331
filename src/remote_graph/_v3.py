"""The v3 run streams of a root call: ``stream_events`` / ``astream_events(version="v3")``.

A v3 call plans its run (on the server thread), then builds the driver, the
mux of langgraph's projections and the I/O shell, and hands them to
langgraph's own run stream classes (``streams.py``). Nothing is sent until
the first pull.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig

from remote_graph._callbacks import CallbackTap
from remote_graph._core.commands import RunOptions
from remote_graph._core.thread_ids import thread_name
from remote_graph._deployment import Deployment, TransformerFactory
from remote_graph._private import ensure_config
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream

__all__ = ["V3Call"]


class V3Call:
    """One v3 call's run, planned; ``run_stream`` / ``async_run_stream`` build its run stream.

    Args:
        deployment: The deployed graph.
        input: The graph input, or a ``Command``.
        config: The call's config.
        transformers: The call's own transformer factories, run on the client.
        options: The call's keyword arguments, checked (``RunOptions.from_kwargs``).
    """

    def __init__(
        self,
        deployment: Deployment,
        input: Any,
        config: RunnableConfig | None,
        transformers: Sequence[TransformerFactory] | None,
        options: RunOptions,
    ) -> None:
        _warn_of_callbacks(ensure_config(deployment.config, config), input, deployment.name)
        self._deployment = deployment
        self._transformers = transformers
        self._headers = deployment.run_headers(options)
        root = deployment.root_run(input, config, options)
        self._driver = deployment.driver(root.plan, root.thread_id, schemas=False)
        # The caller's name for the thread; a fresh thread is known by its UUID.
        self._name = thread_name(root.config["configurable"]["thread_id"]) if root.thread_given else root.thread_id

    def run_stream(self) -> RemoteGraphRunStream:
        """The sync run stream, on the sync client."""
        source = self._deployment.sync_source(self._driver, self._headers)
        mux = self._deployment.run_mux(self._driver, self._transformers, is_async=False)
        with _quiet():
            return RemoteGraphRunStream(source, mux, self._driver, thread_id=self._name)

    def async_run_stream(self) -> AsyncRemoteGraphRunStream:
        """The async run stream, on the running loop's client."""
        source = self._deployment.async_source(self._driver, self._headers)
        mux = self._deployment.run_mux(self._driver, self._transformers, is_async=True)
        with _quiet():
            return AsyncRemoteGraphRunStream(source, mux, self._driver, thread_id=self._name)


def _warn_of_callbacks(merged: RunnableConfig, input: Any, name: str) -> None:
    """A v3 run cannot drive the callback handlers of its (merged) config: say so rather than drop them."""
    if merged.get("callbacks") and CallbackTap.of(merged, input, name) is not None:
        warnings.warn(
            "RemoteGraph: a v3 run stream calls none of the config's callback handlers (the server "
            "streams a run either as v3 events or as the events its callbacks make); invoke, stream "
            "and astream_events(version='v2') call them as a local run does",
            UserWarning,
            stacklevel=4,
        )


@contextmanager
def _quiet() -> Iterator[None]:
    """langgraph's run streams warn that v3 is experimental; the caller asked for v3."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The v3 streaming protocol on Pregel is experimental.")
        yield
