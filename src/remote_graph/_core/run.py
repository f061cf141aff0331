"""One remote run, from its start request to its end, as a sans-I/O conversation.

``RunDriver`` is fed the outcome of each I/O action and answers with the next
action or the next stream part; the sync and async shells only carry actions
out. Every method that starts a run (v3 run streams, ``invoke``, ``stream``,
``astream_events``, a remote child in a local parent) goes through it. The
conversation:

1. **start**: learn the deployed graph's schemas if the run needs them, read
   the thread's state if a resume needs it, then create the run through the
   runs API (``commands.StartPlan``); the answer carries the run id.
2. **follow** the run's own resumable stream,
   ``GET /threads/{id}/runs/{run_id}/stream``, through the phases of
   ``state.Follow`` (the only place the phase changes; ``state.FOLLOW`` lists
   every transition). It carries only this run's frames (a thread's history
   costs nothing), every frame has an id, and the server closes it when the
   run ends. What the frames mean is the run's ``Wire``'s business: v3
   protocol events (``v3_wire``) or classic ``stream_mode`` chunks
   (``classic_wire``).
3. **reconnect**: a connection that breaks (reset, cut mid-body, read
   timeout) or ends while the server says the run still runs is reopened
   after the last frame delivered (``cursor.ResumeCursor``), with backoff,
   until ``Timeouts.reconnect`` passes without a new frame.
4. **end**: when the stream closes, the run record says how it ended
   (``state.status_from_server``), and a reopened stream confirms nothing was
   missed; an ``error`` frame fails the run with the exception the thread's
   state records.

A run started elsewhere is *joined* (``join``): the driver reads the run's
record first (``Phase.LOOKING_UP``: the run exists, belongs to this graph, is
the kind of run asked for), then follows its stream from its first event, or
from a ``join.RunCursor``, through the same phases. The first frame a join
reads must be where it asked to start (the run's ``metadata`` frame, or the
cursor's event's millisecond): a stream that begins later lost events, and
the join fails rather than deliver a short stream. A *detached* start
(``detach()``) ends once the server accepted the run and leaves it running.

A run fails along one path, ``_fail``; a run that may still be running on the
server when it fails (it was not the server's verdict) is cancelled by the
cleanup. ``abandon()`` switches to that cleanup conversation: cancel the run on
the server if it may still be running, and record what the server answered.
Every ending goes through it (the shells abandon a run that ended too), so it
is also where a call made without a thread id deletes the thread the run made
(``threadless``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import quote

import orjson
from langgraph.types import Interrupt

from remote_graph._core.actions import (
    Broken,
    IOAction,
    OpenStream,
    Receive,
    Request,
    Response,
    Sleep,
    Timeouts,
    cancel_request,
)
from remote_graph._core.attempts import attempt_number
from remote_graph._core.commands import StartPlan
from remote_graph._core.cursor import FROM_START, ResumeCursor, id_after
from remote_graph._core.failure import answer_error, failure_from_state, names_its_failure
from remote_graph._core.join import JoinFrom, Kind, RunCursor, graph_of, refusal
from remote_graph._core.limits import Limits
from remote_graph._core.schema import GraphSchemas, learn_schemas
from remote_graph._core.sse import SSEDecoder
from remote_graph._core.state import Follow, Phase, RunState, RunStatus, Signal, status_from_server
from remote_graph._core.threadless import forget_thread
from remote_graph._core.v3_formats import V3Formats
from remote_graph._core.wire import Part, Wire
from remote_graph._private import sdk_orjson_default
from remote_graph.errors import (
    RemoteConnectionError,
    RemoteGraphError,
    RemoteProtocolError,
    RemoteTimeoutError,
    RunEventsGoneError,
    RunMismatchError,
    RunNotFoundError,
)

__all__ = ["Conversation", "RunDriver"]

logger = logging.getLogger("remote_graph")

# A conversation yields I/O actions (answered through ``send``) and parts for the caller.
Conversation = Generator[IOAction | Part, Any, None]

_BACKOFF_FIRST = 0.05
_BACKOFF_CAP = 2.0
_SSE = "text/event-stream"
# One read action serves every read: it carries nothing.
_RECEIVE = Receive()
# A read this short emptied the connection: the reader has caught up with the
# server, and a pause lets the next frames gather (``Timeouts.read_batch``).
# A longer one (httpcore reads 64 KiB at a time) means more is waiting.
_CAUGHT_UP = 16 * 1024
# Answers of a proxy, a restarting server, or a replica shutting down (it answers
# 500 on a kept-alive connection until it exits; the next connection reaches
# another): while a run is followed, worth another try within Timeouts.reconnect.
_RETRYABLE = frozenset(range(500, 600))
# A run the server has not ended yet.
_ACTIVE = ("pending", "running")


@dataclass(frozen=True, slots=True)
class _Verdict:
    """The run record once it says the run is over (``None``: the run was deleted)."""

    record: Mapping[str, Any] | None


@dataclass(slots=True)
class _Loss:
    """Why the stream was lost, for the backoff: the transport's failure
    (``None`` when the server closed it or answered a retryable status), the
    retryable status answered, and when the failed attempt began."""

    broken: Broken | None = None
    since: float | None = None
    status: int | None = None


@dataclass(frozen=True, slots=True)
class _Read:
    """How one connection's body ended."""

    signal: Signal
    # Whether it delivered anything new.
    news: bool
    broken: Broken | None = None
    # The data of an ``error`` frame.
    error: str | None = None


class RunDriver:
    """The conversation for one remote run. See the module docstring.

    Args:
        plan: What to send to start the run.
        thread_id: The server thread the run executes on.
        timeouts: Bounds on every wait.
        schemas: The deployed graph's schemas, learned before the run when
            given and not yet known (to revive state by its schema, and for a
            run inside a parent task, which returns only the output keys).
        wire: The run's stream format; a v3 run's (``V3Formats``: the one its server answers with) by default.
        limits: Bounds on what the server's answers may make the run hold.
        join: Follow this run, started elsewhere, instead of starting one
            (``plan`` then only names the graph).
        clock: Monotonic seconds; replaced in tests.
    """

    def __init__(
        self,
        plan: StartPlan,
        thread_id: str,
        *,
        timeouts: Timeouts,
        schemas: GraphSchemas | None = None,
        wire: Wire | None = None,
        limits: Limits | None = None,
        join: JoinFrom | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.plan = plan
        self.thread_id = thread_id
        self.timeouts = timeouts
        self.schemas = schemas
        self.limits = limits if limits is not None else Limits()
        self.run_id: str | None = None
        self.state = RunState()
        self.follow = Follow()
        self._thread_path = f"/threads/{quote(thread_id, safe='')}"
        self.wire: Wire = wire if wire is not None else V3Formats(self._thread_path, plan.assistant_id, thread_id)
        self._clock = clock
        self._conversation: Conversation = self._run()
        self._started = False
        # The pause before a read once the reader has caught up: set by each
        # stream that opens, by whether its transport batches reads.
        self._pause = 0.0
        # Set when the run failed while it may still be going on the server.
        self._orphaned = False
        self._join = join
        # Set by ``detach()``: the run is only started, and left running.
        self._detached = False
        after = join.after if join is not None else None
        self._cursor = ResumeCursor(after.resume_from, after.event_id) if after is not None else ResumeCursor()
        # What a join's first frame must be: the cursor's event's millisecond,
        # or the run's ``metadata`` frame (``""``); ``None`` once it came, and
        # for a run this driver starts.
        self._anchor: str | None = None
        # Whether the first frame of a run this driver starts is still to come: it is the
        # run's ``metadata`` frame, unless the stream began after the run's first events.
        self._first_frame = join is None
        if join is not None:
            self.follow = Follow(Phase.LOOKING_UP)
            self._anchor = after.event_id if after is not None else ""
            self.wire.joined(after)
            self._named(join.run_id)
        # Set once a request that may create the thread was sent.
        self._thread_made = False
        # When the run last sent an event, for ``Timeouts.stall`` (from the first read on).
        self._news_at: float | None = None
        # An error frame that came while the run's record said it still ran (or could not
        # be read): a stream's failure, or the run's own error announced before its record.
        self._stream_error: Mapping[str, Any] | None = None

    # --- the shells' interface ---------------------------------------------------

    def step(self, reply: Any = None) -> IOAction | Part | None:
        """Advance with the outcome of the previous action.

        Returns the next I/O action for the shell, the next stream part for
        the caller, or ``None`` once the run (or the cleanup) is over.

        Raises:
            BaseException: The run failed; the exception is the run's.
        """
        try:
            if not self._started:
                self._started = True
                return next(self._conversation)
            return self._conversation.send(reply)
        except StopIteration:
            return None

    def abandon(self) -> None:
        """The caller stopped early: switch to the cleanup conversation.

        Drive it with ``step()`` until it returns ``None``; it cancels the run
        on the server if it may still be running.
        """
        self._conversation.close()
        self._conversation = self._cleanup()
        self._started = False

    @property
    def status(self) -> RunStatus:
        return self.state.status

    @property
    def interrupts(self) -> list[Interrupt]:
        """Every interrupt this run has raised so far, in arrival order."""
        return [interrupt for _, interrupt in self.wire.interrupts]

    @property
    def cursor(self) -> str | None:
        """Where a join resumes to deliver exactly the events after the last one
        delivered (a ``join.RunCursor``, encoded); ``None`` before the first."""
        newest, mark = self.wire.mark()
        if self.run_id is None or mark == 0:
            return None
        # A format with a protocol seq names the event by it; the frame id is the cursor's.
        event_id, seq, count = (self._cursor.newest, mark, None) if newest is None else (newest, None, mark)
        if event_id is None:
            return None
        # A format that holds frames back may have delivered less than the
        # stream read: the whole replay then, in which the wire drops what came before.
        boundary = self._cursor.last_event_id if event_id == self._cursor.newest else FROM_START
        # A v3 run stream read from classic modes counts frames: its cursor says it is a v3 one.
        stream: Kind | None = "v3" if seq is None and isinstance(self.wire, V3Formats) else None
        return RunCursor(self.run_id, boundary, event_id, seq, count, stream).encode()

    def detach(self) -> None:
        """Only start the run: the conversation ends once the server accepted it,
        and the run goes on with no client connected (it is never cancelled)."""
        self._detached = True

    @property
    def run_path(self) -> str:
        assert self.run_id is not None
        return f"{self._thread_path}/runs/{quote(self.run_id, safe='')}"

    # --- start -------------------------------------------------------------------

    def _run(self) -> Conversation:
        if self.schemas is not None and not self.schemas.known:
            try:
                yield from learn_schemas(self.plan.assistant_id, self.schemas)
            except RemoteGraphError as exc:
                self._fail(exc)
        if self._join is not None:
            yield from self._look_up(self._join)
        else:
            yield from self._start()
            if self._detached:
                self.follow.on(Signal.DETACHED)
                return
        try:
            for part in self.wire.reconnected():
                yield part
            yield from self._follow()
        except Exception as exc:
            # Events that arrived before the failure (a message held for its
            # node, a channel event waiting for the next event) are delivered
            # before it, as a local run's events are.
            for part in self.wire.finish(interrupted=False):
                yield part
            if not self.state.terminal:
                # Raised below the driver's own checks (a frame past its limit):
                # the run failed all the same, and may still be going.
                self._fail(exc)
            raise

    def _start(self) -> Conversation:
        thread_state: Any = None
        if self.plan.needs_state():
            reply = yield Request("GET", f"{self._thread_path}/state")
            self._check_sent(reply, "reading the thread's state")
            if reply.status == 200 and isinstance(reply.body, Mapping):
                thread_state = reply.body
            elif reply.status != 404:
                self._fail(answer_error(reply, "reading the thread's state"))
        if self.plan.carries_metadata:
            # A run that creates its thread leaves its metadata on the thread, and
            # the server gives a thread's metadata to every later run on it; a
            # local run's metadata stays on its own checkpoints. So the thread is
            # made first, with none.
            self._thread_made = True
            reply = yield Request("POST", "/threads", json={"thread_id": self.thread_id, "if_exists": "do_nothing"})
            self._check_sent(reply, "making sure the thread exists")
            if not 200 <= reply.status < 300 and reply.status != 409:
                self._fail(answer_error(reply, "making sure the thread exists"))
        try:
            start = self.plan.request(self._thread_path, thread_state)
        except BaseException as exc:
            self._fail(exc)
        self._thread_made = True
        reply = yield start
        if isinstance(reply, Broken) and not (reply.local or reply.unreachable):
            # The start may have reached the server and the run be going, with
            # its answer (and the run's id) lost on the way back.
            yield from self._find_lost_start(reply, start.json)
        else:
            self._check_sent(reply, "starting the run")
            if reply.status != 200 or not reply.content_type.startswith(_SSE):
                self._fail(answer_error(reply, "starting the run", f"the run's event stream ({_SSE!r})"))
            # The run's stream opened with it: its id is in the stream's location
            # (and in the stream's first, ``metadata`` frame).
            self._learn_run_id(reply.location)
            self._opened(reply)
            self.state.move(RunStatus.RUNNING)
            self.follow.on(Signal.OPENED)

    def _look_up(self, join: JoinFrom) -> Conversation:
        """Read the joined run's record: it must exist, run this graph, and be
        the kind of run the join asked for."""
        doing = f"reading the record of run {join.run_id}"
        reply = yield Request("GET", self.run_path)
        self._check_sent(reply, doing)
        if reply.status == 404:
            self.follow.on(Signal.REFUSED)
            self._fail(
                RunNotFoundError(
                    f"run {join.run_id} is not on thread {self.thread_id}: the id is unknown there, the run was "
                    "deleted, or these credentials may not see it",
                    run_id=join.run_id,
                )
            )
        if reply.status != 200 or not isinstance(reply.body, Mapping):
            self.follow.on(Signal.REFUSED)
            self._fail(answer_error(reply, doing))
        record = reply.body
        graph = graph_of(record)
        theirs = record.get("assistant_id")
        if self.plan.assistant_id not in (theirs, graph) and graph is None and isinstance(theirs, str):
            # A record that names no graph (aegra's) names its assistant.
            graph = yield from self._graph_of_assistant(theirs)
        if self.plan.assistant_id not in (theirs, graph):
            # Another assistant of the same graph is the same graph.
            ours = yield from self._graph_of_assistant(self.plan.assistant_id)
            if ours is None or ours != graph:
                self.follow.on(Signal.REFUSED)
                self._fail(
                    RunMismatchError(
                        f"run {join.run_id} runs graph {graph!r}, not this graph ({self.plan.assistant_id!r})"
                    )
                )
        why = refusal(record, join)
        if why is not None:
            self.follow.on(Signal.REFUSED)
            self._fail(RunMismatchError(f"run {join.run_id} cannot be joined so: {why}"))
        self.state.move(RunStatus.RUNNING)
        self.follow.on(Signal.FOUND)

    def _graph_of_assistant(self, assistant_id: str) -> Generator[IOAction | Part, Any, str | None]:
        """The graph an assistant (id or graph name) runs, or ``None`` when the server does not say."""
        reply = yield Request("GET", f"/assistants/{quote(assistant_id, safe='')}")
        self._check_sent(reply, f"reading assistant {assistant_id}")
        graph = reply.body.get("graph_id") if reply.status == 200 and isinstance(reply.body, Mapping) else None
        return graph if isinstance(graph, str) else None

    def _find_lost_start(self, broken: Broken, sent: Any) -> Conversation:
        """Find the run a start whose answer was lost may have started, and
        follow it from its first event (its stream is lost: the backoff
        reopens it), or fail saying what is known.

        The run is the thread's one active run, when no other could be: the
        thread is this run's own (the caller named none), or the caller's
        with the default multitask strategy (``reject``: a second active run
        is refused), and the run's record holds the input and command this
        start sent (a run that was going already holds its own). Otherwise,
        or when none is active, the run cannot be told apart, and the start
        fails with its transport error.
        """
        reply = yield Request("GET", f"{self._thread_path}/runs", params={"limit": "10"})
        runs = reply.body if isinstance(reply, Response) and reply.status == 200 else None
        active = (
            [run for run in runs if isinstance(run, Mapping) and run.get("status") in _ACTIVE]
            if isinstance(runs, list)
            else []
        )
        alone = not self.plan.thread_given or self.plan.options.multitask_strategy in (None, "reject")
        if len(active) != 1 or not alone or not active[0].get("run_id") or not _started_by(active[0], sent):
            if not isinstance(runs, list):
                known = "whether it started is unknown"
            elif not active:
                known = "the thread has no run going: it never started, or already ended"
            else:
                known = "which of the thread's runs going is its cannot be told"
            self._fail(
                _transport_error(broken, f"while starting the run (its answer was lost; {known})"), reachable=False
            )
        logger.debug("run start lost (%s); following active run %s", broken.detail, active[0]["run_id"])
        self._named(str(active[0]["run_id"]))
        self.state.move(RunStatus.RUNNING)
        self.follow.on(Signal.LOST)

    def _learn_run_id(self, location: str | None) -> None:
        """``/threads/{id}/runs/{run_id}[/stream]`` names the run."""
        parts = (location or "").split("/")
        if "runs" in parts and parts.index("runs") + 1 < len(parts):
            self._named(parts[parts.index("runs") + 1])

    def _named(self, run_id: str) -> None:
        if self.run_id is None and run_id:
            self.run_id = run_id
            self.wire.run_label = f"run {run_id}"

    def _check_sent(self, reply: Response | Broken, doing: str) -> None:
        if isinstance(reply, Broken):
            self._fail(_transport_error(reply, f"while {doing}"))

    def _fail(self, error: BaseException, *, verdict: bool = False, reachable: bool = True) -> NoReturn:
        """Fail the run with ``error``: the one way a run fails.

        Unless the server itself ended the run (``verdict``), a run that was
        running may still be going: the cleanup cancels it, unless the server
        cannot be reached (a cancel could not arrive either; trying would only
        add the transport's connect retries).
        """
        if not verdict and reachable and self.state.status is RunStatus.RUNNING:
            self._orphaned = True
        self.state.move(RunStatus.FAILED, error=error)
        raise error

    # --- follow ------------------------------------------------------------------

    def _follow(self) -> Conversation:
        """Follow the run's stream to its end, phase by phase (``state.FOLLOW``)."""
        follow = self.follow
        cursor = self._cursor
        retry = _Retry(self._clock, self.timeouts.reconnect)
        # A clean close is not taken on trust: a proxy may pass a cut on as a
        # normal end of body. The run record is read, and once it says the run
        # is over the stream is reopened from the cursor; the run ends when
        # that connection closes with nothing new (a finished run's replay
        # closes at once).
        verdict: _Verdict | None = None
        loss = _Loss()
        last = _Read(Signal.CLOSED, news=False)
        while True:
            phase = follow.phase
            if phase is Phase.OPENING:
                if self.run_id is None:
                    follow.on(Signal.REFUSED)
                    self._fail(
                        RemoteProtocolError(
                            "the server never named the run it started, so its stream cannot be resumed"
                        )
                    )
                opened_at = self._clock()
                reply = yield OpenStream(f"{self.run_path}/stream", cursor.open())
                if isinstance(reply, Broken) or reply.status in _RETRYABLE:
                    # The budget counts from the attempt's start: a transport may
                    # spend seconds on its own connect retries before it fails.
                    loss = _lost(reply, opened_at)
                    follow.on(Signal.LOST)
                elif reply.status != 200 or not reply.content_type.startswith(_SSE):
                    follow.on(Signal.REFUSED)
                    self._fail(
                        answer_error(
                            reply, f"opening the event stream of run {self.run_id}", f"an event stream ({_SSE!r})"
                        )
                    )
                else:
                    self._opened(reply)
                    for part in self.wire.reconnected():
                        yield part
                    follow.on(Signal.OPENED if verdict is None else Signal.OPENED_AFTER_VERDICT)
            elif phase is Phase.READING or phase is Phase.CONFIRMING:
                # A confirming connection replays what is stored and closes:
                # nothing more comes while it would pause.
                last = yield from self._read(cursor, retry, batch=phase is Phase.READING)
                signal = last.signal
                if signal is Signal.LOST:
                    loss = _Loss(last.broken)
                elif signal is Signal.CLOSED and phase is Phase.CONFIRMING:
                    signal = Signal.CLOSED_WITH_NEWS if last.news else Signal.CLOSED_NO_NEWS
                follow.on(signal)
            elif phase is Phase.CHECKING:
                asked_at = self._clock()
                reply = yield Request("GET", self.run_path)
                if isinstance(reply, Broken) or reply.status in _RETRYABLE:
                    loss = _lost(reply, asked_at)
                    follow.on(Signal.LOST)
                elif reply.status not in (200, 404) or reply.status == 200 and not isinstance(reply.body, Mapping):
                    follow.on(Signal.REFUSED)
                    self._fail(answer_error(reply, f"reading the record of run {self.run_id}"))
                else:
                    record = reply.body if reply.status == 200 else None
                    if status_from_server(record, raised_interrupts=False) is None:
                        follow.on(Signal.RUNNING if last.news else Signal.RUNNING_NO_NEWS)
                        if not last.news:
                            loss = _Loss()
                    else:
                        verdict = _Verdict(record)
                        follow.on(Signal.OVER)
            elif phase is Phase.BACKING_OFF:
                delay = retry.next_delay(loss.broken, since=loss.since)
                if delay is None:
                    follow.on(Signal.GIVE_UP)
                    broken = loss.broken
                    self._fail(
                        retry.gave_up(self.run_id, broken, loss.status),
                        reachable=not (broken is not None and broken.unreachable),
                    )
                logger.debug("run %s: event stream lost (%s); reconnecting in %.2fs", self.run_id, loss.broken, delay)
                yield Sleep(delay)
                follow.on(Signal.RETRY)
            elif phase is Phase.FAILING:
                if (yield from self._error_frame(last.error or "")):
                    return
                loss = _Loss()
            elif phase is Phase.ENDING:
                assert verdict is not None
                yield from self._end(verdict)
                return
            else:  # pragma: no cover - DONE is only reached by returning or raising
                return

    def _opened(self, reply: Response) -> None:
        """An event stream opened: whether its reads pause to batch frames."""
        self._pause = self.timeouts.read_batch if reply.batched else 0.0

    def _read(
        self, cursor: ResumeCursor, retry: _Retry, *, batch: bool = True
    ) -> Generator[IOAction | Part, Any, _Read]:
        """Read one connection's body to its end; the frames' parts go to the caller.

        With ``batch``, after a short read, once its parts are delivered, it
        pauses for ``Timeouts.read_batch`` when the transport batches reads:
        the frames the server writes meanwhile then come in the next read,
        together.
        """
        decoder = SSEDecoder(self.limits.max_frame_chars)
        wire = self.wire
        fresh = False
        pause = Sleep(self._pause) if self._pause and batch else None
        stall = self.timeouts.stall
        news = False
        while True:
            chunk = yield _RECEIVE
            if stall is not None:
                # Checked on every read, heartbeats included: they come while the run is silent.
                self._check_stall(stall, news, ended=isinstance(chunk, Broken) or not chunk)
                news = False
            if isinstance(chunk, Broken):
                return _Read(Signal.LOST, fresh, broken=chunk)
            if not chunk:
                return _Read(Signal.CLOSED, fresh)
            for frame in decoder.feed(chunk):
                if self._anchor is not None:
                    self._check_anchor(frame.id, frame.event)
                if self._first_frame:
                    self._first_frame = False
                    if frame.event != "metadata" and self.run_id is not None:
                        # The stream began after the run's first events (a server under
                        # load subscribes it late): read the run again from its start.
                        logger.debug("run %s: its stream began without the metadata frame; replaying", self.run_id)
                        return _Read(Signal.LOST, fresh)
                cursor.observe(frame.id)
                event = frame.event
                if event == "error":
                    return _Read(Signal.ERROR_FRAME, fresh, error=frame.data)
                if event == "metadata":
                    # Once per attempt of the run: a retried attempt (its worker
                    # was lost) sends again what came after the latest checkpoint.
                    metadata = _metadata(frame.data)
                    if self.run_id is None:
                        self._named(_run_id_of(metadata))
                    number = attempt_number(metadata)
                    if number is not None:
                        wire.attempt(number, frame.id)
                    continue
                # Inline rather than a sub-generator per frame: this loop is the
                # hot path, and only a message start may need a request.
                try:
                    accepted = wire.accept(frame)
                except RemoteProtocolError as exc:
                    self._fail(exc)
                if accepted is None:
                    rewind = wire.rewind()
                    if rewind is not None:
                        # A stored event lost on its live way: its replay brings it.
                        logger.debug("run %s: an event did not come; replaying after %s", self.run_id, rewind)
                        cursor.rewind(rewind)
                        return _Read(Signal.LOST, fresh)
                    continue
                item, new = accepted
                prepare = wire.prepare(item)
                if prepare is not None:
                    yield from prepare
                for part in wire.convert(item):
                    yield part
                if new:
                    news = True
                    if not fresh:
                        # The first news on this connection resets the backoff;
                        # nothing sets it again before the connection ends.
                        fresh = True
                        retry.progress()
            if pause is not None and len(chunk) < _CAUGHT_UP:
                yield pause

    def _check_stall(self, stall: float, news: bool, *, ended: bool) -> None:
        """Fail the run once it sent no event for ``stall`` seconds (``Timeouts.stall``).

        ``news``: whether the reads since the last check brought one; ``ended``:
        the connection is over (a reconnect, or the run's end, is no stall of its
        own).
        """
        now = self._clock()
        if news or self._news_at is None:
            self._news_at = now
        elif not ended and now - self._news_at > stall:
            self._fail(
                RemoteTimeoutError(
                    f"run {self.run_id} sent no event for {stall:g}s (Timeouts.stall) while the server kept its "
                    "stream open: the worker executing it may be gone (a server starts such a run again once the "
                    "worker's heartbeat is stale, LG_BG_JOB_HEARTBEAT); the run is cancelled"
                )
            )

    def _check_anchor(self, frame_id: str | None, event: str) -> None:
        """A join's first frame: where it asked to start, or the events before it are gone."""
        anchor = self._anchor
        self._anchor = None
        # A full replay (``cursor``) starts before the cursor's event: the wire drops what came before.
        if anchor == "" and event == "metadata" or anchor and frame_id is not None and not id_after(frame_id, anchor):
            return
        self._events_gone("its stream no longer begins where the join asked")

    def _events_gone(self, why: str) -> NoReturn:
        # The run itself is fine: the join only cannot show it, so it is not cancelled.
        start = "the event after the cursor" if self._join is not None and self._join.after else "its first event"
        self._fail(
            RunEventsGoneError(
                f"cannot join run {self.run_id} from {start}: {why}; the server no longer holds those events "
                "(or the run was started without a resumable stream)"
            ),
            verdict=True,
        )

    def _end(self, verdict: _Verdict) -> Conversation:
        """End the run with the server's verdict, once every frame has arrived."""
        if self._anchor is not None:
            self._events_gone("its stream holds nothing")
        status = status_from_server(verdict.record, raised_interrupts=bool(self.wire.interrupts))
        assert status is not None
        wind_up = self.wire.wind_up()
        if wind_up is not None:
            yield from wind_up
        if status is RunStatus.FAILED:
            yield from self._failed(verdict.record, None)
        for part in self.wire.finish(
            interrupted=status is RunStatus.INTERRUPTED, completed=status is RunStatus.COMPLETED
        ):
            yield part
        self.state.move(status)
        self.follow.on(Signal.ENDED)

    def _error_frame(self, data: str) -> Generator[IOAction | Part, Any, bool]:
        """An error frame: end the run as its record says, unless it still runs.

        Returns:
            Whether the run ended; ``False`` when the record says it still runs, or
            could not be read: the error was the stream's (a replica whose database
            went away fails the stream it serves, not the run), and the stream is
            resumed until the server gives its verdict.
        """
        try:
            wire_error = orjson.loads(data)
        except orjson.JSONDecodeError:
            wire_error = {"message": data}
        reply = yield Request("GET", self.run_path)
        record = reply.body if not isinstance(reply, Broken) and reply.status == 200 else None
        deleted = not isinstance(reply, Broken) and reply.status == 404
        unknown = isinstance(reply, Broken) or reply.status in _RETRYABLE
        if unknown or isinstance(record, Mapping) and record.get("status") in _ACTIVE:
            # Not the run's verdict: it runs, or the record could not be read (the
            # replica's database is away); the verdict comes once the stream is back.
            logger.debug("run %s: its stream failed (%.200s); resuming it", self.run_id, data)
            # What the run failed with, if it did and names its error nowhere else.
            self._stream_error = wire_error if isinstance(wire_error, Mapping) else None
            self.follow.on(Signal.STREAM_FAILED)
            return False
        if deleted or isinstance(record, Mapping) and record.get("status") == "interrupted":
            # The run was deleted while it ran (a rollback; the stream says "Run not
            # found"), or another run interrupted it (``multitask_strategy="interrupt"``;
            # langgraph-api 0.11 ends its stream with ``UserInterrupt``): it was
            # cancelled, not failed, whatever the frame says.
            for part in self.wire.finish(interrupted=False):
                yield part
            self.state.move(RunStatus.CANCELLED)
            self.follow.on(Signal.ENDED)
            return True
        yield from self._failed(record, wire_error if isinstance(wire_error, Mapping) else None)
        return True

    def _failed(self, record: Any, wire_error: Mapping[str, Any] | None) -> Conversation:
        """Fail the run with the exception the server reports (its verdict)."""
        if isinstance(record, Mapping) and record.get("status") == "timeout":
            error: BaseException = RemoteTimeoutError(f"the server stopped run {self.run_id}: it ran past its timeout")
        else:
            kept_message = record.get("error_message") if isinstance(record, Mapping) else None
            if wire_error is not None and isinstance(kept_message, str) and kept_message:
                # aegra's error frame says "<type>: execution failed" and its run's
                # record keeps the error's own message (a handoff's command is only there).
                wire_error = {**wire_error, "message": kept_message}
            reply = yield Request("GET", f"{self._thread_path}/state")
            state = reply.body if not isinstance(reply, Broken) and reply.status == 200 else None
            if wire_error is None and not names_its_failure(state):
                # The error frame is not stored for a replay (and the Postgres + Redis
                # runtime may drop it live), and a task that raised ParentCommand
                # records no error: the thread's record keeps the run's error.
                reply = yield Request("GET", self._thread_path)
                thread = reply.body if not isinstance(reply, Broken) and reply.status == 200 else None
                kept = thread.get("error") if isinstance(thread, Mapping) else None
                wire_error = kept if isinstance(kept, Mapping) else self._stream_error
            error = failure_from_state(state, wire_error, max_error_types=self.limits.max_error_types)
        for part in self.wire.finish(interrupted=False):
            yield part
        self.follow.on(Signal.ENDED)
        self._fail(error, verdict=True)

    # --- cleanup -----------------------------------------------------------------

    def _cleanup(self) -> Conversation:
        if self._detached and self.state.status is RunStatus.RUNNING:
            # A detached start leaves its run going, on its thread, for a later join.
            return
        yield from self._settle()
        if not self.plan.thread_given and self._thread_made and self.state.status is not RunStatus.INTERRUPTED:
            yield from forget_thread(self._thread_path)

    def _settle(self) -> Conversation:
        if self.state.status is RunStatus.PENDING:
            self.state.move(RunStatus.CANCELLED)
            return
        if self.run_id is None or (self.state.terminal and not self._orphaned):
            return
        reply = yield cancel_request(self.run_path)
        if isinstance(reply, Broken):
            logger.warning("could not cancel remote run %s: %s", self.run_id, reply.detail)
            return
        if reply.status in (200, 202, 204):
            self.state.move(RunStatus.CANCELLED)
            return
        # Nothing left to cancel: the run ended before the cancel arrived.
        reply = yield Request("GET", self.run_path)
        if isinstance(reply, Broken) or reply.status not in (200, 404):
            logger.warning("could not learn how remote run %s ended", self.run_id)
            return
        status = status_from_server(
            reply.body if reply.status == 200 else None, raised_interrupts=bool(self.wire.interrupts)
        )
        if status is not None:
            self.state.move(status)


class _Retry:
    """Backoff for one run's stream: doubling delays, reset by every new frame,
    until ``budget`` seconds pass with no new frame."""

    def __init__(self, clock: Callable[[], float], budget: float) -> None:
        self._clock = clock
        self._budget = budget
        self._delay = _BACKOFF_FIRST
        self._since: float | None = None
        self._attempts = 0

    def progress(self) -> None:
        self._delay = _BACKOFF_FIRST
        self._since = None
        self._attempts = 0

    def next_delay(self, broken: Broken | None, *, since: float | None = None) -> float | None:
        """The wait before the next attempt, or ``None`` once the budget is spent.

        ``since`` is when the failed attempt began, if earlier than now.
        """
        now = self._clock()
        if self._since is None:
            self._since = now if since is None else min(since, now)
        if now - self._since >= self._budget:
            return None
        self._attempts += 1
        delay = min(self._delay, _BACKOFF_CAP, max(0.0, self._since + self._budget - now))
        self._delay = min(self._delay * 2, _BACKOFF_CAP)
        return delay

    def gave_up(self, run_id: str | None, broken: Broken | None, status: int | None = None) -> RemoteConnectionError:
        if broken is not None:
            cause = f"the last error was {broken.detail}"
        elif status is not None:
            cause = f"the server last answered HTTP {status}"
        else:
            cause = "the server kept closing it"
        error_type = RemoteTimeoutError if broken is not None and broken.timed_out else RemoteConnectionError
        error = error_type(
            f"lost the event stream of run {run_id} and could not resume it: {self._attempts} reconnects over "
            f"{self._budget:.1f}s (Timeouts.reconnect) brought no new event; {cause}"
        )
        error.__cause__ = broken.error if broken is not None else None
        return error


def _lost(reply: Response | Broken, since: float) -> _Loss:
    """The loss of an attempt that began at ``since`` and met ``reply``: a transport's failure or a retryable answer."""
    if isinstance(reply, Broken):
        return _Loss(reply, since)
    return _Loss(None, since, reply.status)


def _metadata(data: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _run_id_of(metadata: Any) -> str:
    run_id = metadata.get("run_id") if isinstance(metadata, dict) else None
    return run_id if isinstance(run_id, str) else ""


def _started_by(record: Mapping[str, Any], sent: Any) -> bool:
    """Whether the run ``record`` describes is the one a start that sent ``sent`` made."""
    kwargs = record.get("kwargs")
    if kwargs is None and "input" in record:
        # aegra keeps a run's input at the top of its record, and no command:
        # a start that sent one cannot be told by it.
        kwargs = {"input": record.get("input"), "command": None}
    if not isinstance(kwargs, Mapping) or not isinstance(sent, Mapping):
        return False
    try:
        # As the server read them: the start's JSON, decoded.
        wire = orjson.loads(
            orjson.dumps({"input": sent.get("input"), "command": sent.get("command")}, sdk_orjson_default)
        )
    except TypeError:
        return False
    return bool(kwargs.get("input") == wire["input"] and kwargs.get("command") == wire["command"])


def _transport_error(broken: Broken, doing: str) -> RemoteConnectionError:
    error_type = RemoteTimeoutError if broken.timed_out else RemoteConnectionError
    what = "timed out" if broken.timed_out else "could not send the request" if broken.local else "connection failed"
    error = error_type(f"{what} {doing}: {broken.detail}")
    error.__cause__ = broken.error
    return error
