"""Joining a run another caller started: where to resume, and whether the run is the one asked for.

A run created with a resumable stream goes on when its caller leaves, and
``GET /threads/{id}/runs/{run_id}/stream`` replays its stored frames to any
later caller, then follows it live. ``RunDriver`` follows a joined run through
the same phases as one it started (``state.Phase.LOOKING_UP`` first); this
module holds what is particular to a join:

* ``RunCursor``, the string a caller stores to resume exactly after an event.
  The in-memory server gives every frame of one millisecond the same SSE id
  (``cursor.py``), so an id alone cannot say where inside its millisecond an
  event stood. The cursor holds the id to resume from (the newest one before
  the event's), the event's own id, and what tells the replayed frames of the
  event's millisecond apart: a v3 event's protocol ``seq``, or, for a classic
  run (whose frames carry no ``seq``), how many frames of that millisecond
  were delivered.
* ``JoinFrom``, what a join asks for, and ``refusal``, why a run record does
  not match it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from remote_graph.errors import RunCursorError

__all__ = ["JoinFrom", "RunCursor", "refusal", "run_kind"]

Kind = Literal["v3", "classic"]

_PREFIX = "rg1."
# The configurable marker of a run that streams v3 protocol events (``commands._V3_MARKER``).
_V3_MARKER = "__event_streaming_v2"


@dataclass(frozen=True, slots=True)
class RunCursor:
    """Where a joined run's stream resumes: right after one delivered event.

    Attributes:
        run_id: The run the event belongs to.
        resume_from: The ``Last-Event-ID`` to send: the newest frame id before the event's.
        event_id: The SSE id of the event's frame.
        seq: A v3 event's protocol ``seq`` (``None`` for a classic run).
        count: For a classic run: how many frames with ``event_id`` were
            delivered, the event's own included (``None`` for a v3 run).
        stream: The kind of stream that gave the cursor out, where its
            fields do not tell: a v3 run stream read from a server's classic
            modes (aegra) counts frames, as classic chunks do.
    """

    run_id: str
    resume_from: str
    event_id: str
    seq: int | None = None
    count: int | None = None
    stream: Kind | None = None

    @property
    def kind(self) -> Kind:
        """The kind of stream that gave the cursor out: only a join of the same kind takes it."""
        if self.stream is not None:
            return self.stream
        return "v3" if self.seq is not None else "classic"

    def encode(self) -> str:
        """The cursor as an opaque string, safe to store and to put in a URL."""
        fields: list[object] = [self.run_id, self.resume_from, self.event_id, self.seq, self.count]
        if self.stream is not None:
            fields.append(self.stream)
        return _PREFIX + base64.urlsafe_b64encode(orjson.dumps(fields)).decode().rstrip("=")

    @classmethod
    def decode(cls, text: object) -> RunCursor:
        """Read back a cursor ``encode`` made.

        Raises:
            RunCursorError: If ``text`` is not one.
        """
        if not isinstance(text, str) or not text.startswith(_PREFIX):
            raise RunCursorError(f"after= takes a cursor a run stream gave out (run.cursor), got {_shown(text)}")
        body = text[len(_PREFIX) :]
        try:
            fields = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (binascii.Error, ValueError):
            fields = None
        if (
            isinstance(fields, list)
            and len(fields) in (5, 6)
            and all(isinstance(value, str) and value for value in fields[:3])
            and (isinstance(fields[3], int)) != (isinstance(fields[4], int))
            and all(value is None or isinstance(value, int) and value >= 0 for value in fields[3:5])
            and fields[5:] in ([], ["v3"], ["classic"])
        ):
            run_id, resume_from, event_id, seq, count, *stream = fields
            return cls(run_id, resume_from, event_id, seq, count, stream[0] if stream else None)
        raise RunCursorError(f"after= is not a cursor a run stream gave out (it is damaged): {_shown(text)}")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


@dataclass(frozen=True, slots=True)
class JoinFrom:
    """What a join asks for.

    Attributes:
        run_id: The run to join.
        kind: ``"v3"`` (a run stream's events) or ``"classic"`` (``stream_mode`` chunks).
        after: Resume right after this event; from the run's first event when ``None``.
        modes: A classic join's server stream modes: the run must stream each of them.
        subgraphs: A classic join's ``subgraphs``: the run must have been started with the same.
    """

    run_id: str
    kind: Kind
    after: RunCursor | None = None
    modes: Sequence[str] = ()
    subgraphs: bool = False


def run_kind(record: Mapping[str, Any]) -> Kind | None:
    """Which kind of run a run record describes: a v3 run carries the v3 marker
    in its configurable. ``None`` when the record keeps no run arguments
    (``kwargs``): aegra keeps neither the configurable nor the stream modes."""
    if not isinstance(record.get("kwargs"), Mapping):
        return None
    configurable = _configurable(record)
    return "v3" if configurable is not None and configurable.get(_V3_MARKER) else "classic"


def graph_of(record: Mapping[str, Any]) -> str | None:
    """The graph a run record's run executes (its ``graph_id``): in its
    metadata once it ran, in its config's configurable from the start."""
    metadata = record.get("metadata")
    graph_id = metadata.get("graph_id") if isinstance(metadata, Mapping) else None
    if isinstance(graph_id, str):
        return graph_id
    configurable = _configurable(record)
    graph_id = configurable.get("graph_id") if configurable is not None else None
    return graph_id if isinstance(graph_id, str) else None


def _configurable(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    kwargs = record.get("kwargs")
    config = kwargs.get("config") if isinstance(kwargs, Mapping) else None
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    return configurable if isinstance(configurable, Mapping) else None


def refusal(record: Mapping[str, Any], join: JoinFrom) -> str | None:
    """Why the run ``record`` describes cannot be joined as ``join`` asks, or ``None``.

    The graph is checked by the driver (it may take a request); this checks
    the kind of run and, for a classic join, its stream modes.
    """
    kind = run_kind(record)
    if kind is None:
        # Nothing to check against: the join reads the stream as the caller says.
        return None
    if kind != join.kind:
        if kind == "v3":
            return "it was started as a v3 run stream: join it with version='v3'"
        return "it was started for classic chunks: join it with its stream_mode= (and version='v1' or 'v2')"
    if kind == "v3":
        return None
    kwargs = record.get("kwargs")
    kwargs = kwargs if isinstance(kwargs, Mapping) else {}
    streamed = kwargs.get("stream_mode")
    streamed = [streamed] if isinstance(streamed, str) else list(streamed or ())
    missing = [mode for mode in join.modes if mode not in streamed]
    if missing:
        return f"it streams {', '.join(map(repr, streamed)) or 'no mode'}, not {', '.join(map(repr, missing))}"
    if bool(kwargs.get("subgraphs")) != join.subgraphs:
        return f"it was started with subgraphs={bool(kwargs.get('subgraphs'))}: join it with the same"
    return None
