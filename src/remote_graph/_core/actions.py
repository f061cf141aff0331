"""What the protocol core asks its I/O shell to do, and what the shell answers.

The core never touches a socket. It hands the shell one of the actions
below; the sync or async shell carries it out and hands back the outcome: a
``Response`` for a request, ``bytes`` for a read, or a ``Broken`` when the
transport failed, so that the core, not the shell, decides whether to retry.
Every network wait the shells perform is bounded by the timeouts in
``Timeouts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A longer pause would hold every event that long: a batching knob, not a way to throttle.
_MAX_READ_BATCH = 1.0


def _positive(value: object) -> bool:
    """Whether ``value`` is a positive number (of seconds); a bool is none."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Bounds on every wait a remote run performs, in seconds.

    Attributes:
        request: One REST request, including connecting.
        read: Silence tolerated on a run's event stream. The server sends a
            heartbeat every 5 s, so this only trips on a dead connection.
        reconnect: How long a run's lost event stream is retried, with
            backoff, without delivering a new event before the run fails
            with a ``RemoteConnectionError``.
        read_batch: How long a run's event stream waits, after a read that
            emptied the connection, before it reads again. The server writes
            one frame at a time, and a client that reads each one as it lands
            pays a wake-up and a parse for every event; waiting lets the frames
            of that span arrive and be read as one block. No event reaches
            the caller later than this after it arrived, a reader that is
            behind never waits, and ``0`` reads every frame as it lands. It
            applies where the transport hands over what one read brought as
            one block (httpx over HTTP/1.1, as the SDK's clients use it).
        stall: How long a run may send no event while the server keeps its
            stream open (its heartbeats do not count) before the run fails
            with a ``RemoteTimeoutError`` naming the stall, and is cancelled.
            ``None`` (the default) sets no bound: a node may be silent for as
            long as it runs (a long model call). A server whose worker died
            mid-run keeps the stream open and starts the run again once the
            worker's heartbeat is stale (``LG_BG_JOB_HEARTBEAT``), and the
            client follows the new attempt; set this, above the longest
            silence of your graph (a run waiting in the server's queue is
            silent too), where such a run must fail sooner.
    """

    request: float = 30.0
    read: float = 30.0
    reconnect: float = 15.0
    read_batch: float = 0.001
    stall: float | None = None

    def __post_init__(self) -> None:
        for name in ("request", "read", "reconnect"):
            value = getattr(self, name)
            if not _positive(value):
                raise ValueError(f"Timeouts.{name} must be a positive number of seconds, got {value!r}")
        if self.stall is not None and not _positive(self.stall):
            raise ValueError(f"Timeouts.stall must be None or a positive number of seconds, got {self.stall!r}")
        batch = self.read_batch
        if isinstance(batch, bool) or not isinstance(batch, (int, float)) or not 0 <= batch < _MAX_READ_BATCH:
            raise ValueError(
                f"Timeouts.read_batch must be a number of seconds from 0 to under {_MAX_READ_BATCH:g} "
                f"(it delays every event by up to that much), got {batch!r}"
            )


@dataclass(frozen=True, slots=True)
class Request:
    """One REST call; the shell answers with ``Response`` or ``Broken``.

    ``timeout``, when set, bounds the call below ``Timeouts.request``: for a
    call whose answer is only a hint, the stream must not wait long on it.
    """

    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    timeout: float | None = None


def cancel_request(run_path: str) -> Request:
    """The request that cancels the run at ``run_path`` where it is
    (``action=interrupt``), without waiting for it to stop. ``wait=0``, not
    ``false``: aegra reads the flag as an integer (and refuses ``false`` with
    422); langgraph-api reads both as "do not wait"."""
    return Request("POST", f"{run_path}/cancel", params={"wait": "0", "action": "interrupt"})


@dataclass(frozen=True, slots=True)
class Response:
    """The server's answer.

    Attributes:
        status: Its HTTP status.
        body: Its parsed JSON, its text when it is not JSON, ``None`` when empty.
            The body of an answer that is not a success comes with the
            credentials the request carried redacted.
        content_type: Its ``Content-Type``.
        location: Its ``Location`` header (where a redirect points), if any.
        batched: For an opened event stream: each read hands over everything
            the connection had as one block, however many chunks it holds, so
            a pause before a read gathers frames into it.
    """

    status: int
    body: Any
    content_type: str = "application/json"
    location: str | None = None
    batched: bool = False


@dataclass(frozen=True, slots=True)
class OpenStream:
    """Open an SSE stream: a run's, with ``GET path`` resuming after
    ``last_event_id``, or a new run's, with ``POST path`` sending ``json`` (the
    run is created with its stream, so nothing it publishes precedes it).
    The shell answers with ``Response`` (``body`` is the parsed error body, or
    the start of a non-SSE body) or ``Broken``."""

    path: str
    last_event_id: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    method: str = "GET"
    json: Any = None


@dataclass(frozen=True, slots=True)
class Receive:
    """Read the next chunk of the open stream; the shell answers with
    ``bytes`` (``b""`` at a clean end of stream) or ``Broken``."""


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait before the next attempt; the shell answers ``None``."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Broken:
    """The transport failed while carrying out an action.

    Attributes:
        error: The transport's exception (the ``__cause__`` of the error it
            becomes). Left out of the repr: ``detail`` says what it says.
        timed_out: A wait ran past its timeout.
        unreachable: No connection could be made at all.
        local: The request could not be sent as built (it is not valid
            HTTP): the fault is on this side, and trying again cannot help.
        detail: What went wrong, for messages and logs: ``Type: message``,
            with any credential redacted by the shell that saw it.
    """

    error: BaseException = field(repr=False)
    timed_out: bool = False
    unreachable: bool = False
    local: bool = False
    detail: str = ""

    def __post_init__(self) -> None:
        if not self.detail:
            text = str(self.error)
            object.__setattr__(
                self, "detail", f"{type(self.error).__name__}: {text}" if text else type(self.error).__name__
            )


IOAction = Request | OpenStream | Receive | Sleep
