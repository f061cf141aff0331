"""What ``invoke`` returns, collected from the run's stream as a local ``invoke`` collects it.

A local ``invoke`` is a ``stream()`` whose chunks it folds into one result: for
``stream_mode="values"``, the last state, with the ``Interrupt``s of a paused
run under ``__interrupt__`` (``version="v1"``, where they come from the
``updates`` chunks that carry them) or in a ``GraphOutput``
(``version="v2"``); for any other mode, the list of chunks. ``RemoteGraph``'s
``invoke`` streams its own run the same way, so the result has the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import GraphOutput, Interrupt

__all__ = ["InvokeCollector", "collector_kwargs"]

_INTERRUPT = "__interrupt__"


def collector_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take ``stream_mode`` and ``version`` out of an ``invoke``'s keyword arguments."""
    return {"stream_mode": kwargs.pop("stream_mode", "values"), "version": kwargs.pop("version", "v1")}


class InvokeCollector:
    """Folds an ``invoke``'s stream into its result, as a local ``invoke`` does.

    Args:
        stream_mode: The ``invoke``'s ``stream_mode`` (``"values"`` by default).
        version: ``"v1"`` or ``"v2"``.
    """

    def __init__(self, stream_mode: Any = "values", version: Any = "v1") -> None:
        self.stream_mode = stream_mode
        self.version = version
        self.latest: Any = None
        self.chunks: list[Any] = []
        self.interrupts: list[Interrupt] = []

    def stream_kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of the ``stream()`` call that serves the ``invoke``."""
        mode: Any = self.stream_mode
        if mode == "values" and self.version != "v2":
            mode = ["updates", "values"]
        return {**kwargs, "stream_mode": mode, "version": self.version}

    def add(self, chunk: Any) -> None:
        """Count one chunk of the stream."""
        if self.stream_mode != "values":
            self.chunks.append(chunk)
        elif self.version == "v2":
            self.latest = chunk["data"]
            self.interrupts.extend(chunk.get("interrupts", ()))
        else:
            mode, payload = chunk[-2], chunk[-1]
            if mode == "updates" and isinstance(payload, Mapping) and (found := payload.get(_INTERRUPT)) is not None:
                self.interrupts.extend(found)
            elif mode == "values":
                self.latest = payload

    def result(self) -> Any:
        """What ``invoke`` returns."""
        if self.stream_mode != "values":
            return self.chunks
        if self.version == "v2":
            return GraphOutput(value=self.latest, interrupts=tuple(self.interrupts))
        if self.interrupts:
            if isinstance(self.latest, dict):
                return {**self.latest, _INTERRUPT: self.interrupts}
            return {_INTERRUPT: self.interrupts}
        return self.latest
