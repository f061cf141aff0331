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
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from remote_graph._core.wire import Part
from remote_graph._private import shape_output

__all__ = ["CLASSIC_MODES", "OutputKeys", "Shaper", "server_modes"]

_INTERRUPT = "__interrupt__"

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


class OutputKeys:
    """``output_keys=``, applied to a run's root chunks as a local run applies it.

    The server's runs take no ``output_keys``, and its chunks hold every output
    channel; a local run with ``output_keys`` streams a ``values`` chunk only
    after a step that wrote one of those keys (the root ``updates`` say which
    keys a step wrote; the input's own keys count for the first), holding only
    them (a single key: its value alone), and each node's ``updates`` with only
    the keys it wrote among them (``None`` when it wrote none).

    Args:
        keys: The ``output_keys`` (one channel, or several).
        written: The keys the run's input writes (the input dict's, or a
            ``Command``'s ``update``).
    """

    def __init__(self, keys: str | Sequence[str], written: Collection[str] = ()) -> None:
        self.one = keys if isinstance(keys, str) else None
        self.keys = frozenset([keys] if isinstance(keys, str) else keys)
        self._written = set(written)

    def saw(self, part: Part) -> None:
        """Count a root ``updates`` part: the keys its nodes wrote."""
        data = part["data"]
        if isinstance(data, Mapping):
            for update in data.values():
                for write in update if isinstance(update, list) else [update]:
                    if isinstance(write, Mapping):
                        self._written.update(write)

    def values(self, data: Any) -> tuple[bool, Any]:
        """Whether a root ``values`` chunk is streamed, and what it holds."""
        interrupts = data.get(_INTERRUPT) if isinstance(data, Mapping) else None
        written, self._written = self._written, set()
        if interrupts is None and written.isdisjoint(self.keys):
            return False, None
        if not isinstance(data, Mapping):
            return True, data
        if self.one is not None:
            return True, data.get(self.one) if interrupts is None else {_INTERRUPT: interrupts}
        out = {key: value for key, value in data.items() if key in self.keys}
        if interrupts is not None:
            out[_INTERRUPT] = interrupts
        return True, out

    def updates(self, data: Any) -> Any:
        """A root ``updates`` chunk with only the output keys each node wrote."""
        if not isinstance(data, Mapping):
            return data
        out: dict[str, Any] = {}
        for node, update in data.items():
            if node in (_INTERRUPT, "__metadata__"):
                out[node] = update
            elif isinstance(update, list):
                out[node] = [self._write(item) for item in update]
            else:
                out[node] = self._write(update)
        return out

    def _write(self, write: Any) -> Any:
        if not isinstance(write, Mapping):
            return write  # a task's return value (functional API), not channel writes
        if self.one is not None:
            return write.get(self.one)
        kept = {key: value for key, value in write.items() if key in self.keys}
        return kept or None


class Shaper:
    """Turns a classic run's parts into what the caller's ``stream()`` yields.

    Args:
        stream_mode: The caller's ``stream_mode`` (a mode, or a list of them).
        print_mode: Modes to print as they arrive, as locally.
        subgraphs: Whether the caller streams subgraphs.
        version: ``"v1"`` (tuples) or ``"v2"`` (``StreamPart`` dicts).
        output_keys: The caller's ``output_keys``, if any.
    """

    def __init__(
        self,
        stream_mode: str | Sequence[str],
        print_mode: str | Sequence[str] = (),
        *,
        subgraphs: bool = False,
        version: Literal["v1", "v2"] = "v1",
        output_keys: OutputKeys | None = None,
    ) -> None:
        self.output_keys = output_keys
        # langgraph's _output tells one mode from several by ``isinstance(_, list)``.
        self.stream_mode: str | list[str] = stream_mode if isinstance(stream_mode, str) else list(stream_mode)
        self.print_mode: str | list[str] = print_mode if isinstance(print_mode, str) else list(print_mode)
        self.subgraphs = subgraphs
        self.version: Literal["v1", "v2"] = version
        self._queue: deque[tuple[tuple[str, ...], str, Any]] = deque()

    def modes(self) -> list[str]:
        """Every mode the caller streams or prints."""
        out: list[str] = []
        for group in (self.stream_mode, self.print_mode):
            for mode in [group] if isinstance(group, str) else group:
                if mode not in out:
                    out.append(mode)
        return out

    def wants(self, mode: str) -> bool:
        modes = self.stream_mode
        prints = self.print_mode
        return (
            mode == modes
            or (isinstance(modes, list) and mode in modes)
            or mode == prints
            or (isinstance(prints, list) and mode in prints)
        )

    def shape(self, part: Part) -> list[Any]:
        """The outputs (none or one) a part becomes."""
        mode: str = part["type"]
        data = part["data"]
        keys = self.output_keys
        if keys is not None and not part["ns"]:
            if mode == "updates":
                keys.saw(part)
                data = keys.updates(data)
            elif mode == "values":
                streamed, data = keys.values(data)
                if not streamed:
                    return []
        if not self.wants(mode):
            return []
        self._queue.append((tuple(part["ns"]), mode, data))
        modes: Any = self.stream_mode
        prints: Any = self.print_mode
        return list(shape_output(modes, prints, self.subgraphs, self._queue.popleft, IndexError, self.version))
