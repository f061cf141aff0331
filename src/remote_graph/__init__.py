"""remote_graph: a graph deployed on a LangGraph server, streamed like a local one."""

from remote_graph._core.actions import Timeouts
from remote_graph._core.limits import Limits
from remote_graph._core.thread_ids import THREAD_ID_NAMESPACE, default_map_thread_id
from remote_graph.errors import (
    RemoteCommandError,
    RemoteConnectionError,
    RemoteGraphError,
    RemoteProtocolError,
    RemoteRunError,
    RemoteTimeoutError,
    RunCursorError,
    RunEventsGoneError,
    RunMismatchError,
    RunNotFoundError,
)
from remote_graph.graph import RemoteGraph
from remote_graph.runs import AsyncRunChunks, AsyncRunHandle, RunChunks, RunHandle
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream, RunSnapshot, RunStatus
from remote_graph.transformers import RemoteMessagesTransformer

__all__ = [
    "AsyncRemoteGraphRunStream",
    "AsyncRunChunks",
    "AsyncRunHandle",
    "Limits",
    "RemoteCommandError",
    "RemoteConnectionError",
    "RemoteGraph",
    "RemoteGraphError",
    "RemoteGraphRunStream",
    "RemoteMessagesTransformer",
    "RemoteProtocolError",
    "RemoteRunError",
    "RemoteTimeoutError",
    "RunChunks",
    "RunCursorError",
    "RunEventsGoneError",
    "RunHandle",
    "RunMismatchError",
    "RunNotFoundError",
    "RunSnapshot",
    "RunStatus",
    "THREAD_ID_NAMESPACE",
    "Timeouts",
    "default_map_thread_id",
]
