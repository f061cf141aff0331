"""The classic methods' runs: ``stream`` / ``astream`` (and ``invoke``, which streams).

A classic call starts a classic run on the server, as the same call starts a
local one: the requested stream modes, no v3 marker, so the deployed graph's
models return the content a local run's return. The run goes through the one
data path every run takes (``_core.run.RunDriver``: resumed after a cut, ended
on the server's verdict, cancelled when abandoned, every wait bounded); its
frames are read by ``_core.classic_wire.ClassicWire`` and shaped for the caller
by ``_core.shape.Shaper``, which is langgraph's own ``stream()`` shaping.

``ClassicCall.start`` checks the call's arguments before anything is sent:
an argument no server path honours raises ``NotImplementedError`` naming it,
as on the v3 path; an argument local checks raises what local raises.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from remote_graph._callbacks import CallbackTap
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.commands import RunOptions
from remote_graph._core.events import EventFilters, EventReader, revived_event
from remote_graph._core.join import JoinFrom
from remote_graph._core.revive import messages_in
from remote_graph._core.run import RunDriver
from remote_graph._core.shape import CLASSIC_MODES, OutputKeys, Shaper, server_modes
from remote_graph._core.thread_ids import thread_name
from remote_graph._deployment import Deployment
from remote_graph._private import ensure_config

__all__ = ["ClassicCall"]

# Keyword arguments of a local stream() a remote run cannot honour, with the reason.
_REFUSED: dict[str, str] = {
    "control": "RunControl drains an in-process loop; a remote run can only be cancelled (close the stream)",
    "params": "extra query parameters are not sent with a run",
}


def _modes(stream_mode: Any) -> list[str]:
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    for mode in modes:
        if mode not in CLASSIC_MODES:
            raise ValueError(
                f"stream_mode {mode!r} is not one of {', '.join(sorted(CLASSIC_MODES))} "
                "(v3 run streams: stream_events(..., version='v3'))"
            )
    return modes


def _output_keys(keys: Any, input: Any) -> OutputKeys | None:
    """``output_keys=`` checked as a local graph checks it, applied on the client."""
    if keys is None:
        return None
    if not isinstance(keys, str) and not (
        isinstance(keys, Sequence) and keys and all(isinstance(key, str) for key in keys)
    ):
        raise TypeError(f"output_keys must be a channel name or a list of them, got {keys!r}")
    if isinstance(input, Command):
        written = input.update.keys() if isinstance(input.update, Mapping) else ()
    else:
        written = input.keys() if isinstance(input, Mapping) else ()
    return OutputKeys(keys, list(written))


@dataclass
class ClassicCall:
    """One classic call: the run's driver and how its parts become the caller's output."""

    deployment: Deployment
    driver: RunDriver
    shaper: Shaper
    headers: dict[str, str] | None
    tap: CallbackTap | None = None
    """The caller's callback handlers, when a local run would call any (``_callbacks``)."""

    @classmethod
    def start(
        cls,
        deployment: Deployment,
        input: Any,
        config: RunnableConfig | None,
        *,
        stream_mode: str | Sequence[str] | None,
        print_mode: str | Sequence[str],
        subgraphs: bool,
        debug: bool | None,
        version: Literal["v1", "v2"],
        kwargs: Mapping[str, Any],
        method: str,
        join: JoinFrom | None = None,
    ) -> ClassicCall:
        """Check the call's arguments and build its run (nothing is sent yet);
        with ``join``, a run that follows that run, started elsewhere."""
        if version not in ("v1", "v2"):
            raise ValueError(f"version must be 'v1' or 'v2', got {version!r}")
        rest = dict(kwargs)
        for name, reason in _REFUSED.items():
            if rest.get(name) is not None:
                raise NotImplementedError(f"RemoteGraph.{method} cannot honour {name}=: {reason}.")
            rest.pop(name, None)
        checkpoint_during = rest.pop("checkpoint_during", None)
        if checkpoint_during is not None:
            # As locally: deprecated, and the same as the durability it names.
            warnings.warn(
                "`checkpoint_during` is deprecated and will be removed. Please use `durability` instead.",
                DeprecationWarning,
                stacklevel=4,
            )
            if rest.get("durability") is not None:
                raise ValueError(
                    "Cannot use both `checkpoint_during` and `durability` parameters. Please use `durability` instead."
                )
            rest["durability"] = "async" if checkpoint_during else "exit"
        modes = _modes(stream_mode if stream_mode is not None else "updates")
        if debug:
            # As locally: debug prints every step's updates and values.
            print_mode = ["updates", "values"]
        prints = _modes(print_mode) if print_mode else []
        output_keys = _output_keys(rest.pop("output_keys", None), input)
        options = RunOptions.from_kwargs(rest, method)
        wanted = [*modes, *(m for m in prints if m not in modes)]
        # One mode is shaped as one mode, a list of modes (even of one) as a list, as locally.
        one = stream_mode is None or isinstance(stream_mode, str)
        shaper = Shaper(
            modes[0] if one else modes, print_mode, subgraphs=subgraphs, version=version, output_keys=output_keys
        )
        # A run with callback handlers also streams the events its inner runs' callbacks make.
        tap = CallbackTap.of(ensure_config(deployment.config, config), input, deployment.name) if join is None else None
        if tap is not None and tap.relays:
            wanted.append("events")
        streamed = server_modes(wanted)
        if join is not None:
            join = replace(join, modes=streamed, subgraphs=subgraphs)
        driver = cls._driver(deployment, input, config, options, streamed, subgraphs, join)
        wire = driver.wire
        assert isinstance(wire, ClassicWire)
        # Messages in the caller's input get their ids in place, as a local run gives them.
        wire.reader.idless.extend(m for m in messages_in(input) if m.id is None)
        return cls(deployment, driver, shaper, deployment.run_headers(options), tap)

    @staticmethod
    def _driver(
        deployment: Deployment,
        input: Any,
        config: RunnableConfig | None,
        options: RunOptions,
        modes: tuple[str, ...],
        subgraphs: bool,
        join: JoinFrom | None = None,
    ) -> RunDriver:
        root = deployment.root_run(input, config, options, stream_mode=modes, stream_subgraphs=subgraphs)
        merged = root.config
        own = {*((merged.get("metadata") or {}).keys()), *((merged.get("configurable") or {}).keys())}
        own.discard("thread_id")
        view = CallView(
            server_thread=root.thread_id,
            thread_name=thread_name(merged["configurable"]["thread_id"]) if root.thread_given else None,
            own_keys=frozenset(own),
        )
        thread_path = f"/threads/{quote(root.thread_id, safe='')}"
        wire_format = ClassicWire(ChunkReader(view, deployment.schemas), thread_path)
        return deployment.driver(root.plan, root.thread_id, wire_format, join=join)

    @classmethod
    def start_events(
        cls,
        deployment: Deployment,
        input: Any,
        config: RunnableConfig | None,
        *,
        version: Literal["v1", "v2"],
        filters: EventFilters,
        kwargs: Mapping[str, Any],
    ) -> EventsCall:
        """Check an ``astream_events(version="v1"/"v2")`` call and build its run.

        The run streams the server's ``events`` mode and the root's own chunks
        (``stream_mode``, as the root's ``astream`` would stream them:
        ``updates`` by default), from which the root's ``on_chain_stream``
        events are rebuilt. The keyword arguments are ``astream``'s, as locally.
        """
        rest = dict(kwargs)
        stream_mode = rest.pop("stream_mode", None)
        if rest.pop("subgraphs", False):
            raise NotImplementedError(
                "RemoteGraph.astream_events cannot honour subgraphs=: the root's on_chain_stream events carry "
                "only the root's chunks on the server"
            )
        rest.pop("version", None)
        root_modes = _modes(stream_mode if stream_mode is not None else "updates")
        one = stream_mode is None or isinstance(stream_mode, str)
        root_chunks = Shaper(root_modes[0] if one else root_modes)
        options = RunOptions.from_kwargs(rest, "astream_events()")
        driver = cls._driver(deployment, input, config, options, server_modes(["events", *root_modes]), False)
        wire = driver.wire
        assert isinstance(wire, ClassicWire)
        # Messages in the caller's input get their ids in place, as a local run gives them.
        wire.reader.idless.extend(m for m in messages_in(input) if m.id is None)
        merged = ensure_config(deployment.config, config)
        tap = CallbackTap.of(merged, input, deployment.name)
        reader = EventReader(
            wire.reader.view,
            version=version,
            root_name=str(merged.get("run_name") or deployment.name),
            root_chunks=root_chunks,
            input=input,
            filters=filters,
            schemas=deployment.schemas,
        )
        return EventsCall(deployment, driver, reader, deployment.run_headers(options), tap)

    def iterate(self) -> Generator[Any, None, None]:
        """The call's output, pulled on the caller's thread; closing it cancels the run."""
        source = self.deployment.sync_source(self.driver, self.headers)
        tap = self.tap
        try:
            if tap is not None:
                tap.deliver(tap.start())
            for part in source:
                if tap is not None and part["type"] == "events":
                    tap.deliver(tap.event(_revived(self.driver, part)))
                    continue
                yield from self.shaper.shape(part)
        except BaseException as exc:
            if tap is not None:
                tap.deliver(tap.end(exc))
            raise
        finally:
            source.close()
        if tap is not None:
            tap.deliver(tap.end(interrupts=tuple(self.driver.interrupts)))

    async def aiterate(self) -> AsyncGenerator[Any, None]:
        """Async variant of ``iterate``."""
        source = self.deployment.async_source(self.driver, self.headers)
        tap = self.tap
        try:
            if tap is not None:
                await tap.adeliver(tap.start())
            async for part in source:
                if tap is not None and part["type"] == "events":
                    await tap.adeliver(tap.event(_revived(self.driver, part)))
                    continue
                for out in self.shaper.shape(part):
                    yield out
        except BaseException as exc:
            if tap is not None:
                await tap.adeliver(tap.end(exc))
            raise
        finally:
            await source.aclose()
        if tap is not None:
            await tap.adeliver(tap.end(interrupts=tuple(self.driver.interrupts)))


@dataclass
class EventsCall:
    """One ``astream_events(version="v1"/"v2")`` call: the run's driver and its events."""

    deployment: Deployment
    driver: RunDriver
    reader: EventReader
    headers: dict[str, str] | None
    tap: CallbackTap | None = None
    """The caller's own callback handlers, which a local ``astream_events`` calls too."""

    async def aiterate(self) -> AsyncGenerator[dict[str, Any], None]:
        """The call's events; closing it (or cancelling it) cancels the run."""
        source = self.deployment.async_source(self.driver, self.headers)
        tap = self.tap
        try:
            if tap is not None:
                await tap.adeliver(tap.start())
            try:
                async for part in source:
                    if tap is not None and part["type"] == "events":
                        await tap.adeliver(tap.event(_revived(self.driver, part)))
                    for event in self.reader.feed(part):
                        yield event
            except Exception:
                for event in self.reader.failed():
                    yield event
                raise
        except BaseException as exc:
            if tap is not None:
                await tap.adeliver(tap.end(exc))
            raise
        finally:
            await source.aclose()
        if tap is not None:
            await tap.adeliver(tap.end(interrupts=tuple(self.driver.interrupts)))


def _revived(driver: RunDriver, part: Mapping[str, Any]) -> dict[str, Any] | None:
    """A remote ``events`` frame as a local event (payloads revived, metadata in the caller's terms)."""
    wire = driver.wire
    assert isinstance(wire, ClassicWire)
    return revived_event(part["data"], wire.reader.view.metadata, wire.reader.plain_keys)
