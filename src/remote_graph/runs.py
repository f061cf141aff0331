"""Runs that outlive their caller: start one now, join it from any process later.

A deployed graph's run does not live and die with its caller. ``RemoteGraph.start``
sends a run and returns a ``RunHandle`` once the server accepted it; the run goes
on with no client connected. ``RemoteGraph.join`` follows a run (this process's
or another's, finished or not) through the one data path every run takes
(``_core.run.RunDriver``, entered at ``Phase.LOOKING_UP``): a v3 join is the run
stream a ``stream_events(version="v3")`` call gives, a classic join the chunks
``stream(..., stream_mode=...)`` yields, each with a ``cursor`` to store and join
again with, losing nothing and repeating nothing. Handles read, wait for and
cancel runs (``RunHandle`` sync, ``AsyncRunHandle`` async).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig

from remote_graph._aio import AsyncRequests
from remote_graph._classic import ClassicCall
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.commands import RunOptions
from remote_graph._core.join import JoinFrom, Kind, RunCursor
from remote_graph._core.run import RunDriver
from remote_graph._core.run_records import Requests, RunRecord, cancel_run, list_runs, read_run, wait_run
from remote_graph._core.state import RunStatus
from remote_graph._core.thread_ids import server_thread_id, thread_name
from remote_graph._deployment import Deployment, TransformerFactory
from remote_graph._private import reject_v3_invariant_kwargs
from remote_graph._sync import SyncRequests
from remote_graph._v3 import _quiet
from remote_graph.errors import RunMismatchError
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream, _FollowedRun

__all__ = ["AsyncRunChunks", "AsyncRunHandle", "RunChunks", "RunHandle", "RunRecord"]


@dataclass(frozen=True)
class _Run:
    """One run of one graph, as a handle names it."""

    deployment: Deployment
    run_id: str
    # As the caller named it, and the server thread it maps to.
    thread_id: str
    server_thread: str
    kind: Kind | None
    # A classic run's stream modes as the caller gave them to ``start`` (``None``: not known here).
    stream_mode: str | Sequence[str] | None
    subgraphs: bool


class _HandleBase:
    """What sync and async handles share: the run, and what was last read of it."""

    def __init__(self, run: _Run, status: RunStatus, server_status: str) -> None:
        self._run = run
        self.status = status
        """The run's status when it was last read (``running`` right after ``start``)."""
        self.server_status = server_status
        """The server's own status word when it was last read (``pending`` right after ``start``)."""

    @property
    def run_id(self) -> str:
        """The server's id for the run."""
        return self._run.run_id

    @property
    def thread_id(self) -> str:
        """The run's thread, as the caller named it."""
        return self._run.thread_id

    @property
    def kind(self) -> Kind | None:
        """``"v3"`` for a run started for a v3 run stream, ``"classic"`` for
        ``stream_mode`` chunks; ``None`` for a run found on a server whose run
        records keep neither (aegra): ``join`` then reads a v3 run stream unless
        given a ``stream_mode``."""
        return self._run.kind

    @property
    def done(self) -> bool:
        """Whether the run had ended when it was last read."""
        return self.status is not RunStatus.RUNNING

    def _learn(self, record: RunRecord) -> None:
        self.status = record.status
        self.server_status = record.server_status

    def _about(self, conversation: Callable[..., Requests], **options: Any) -> Requests:
        """A conversation about this run (``read_run``, ``wait_run``, ``cancel_run``), for either shell."""
        run = self._run
        return conversation(run.server_thread, run.run_id, shown_thread=run.thread_id, **options)

    def _join_kwargs(self, after: str | None, stream_mode: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.kind == "v3" or (self.kind is None and stream_mode is None):
            return {"thread_id": self.thread_id, "after": after, "version": "v3", **kwargs}
        mode = stream_mode if stream_mode is not None else self._run.stream_mode
        return {"thread_id": self.thread_id, "after": after, "version": "v1", "stream_mode": mode, **kwargs}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(run_id={self.run_id!r}, thread_id={self.thread_id!r}, status={self.status!r})"


class RunHandle(_HandleBase):
    """A run on the server, started by ``RemoteGraph.start`` or found by ``get_run`` / ``list_runs``.

    The run goes on whatever happens to this object or its process. Attributes
    are as last read; ``refresh()``, ``wait()`` and ``cancel()`` read them again.
    """

    def _requests(self) -> SyncRequests:
        return self._run.deployment.sync_requests()

    def refresh(self) -> RunHandle:
        """Read the run's record again; returns this handle.

        Raises:
            RunNotFoundError: The run is gone (deleted), or these credentials may not see it.
        """
        self._learn(self._requests().run(self._about(read_run)))
        return self

    def wait(self, timeout: float) -> RunHandle:
        """Wait until the run ends (or pauses for input), at most ``timeout`` seconds; returns this handle.

        Raises:
            RemoteTimeoutError: The run was still going after ``timeout`` seconds.
        """
        self._learn(self._requests().run(self._about(wait_run, timeout=_timeout(timeout))))
        return self

    def cancel(self) -> RunHandle:
        """Cancel the run if it has not ended (it stops where it is); returns this handle.

        The cancel is not awaited: ``wait()`` waits for the run to stop.
        """
        self._learn(self._requests().run(self._about(cancel_run)))
        return self

    def join(self, *, after: str | None = None, stream_mode: Any = None, **kwargs: Any) -> Any:
        """Follow the run: ``RemoteGraph.join`` for this run (a classic run
        joins with the stream modes it was started with, unless given)."""
        return join_call(
            self._run.deployment, self.run_id, **self._join_kwargs(after, stream_mode, kwargs)
        ).run_stream()


class AsyncRunHandle(_HandleBase):
    """Async variant of ``RunHandle``: the same methods, awaited."""

    def _requests(self) -> AsyncRequests:
        return self._run.deployment.async_requests()

    async def refresh(self) -> AsyncRunHandle:
        """Read the run's record again; see ``RunHandle.refresh``."""
        self._learn(await self._requests().run(self._about(read_run)))
        return self

    async def wait(self, timeout: float) -> AsyncRunHandle:
        """Wait until the run ends, at most ``timeout`` seconds; see ``RunHandle.wait``."""
        self._learn(await self._requests().run(self._about(wait_run, timeout=_timeout(timeout))))
        return self

    async def cancel(self) -> AsyncRunHandle:
        """Cancel the run if it has not ended; see ``RunHandle.cancel``."""
        self._learn(await self._requests().run(self._about(cancel_run)))
        return self

    async def join(self, *, after: str | None = None, stream_mode: Any = None, **kwargs: Any) -> Any:
        """Follow the run: ``RemoteGraph.ajoin`` for this run."""
        call = join_call(
            self._run.deployment, self.run_id, **self._join_kwargs(after, stream_mode, kwargs), method="ajoin()"
        )
        return call.async_run_stream()


def _timeout(timeout: object) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise ValueError(f"timeout must be a number of seconds, 0 or more; got {timeout!r}")
    return float(timeout)


# --- classic joins -------------------------------------------------------------------------


class _Chunks(_FollowedRun):
    """What a classic join's chunks say of their run (its id, thread and cursor), sync or async."""

    def __init__(self, call: ClassicCall, thread_id: str) -> None:
        self._driver = call.driver
        self._thread_name = thread_id


class RunChunks(_Chunks, Iterator[Any]):
    """The chunks a classic join yields, as ``stream()`` yields them for that run.

    ``cursor`` says where the join stands after each chunk. As with
    ``stream()``, closing it before the run ended cancels the run.
    """

    def __init__(self, call: ClassicCall, thread_id: str) -> None:
        super().__init__(call, thread_id)
        self._chunks: Generator[Any, None, None] = call.iterate()

    def __next__(self) -> Any:
        return next(self._chunks)

    def close(self) -> None:
        """Stop following the run; a run that has not ended is cancelled, as ``stream()`` cancels it."""
        self._chunks.close()


class AsyncRunChunks(_Chunks, AsyncIterator[Any]):
    """Async variant of ``RunChunks``."""

    def __init__(self, call: ClassicCall, thread_id: str) -> None:
        super().__init__(call, thread_id)
        self._chunks: AsyncGenerator[Any, None] = call.aiterate()

    async def __anext__(self) -> Any:
        return await self._chunks.__anext__()

    async def aclose(self) -> None:
        """Async variant of ``RunChunks.close``."""
        await self._chunks.aclose()


# --- what RemoteGraph's methods delegate to -----------------------------------------------
#
# Each function and its async variant share what is checked and planned (``starting``,
# ``JoinCall``, ``_reading``, ``_listing``) and differ only by the shell that moves the
# bytes and the sync or async objects handed back.


@dataclass
class _Start:
    """A detached start, built: its driver, headers, and the run's names."""

    driver: RunDriver
    headers: dict[str, str] | None
    thread_name: str
    kind: Kind
    stream_mode: str | Sequence[str] | None
    subgraphs: bool

    def run(self, deployment: Deployment) -> _Run:
        assert self.driver.run_id is not None
        return _Run(
            deployment,
            self.driver.run_id,
            self.thread_name,
            self.driver.thread_id,
            self.kind,
            self.stream_mode,
            self.subgraphs,
        )


def starting(
    deployment: Deployment,
    input: Any,
    config: RunnableConfig | None,
    stream_mode: str | Sequence[str] | None,
    subgraphs: bool,
    kwargs: dict[str, Any],
    method: str,
) -> _Start:
    """Check a ``start`` call and build its detached driver (nothing is sent yet)."""
    if stream_mode is None:
        if subgraphs:
            raise TypeError("subgraphs= is a classic run's: a v3 run (no stream_mode=) streams subgraphs always")
        reject_v3_invariant_kwargs(kwargs)
        options = RunOptions.from_kwargs(kwargs, method)
        root = deployment.root_run(input, config, options)
        driver = deployment.driver(root.plan, root.thread_id, schemas=False)
        driver.detach()
        name = thread_name(root.config["configurable"]["thread_id"]) if root.thread_given else root.thread_id
        return _Start(driver, deployment.run_headers(options), name, "v3", None, False)
    call = ClassicCall.start(
        deployment,
        input,
        config,
        stream_mode=stream_mode,
        print_mode=(),
        subgraphs=subgraphs,
        debug=None,
        version="v1",
        kwargs=kwargs,
        method=method,
    )
    call.driver.detach()
    wire = call.driver.wire
    assert isinstance(wire, ClassicWire)
    name = wire.reader.view.thread_name or call.driver.thread_id
    return _Start(call.driver, call.headers, name, "classic", stream_mode, subgraphs)


def start(deployment: Deployment, started: _Start) -> RunHandle:
    """Send a detached start built by ``starting``: the run is created, not followed."""
    for _ in deployment.sync_source(started.driver, started.headers):  # a detached start yields no part
        pass
    return RunHandle(started.run(deployment), RunStatus.RUNNING, "pending")


async def astart(deployment: Deployment, started: _Start) -> AsyncRunHandle:
    """Async variant of ``start``."""
    async for _ in deployment.async_source(started.driver, started.headers):  # a detached start yields no part
        pass
    return AsyncRunHandle(started.run(deployment), RunStatus.RUNNING, "pending")


def _join_from(run_id: object, after: object, kind: Kind) -> JoinFrom:
    """What a join asks for, checked before anything is sent."""
    run_id = _checked_run(run_id)
    cursor = RunCursor.decode(after) if after is not None else None
    if cursor is not None and cursor.run_id != run_id:
        raise RunMismatchError(f"the cursor given was taken from run {cursor.run_id}, not from run {run_id}")
    if cursor is not None and cursor.kind != kind:
        shown = "a v3 run stream" if cursor.kind == "v3" else "classic chunks"
        raise RunMismatchError(f"the cursor given was taken from {shown}: join run {run_id} the same way")
    return JoinFrom(run_id=run_id, kind=kind, after=cursor)


def _thread_config(thread_id: object) -> RunnableConfig:
    return {"configurable": {"thread_id": _checked_thread(thread_id)}}


def _v3_driver(deployment: Deployment, run_id: object, thread_id: object, after: object) -> tuple[RunDriver, str]:
    join = _join_from(run_id, after, "v3")
    root = deployment.root_run(None, _thread_config(thread_id), RunOptions())
    driver = deployment.driver(root.plan, root.thread_id, schemas=False, join=join)
    return driver, thread_name(root.config["configurable"]["thread_id"])


def _classic_call(
    deployment: Deployment,
    run_id: object,
    thread_id: object,
    after: object,
    stream_mode: str | Sequence[str] | None,
    subgraphs: bool,
    version: Literal["v1", "v2"],
    method: str,
) -> ClassicCall:
    if stream_mode is None:
        raise TypeError(f"{method} of classic chunks needs the stream_mode= the run was started with (or version='v3')")
    join = _join_from(run_id, after, "classic")
    return ClassicCall.start(
        deployment,
        None,
        _thread_config(thread_id),
        stream_mode=stream_mode,
        print_mode=(),
        subgraphs=subgraphs,
        debug=None,
        version=version,
        kwargs={},
        method=method,
        join=join,
    )


class JoinCall:
    """One join, planned (the run looked up from its record when it is followed);
    ``run_stream`` / ``async_run_stream`` build what the caller iterates.

    Args:
        deployment: The deployed graph.
        run_id: The run to follow.
        thread_id: Its thread, as the caller names it.
        after: A cursor: follow from the event after it (``None``: from the first).
        version: ``"v3"`` for a run stream, ``"v1"`` / ``"v2"`` for classic chunks.
        stream_mode: A classic run's stream modes.
        subgraphs: Whether a classic run streams its subgraphs' chunks.
        transformers: A v3 join's own transformer factories.
        method: The calling method's name, for error messages.
    """

    def __init__(
        self,
        deployment: Deployment,
        run_id: str,
        thread_id: Any,
        after: str | None,
        version: Literal["v1", "v2", "v3"],
        stream_mode: str | Sequence[str] | None,
        subgraphs: bool,
        transformers: Sequence[TransformerFactory] | None,
        method: str,
    ) -> None:
        self._deployment = deployment
        self._thread_id = thread_id
        self._transformers = transformers
        self._planned: tuple[RunDriver, str] | ClassicCall
        # Checked and planned now: a v3 join's driver and thread name, or a classic join's call.
        if version != "v3":
            _classic_version(version, transformers)
            self._planned = _classic_call(deployment, run_id, thread_id, after, stream_mode, subgraphs, version, method)
        elif stream_mode is not None or subgraphs:
            raise TypeError("a v3 join takes no stream_mode= or subgraphs=, as stream_events(version='v3') takes none")
        else:
            self._planned = _v3_driver(deployment, run_id, thread_id, after)

    def run_stream(self) -> RemoteGraphRunStream | RunChunks:
        """The sync run stream (or chunks), on the sync client."""
        return cast("RemoteGraphRunStream | RunChunks", self._build(is_async=False))

    def async_run_stream(self) -> AsyncRemoteGraphRunStream | AsyncRunChunks:
        """The async run stream (or chunks), on the running loop's client."""
        return cast("AsyncRemoteGraphRunStream | AsyncRunChunks", self._build(is_async=True))

    def _build(self, *, is_async: bool) -> object:
        if isinstance(self._planned, ClassicCall):
            chunks = AsyncRunChunks if is_async else RunChunks
            return chunks(self._planned, thread_name(self._thread_id))
        driver, name = self._planned
        deployment, headers = self._deployment, self._deployment.run_headers(RunOptions())
        stream: Callable[..., object]
        if is_async:
            stream = partial(AsyncRemoteGraphRunStream, deployment.async_source(driver, headers))
        else:
            stream = partial(RemoteGraphRunStream, deployment.sync_source(driver, headers))
        with _quiet():
            return stream(deployment.run_mux(driver, self._transformers, is_async=is_async), driver, thread_id=name)


def join_call(
    deployment: Deployment,
    run_id: str,
    *,
    thread_id: Any,
    after: str | None = None,
    version: Literal["v1", "v2", "v3"] = "v3",
    stream_mode: str | Sequence[str] | None = None,
    subgraphs: bool = False,
    transformers: Sequence[TransformerFactory] | None = None,
    method: str = "join()",
) -> JoinCall:
    """``RemoteGraph.join``'s call, with its defaults (what a handle's ``join`` leaves out)."""
    return JoinCall(deployment, run_id, thread_id, after, version, stream_mode, subgraphs, transformers, method)


def _classic_version(version: object, transformers: object) -> None:
    if version not in ("v1", "v2"):
        raise ValueError(f"version must be 'v1', 'v2' or 'v3', got {version!r}")
    if transformers is not None:
        raise TypeError("transformers= is a v3 join's option (version='v3')")


def _server_thread(deployment: Deployment, thread_id: Any) -> str:
    return server_thread_id(_checked_thread(thread_id), deployment.map_thread_id, "thread_id")


def _handle_run(deployment: Deployment, thread_id: Any, record: RunRecord) -> _Run:
    return _Run(
        deployment,
        record.run_id,
        thread_name(thread_id),
        _server_thread(deployment, thread_id),
        record.kind,
        None,
        record.subgraphs,
    )


def _reading(deployment: Deployment, run_id: object, thread_id: Any) -> Requests:
    """The conversation reading one run's record, its arguments checked."""
    return read_run(_server_thread(deployment, thread_id), _checked_run(run_id), shown_thread=thread_name(thread_id))


def get_run(deployment: Deployment, run_id: str, thread_id: Any) -> RunHandle:
    record = deployment.sync_requests().run(_reading(deployment, run_id, thread_id))
    return RunHandle(_handle_run(deployment, thread_id, record), record.status, record.server_status)


async def aget_run(deployment: Deployment, run_id: str, thread_id: Any) -> AsyncRunHandle:
    record = await deployment.async_requests().run(_reading(deployment, run_id, thread_id))
    return AsyncRunHandle(_handle_run(deployment, thread_id, record), record.status, record.server_status)


def _listing(deployment: Deployment, thread_id: Any, limit: int, offset: int, status: str | None) -> Any:
    """The conversation listing a thread's runs, its arguments checked."""
    for name, value, least in (("limit", limit, 1), ("offset", offset, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    statuses = ("pending", "running", "success", "error", "timeout", "interrupted")
    if status is not None and status not in statuses:
        raise ValueError(f"status must be one of {', '.join(statuses)}; got {status!r}")
    return list_runs(_server_thread(deployment, thread_id), limit=limit, offset=offset, status=status)


def list_thread_runs(
    deployment: Deployment, thread_id: Any, limit: int, offset: int, status: str | None
) -> list[RunHandle]:
    records = deployment.sync_requests().run(_listing(deployment, thread_id, limit, offset, status))
    return [RunHandle(_handle_run(deployment, thread_id, r), r.status, r.server_status) for r in records]


async def alist_thread_runs(
    deployment: Deployment, thread_id: Any, limit: int, offset: int, status: str | None
) -> list[AsyncRunHandle]:
    records = await deployment.async_requests().run(_listing(deployment, thread_id, limit, offset, status))
    return [AsyncRunHandle(_handle_run(deployment, thread_id, r), r.status, r.server_status) for r in records]


def _checked_thread(thread_id: Any) -> Any:
    if thread_id is None:
        raise TypeError("thread_id= is required: a run is found on its thread")
    return thread_id


def _checked_run(run_id: object) -> str:
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
    return run_id
