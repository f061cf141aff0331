"""What the protocol core asks its I/O shell to do next.

The core never touches a socket. It yields one of these actions; the sync or
async shell carries it out and hands the outcome back. Every network wait the
shells perform is bounded by the timeouts in ``Timeouts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Bounds on every wait a run stream performs, in seconds.

    Attributes:
        request: One REST request or protocol command.
        read: Silence tolerated on the event stream. The server sends a
            heartbeat every 5 s, so this only trips on a dead connection.
        settle: How long an interrupted run may take to deliver the events that
            trail its ``interrupted`` lifecycle.
    """

    request: float = 30.0
    read: float = 30.0
    settle: float = 10.0


@dataclass(frozen=True, slots=True)
class Request:
    """One REST call; the shell answers with ``Response``."""

    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: Any


@dataclass(frozen=True, slots=True)
class OpenStream:
    """Open the thread's SSE event stream; the shell answers with ``Response``
    (``body`` is the parsed error body when ``status`` is not 200)."""

    path: str
    json: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Receive:
    """Read the next chunk of the open stream; the shell answers with ``bytes``
    (``b""`` at end of stream)."""


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Emit:
    """Hand one stream part to the run stream's mux."""

    part: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Done:
    """The run is over; the shell closes the stream and stops iterating."""


@dataclass(frozen=True, slots=True)
class Fail:
    """The run failed; the shell closes the stream and raises ``error``."""

    error: BaseException


Action = Request | OpenStream | Receive | Sleep | Emit | Done | Fail
