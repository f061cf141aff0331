"""A classic call's output, shaped from its run's parts exactly as a local ``stream()`` shapes it.

A local ``stream()`` puts ``(namespace, mode, payload)`` chunks on a queue and
shapes each one for the caller with langgraph's own ``_output``: the payload
alone for one mode, ``(mode, payload)`` for a list of modes, the namespace in
front with ``subgraphs=True``, ``StreamPart`` dicts with ``version="v2"``
(``values`` parts with their ``interrupts``), and ``print_mode`` printed. A
remote run's parts go through that same function, so the shapes cannot drift
from local.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

from remote_graph._core.wire import Part
from remote_graph._private import shape_output

__all__ = ["CLASSIC_MODES", "Shaper", "server_modes"]

CLASSIC_MODES = frozenset({"values", "updates", "messages", "custom", "debug", "tasks", "checkpoints"})
"""The stream modes of a local ``stream()`` (v3's ``lifecycle``/``tools`` belong to v3 runs)."""


def server_modes(modes: Sequence[str]) -> tuple[str, ...]:
    """The stream modes a classic run asks the server for, to serve ``modes``.

    ``messages`` is ``messages-tuple`` on the server (``(chunk, metadata)``
    pairs, as a local run streams them); ``updates`` is always asked for, so
    interrupts arrive as the updates that carry them (a server asked for no
    updates sends an interrupt as a ``values`` chunk holding only it).
    """
    out: list[str] = []
    for mode in (*modes, "updates"):
        wire = "messages-tuple" if mode == "messages" else mode
        if wire not in out:
            out.append(wire)
    return tuple(out)


class Shaper:
    """Turns a classic run's parts into what the caller's ``stream()`` yields.

    Args:
        stream_mode: The caller's ``stream_mode`` (a mode, or a list of them).
        print_mode: Modes to print as they arrive, as locally.
        subgraphs: Whether the caller streams subgraphs.
        version: ``"v1"`` (tuples) or ``"v2"`` (``StreamPart`` dicts).
    """

    def __init__(
        self,
        stream_mode: str | Sequence[str],
        print_mode: str | Sequence[str] = (),
        *,
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
    ) -> None:
        # langgraph's _output tells one mode from several by ``isinstance(_, list)``.
        self.stream_mode: str | list[str] = stream_mode if isinstance(stream_mode, str) else list(stream_mode)
        self.print_mode: str | list[str] = print_mode if isinstance(print_mode, str) else list(print_mode)
        self.subgraphs = subgraphs
        self.version: Literal["v1", "v2"] = version
        self._queue: deque[tuple[tuple[str, ...], str, Any]] = deque()

    def wants(self, mode: str) -> bool:
        modes = self.stream_mode
        prints = self.print_mode
        return mode == modes or (isinstance(modes, list) and mode in modes) or mode == prints or (
            isinstance(prints, list) and mode in prints
        )

    def shape(self, part: Part) -> list[Any]:
        """The outputs (none or one) a part becomes."""
        mode: str = part["type"]
        if not self.wants(mode):
            return []
        self._queue.append((tuple(part["ns"]), mode, part["data"]))
        modes: Any = self.stream_mode
        prints: Any = self.print_mode
        return list(shape_output(modes, prints, self.subgraphs, self._queue.popleft, IndexError, self.version))
