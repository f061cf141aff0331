"""Bounds on what a server can make the client hold, so a misbehaving one cannot take it down."""

from __future__ import annotations

from dataclasses import dataclass

from remote_graph._core.sse import MAX_FRAME
from remote_graph.errors import DEFAULT_MAX_ERROR_TYPES

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on the memory a server's answers can claim. Passing one fails
    the run with a ``RemoteProtocolError`` that names the limit.

    Attributes:
        max_frame_chars: The largest event-stream frame a run accepts, in
            characters of its data lines (the line still being read counts
            too). A frame grows until its blank line arrives, so a server
            that never sends one would grow it without end. A frame holds one
            event, and a ``values`` event the whole state, so the default
            (64 Mi characters) leaves room for large states.
        max_error_types: How many distinct exception type names failed runs
            may report before a new one fails the run instead. Each name
            becomes a class (``Boom`` for a node that raised ``Boom``), kept
            for the life of the process so the same name gives the same
            class; the registry is shared by every ``RemoteGraph``.
    """

    max_frame_chars: int = MAX_FRAME
    max_error_types: int = DEFAULT_MAX_ERROR_TYPES

    def __post_init__(self) -> None:
        for name in ("max_frame_chars", "max_error_types"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")
