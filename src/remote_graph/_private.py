"""Every touch of langgraph's, langgraph-sdk's, langchain-core's and the HTTP stack's internals.

A remote run must be indistinguishable from a local one, so it is built from
langgraph's own machinery: the stream mux and its channels, the run streams'
pump, the messages transformer, the config keys a parent task reads, the
parent's scratchpad and messages handlers, the transformer-factory checks.
None of that is public API, and any of it may move between releases. This
module is the only one that imports those private names or reads and writes
private attributes of those packages' objects: each attribute through a small
function whose docstring names the internal, the release it was read from,
and the public API it stands in for.

The HTTP stack (httpx, httpcore, h11, and anyio's asyncio sockets) is touched
to read an event stream's body in blocks rather than chunk by chunk
(``gather_chunked_reads``), and, on the async lane, to take what the socket
already holds without a turn of the event loop (``read_held_bytes_first``).

``tests/unit/test_private.py`` imports every name and calls every function on
real langgraph objects, so a move fails there, naming the internal, instead of
at a user's call; it also fails when any other module touches a private
attribute that is not remote_graph's own.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import h11
import httpcore
import httpx
from langchain_core.language_models._compat_bridge import _accumulate as accumulate_block
from langchain_core.language_models._compat_bridge import _accumulate_usage as accumulate_usage
from langchain_core.language_models._compat_bridge import _build_message_finish as build_message_finish
from langchain_core.language_models._compat_bridge import _build_message_start as build_message_start
from langchain_core.language_models._compat_bridge import _finalize_and_build_finish as finish_block
from langchain_core.language_models._compat_bridge import _iter_protocol_blocks as protocol_blocks
from langchain_core.language_models._compat_bridge import _start_skeleton as start_skeleton
from langchain_core.language_models._compat_bridge import _to_content_delta as content_delta
from langchain_core.messages import AIMessageChunk
from langchain_core.runnables.graph import Edge as DrawableEdge
from langchain_core.runnables.graph import Graph as DrawableGraph
from langchain_core.runnables.utils import _RootEventFilter as RootEventFilter
from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler as AstreamEventsHandler
from langchain_core.utils._gateway import GATEWAY_METADATA_RESPONSE_KEY
from langchain_core.utils._merge import merge_dicts
from langgraph._internal._config import ensure_config
from langgraph._internal._constants import (
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_STREAM_MESSAGES_V2,
    CONFIG_KEY_TASK_ID,
    NS_SEP,
)
from langgraph._internal._scratchpad import PregelScratchpad
from langgraph.pregel._messages import StreamMessagesHandler, StreamMessagesHandlerV2
from langgraph.pregel._tools import StreamToolCallHandler
from langgraph.pregel.main import _normalize_stream_transformer_factories as normalize_stream_transformer_factories
from langgraph.pregel.main import _output as shape_output
from langgraph.pregel.main import _reject_v3_invariant_kwargs as reject_v3_invariant_kwargs
from langgraph.pregel.remote import _merge_tracing_headers as merge_tracing_headers
from langgraph.stream import StreamTransformer
from langgraph.stream._convert import convert_to_protocol_event
from langgraph.stream._mux import StreamMux
from langgraph.stream._types import ProtocolEvent
from langgraph.stream.run_stream import AsyncGraphRunStream
from langgraph_sdk._shared.utilities import _orjson_default as sdk_orjson_default

from remote_graph._core.dechunk import ChunkFramingError, Dechunker

if TYPE_CHECKING:
    from langchain_core.language_models.chat_model_stream import AsyncChatModelStream, ChatModelStream
    from langgraph.stream import StreamChannel
    from langgraph.stream.run_stream import GraphRunStream
    from langgraph.stream.transformers import MessagesTransformer

__all__ = [
    "CONFIG_KEY_CHECKPOINT_NS",
    "CONFIG_KEY_RESUME_MAP",
    "CONFIG_KEY_RESUMING",
    "CONFIG_KEY_RUNTIME",
    "CONFIG_KEY_SCRATCHPAD",
    "CONFIG_KEY_STREAM",
    "CONFIG_KEY_STREAM_MESSAGES_V2",
    "CONFIG_KEY_TASK_ID",
    "NS_SEP",
    "PregelScratchpad",
    "ReadyPartPump",
    "ProtocolEvent",
    "RootEventFilter",
    "StreamMessagesHandler",
    "StreamMessagesHandlerV2",
    "StreamToolCallHandler",
    "StreamMux",
    "AstreamEventsHandler",
    "MuxAwareTransformer",
    "ChunkEvents",
    "GATEWAY_METADATA_RESPONSE_KEY",
    "accumulate_block",
    "accumulate_usage",
    "build_message_finish",
    "build_message_start",
    "content_delta",
    "finish_block",
    "merge_dicts",
    "protocol_blocks",
    "start_skeleton",
    "apump_of",
    "attach_projection",
    "claim_channel",
    "convert_to_protocol_event",
    "drawable_graph",
    "ensure_config",
    "events_handler",
    "gather_chunked_reads",
    "latest_values",
    "mark_drained",
    "merge_tracing_headers",
    "message_stream_of_run",
    "messages_handler_emits",
    "messages_handler_seen",
    "mux_error",
    "mux_transformers",
    "normalize_stream_transformer_factories",
    "null_resume",
    "pump_of",
    "read_held_bytes_first",
    "reject_v3_invariant_kwargs",
    "relayed_elsewhere",
    "required_modes",
    "release_channel",
    "sdk_orjson_default",
    "send_event",
    "set_message_node",
    "shape_output",
    "subgraph_count",
    "take_earliest",
]

# --- the stream mux (langgraph.stream._mux, langgraph 1.2.24) -----------------------------------


def attach_projection(mux: StreamMux, key: str, channel: StreamChannel[Any], owner: StreamTransformer) -> None:
    """Add a projection to a mux whose transformers have already registered.

    The mux wires a channel up only while it registers its transformers; a
    wire channel the server names mid-run needs the same wiring afterwards:
    bound to the mux's flavour, pumped by the run, closed and failed with it,
    and listed in ``mux.extensions`` under its owner. Writes what
    ``StreamMux._register`` / ``_bind_and_wire`` and ``bind_pump`` write:
    ``StreamChannel._bind``, ``_bind_mux``, ``_request_more``,
    ``_arequest_more``; ``StreamMux._pump_fn``, ``_apump_fn``, ``_channels``,
    ``_projection_owners``, ``_transformer_by_key``.
    """
    channel._bind(is_async=mux.is_async)
    channel._bind_mux(mux)
    channel._request_more = mux._pump_fn
    channel._arequest_more = mux._apump_fn
    mux._channels.append(channel)
    mux.extensions[key] = channel
    mux._projection_owners[key] = type(owner).__name__
    mux._transformer_by_key[key] = owner


def mux_transformers(mux: StreamMux) -> list[StreamTransformer]:
    """The transformers ``mux`` has registered, in registration order.

    Reads ``StreamMux._transformers``. The mux finds a transformer publicly
    only by a projection key it contributed (``transformer_by_key``), and
    ``WireChannelsTransformer`` contributes none until a name is asked for.
    """
    return mux._transformers


def required_modes(mux: StreamMux) -> frozenset[str]:
    """The stream modes ``mux``'s transformers require, as a local v3 run asks its graph for them.

    Stands in for ``langgraph.pregel.main._collect_stream_modes`` (langgraph
    1.2.24), over ``mux_transformers``: each transformer's public
    ``required_stream_modes``.
    """
    return frozenset(mode for t in mux_transformers(mux) for mode in getattr(t, "required_stream_modes", ()))


def mux_error(mux: StreamMux) -> BaseException | None:
    """The exception the run failed ``mux`` with, or ``None``; never waits.

    Reads ``StreamMux._events._error``, the main log's failure, where
    langgraph's own ``output`` finds it. ``RunSnapshot.error`` reads it without
    driving the run, as ``output`` does before it raises.
    """
    return mux._events._error


# --- run streams (langgraph.stream.run_stream, langgraph 1.2.24) ---------------------------------


def pump_of(run: GraphRunStream) -> Callable[[], bool]:
    """The run stream's pump: pulls one event through its mux; ``False`` once the run is over.

    Returns ``GraphRunStream._pump_next``, bound. Publicly the pump runs only
    through a projection's cursor or to the end of the run (``output``, which
    raises a run's failure); ``wait()`` drives the run without consuming a
    projection and returns its status instead. Take it once, outside the loop.
    """
    return run._pump_next


def apump_of(run: AsyncGraphRunStream) -> Callable[[], Awaitable[bool]]:
    """Async ``pump_of``: ``AsyncGraphRunStream._apump_next``, which ``wait()`` and ``interleave`` drive."""
    return run._apump_next


class ReadyPartPump(AsyncGraphRunStream):
    """An async run stream whose pump pulls a remote part without a task when it can.

    Overrides ``AsyncGraphRunStream._apump_next``, the async pump the mux and
    every cursor call. Upstream's step starts a task to pull each part, so
    that ``abort()`` can cancel a pull mid-flight (a local pull runs nodes),
    and waits for it: a task and two more turns of the event loop per pull.
    A remote run's source mostly needs no such thing. The next part is often
    ready without I/O (the rest of what one read brought: ``take_ready()``),
    or needs only the read pause and a read (``take_after_pause()``), which
    this step awaits itself. ``abort()`` then finds no task to cancel and
    closes the source at once, which drops what that wait brings back. Either
    way the part is pushed as upstream's step pushes it
    (``convert_to_protocol_event``, ``_observe_event``, ``_mux.apush``,
    ``_mux.afail`` on an error), single-flight like it (``_pumping``,
    ``_exhausted``, ``_pump_cond``): still one part per step, pulled only
    when a consumer asks. Any other step (a stream to open, a request, the
    run's end) is upstream's own.

    The source is ``_graph_aiter``, offering ``take_ready() -> part | None``
    and ``async take_after_pause() -> part | None``.
    """

    async def _apump_next(self) -> bool:
        source: Any = self._graph_aiter
        if self._pumping or self._exhausted or source is None:
            return await super()._apump_next()
        # No await from the check to the claim: no other task pumps meanwhile.
        self._pumping = True
        try:
            try:
                part = source.take_ready()
                if part is None:
                    part = await source.take_after_pause()
                if part is not None:
                    event = convert_to_protocol_event(part)
                    self._observe_event(event)
                    await self._mux.apush(event)
                    return True
            except Exception as e:
                self._exhausted = True
                await self._mux.afail(e)
                return False
        finally:
            self._pumping = False
            # Upstream's step takes the condition to wake the tasks waiting on
            # it for progress. With none waiting there is no one to wake, and
            # the flag needs no lock: no task holds it across an await but
            # the waiters, who would show in ``_waiters``.
            if _has_waiters(self._pump_cond):
                async with self._pump_cond:
                    self._pump_cond.notify_all()
        # The part needs a task, or abort() closed the source meanwhile (then
        # the run stream is exhausted, and upstream's step says so).
        return await super()._apump_next()


def _has_waiters(condition: asyncio.Condition) -> bool:
    """Whether a task waits on ``condition`` (``asyncio.Condition._waiters``, Python 3.10-3.13).

    There is no public way to ask; ``notify_all()`` needs the lock held.
    """
    return bool(condition._waiters)


def latest_values(run: GraphRunStream | AsyncGraphRunStream) -> Any:
    """The latest root ``values`` a run stream has seen, or ``None``; never waits.

    Reads ``GraphRunStream._latest`` (``AsyncGraphRunStream``'s too): publicly
    it is ``output``, which first drives the run to its end.
    """
    return run._latest


# --- stream channels, for an async interleave (langgraph.stream.stream_channel, 1.2.24) ----------
#
# langgraph's ``GraphRunStream.interleave`` merges its channels by reading
# their buffers of ``(push stamp, item)``; ``AsyncGraphRunStream`` has no
# interleave, and ``AsyncRemoteGraphRunStream.interleave`` merges them the
# same way. ``take_earliest`` runs for every item it yields, so it reads the
# buffers itself, in one call, rather than through a call per channel.


def claim_channel(channel: StreamChannel[Any]) -> bool:
    """Subscribe to ``channel`` without a cursor; ``False`` if it already has a subscriber.

    Sets ``StreamChannel._subscribed``, as ``__aiter__`` does, so that pushes
    buffer their items and no other consumer subscribes.
    """
    if channel._subscribed:
        return False
    channel._subscribed = True
    return True


def release_channel(channel: StreamChannel[Any]) -> None:
    """Undo ``claim_channel``: clears ``StreamChannel._subscribed``."""
    channel._subscribed = False


def take_earliest(channels: Mapping[str, StreamChannel[Any]], done: set[str]) -> tuple[str, Any] | None:
    """Take the first-pushed item buffered in ``channels`` (not ``done``), as ``(name, item)``.

    ``None`` when none is buffered: the run must be pumped. A channel found
    closed and empty on the way is added to ``done``, or raises the error it
    failed with. Reads ``StreamChannel._items`` (``(stamp, item)`` pairs,
    stamped in push order across one mux), ``_closed`` and ``_error``.
    """
    earliest: str | None = None
    earliest_stamp = 0
    for name, channel in channels.items():
        if name in done:
            continue
        items = channel._items
        if items:
            stamp = items[0][0]
            if earliest is None or stamp < earliest_stamp:
                earliest, earliest_stamp = name, stamp
        elif channel._closed:
            if channel._error is not None:
                raise channel._error
            done.add(name)
    if earliest is None:
        return None
    return earliest, channels[earliest]._items.popleft()[1]


def mark_drained(channels: Mapping[str, StreamChannel[Any]], done: set[str]) -> None:
    """The run is over: add each channel with nothing buffered to ``done``, or raise the error it failed with.

    Reads ``StreamChannel._items`` and ``_error``.
    """
    for name, channel in channels.items():
        if name not in done and not channel._items:
            if channel._error is not None:
                raise channel._error
            done.add(name)


# --- transformers (langgraph.stream, 1.2.24; langchain-core's ChatModelStream, 1.8) --------------


class MuxAwareTransformer(StreamTransformer):
    """A ``StreamTransformer`` told which mux registered it.

    ``StreamMux`` calls ``StreamTransformer._on_register(mux)`` once it has
    wired a transformer in (langgraph 1.2.24); langgraph's own transformers
    override it to keep their mux, and there is no public hook. Subclasses
    override ``registered`` instead.
    """

    def _on_register(self, mux: Any) -> None:
        self.registered(mux)

    def registered(self, mux: StreamMux) -> None:
        """Called once ``mux`` has registered this transformer, before any event; a no-op here."""


def message_stream_of_run(
    transformer: MessagesTransformer, run_id: str
) -> ChatModelStream | AsyncChatModelStream | None:
    """The message handle ``transformer`` routes run ``run_id``'s message events to, while it is open.

    Reads ``MessagesTransformer._by_run``: a handle is public only as an item
    of the ``messages`` projection, which is the caller's to consume.
    """
    return transformer._by_run.get(run_id)


def set_message_node(stream: ChatModelStream | AsyncChatModelStream, node: str) -> None:
    """Name the node that wrote ``stream``'s message.

    Writes ``ChatModelStream._node`` (langchain-core 1.8), which the read-only
    ``node`` property returns. A handle's node is set when it is made; the
    wire may name it only once the node's ``updates`` arrive.
    """
    stream._node = node


# --- a model's chunks as protocol message events (langchain_core.language_models._compat_bridge, 1.8.3)


class ChunkEvents:
    """One streamed message's chunks, turned into the protocol events a v3 run has for them.

    A local v3 run has its chat model stream through langchain-core's
    ``chunks_to_events``, which pulls the chunks from the model's iterator. A
    server without the v3 protocol sends the chunks one by one among other
    frames, so the same steps are taken per chunk here, with the bridge's own
    helpers (``_build_message_start``, ``_iter_protocol_blocks``,
    ``_start_skeleton``, ``_accumulate``, ``_to_content_delta``,
    ``_accumulate_usage``, ``_finalize_and_build_finish``,
    ``_build_message_finish``): the public functions take a whole iterator.
    """

    def __init__(self) -> None:
        self.started = False
        self._blocks: dict[Any, tuple[int, Any]] = {}
        self._usage: Any = None
        self._response_metadata: dict[str, Any] = {}
        self._additional_kwargs: dict[str, Any] = {}

    def feed(self, chunk: AIMessageChunk) -> list[dict[str, Any]]:
        """The events of one more chunk: the message's start first, then each block's start and delta."""
        events: list[Any] = []
        metadata = {k: v for k, v in chunk.response_metadata.items() if k != GATEWAY_METADATA_RESPONSE_KEY}
        self._response_metadata.update(metadata)
        if chunk.additional_kwargs:
            self._additional_kwargs = merge_dicts(self._additional_kwargs, chunk.additional_kwargs)
        if not self.started:
            self.started = True
            events.append(build_message_start(chunk, None))
        for key, block in protocol_blocks(chunk):
            if key not in self._blocks:
                index = len(self._blocks)
                self._blocks[key] = (index, dict(block))
                events.append({"event": "content-block-start", "index": index, "content": start_skeleton(block)})
            else:
                index, existing = self._blocks[key]
                self._blocks[key] = (index, accumulate_block(existing, block))
            delta = content_delta(block)
            if delta is not None:
                events.append({"event": "content-block-delta", "index": index, "delta": delta})
        if chunk.usage_metadata:
            self._usage = accumulate_usage(self._usage, chunk.usage_metadata)
        return events

    def finish(self) -> list[dict[str, Any]]:
        """The events that end the message: each block's finish, then the message's."""
        if not self.started:
            return []
        events: list[Any] = [finish_block(index, block) for index, block in self._blocks.values()]
        events.append(
            build_message_finish(
                usage=self._usage,
                response_metadata=self._response_metadata,
                additional_kwargs=self._additional_kwargs,
            )
        )
        return events


# --- a parent task's scratchpad and messages handlers (langgraph.pregel, 1.2.24) ----------------


def subgraph_count(scratchpad: PregelScratchpad) -> int:
    """Take the task's next graph-run number: 0 for the first graph run it starts, then 1, 2, ...

    Calls ``PregelScratchpad.subgraph_counter`` (a ``langgraph._internal``
    class), as a local child's run does to take its checkpoint namespace.
    """
    return scratchpad.subgraph_counter()


def null_resume(scratchpad: PregelScratchpad, consume: bool) -> Any:
    """The parent's plain resume value (``Command(resume=value)``) for the task, or ``None``.

    ``PregelScratchpad.get_null_resume``; ``consume=True`` uses it up, as a
    local ``interrupt()`` that takes it does.
    """
    return scratchpad.get_null_resume(consume)


def messages_handler_seen(handler: StreamMessagesHandler) -> set[int | str]:
    """The ids of the messages ``handler`` has emitted or seen streamed; ours to add to.

    ``StreamMessagesHandler.seen`` (``langgraph.pregel._messages``): the
    handler emits a node's returned message only if its id is not there.
    """
    return handler.seen


def messages_handler_emits(handler: StreamMessagesHandler, ns: tuple[str, ...]) -> bool:
    """Whether ``handler`` emits messages from namespace ``ns``.

    Its own rule (``on_chat_model_start``), on ``StreamMessagesHandler.subgraphs``
    and ``.parent_ns``: every namespace with ``subgraphs=True``, its graph's
    root, and the namespace it was created in.
    """
    return handler.subgraphs or not ns or ns == handler.parent_ns


# --- a parent's astream_events (langchain-core 1.8) ----------------------------------------------


def events_handler(callbacks: Any) -> AstreamEventsHandler | None:
    """The handler of a parent's ``astream_events`` among a call's callbacks, if any.

    ``_AstreamEventsCallbackHandler`` is langchain-core's private class;
    ``callbacks`` is a callback manager (its public ``handlers``) or a list.
    """
    handlers = getattr(callbacks, "handlers", callbacks)
    for handler in handlers if isinstance(handlers, (list, tuple)) else ():
        if isinstance(handler, AstreamEventsHandler):
            return handler
    return None


def relayed_elsewhere(handler: Any) -> bool:
    """Whether a callback handler stands for one of a local parent's streams,
    which a remote child's run reaches by other means than its callbacks.

    langgraph's ``StreamMessagesHandler`` (and its v2) and ``StreamToolCallHandler``
    (``langgraph.pregel._messages`` / ``._tools``, langgraph 1.2) turn callbacks
    into the parent's ``messages`` and ``tools`` chunks; langchain-core's
    ``_AstreamEventsCallbackHandler`` into its ``astream_events`` events.
    """
    return isinstance(handler, (StreamMessagesHandler, StreamToolCallHandler, AstreamEventsHandler))


def send_event(handler: AstreamEventsHandler, event: dict[str, Any], run_type: str, parent_run_id: Any) -> None:
    """Hand a remote run's event to a parent's ``astream_events``, below ``parent_run_id``.

    The event's own ``parent_ids`` (from the remote run's root down) follow the
    parent run's chain as the handler knows it; the handler filters it as its
    own events. Calls ``_AstreamEventsCallbackHandler._get_parent_ids`` and
    ``_send``: the handler takes events only from the runs its callbacks see.
    """
    event["parent_ids"] = [*handler._get_parent_ids(parent_run_id), str(parent_run_id), *event.get("parent_ids", [])]
    handler._send(event, run_type)  # type: ignore[arg-type]


# --- the event stream's body reads (httpx 0.28, httpcore 1.0, h11 0.16) ----------------------


class _GatheringReader:
    """h11's body reader for one chunked response, returning each read's chunks as one ``Data``.

    h11 hands over a chunked body one chunk per event, and the server writes
    one chunk per frame, so every frame would pass alone through h11's chunk
    parser and event machinery, httpcore's and httpx's generators and the
    driver's read loop. This takes everything h11 has buffered, joins the
    data of its chunks (``Dechunker``), and once it meets the last chunk puts
    that and the trailer back for the reader h11 made, which was never
    called: h11 ends the message, and the connection is reused, as always.
    """

    __slots__ = ("_inner", "_body", "_ended")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._body = Dechunker()
        self._ended = False

    def __call__(self, buffer: Any) -> Any:
        if self._ended:
            return self._inner(buffer)
        if not buffer:
            return None
        body = self._body
        try:
            data = body.feed(bytes(buffer.maybe_extract_at_most(len(buffer))))
        except ChunkFramingError as exc:
            raise h11.RemoteProtocolError(f"malformed chunked body: {exc}") from None
        if body.done:
            self._ended = True
            buffer += body.rest()
            if not data:
                return self._inner(buffer)
        return h11.Data(data=data) if data else None

    def read_eof(self) -> Any:
        return self._inner.read_eof()


def _connection_of(response: httpx.Response) -> Any:
    """The httpcore HTTP/1.1 connection under ``response``, or ``None`` (HTTP/2, a mock, ASGI or WSGI)."""
    stream: Any = response.stream
    for name in ("_stream", "_httpcore_stream", "_stream", "_connection"):
        stream = getattr(stream, name, None)
    if not isinstance(stream, (httpcore.HTTP11Connection, httpcore.AsyncHTTP11Connection)):
        return None
    return stream


def gather_chunked_reads(response: httpx.Response) -> bool:
    """Have each read of ``response``'s body hand over all the chunks it brought, as one block.

    Reaches the h11 connection under the response through httpx's and
    httpcore's stream wrappers (``response.stream._stream._httpcore_stream._stream
    ._connection._h11_state``) and wraps its body reader (``h11.Connection._reader``,
    a fresh ``ChunkedReader``) in ``_GatheringReader``, which reads h11's
    ``ReceiveBuffer`` as h11's readers do. There is no public way: h11 returns
    one event per chunk, and no httpx or httpcore option merges them. The
    connection is left as h11 would leave it, so it is reused once the body
    has ended.

    Returns:
        Whether the reader was wrapped. Anything else (HTTP/2, a mock, ASGI
        or WSGI transport, a body that is not chunked or is being read
        already) is left as it is.
    """
    stream = _connection_of(response)
    state = getattr(stream, "_h11_state", None)
    if not isinstance(state, h11.Connection) or state.their_state is not h11.SEND_BODY:
        return False
    reader = getattr(state, "_reader", None)
    if type(reader).__name__ != "ChunkedReader" or not _untouched(reader):
        return False
    state._reader = _GatheringReader(reader)
    return True


def _untouched(reader: Any) -> bool:
    """Whether h11's ``ChunkedReader`` has read nothing yet (``_bytes_in_chunk``,
    ``_bytes_to_discard``, ``_reading_trailer``): the body is taken from its start."""
    return (
        getattr(reader, "_bytes_in_chunk", None) == 0
        and getattr(reader, "_bytes_to_discard", None) == b""
        and getattr(reader, "_reading_trailer", None) is False
    )


class _HeldBytesFirst(httpcore.AsyncNetworkStream):
    """httpcore's anyio network stream, reading first what the kernel already holds.

    Each read of anyio's asyncio socket stream takes at least one turn of the
    event loop (a checkpoint, or resuming the transport and waiting for its
    callback) and an anyio cancel scope for the timeout. The event stream is
    read after a pause (``Timeouts.read_batch``) in which the frames gather
    in the socket, while anyio keeps the transport paused, so the bytes are
    there already: one non-blocking ``recv`` takes them, with no wait and so
    nothing to time out or cancel. Only when the socket is empty or at its
    end, or the transport holds data or is closing, does the read go to
    anyio's. Bytes come in order: anyio's queue is empty whenever its
    ``read_event`` is clear, and the transport reads only while anyio waits.
    """

    __slots__ = ("_inner", "_protocol", "_transport", "_sock")

    def __init__(self, inner: httpcore.AsyncNetworkStream, protocol: Any, transport: Any, sock: Any) -> None:
        self._inner = inner
        self._protocol = protocol
        self._transport = transport
        self._sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if not self._protocol.read_event.is_set() and not self._transport.is_closing():
            try:
                data: bytes = self._sock.recv(max_bytes)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                raise httpcore.ReadError(exc) from exc
            else:
                if data:
                    return data
                # The peer's end: anyio's read meets it too, and answers as always.
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        return await self._inner.start_tls(ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def read_held_bytes_first(response: httpx.Response) -> bool:
    """Have the async reads of ``response``'s connection take what its socket holds without waiting.

    Reaches the network stream of the httpcore connection under the response
    (``AsyncHTTP11Connection._network_stream``, httpcore's ``AnyIOStream``),
    its anyio socket stream (``._stream``, anyio 4's asyncio ``SocketStream``)
    and that stream's transport and protocol (``._transport``, ``._protocol``
    with ``read_event``), and the selector transport's socket
    (``_SelectorSocketTransport._sock``), and wraps the network stream in
    ``_HeldBytesFirst`` for the connection's life. There is no public way:
    httpcore and anyio offer no read that returns buffered bytes without a
    checkpoint.

    Returns:
        Whether the connection's reads take held bytes first (wrapped now
        or for an earlier response). Anything else (a sync connection,
        TLS, HTTP/2, another event loop's transport such as uvloop's or the
        proactor's, a mock, ASGI or WSGI) is left as it is.
    """
    connection = _connection_of(response)
    if not isinstance(connection, httpcore.AsyncHTTP11Connection):
        return False
    inner = getattr(connection, "_network_stream", None)
    if isinstance(inner, _HeldBytesFirst):  # a connection from the pool, wrapped for an earlier stream
        return True
    if not isinstance(inner, httpcore.AsyncNetworkStream) or type(inner).__name__ != "AnyIOStream":
        return False
    stream = getattr(inner, "_stream", None)
    if type(stream).__name__ != "SocketStream":  # a TLSStream wraps one: its bytes are not plain
        return False
    transport: Any = getattr(stream, "_transport", None)
    protocol: Any = getattr(stream, "_protocol", None)
    if type(transport).__name__ != "_SelectorSocketTransport" or transport.get_extra_info("sslcontext") is not None:
        return False
    sock = getattr(transport, "_sock", None)
    if sock is None or sock.gettimeout() != 0.0 or not hasattr(getattr(protocol, "read_event", None), "is_set"):
        return False
    connection._network_stream = _HeldBytesFirst(inner, protocol, transport, sock)
    return True


def drawable_graph(remote: Any, answer: Mapping[str, Any]) -> DrawableGraph:
    """The ``DrawableGraph`` upstream's ``RemoteGraph.get_graph`` makes of a server's
    drawing (``GET /assistants/{id}/graph``), with its own node builder
    (``RemoteGraph._get_drawable_nodes``)."""
    return DrawableGraph(
        nodes=remote._get_drawable_nodes(answer), edges=[DrawableEdge(**edge) for edge in answer["edges"]]
    )
