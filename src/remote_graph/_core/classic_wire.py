"""The stream format of a classic run: one frame per ``stream_mode`` chunk.

A frame is named ``<mode>`` or ``<mode>|<ns>|<ns>...`` (a subgraph's chunk,
when the run streams subgraphs) and its data is the chunk's JSON. There is no
protocol ``seq``, so ``replay.RepeatFilter`` tells repeats from news by the
frames' ids and content, and a frame a server numbered but did not send
(aegra, as a connection resumes) is found by its id (``numbered_ids``): the
stream is reopened before it. Each new chunk becomes a part ``{"type": mode, "ns":
ns, "data": payload}`` with the payload a local run yields
(``classic.ChunkReader``).

A task that fails with an exception the server will not describe in the
stream (a class of the user's: its message is a placeholder) is named in the
thread's state with its real message; ``prepare`` reads it there, so the
``tasks`` / ``debug`` event carries the exception a local run's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from langgraph.types import Interrupt

from remote_graph._core.actions import Request, Response
from remote_graph._core.attempts import AttemptFilter
from remote_graph._core.classic import HIDDEN_MESSAGE, ChunkReader, interrupts_of, task_error
from remote_graph._core.join import RunCursor
from remote_graph._core.numbered_ids import NumberedIds
from remote_graph._core.replay import RepeatFilter
from remote_graph._core.sse import Frame
from remote_graph._core.wire import Namespace, Part, Prepare
from remote_graph.errors import RemoteProtocolError

__all__ = ["ClassicWire"]

# A frame held by the repeat filter: its event name and data.
_Raw = tuple[str, str]
# The state read that names a failed task's exception gets seconds, not the request budget.
_TASK_ERROR_READ_TIMEOUT = 2.0


class ClassicWire:
    """The chunks of one classic run.

    Args:
        reader: Rebuilds each chunk's payload as a local run yields it.
        thread_path: ``/threads/{id}`` of the run's thread (to read a failed task's error).
        run_label: Names the run in error messages.
    """

    def __init__(self, reader: ChunkReader, thread_path: str, run_label: str = "the run") -> None:
        self.reader = reader
        self.run_label = run_label
        self._thread_path = thread_path
        self._repeats: RepeatFilter[_Raw] = RepeatFilter()
        self._numbered = NumberedIds()
        self._rewind: str | None = None
        # Keyed by each frame's hash: the frames themselves are not held.
        self._attempts: AttemptFilter[int] = AttemptFilter()
        self._interrupts: list[tuple[Namespace, Interrupt]] = []
        self._interrupt_ids: set[str] = set()
        # Task errors read from the thread's state, by task id.
        self._task_errors: dict[str, BaseException] = {}
        self._released: list[_Raw] = []

    @property
    def interrupts(self) -> list[tuple[Namespace, Interrupt]]:
        return self._interrupts

    def joined(self, after: RunCursor | None) -> None:
        if after is not None and after.count is not None:
            self._repeats.resume(after.event_id, after.count)
        else:
            self._repeats.resume()

    def mark(self) -> tuple[str | None, int]:
        return self._repeats.position

    def reconnected(self) -> list[Part]:
        return self._parts(self._news(self._repeats.reconnected()))

    def attempt(self, number: int, frame_id: str | None) -> None:
        self._attempts.begin(number)

    def accept(self, frame: Frame) -> tuple[list[_Raw], bool] | None:
        rewind = self._numbered.gap(frame.id)
        if rewind is not None:
            self._rewind = rewind
            return None
        released = self._repeats.feed(frame.id, hash((frame.event, frame.data)), (frame.event, frame.data))
        if released:
            released = self._news(released)
        return (released, True) if released else None

    def rewind(self) -> str | None:
        id_, self._rewind = self._rewind, None
        return id_

    def prepare(self, event: list[_Raw]) -> Prepare | None:
        for name, data in event:
            if (name.startswith("tasks") or name.startswith("debug")) and HIDDEN_MESSAGE in data:
                return self._read_task_errors()
        return None

    def convert(self, event: list[_Raw]) -> list[Part]:
        return self._parts(event)

    def finish(self, *, interrupted: bool, completed: bool = False) -> list[Part]:
        return self._parts(self._news(self._repeats.finish()))

    def wind_up(self) -> Prepare | None:
        """At the run's end: the thread's state names messages handed out without an id."""
        return self._name_idless() if self.reader.idless else None

    def _name_idless(self) -> Prepare:
        reply = yield Request("GET", f"{self._thread_path}/state", timeout=_TASK_ERROR_READ_TIMEOUT)
        state = reply.body if isinstance(reply, Response) and reply.status == 200 else None
        if isinstance(state, Mapping):
            self.reader.name_idless(self.reader.state((), state.get("values")))

    # --- chunks -----------------------------------------------------------------

    def _news(self, raws: list[_Raw]) -> list[_Raw]:
        """The frames a retried attempt does not repeat (all of them, in its first attempt)."""
        feed = self._attempts.feed
        return [raw for raw in raws if feed(hash(raw))]

    def _parts(self, raws: list[_Raw]) -> list[Part]:
        parts: list[Part] = []
        for name, data in raws:
            mode, _, rest = name.partition("|")
            ns: Namespace = tuple(rest.split("|")) if rest else ()
            try:
                payload = orjson.loads(data)
            except orjson.JSONDecodeError:
                raise RemoteProtocolError(
                    f"{self.run_label} sent a {mode!r} chunk that is not JSON: {data[:200]!r}"
                ) from None
            if mode in ("updates", "values") and isinstance(payload, dict) and "__interrupt__" in payload:
                self._note_interrupts(ns, payload["__interrupt__"])
            value = self.reader.read(mode, ns, payload)
            if self._task_errors and mode in ("tasks", "debug"):
                value = self._with_task_error(mode, value)
            parts.append({"type": mode, "ns": ns, "data": value})
        return parts

    def _note_interrupts(self, ns: Namespace, raw: Any) -> None:
        for interrupt in interrupts_of(raw):
            if interrupt.id not in self._interrupt_ids:
                self._interrupt_ids.add(interrupt.id)
                self._interrupts.append((ns, interrupt))

    # --- failed tasks -------------------------------------------------------------

    def _read_task_errors(self) -> Prepare:
        """Read the thread's state for the tasks that failed (all namespaces)."""
        reply = yield Request(
            "GET", f"{self._thread_path}/state", params={"subgraphs": "true"}, timeout=_TASK_ERROR_READ_TIMEOUT
        )
        state = reply.body if isinstance(reply, Response) and reply.status == 200 else None
        self._collect_task_errors(state)

    def _collect_task_errors(self, state: Any) -> None:
        tasks = state.get("tasks") if isinstance(state, Mapping) else None
        for task in tasks or ():
            if not isinstance(task, Mapping):
                continue
            error = task.get("error")
            if isinstance(error, str) and error and isinstance(task.get("id"), str):
                rebuilt = task_error(error)
                if isinstance(rebuilt, BaseException):
                    self._task_errors[task["id"]] = rebuilt
            self._collect_task_errors(task.get("state"))

    def _with_task_error(self, mode: str, value: Any) -> Any:
        if mode == "debug" and isinstance(value, dict):
            inner = value.get("payload")
            patched = self._patch(inner)
            return value if patched is inner else {**value, "payload": patched}
        return self._patch(value)

    def _patch(self, task: Any) -> Any:
        if isinstance(task, dict) and isinstance(task.get("error"), BaseException):
            known = self._task_errors.get(str(task.get("id")))
            if known is not None:
                return {**task, "error": known}
        return task
