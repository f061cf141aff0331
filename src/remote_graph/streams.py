"""Run streams for remote runs: langgraph's own run streams over a remote source.

``RemoteGraphRunStream`` *is* a ``GraphRunStream`` and
``AsyncRemoteGraphRunStream`` *is* an ``AsyncGraphRunStream``: the projections,
``output``/``interrupted``/``interrupts``, ``abort()``, ``interleave`` and the
context managers are langgraph's, driven by a source that yields the remote
run's events. What is added goes beyond local: the run and thread ids, a
snapshot that never waits, ``wait()``, and an async ``interleave``.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.stream.run_stream import GraphRunStream
from langgraph.stream.stream_channel import StreamChannel
from langgraph.types import Interrupt

from remote_graph._aio import AsyncRunSource
from remote_graph._core.run import RunDriver
from remote_graph._core.state import RunStatus
from remote_graph._private import (
    ReadyPartPump,
    StreamMux,
    apump_of,
    claim_channel,
    latest_values,
    mark_drained,
    mux_error,
    mux_transformers,
    pump_of,
    release_channel,
    take_earliest,
)
from remote_graph._sync import SyncRunSource
from remote_graph.transformers import RunExtensions, WireChannelsTransformer

__all__ = ["RunSnapshot", "RunStatus", "RemoteGraphRunStream", "AsyncRemoteGraphRunStream"]

logger = logging.getLogger("remote_graph")


def _close_dropped(source: SyncRunSource) -> None:
    """A sync run stream was dropped: stop its run, as an abandoned local run does no more work."""
    if source.closed:
        return
    try:
        source.close()
    except Exception as exc:  # a finalizer must not raise
        logger.warning("could not stop a dropped remote run: %r", exc)


def _aclose_dropped(source: AsyncRunSource, loop: asyncio.AbstractEventLoop) -> None:
    """An async run stream was dropped: stop its run on its own loop, if that loop still runs."""
    if source.closed:
        return
    if loop.is_closed():
        logger.warning("a dropped remote run could not be cancelled: its event loop is closed")
        return

    try:
        loop.call_soon_threadsafe(source.close_soon)
    except RuntimeError:  # closed in the meantime
        logger.warning("a dropped remote run could not be cancelled: its event loop is closed")


@dataclass(frozen=True)
class RunSnapshot:
    """What is known about a remote run right now, without waiting for it.

    Attributes:
        status: ``pending`` before the first pull starts the run, ``running``,
            then ``completed``, ``failed``, ``interrupted`` (paused for input)
            or ``cancelled``; a ``RunStatus``, which compares equal to those
            strings. Once the run has ended it is the server's own verdict.
        run_id: The server's run id, once the run has started.
        thread_id: The thread the run belongs to.
        values: The latest root state snapshot seen, or ``None``.
        interrupts: The interrupts raised so far, at any depth.
        error: The exception the run failed with, once it has failed.
    """

    status: RunStatus
    run_id: str | None
    thread_id: str
    values: Any
    interrupts: list[Interrupt] = field(default_factory=list)
    error: BaseException | None = None


class _RemoteRunMixin:
    _driver: RunDriver
    # The run's mux; langgraph's run stream keeps its own reference, which is not ours to read.
    _run_mux: StreamMux
    # The thread as the caller named it; the run executes on the UUID it maps to.
    _thread_name: str
    extensions: Mapping[str, Any]

    def __init__(self, source: Any, mux: StreamMux, driver: RunDriver, *, thread_id: str | None = None) -> None:
        self._driver = driver
        self._thread_name = driver.thread_id if thread_id is None else thread_id
        # langgraph's run stream, next in the method resolution order.
        super().__init__(source, mux)  # type: ignore[call-arg]
        self._learn_wire_channels(mux)

    def _learn_wire_channels(self, mux: StreamMux) -> None:
        self._run_mux = mux
        # Channels the server's module sends are found by name, even before their first event.
        wire = next((t for t in mux_transformers(mux) if isinstance(t, WireChannelsTransformer)), None)
        self.extensions = RunExtensions(mux, wire)

    @property
    def run_id(self) -> str | None:
        """The server's id for this run (``None`` until the first pull starts it)."""
        return self._driver.run_id

    @property
    def thread_id(self) -> str:
        """The id of the thread this run executes on, as the caller named it."""
        return self._thread_name

    @property
    def cursor(self) -> str | None:
        """Where this run's stream stands: a string to store and pass to
        ``RemoteGraph.join(run_id, thread_id=..., after=cursor)``, which then
        yields exactly the events after the last one this stream took in
        (``None`` before the first). Read it after each event to store it."""
        return self._driver.cursor

    def snapshot(self) -> RunSnapshot:
        """Return the run's current status, interrupts and latest values. Never waits."""
        state = self._driver.state
        return RunSnapshot(
            status=state.status,
            run_id=self._driver.run_id,
            thread_id=self._thread_name,
            # The mixin is only ever part of a GraphRunStream or an AsyncGraphRunStream.
            values=latest_values(self),  # type: ignore[arg-type]
            interrupts=list(self._driver.interrupts),
            error=state.error if state.error is not None else mux_error(self._run_mux),
        )


class RemoteGraphRunStream(_RemoteRunMixin, GraphRunStream):
    """Sync run stream of a remote run; behaves like local ``GraphRunStream``.

    Returned by ``RemoteGraph.stream_events(..., version="v3")``. Iteration,
    projections and ``output`` pull events from the server on the caller's
    thread. Leaving the ``with`` block early, or ``abort()``, cancels the run
    on the server; so does dropping the stream unfinished, once Python
    collects it.
    """

    def __init__(
        self, source: SyncRunSource, mux: StreamMux, driver: RunDriver, *, thread_id: str | None = None
    ) -> None:
        super().__init__(source, mux, driver, thread_id=thread_id)
        weakref.finalize(self, _close_dropped, source)

    def __enter__(self) -> RemoteGraphRunStream:
        # langgraph types its __enter__ as the base class; `with ... as run` keeps ours.
        return self

    def wait(self) -> RunStatus:
        """Drive the run until it pauses for input or ends, and return its status.

        Unlike ``output``, a failed run does not raise here: the status is
        ``"failed"`` and ``snapshot().error`` holds the exception.
        """
        pump = pump_of(self)
        while pump():
            pass
        return self._driver.status


class AsyncRemoteGraphRunStream(_RemoteRunMixin, ReadyPartPump):
    """Async run stream of a remote run; behaves like local ``AsyncGraphRunStream``.

    Awaited from ``RemoteGraph.astream_events(..., version="v3")``. Adds an
    ``interleave`` that local async streams lack.
    """

    def __init__(
        self, source: AsyncRunSource, mux: StreamMux, driver: RunDriver, *, thread_id: str | None = None
    ) -> None:
        super().__init__(source, mux, driver, thread_id=thread_id)
        finalizer = weakref.finalize(self, _aclose_dropped, source, asyncio.get_running_loop())
        # At interpreter exit the loop is gone; nothing can be awaited then.
        finalizer.atexit = False

    async def __aenter__(self) -> AsyncRemoteGraphRunStream:
        # langgraph types its __aenter__ as the base class; `async with ... as run` keeps ours.
        return self

    async def wait(self) -> RunStatus:
        """Drive the run until it pauses for input or ends, and return its status.

        A failed run does not raise here; see ``RemoteGraphRunStream.wait``.
        """
        pump = apump_of(self)
        while await pump():
            pass
        return self._driver.status

    async def interleave(self, *names: str) -> AsyncIterator[tuple[str, Any]]:
        """Iterate several projections in arrival order, yielding ``(name, item)``.

        Items are ordered by the mux's push stamp, which follows the wire's
        ``seq``. Each named channel is locked while the iterator runs and
        released when it finishes, is closed, or raises.

        Raises:
            KeyError: If a name is not a registered projection.
            TypeError: If a projection is not a ``StreamChannel``.
            RuntimeError: If a channel already has a subscriber.
        """
        channels: dict[str, StreamChannel[Any]] = {}
        pump = apump_of(self)
        try:
            for name in names:
                channel = self.extensions[name]
                if not isinstance(channel, StreamChannel):
                    raise TypeError(
                        f"interleave() requires StreamChannel projections, got {type(channel).__name__} for {name!r}"
                    )
                if name in channels or not claim_channel(channel):
                    raise RuntimeError(f"StreamChannel {name!r} already has a subscriber; use .atee(n) for fan-out.")
                channels[name] = channel
            done: set[str] = set()
            while len(done) < len(channels):
                taken = take_earliest(channels, done)
                if taken is not None:
                    yield taken
                elif not await pump():
                    mark_drained(channels, done)
        finally:
            for channel in channels.values():
                release_channel(channel)
