"""A scripted LangGraph server for ``RunDriver``: no sockets, no real clock.

``FakeServer`` answers the driver's actions the way the LangGraph server
answers the shells: the runs API for REST requests, and for every
``OpenStream`` the run's per-run stream. It models the run as it progresses:
``produced`` frames of the run exist (the store holds every tagged one of
them). A connection first replays the stored frames whose id sorts after its
``Last-Event-ID`` as Redis sorts stream ids (all of them for ``FROM_START``;
none for an id that is no stream id, which Redis refuses), then serves the
frames the run produces while it is open, live; when the run has produced
everything, the body ends, so a finished run's replay closes right away.
Frames without an id are never stored, so only a live connection gets them.
The run record says ``running`` until every frame is produced, then
``success``, unless a test scripts it. Connections are served in chunks and
may break mid-body (``cut``), end cleanly early (``close``, a proxy passing a
cut on as a normal end, or a restart), and the run may go on while no
connection is open (``ahead``). ``Sleep`` is answered at once and advances a
fake clock by the time asked.

What the frames hold is the test's: ``Wire`` builds a v3 run's protocol
events (``event``) or a classic run's ``stream_mode`` chunks (``chunk``), with
ids that repeat within a "millisecond" as on the in-memory server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from remote_graph._core.actions import Broken, OpenStream, Receive, Request, Response, Sleep, Timeouts
from remote_graph._core.commands import RunOptions, StartPlan
from remote_graph._core.cursor import FROM_START, id_after, stream_order
from remote_graph._core.run import RunDriver
from remote_graph._core.state import RunStatus

TID, RID = "T", "R"
THREAD = f"/threads/{TID}"
RUN = f"{THREAD}/runs/{RID}"
STREAM = f"{RUN}/stream"
START_PATH = f"{THREAD}/runs/stream"
SSE = "text/event-stream; charset=utf-8"

# --- the wire ----------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    id: str | None
    raw: bytes


def sse(event: str, data: Any, frame_id: str | None) -> Frame:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    tail = f"id: {frame_id}\r\n" if frame_id is not None else ""
    return Frame(frame_id, f"event: {event}\r\ndata: {text}\r\n{tail}\r\n".encode())


_NEXT = object()
# What a Redis-backed server takes as a Last-Event-ID: a stream id.
_REDIS_ID = re.compile(r"\d+-\d+")
# aegra's ids: ``<run_id>_event_<n>``.
_AEGRA_ID = re.compile(r".+_event_\d+")


class Wire:
    """Builds a run's frames; ids repeat within a "millisecond" as on the in-memory server."""

    def __init__(self) -> None:
        self.ms = 1796018881846
        self.seq = 0
        self.frames: list[Frame] = []

    def tick(self) -> Wire:
        self.ms += 7
        return self

    @property
    def id(self) -> str:
        return f"{self.ms}-0"

    def metadata(self, data: Any = None) -> Wire:
        self.frames.append(sse("metadata", data if data is not None else {"run_id": RID, "attempt": 1}, self.id))
        return self

    def event(self, method: str, data: Any, ns: Sequence[str] = (), *, seq: Any = _NEXT, **extra: Any) -> Wire:
        """A protocol event; its ``seq`` is the next one unless given (``None`` leaves it out)."""
        if seq is _NEXT:
            self.seq += 1
            seq = self.seq
        params = {"namespace": list(ns), "timestamp": self.seq, "data": data, **extra}
        envelope: dict[str, Any] = {"type": "event", "method": method, "params": params}
        if seq is not None:
            envelope["seq"] = seq
        name = method if not ns else f"{method}|{'|'.join(ns)}"
        self.frames.append(sse(name, envelope, self.id))
        return self

    def chunk(self, mode: str, data: Any, ns: Sequence[str] = ()) -> Wire:
        """A classic run's ``stream_mode`` chunk: named ``mode`` (``mode|ns|...`` in a
        subgraph), its data the JSON text ``data`` is (or encodes to)."""
        name = mode if not ns else f"{mode}|{'|'.join(ns)}"
        self.frames.append(sse(name, data, self.id))
        return self

    def raw(self, event: str, data: Any, frame_id: str | None = "tick") -> Wire:
        self.frames.append(sse(event, data, self.id if frame_id == "tick" else frame_id))
        return self


def custom_run(n: int, per_ms: int = 3, *, fail: bool = False) -> list[Frame]:
    """A run of ``n`` custom events ``{"i": i}``, ``per_ms`` to a millisecond (ids
    repeat within one), ending with its final ``values``; with ``fail``, with
    the ``error`` frame of a node that raised ``Boom`` instead (``FAILED_STATE``)."""
    w = Wire().metadata()
    for i in range(n):
        if i and i % per_ms == 0:
            w.tick()
        w.event("custom", {"i": i})
    if fail:
        w.tick().raw("error", {"error": "Boom", "message": "An internal error occurred"})
    else:
        w.tick().event("values", {"done": True}, interrupts=[])
    return w.frames


# The thread's state after a node raised ``Boom("kaboom from node")``.
FAILED_STATE = {
    "values": {"x": 1},
    "tasks": [{"id": "t", "name": "node", "error": "Boom('kaboom from node')", "interrupts": []}],
}


def numbered(frames: Sequence[Frame], step: int = 2, skip: Sequence[int] = ()) -> list[Frame]:
    """The frames with aegra's ids: ``<run_id>_event_<n>``, ``n`` going up by
    ``step`` (2 on its Redis broker), a number skipped before each index in ``skip``."""
    out, n = [], 0
    for index, frame in enumerate(frames):
        n += step * (2 if index in skip else 1)
        if frame.id is None:
            out.append(frame)
            continue
        frame_id = f"{RID}_event_{n}"
        out.append(Frame(frame_id, frame.raw.replace(f"id: {frame.id}\r\n".encode(), f"id: {frame_id}\r\n".encode())))
    return out


def wire_bytes(frames: Sequence[Frame]) -> bytes:
    return b"".join(f.raw for f in frames)


def through(frames: Sequence[Frame], count: int) -> int:
    """The byte offset right after the first ``count`` frames."""
    return len(wire_bytes(frames[:count]))


def before_newest(frames: Sequence[Frame]) -> str:
    """Where a client that has every frame resumes: the id before the newest."""
    ids = sorted({f.id for f in frames if f.id is not None}, key=stream_order)
    return ids[-2] if len(ids) > 1 else FROM_START


# --- the server -------------------------------------------------------------------------

Cut = Callable[[list[Frame]], int | None]
EVERYTHING = 1 << 30


@dataclass
class Conn:
    """How one connection to the run's stream goes.

    Attributes:
        answer: Answer the ``OpenStream`` with this instead of the stream.
        cut: Byte offset (or a function of the frames this connection
            serves) at which the transport breaks mid-body.
        close: Byte offset (or a function of the frames) at which the body
            ends cleanly, early.
        live: How many new frames the run produces while this connection is
            open (all the rest when ``None``); the body ends after them.
        twice: The first frame produced while the connection switches from
            its replay to live is sent twice, at the end of the replay and as
            the first live frame, as the server may do (with ``rewind``, it is
            the last of the frames the live part repeats).
        rewind: The last this many frames of the connection's replay were
            published after it subscribed, so its live part begins with them
            again. The connection subscribes as it opens: frames sent before
            (on an earlier connection) are never among them.
        lost: Run indices of frames the server drops on their live way on this
            connection (langgraph-runtime-pg, when another frame took the id):
            not sent live, stored all the same.
        ahead: How many frames the run produces after this connection ends,
            before the next action (``EVERYTHING``: the run finishes).
        chunks: Chunk sizes to serve the body in, cycled.
        fail_with: What the break looks like.
    """

    answer: Response | Broken | None = None
    cut: int | Cut | None = None
    close: int | Cut | None = None
    live: int | None = None
    twice: bool = False
    rewind: int = 0
    lost: Sequence[int] = ()
    ahead: int = 0
    chunks: Sequence[int] = (4096,)
    fail_with: Broken = field(default_factory=lambda: Broken(httpx.RemoteProtocolError("incomplete chunked read")))


Answer = Response | Broken


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeServer:
    """Answers a RunDriver's actions; records what it was asked.

    Args:
        frames: Every frame the run produces, in order.
        connections: One ``Conn`` per stream connection; ``then`` serves the rest.
        rest: Answers per ``(method, path)``, consumed in order (the last one repeats).
        produced: How many frames the run has produced before the first
            connection (``EVERYTHING``: it finished before the stream was opened).
        batched: Its streams say each read hands over everything it brought.
    """

    def __init__(
        self,
        frames: Sequence[Frame] = (),
        connections: Sequence[Conn] = (),
        rest: Mapping[tuple[str, str], Answer | list[Answer]] | None = None,
        *,
        then: Conn | None = None,
        clock: Clock | None = None,
        connect_time: float = 0.0,
        produced: int = 0,
        batched: bool = False,
        record: Mapping[str, Any] | None = None,
    ) -> None:
        self.frames = list(frames)
        # What else the run record holds (its graph, its kind), as a joined run's look-up reads it.
        self.record_extra = dict(record or {})
        # Whether its streams say each read hands over all it brought (``Response.batched``).
        self.batched = batched
        self.connections = list(connections)
        self.then = then or Conn()
        self.rest: dict[tuple[str, str], list[Answer]] = {}
        for key, value in (rest or {}).items():
            self.rest[key] = list(value) if isinstance(value, list) else [value]
        self.clock = clock
        self.connect_time = connect_time
        self.produced = min(produced, len(self.frames))
        # The highest index of a frame any byte of which was sent (-1: none yet).
        self.touched = -1
        self.actions: list[Any] = []
        self.requests: list[Request] = []
        self.step_reads: list[Request] = []
        # Answers to those reads, in order (then 404).
        self.step_states: list[Answer] = []
        self.opened: list[OpenStream] = []
        self.slept: list[float] = []
        # The status of every run record the server kept and answered with (not scripted ones).
        self.told: list[str] = []
        # Per connection: the run index of every frame it serves, and the
        # highest index touched before it opened.
        self.served: list[list[int]] = []
        self.touched_before = -1
        self._conn: Conn | None = None
        self._body: bytes | None = None
        self._starts: list[tuple[int, int]] = []  # (byte offset, run index) of each frame of the body
        self._pos = 0
        self._end = 0
        self._end_with: Any = b""
        self._chunk_index = 0

    @property
    def finished(self) -> bool:
        return self.produced >= len(self.frames)

    def record(self) -> Response:
        """The run record, as the server keeps it at the time it is asked."""
        status = "success" if self.finished else "running"
        self.told.append(status)
        return Response(200, {**self.record_extra, "run_id": RID, "status": status})

    def replay(self, last_event_id: str) -> list[int]:
        """The server's rule, over what the run has produced; frames with no id are not stored."""
        stored = [i for i, f in enumerate(self.frames[: self.produced]) if f.id is not None]
        if _AEGRA_ID.fullmatch(last_event_id):
            # aegra's: the frames after the one with that id, all of them when none has it.
            at = next((k for k, i in enumerate(stored) if self.frames[i].id == last_event_id), None)
            return stored if at is None else stored[at + 1 :]
        # Redis refuses a Last-Event-ID that is no stream id: that replay comes back empty.
        return [i for i in stored if _REDIS_ID.fullmatch(last_event_id) and id_after(self.frames[i].id, last_event_id)]

    def answer(self, action: Any) -> Any:
        if isinstance(action, Request) and action.params and "subgraphs" in action.params:
            # The state read naming a streaming message's node, tested on its own.
            self.step_reads.append(action)
            return self.step_states.pop(0) if self.step_states else Response(404, {"detail": "Not Found"})
        self.actions.append(action)
        if isinstance(action, Sleep):
            assert action.seconds >= 0
            self.slept.append(action.seconds)
            if self.clock is not None:
                self.clock.now += action.seconds
            return None
        if isinstance(action, Request):
            self.requests.append(action)
            answers = self.rest.get((action.method, action.path))
            if answers is None and (action.method, action.path) == ("GET", RUN):
                return self.record()
            if not answers:
                return Response(404, {"detail": "Not Found"})
            return answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(action, OpenStream) and action.method == "POST":
            # The run's start: created with its stream, unless the test scripts an answer.
            self.requests.append(action)  # type: ignore[arg-type]
            answers = self.rest.get((action.method, action.path))
            if answers:
                return answers.pop(0) if len(answers) > 1 else answers[0]
            return self._open(action)
        if isinstance(action, OpenStream):
            return self._open(action)
        if isinstance(action, Receive):
            return self._receive()
        raise AssertionError(f"unexpected action {action!r}")

    def _open(self, action: OpenStream) -> Any:
        starting = action.method == "POST"
        assert action.path == (START_PATH if starting else STREAM)
        self.opened.append(action)
        if self.clock is not None:
            self.clock.now += self.connect_time
        conn = self.connections.pop(0) if self.connections else self.then
        self._conn = conn
        if conn.answer is not None:
            self._body = None
            self._produce(conn.ahead)
            return conn.answer
        self.touched_before = self.touched
        # The start's stream subscribes before the run exists: nothing to replay.
        indices = [] if starting else self.replay(action.last_event_id or FROM_START)
        if starting:
            self.produced = 0
        stop = len(self.frames) if conn.live is None else min(len(self.frames), self.produced + conn.live)
        live = [i for i in range(self.produced, stop) if i not in conn.lost]
        twice = bool(conn.twice and live)
        if twice:
            # Stored while the connection switched to live: in the replay, and live too.
            indices.append(live[0])
            self.produced = live[0] + 1
        if conn.rewind:
            unsent = [i for i in indices if i > self.touched_before]
            # With ``twice`` the frame sent twice is the last of those repeated, not a third copy.
            live = indices[len(indices) - min(conn.rewind, len(unsent)) :] + (live[1:] if twice else live)
        indices += live
        served = [self.frames[i] for i in indices]
        self.served.append(indices)
        offsets = [len(wire_bytes(served[:k])) for k in range(len(served))]
        self._starts = list(zip(offsets, indices))
        body = wire_bytes(served)
        cut = conn.cut(served) if callable(conn.cut) else conn.cut
        close = conn.close(served) if callable(conn.close) else conn.close
        self._body, self._pos, self._end, self._end_with = body, 0, len(body), b""
        if close is not None and close < self._end:
            self._end = close
        if cut is not None and cut < self._end:
            self._end, self._end_with = cut, conn.fail_with
        self._chunk_index = 0
        return Response(200, None, SSE, location=f"{RUN}/stream" if starting else None, batched=self.batched)

    def _produce(self, count: int) -> None:
        self.produced = min(len(self.frames), self.produced + count)

    def _receive(self) -> Any:
        assert self._body is not None and self._conn is not None, "Receive without an open stream"
        if self._pos >= self._end:
            end, self._body = self._end_with, None
            self._produce(self._conn.ahead)
            return end
        chunks = self._conn.chunks
        size = chunks[self._chunk_index % len(chunks)]
        self._chunk_index += 1
        chunk = self._body[self._pos : min(self._pos + size, self._end)]
        self._pos += len(chunk)
        for start, index in self._starts:
            if start < self._pos:
                # Sent, so produced (and stored) by now.
                self.touched = max(self.touched, index)
                self.produced = max(self.produced, index + 1)
        return chunk

    def asked(self, method: str, path: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and r.path == path]

    def trail(self) -> list[tuple[str, Any]]:
        """Every action but reads, compactly: ("POST", path), ("open", Last-Event-ID), ("sleep", s)."""
        out: list[tuple[str, Any]] = []
        for action in self.actions:
            if isinstance(action, Request) or (isinstance(action, OpenStream) and action.method == "POST"):
                out.append((action.method, action.path))
            elif isinstance(action, OpenStream):
                out.append(("open", action.last_event_id))
            elif isinstance(action, Sleep):
                out.append(("sleep", action.seconds))
        return out


# --- driving ----------------------------------------------------------------------------------


def plan(input: Any = None, *, thread_given: bool = True, assistant_id: str = "agent", **options: Any) -> StartPlan:
    return StartPlan(
        assistant_id=assistant_id, input=input, config={}, options=RunOptions(**options), thread_given=thread_given
    )


def make_driver(clock: Clock, start: StartPlan | None = None, *, reconnect: float = 15.0, **kwargs: Any) -> RunDriver:
    return RunDriver(start or plan({"x": 1}), TID, timeouts=Timeouts(reconnect=reconnect), clock=clock, **kwargs)


@dataclass
class Outcome:
    parts: list[dict[str, Any]]
    error: BaseException | None


def drive(driver: RunDriver, server: FakeServer, *, limit: int = 100_000) -> Outcome:
    """Step the driver to its end (or its error), answering every action."""
    parts: list[dict[str, Any]] = []
    reply: Any = None
    for _ in range(limit):
        try:
            step = driver.step(reply)
        except Exception as exc:  # the run's own error
            return Outcome(parts, exc)
        reply = None
        if step is None:
            return Outcome(parts, None)
        if isinstance(step, dict):
            parts.append(step)
        else:
            reply = server.answer(step)
    raise AssertionError("the driver did not finish")


def run(
    server: FakeServer, clock: Clock | None = None, *, limit: int = 100_000, **kwargs: Any
) -> tuple[RunDriver, Outcome]:
    clock = clock or server.clock or Clock()
    server.clock = clock
    driver = make_driver(clock, **kwargs)
    return driver, drive(driver, server, limit=limit)


def cleanup(driver: RunDriver, server: FakeServer) -> list[Any]:
    """Abandon and drive the cleanup conversation; the actions it took."""
    before = len(server.actions)
    driver.abandon()
    outcome = drive(driver, server)
    assert outcome.parts == [] and outcome.error is None
    return server.actions[before:]


def kinds(parts: Sequence[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    return [(p["type"], p["ns"]) for p in parts]


START = ("POST", START_PATH)
VERDICT = ("GET", RUN)
CANCEL = Request("POST", f"{RUN}/cancel", params={"wait": "0", "action": "interrupt"})


def started_driver(server: FakeServer, parts: int = 2, **kwargs: Any) -> RunDriver:
    """A driver that has delivered ``parts`` parts of a running run."""
    clock = Clock()
    server.clock = clock
    driver = make_driver(clock, **kwargs)
    got, reply = 0, None
    while got < parts:
        step = driver.step(reply)
        reply = None
        if isinstance(step, dict):
            got += 1
        else:
            reply = server.answer(step)
    assert driver.status is RunStatus.RUNNING
    return driver
