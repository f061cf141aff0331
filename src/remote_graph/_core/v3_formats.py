"""Which format a v3 run's server streams it in, told by its first event.

A v3 run is started with the v3 marker (``commands.StartPlan``) and the
classic modes it would need without it. A server that speaks the v3 protocol
streams protocol events (``{"type": "event", "method", "params", "seq"}``,
``v3_wire.V3Wire``); one that does not (aegra, older langgraph-api releases)
ignores the marker and streams those classic modes
(``classic_v3.ClassicV3Wire``). The first frame that carries an event decides
for the whole run: nothing has to be asked of the server first, and no
setting of the caller's chooses.
"""

from __future__ import annotations

import warnings
from typing import Any

import orjson
from langgraph.types import Interrupt

from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_v3 import ClassicV3Wire
from remote_graph._core.join import RunCursor
from remote_graph._core.sse import Frame
from remote_graph._core.v3_wire import V3Wire
from remote_graph._core.wire import Namespace, Part, Prepare, Wire

__all__ = ["V3Formats", "is_protocol_event"]

# How langgraph-api writes an event's envelope: its keys in this order, no spaces.
_ENVELOPE = '{"type":"event","method":"'


def is_protocol_event(data: str) -> bool:
    """Whether a frame's data is a v3 protocol event (else a classic mode's chunk,
    which may be a user's dict with a ``type`` of its own: the envelope's other
    keys must be there too)."""
    if data.startswith(_ENVELOPE):
        return True
    try:
        envelope = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(envelope, dict)
        and envelope.get("type") == "event"
        and isinstance(envelope.get("method"), str)
        and isinstance(envelope.get("params"), dict)
    )


class V3Formats:
    """A v3 run's wire: ``V3Wire`` or ``ClassicV3Wire``, whichever the server answers with.

    Args:
        thread_path: ``/threads/{id}`` of the run's thread.
        assistant_id: The deployed graph.
        thread_id: The server thread's id (the classic frames' metadata names it).
    """

    def __init__(self, thread_path: str, assistant_id: str, thread_id: str) -> None:
        self.v3 = V3Wire(thread_path, assistant_id)
        self.classic = ClassicV3Wire(ChunkReader(CallView(server_thread=thread_id, thread_name=None)), thread_path)
        self._chosen: Wire | None = None
        self._wanted: frozenset[str] = frozenset()
        # Whether the run sent an update, and how many root states.
        self._updated = False
        self._root_states = 0

    @property
    def chosen(self) -> Wire:
        """The format the run's events came in (``V3Wire`` until the first one)."""
        return self._chosen if self._chosen is not None else self.v3

    @property
    def run_label(self) -> str:
        return self.v3.run_label

    @run_label.setter
    def run_label(self, label: str) -> None:
        self.v3.run_label = label
        self.classic.run_label = label

    @property
    def interrupts(self) -> list[tuple[Namespace, Interrupt]]:
        return self.chosen.interrupts

    def serve(self, modes: frozenset[str], wanted: frozenset[str] = frozenset()) -> None:
        """The modes the caller's mux requires (a classic server streams more), and
        those the caller's own transformers do (``wanted``: ``finish`` warns of
        ``updates`` a v3 server never sent for them)."""
        self.classic.modes = modes
        self._wanted = wanted

    def joined(self, after: RunCursor | None) -> None:
        self.v3.joined(after)
        self.classic.joined(after)
        if after is not None:
            # The cursor was made from the run's events: a protocol seq names
            # a v3 protocol event, a frame count a classic one.
            self._chosen = self.v3 if after.seq is not None else self.classic

    def mark(self) -> tuple[str | None, int]:
        return self.chosen.mark()

    def reconnected(self) -> list[Part]:
        # Both hear of every connection, the run's first one included (before
        # anything chose): the classic frames' repeat filter counts from it.
        return [*self.v3.reconnected(), *self.classic.reconnected()]

    def attempt(self, number: int, frame_id: str | None) -> None:
        self.v3.attempt(number, frame_id)
        self.classic.attempt(number, frame_id)

    def accept(self, frame: Frame) -> tuple[Any, bool] | None:
        if self._chosen is None:
            self._chosen = self.v3 if is_protocol_event(frame.data) else self.classic
        return self._chosen.accept(frame)

    def rewind(self) -> str | None:
        return None if self._chosen is None else self._chosen.rewind()

    def prepare(self, event: Any) -> Prepare | None:
        return self.chosen.prepare(event)

    def convert(self, event: Any) -> list[Part]:
        if self._chosen is self.v3:
            method, params = event
            self._updated = self._updated or method == "updates"
            if method == "values" and not params.get("namespace"):
                self._root_states += 1
        return self.chosen.convert(event)

    def finish(self, *, interrupted: bool, completed: bool = False) -> list[Part]:
        if completed and "updates" in self._wanted and self._root_states > 1 and not self._updated:
            # A run in which a node ran (a state past its input) sends updates where
            # the module registers UpdatesTransformer; the caller's transformers
            # would silently get none.
            warnings.warn(
                f"RemoteGraph: {self.run_label} sent no 'updates' events, so the transformers given to "
                "the client that need them got none: the deployed module's stream_transformers() hook "
                "does not register UpdatesTransformer (add it there to stream them)",
                UserWarning,
                stacklevel=2,
            )
        return self.chosen.finish(interrupted=interrupted, completed=completed)

    def wind_up(self) -> Prepare | None:
        return self.chosen.wind_up()
