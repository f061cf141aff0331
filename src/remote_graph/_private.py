"""Every private name remote_graph takes from langgraph and langgraph-sdk.

A remote run must be indistinguishable from a local one, so it is built from
langgraph's own machinery: the stream mux, the config keys a parent task
reads, the messages handler, the transformer-factory checks. Those names are
not public API and may move between releases; keeping them here means one
file to fix when they do, and ``tests/unit/test_private.py`` imports each one
so a move fails loudly in the suite instead of at a user's call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables.utils import _RootEventFilter as RootEventFilter
from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler as AstreamEventsHandler
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
from langgraph.pregel.main import _normalize_stream_transformer_factories as normalize_stream_transformer_factories
from langgraph.pregel.main import _output as shape_output
from langgraph.pregel.main import _reject_v3_invariant_kwargs as reject_v3_invariant_kwargs
from langgraph.pregel.remote import _merge_tracing_headers as merge_tracing_headers
from langgraph.stream._mux import StreamMux
from langgraph.stream._types import ProtocolEvent
from langgraph_sdk._shared.utilities import _orjson_default as sdk_orjson_default

if TYPE_CHECKING:
    from langgraph.stream import StreamChannel, StreamTransformer

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
    "ProtocolEvent",
    "RootEventFilter",
    "StreamMessagesHandler",
    "StreamMessagesHandlerV2",
    "StreamMux",
    "AstreamEventsHandler",
    "attach_projection",
    "events_handler",
    "send_event",
    "ensure_config",
    "merge_tracing_headers",
    "normalize_stream_transformer_factories",
    "reject_v3_invariant_kwargs",
    "sdk_orjson_default",
    "shape_output",
]


def attach_projection(mux: StreamMux, key: str, channel: StreamChannel[Any], owner: StreamTransformer) -> None:
    """Add a projection to a mux whose transformers have already registered.

    The mux wires a channel up only while it registers its transformers; a
    wire channel the server names mid-run needs the same wiring afterwards:
    bound to the mux's flavour, pumped by the run, closed and failed with it,
    and listed in ``mux.extensions`` under its owner.
    """
    channel._bind(is_async=mux.is_async)
    channel._bind_mux(mux)
    channel._request_more = mux._pump_fn
    channel._arequest_more = mux._apump_fn
    mux._channels.append(channel)
    mux.extensions[key] = channel
    mux._projection_owners[key] = type(owner).__name__
    mux._transformer_by_key[key] = owner


def events_handler(callbacks: Any) -> AstreamEventsHandler | None:
    """The handler of a parent's ``astream_events`` among a call's callbacks, if any."""
    handlers = getattr(callbacks, "handlers", callbacks)
    for handler in handlers if isinstance(handlers, (list, tuple)) else ():
        if isinstance(handler, AstreamEventsHandler):
            return handler
    return None


def send_event(handler: AstreamEventsHandler, event: dict[str, Any], run_type: str, parent_run_id: Any) -> None:
    """Hand a remote run's event to a parent's ``astream_events``, below ``parent_run_id``.

    The event's own ``parent_ids`` (from the remote run's root down) follow the
    parent run's chain as the handler knows it; the handler filters it as its
    own events.
    """
    event["parent_ids"] = [*handler._get_parent_ids(parent_run_id), str(parent_run_id), *event.get("parent_ids", [])]
    handler._send(event, run_type)  # type: ignore[arg-type]
