"""Every private name remote_graph takes from langgraph and langgraph-sdk.

A remote run must be indistinguishable from a local one, so it is built from
langgraph's own machinery: the stream mux, the config keys a parent task
reads, the messages handler, the transformer-factory checks. Those names are
not public API and may move between releases; keeping them here means one
file to fix when they do, and ``tests/unit/test_private.py`` imports each one
so a move fails loudly in the suite instead of at a user's call.
"""

from __future__ import annotations

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
from langgraph.pregel.main import _reject_v3_invariant_kwargs as reject_v3_invariant_kwargs
from langgraph.pregel.remote import _merge_tracing_headers as merge_tracing_headers
from langgraph.stream._mux import StreamMux
from langgraph.stream._types import ProtocolEvent
from langgraph_sdk._shared.utilities import _orjson_default as sdk_orjson_default

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
    "StreamMessagesHandler",
    "StreamMessagesHandlerV2",
    "StreamMux",
    "ensure_config",
    "merge_tracing_headers",
    "normalize_stream_transformer_factories",
    "reject_v3_invariant_kwargs",
    "sdk_orjson_default",
]
