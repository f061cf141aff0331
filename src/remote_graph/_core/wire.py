"""What a run's frames are: the interface between the run driver and a stream format.

The driver (``run.py``) owns the connection: it opens the run's stream, resumes
it after a cut, and ends the run on the server's verdict. What the frames
between ``metadata`` and the end *mean* depends on how the run was started:

* a v3 run (``v3_wire.V3Wire``) streams the server mux's protocol events, each
  with a ``seq``, which langgraph's ``StreamMux`` turns into projections;
* a classic run (``classic_wire.ClassicWire``) streams ``stream_mode`` chunks,
  which a local ``stream()`` yields as they are, and carries no ``seq``.

A ``Wire`` tells the driver which frames are new (a replay after a reconnect
repeats some), turns each new one into stream parts, and says what is owed at
the end. It does no I/O of its own; a wire that must ask the server something
before an event converts (``prepare``) hands the driver a short conversation.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol

from langgraph.types import Interrupt

from remote_graph._core.actions import IOAction
from remote_graph._core.join import RunCursor
from remote_graph._core.sse import Frame

Part = dict[str, Any]
"""One stream part: ``{"type": mode, "ns": namespace, "data": payload, ...}``."""

Namespace = tuple[str, ...]

Prepare = Generator[IOAction, Any, None]
"""A conversation the driver runs before an event converts (its requests' answers sent back)."""


class Wire(Protocol):
    """One run's stream format; see the module docstring."""

    run_label: str
    """Names the run in error messages (``"run <id>"`` once the server named it)."""

    @property
    def interrupts(self) -> list[tuple[Namespace, Interrupt]]:
        """Every interrupt the run raised so far, where it was raised, in arrival order."""
        ...

    def joined(self, after: RunCursor | None) -> None:
        """The run was started elsewhere: its stream replays it from its first
        frame, or from the event ``after`` (whose own frame and those before it
        are repeats)."""
        ...

    def mark(self) -> tuple[str | None, int]:
        """What tells the last delivered event from the frames of its
        millisecond: ``(None, seq)`` for a format whose events carry a protocol
        ``seq``, else ``(frame id, frames delivered with that id)``."""
        ...

    def reconnected(self) -> list[Part]:
        """A connection (the first, or a new one after a lost one) opened from the
        cursor; returns parts the last connection left held that turn out new."""
        ...

    def attempt(self, number: int, frame_id: str | None) -> None:
        """The ``metadata`` frame ``frame_id`` announced the run's attempt ``number``;
        the events of a retried attempt that repeat delivered ones are dropped
        (``attempts.py``)."""
        ...

    def accept(self, frame: Frame) -> tuple[Any, bool] | None:
        """The event ``frame`` carries and whether it is news, or ``None`` for a
        frame that was delivered before or carries no event.

        Raises:
            RemoteProtocolError: The frame is not what the format allows.
        """
        ...

    def rewind(self) -> str | None:
        """After ``accept`` returned ``None``: the frame id to reopen the stream
        after, when the frames show the server dropped a stored event on its live
        way (``v3_wire``: a gap in the ``seq``; ``numbered_ids``: a number skipped
        in the frames' ids), else ``None``. Asking clears it."""
        ...

    def prepare(self, event: Any) -> Prepare | None:
        """A conversation to run before ``event`` converts, or ``None`` (the usual case)."""
        ...

    def convert(self, event: Any) -> list[Part]:
        """The stream parts of one accepted event (possibly none, or parts held before it)."""
        ...

    def finish(self, *, interrupted: bool, completed: bool = False) -> list[Part]:
        """Parts owed when the run ends (held back ones; subgraphs left open, when paused
        or completed)."""
        ...

    def wind_up(self) -> Prepare | None:
        """A conversation to run once every frame has arrived, before the run ends, or ``None``."""
        ...
