"""remote_graph: a graph deployed on a LangGraph server, streamed like a local one."""

from remote_graph._core.actions import Timeouts
from remote_graph.errors import (
    RemoteCommandError,
    RemoteConnectionError,
    RemoteGraphError,
    RemoteProtocolError,
    RemoteRunError,
    RemoteTimeoutError,
)
from remote_graph.graph import RemoteGraph
from remote_graph.streams import AsyncRemoteGraphRunStream, RemoteGraphRunStream, RunSnapshot, RunStatus
from remote_graph.transformers import RemoteMessagesTransformer

__all__ = [
    "AsyncRemoteGraphRunStream",
    "RemoteCommandError",
    "RemoteConnectionError",
    "RemoteGraph",
    "RemoteGraphError",
    "RemoteGraphRunStream",
    "RemoteMessagesTransformer",
    "RemoteProtocolError",
    "RemoteRunError",
    "RemoteTimeoutError",
    "RunSnapshot",
    "RunStatus",
    "Timeouts",
]
