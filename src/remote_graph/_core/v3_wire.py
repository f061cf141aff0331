"""The stream format of a v3 run: the server mux's protocol events.

Each frame's data is a protocol event, ``{"type": "event", "method", "params",
"seq"}``; the ``seq`` tells a repeat from news, so a replay after a reconnect
drops what was already delivered. ``convert.WireConverter`` turns the events
back into the parts langgraph's ``StreamMux`` reads.

A message's node is not on the wire. When a message starts in a step whose
node is not known yet, ``prepare`` reads the thread's state, which names the
step's tasks (``steps.py``); only the node is at stake, so a failed read
leaves it unknown, and later messages wait for their update instead. A
message held for an update that never comes (a module without
``UpdatesTransformer``) is named, when its step's ``values`` arrive, from the
thread's recent states.

A server may drop an event on its live way. The ``seq`` shows it: a live
stream has no gaps, and a replay's gaps are where the live-only events
(``lifecycle``, a module's ``custom:<name>`` channel) were. Two ways are known,
both on langgraph-runtime-pg:

- It tells events apart by their id, gives a live-only event one from its
  clock, and drops the later of two with the same id. A stored event that
  comes after a gap right after a live-only event makes the driver reopen the
  stream after the event before that one (``rewind``): the replay brings the
  stored event that did not come.
- A replica whose Redis restarted under an open stream sends on what is
  published once it has subscribed again, not what was published meanwhile
  (measured: the ticks of about a second, 10 of 60, with no error and no
  reconnect), though the events are stored. A stored event after a gap right
  after a stored one makes the driver reopen the stream before that one.

Each gap is checked once: what is still missing was live-only. A replay of a
run whose stream carries live-only events has such gaps, so after
``_UNFILLED_GAPS`` checks of the second kind that no replay filled, gaps after
stored events are no longer checked: the cost is a few reopens for such a run,
and none for one whose live-only events never leave gaps. A live-only event
after the gap is delivered, and the stream not reopened: no replay brings it
back, and a reopened live stream loses the live-only events published while it
reconnects (tried: a module's named channel lost 3 of its 4 pushes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson
from langgraph.types import Interrupt

from remote_graph._core.actions import Request, Response
from remote_graph._core.attempts import AttemptFilter
from remote_graph._core.commands import _V3_STREAM_MODES
from remote_graph._core.convert import WireConverter
from remote_graph._core.cursor import id_after
from remote_graph._core.join import RunCursor
from remote_graph._core.sse import Frame
from remote_graph._core.wire import Namespace, Part, Prepare
from remote_graph.errors import RemoteProtocolError

__all__ = ["STEP_READ_TIMEOUT", "V3Wire"]

# A step's tasks only name a streaming message's node early; the stream waits
# on that read, so it gets seconds, not the full request budget: enough for a
# server under load (an embedded server running eight runs at once beside two
# other servers and a Docker build, on two cores, took longer than 2 s), well
# under the request budget. A writer read is no hint (nothing else names a
# returned message's node): it gets the full budget, as a slow server under
# load may take seconds to answer it.
STEP_READ_TIMEOUT = 5.0
# The states a writer read looks back over: the server may be a few steps ahead.
HISTORY_READ_LIMIT = 10

# Checks of a gap after a stored event that found nothing stored in it (a replay's
# gap where live-only events were) before such gaps are no longer checked for the run.
_UNFILLED_GAPS = 3

# The methods a server stores for a replay: those of the stream modes a run asks for.
# Others (``lifecycle``, ``custom:<name>``) are sent live only.
_REPLAYED = frozenset(_V3_STREAM_MODES)

# An accepted event: its method and params.
Event = tuple[str, dict[str, Any]]


def _fingerprint(data: str) -> int:
    """An event's frame as sent, but for when it was sent and its ``seq``: what a
    retried attempt's repeat of it has the same (``attempts.py``).

    The server writes the envelope as ``{..., "params": {"namespace": ...,
    "timestamp": ..., ...}, "seq": ...}``; where it does not, the whole frame is
    taken, and a repeat of it is delivered rather than an event lost.
    """
    end = data.rfind('"seq"')
    end = data.rfind(",", 0, end) if end >= 0 else -1
    if end < 0:
        end = len(data)
    stamp = data.find('"timestamp"', 0, end)
    after = data.find(",", stamp, end) if stamp >= 0 else -1
    if after < 0:
        return hash(data[:end])
    return hash((data[:stamp], data[after:end]))


class V3Wire:
    """The protocol events of one v3 run.

    Args:
        thread_path: ``/threads/{id}`` of the run's thread (for the step reads).
        assistant_id: The deployed graph (for its node names, read at most once).
        run_label: Names the run in error messages.
    """

    def __init__(self, thread_path: str, assistant_id: str, run_label: str = "the run") -> None:
        self.converter = WireConverter()
        self.run_label = run_label
        self._thread_path = thread_path
        self._assistant_id = assistant_id
        # The protocol seq of the last event delivered, in the current attempt
        # (a retried attempt counts from 1 again); repeats are dropped.
        self._last_seq = 0
        # Keyed by a hash of each event's frame: the events themselves are not held.
        self._attempts: AttemptFilter[int] = AttemptFilter()
        # The SSE id of the event a join's cursor names, if joined from one.
        self._cursor: str | None = None
        # Cleared when a read of the step's tasks fails: the server is slow or
        # refuses, and a message's node then waits for its update instead.
        self._step_reads = True
        # The same for the history reads that name a message the server ran past.
        self._writer_reads = True
        # For a gap in the seq: the id of the newest event delivered whose id
        # differs from the last one's, and the last one's; whether the last is
        # live-only; the highest seq whose gap was checked, and, for a check
        # after a stored event, the seq delivered when it was made; how many
        # such checks brought nothing (for the run: attempts do not reset it);
        # and the id to reopen the stream after.
        self._ids: tuple[str | None, str | None] = (None, None)
        self._live_only = False
        self._gap_checked = 0
        self._checked_at: int | None = None
        self._unfilled = 0
        self._rewind: str | None = None

    @property
    def interrupts(self) -> list[tuple[Namespace, Interrupt]]:
        return self.converter.interrupts

    def joined(self, after: RunCursor | None) -> None:
        if after is not None and after.seq is not None:
            self._last_seq = after.seq
            self._cursor = after.event_id

    def rewind(self) -> str | None:
        id_, self._rewind = self._rewind, None
        return id_

    def mark(self) -> tuple[str | None, int]:
        return None, self._last_seq

    def reconnected(self) -> list[Part]:
        # The seq alone tells repeats apart, on any connection.
        return []

    def attempt(self, number: int, frame_id: str | None) -> None:
        # A join from a cursor replays from just before the cursor's event: a
        # metadata frame up to it opened the attempt the cursor's seq counts in.
        after_cursor = self._cursor is None or frame_id is None or id_after(frame_id, self._cursor)
        if self._attempts.begin(number) and after_cursor:
            # The frames after it are the new attempt's, its seq counted from 1.
            self._last_seq = 0
            # Nor does a gap of the new attempt reopen into the lost one's frames.
            self._gap_checked = 0
            self._ids = (None, None)
            self._live_only = False

    def accept(self, frame: Frame) -> tuple[Event, bool] | None:
        """Events are told apart by their protocol ``seq``; one without a seq is
        passed on but cannot count as news (a replay would repeat it)."""
        try:
            envelope = orjson.loads(frame.data)
        except orjson.JSONDecodeError:
            raise RemoteProtocolError(
                f"{self.run_label} sent an event that is not JSON: {frame.data[:200]!r}"
            ) from None
        if not isinstance(envelope, dict) or envelope.get("type") != "event":
            return None
        seq = envelope.get("seq")
        new = isinstance(seq, int)
        method = str(envelope.get("method"))
        if isinstance(seq, int):
            if seq <= self._last_seq:
                return None
            if seq > self._last_seq + 1 and self._lost_live(seq, method):
                return None
            self._last_seq = seq
        if not self._attempts.feed(_fingerprint(frame.data)):
            return None
        params = envelope.get("params")
        if frame.id is not None and frame.id != self._ids[1]:
            # An event without an id (never replayed) is no place to reopen after.
            self._ids = (self._ids[1], frame.id)
        self._live_only = method not in _REPLAYED
        # Parsed JSON: an object is a dict (and ``isinstance(_, dict)`` skips the ABC check).
        return (method, params if isinstance(params, dict) else {}), new

    def _lost_live(self, seq: int, method: str) -> bool:
        """Whether the events before ``seq`` that did not come may be stored ones
        dropped on their live way (see the module docstring), and the gap was
        not checked yet. Then ``rewind`` names the frame to reopen after: the
        newest delivered whose id is not the last one's (a lost event may share
        that id; the replay repeats the last, dropped by its seq). Not when
        event ``seq`` (``method``) is live-only itself: the replay would not
        bring it back, and it is delivered rather than the ones lost."""
        before, last = self._ids
        if method not in _REPLAYED or last is None:
            return False
        if seq <= self._gap_checked:
            # Checked, and the replay brought nothing of it: live-only events were there.
            if self._checked_at == self._last_seq:
                self._unfilled += 1
            self._checked_at = None
            return False
        if before is None or (not self._live_only and self._unfilled >= _UNFILLED_GAPS):
            return False
        self._rewind = before
        self._checked_at = None if self._live_only else self._last_seq
        self._gap_checked = seq
        return True

    def prepare(self, event: Event) -> Prepare | None:
        if not self._step_reads:
            return None
        method, params = event
        ns = self.converter.wants_step(method, params)
        if ns is not None:
            return self._learn_step(ns, params)
        ns = self.converter.wants_writers(method, params) if self._writer_reads else None
        return None if ns is None else self._learn_writers(ns, params.get("data"))

    def convert(self, event: Event) -> list[Part]:
        return self.converter.convert(*event)

    def finish(self, *, interrupted: bool, completed: bool = False) -> list[Part]:
        return self.converter.finish(interrupted=interrupted, completed=completed)

    def wind_up(self) -> Prepare | None:
        return None

    def _learn_writers(self, ns: Namespace, values: Any) -> Prepare:
        """A step ended with messages whose writer no update named (streamed ones held,
        or returned ones its state ``values`` brings): the thread's recent states name it."""
        body: dict[str, Any] = {"limit": HISTORY_READ_LIMIT}
        if ns:
            body["checkpoint"] = {"checkpoint_ns": "|".join(ns)}
        reply = yield Request("POST", f"{self._thread_path}/history", json=body)
        ok = isinstance(reply, Response) and reply.status == 200
        if not ok:
            # Refused, or no answer within the request budget: the next step's
            # read would fare no better. It says nothing of the state reads.
            self._writer_reads = False
        self.converter.learn_writers(ns, reply.body if ok and isinstance(reply, Response) else None, values)

    def _learn_step(self, ns: Namespace, params: Mapping[str, Any]) -> Prepare:
        """A message starts in a step whose node is not known yet: the thread's
        state names the step's tasks."""
        query = {"subgraphs": "true" if ns else "false"}
        reply = yield Request("GET", f"{self._thread_path}/state", params=query, timeout=STEP_READ_TIMEOUT)
        state = reply.body if isinstance(reply, Response) and reply.status == 200 else None
        if state is None:
            self._step_reads = False
        if state is not None and self.converter.wants_nodes(ns, state):
            # Rare: only once an update came from a name the state's tasks do not list.
            path = f"/assistants/{quote(self._assistant_id, safe='')}/graph"
            reply = yield Request("GET", path, params={"xray": "true"}, timeout=STEP_READ_TIMEOUT)
            self.converter.learn_nodes(reply.body if isinstance(reply, Response) and reply.status == 200 else None)
        start = params.get("data")
        message_id = start.get("id") if isinstance(start, Mapping) else None
        self.converter.learn_step(ns, state, message_id)
