"""One remote run, from its start request to its end, as a sans-I/O conversation.

``RunDriver`` is fed the outcome of each I/O action and answers with the next
action or the next stream part; the sync and async shells only carry actions
out. The conversation:

1. **start**: learn the output schema if a parent task needs it, read the
   thread's state if a resume needs it, then create the run through the runs
   API (``commands.StartPlan``); the answer carries the run id.
2. **follow**: read the run's own resumable stream,
   ``GET /threads/{id}/runs/{run_id}/stream``. It carries only this run's
   events (a thread's history costs nothing), every frame has an id, and the
   server closes it when the run ends.
3. **reconnect**: a connection that breaks (reset, cut mid-body, read
   timeout) or ends while the server says the run still runs is reopened
   after the last event delivered (``cursor.ResumeCursor``), with backoff,
   until ``Timeouts.reconnect`` passes without a new event.
4. **end**: when the stream closes, the run record says how it ended
   (``state.status_from_server``); an ``error`` event fails the run with the
   exception the thread's state records.

``abandon()`` switches to the cleanup conversation: cancel the run on the
server if it may still be running, and record what the server answered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, NoReturn
from urllib.parse import quote

import orjson
from langgraph.types import Interrupt

from remote_graph._core.actions import Broken, IOAction, OpenStream, Receive, Request, Response, Sleep, Timeouts
from remote_graph._core.commands import StartPlan
from remote_graph._core.convert import Namespace, Part, WireConverter
from remote_graph._core.cursor import ResumeCursor
from remote_graph._core.failure import answer_error, failure_from_state
from remote_graph._core.limits import Limits
from remote_graph._core.nested import OutputSchema
from remote_graph._core.schema import learn_output_schema
from remote_graph._core.sse import SSEDecoder
from remote_graph._core.state import RunState, RunStatus, status_from_server
from remote_graph.errors import RemoteConnectionError, RemoteProtocolError, RemoteTimeoutError

logger = logging.getLogger("remote_graph")

# A conversation yields I/O actions (answered through ``send``) and parts for the caller.
Conversation = Generator[IOAction | Part, Any, None]

_BACKOFF_FIRST = 0.05
_BACKOFF_CAP = 2.0
_SSE = "text/event-stream"
_UNASKED: Any = object()
_STILL_RUNNING: Any = object()
# One read action serves every read: it carries nothing.
_RECEIVE = Receive()
# Answers of a proxy or a restarting server: worth another try.
_RETRYABLE = frozenset({502, 503, 504})
# A step's tasks only name a streaming message's node early; the stream waits
# on that read, so it gets seconds, not the full request budget.
STEP_READ_TIMEOUT = 2.0


class RunDriver:
    """The conversation for one remote run. See the module docstring.

    Args:
        plan: What to send to start the run.
        thread_id: The server thread the run executes on.
        timeouts: Bounds on every wait.
        output_schema: Learned before the run when given and not yet known
            (a run inside a parent task returns only the output keys).
        limits: Bounds on what the server's answers may make the run hold.
        clock: Monotonic seconds; replaced in tests.
    """

    def __init__(
        self,
        plan: StartPlan,
        thread_id: str,
        *,
        timeouts: Timeouts,
        output_schema: OutputSchema | None = None,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.plan = plan
        self.thread_id = thread_id
        self.timeouts = timeouts
        self.limits = limits if limits is not None else Limits()
        self.output_schema = output_schema
        self.run_id: str | None = None
        self.state = RunState()
        self.converter = WireConverter()
        self._clock = clock
        self._thread_path = f"/threads/{quote(thread_id, safe='')}"
        self._conversation: Conversation = self._run()
        self._started = False
        # Set when the run was given up on while it may still be going.
        self._orphaned = False
        # The protocol seq of the last event delivered; repeats are dropped.
        self._last_seq = 0
        # Cleared when a read of the step's tasks fails: the server is slow or
        # refuses, and a message's node then waits for its update instead.
        self._step_reads = True

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
        return [interrupt for _, interrupt in self.converter.interrupts]

    @property
    def run_path(self) -> str:
        assert self.run_id is not None
        return f"{self._thread_path}/runs/{quote(self.run_id, safe='')}"

    # --- start -------------------------------------------------------------------

    def _run(self) -> Conversation:
        if self.output_schema is not None and not self.output_schema.known:
            yield from learn_output_schema(self.plan.assistant_id, self.output_schema)
        thread_state: Any = None
        if self.plan.needs_state():
            reply = yield Request("GET", f"{self._thread_path}/state")
            self._check_sent(reply, "reading the thread's state")
            if reply.status == 200 and isinstance(reply.body, Mapping):
                thread_state = reply.body
            elif reply.status != 404:
                self._fail(answer_error(reply, "reading the thread's state"))
        try:
            start = self.plan.request(self._thread_path, thread_state)
        except BaseException as exc:
            self._fail(exc)
        reply = yield start
        self._check_sent(reply, "starting the run")
        if reply.status != 200 or not isinstance(reply.body, Mapping) or "run_id" not in reply.body:
            self._fail(answer_error(reply, "starting the run", "the run's record"))
        self.run_id = str(reply.body["run_id"])
        self.state.move(RunStatus.RUNNING)
        try:
            yield from self._follow()
        except Exception as exc:
            # Events that arrived before the failure (a message held for its
            # node, a channel event waiting for the next event) are delivered
            # before it, as a local run's events are.
            for part in self.converter.finish(interrupted=False):
                yield part
            if not self.state.terminal:
                # Raised below the driver's own checks (a frame past its limit):
                # the run failed all the same, and may still be going.
                self._fail(exc)
            raise

    def _check_sent(self, reply: Response | Broken, doing: str) -> None:
        if isinstance(reply, Broken):
            self._fail(_transport_error(reply, f"while {doing}"))

    def _fail(self, error: BaseException, *, verdict: bool = False) -> NoReturn:
        """Fail the run with ``error``. Unless the server itself ended the run
        (``verdict``), a run that was running may still be going: the cleanup
        cancels it."""
        if not verdict and self.state.status is RunStatus.RUNNING:
            self._orphaned = True
        self.state.move(RunStatus.FAILED, error=error)
        raise error

    # --- follow ------------------------------------------------------------------

    def _follow(self) -> Conversation:
        cursor = ResumeCursor()
        retry = _Retry(self._clock, self.timeouts.reconnect)
        # A clean close is not taken on trust: a proxy may pass a cut on as a
        # normal end of body. The run record is read, and once it says the run
        # is over the stream is reopened from the cursor; the run ends when
        # that connection closes with nothing new (a finished run's replay
        # closes at once).
        record: Any = _UNASKED
        while True:
            opened_at = self._clock()
            reply = yield OpenStream(f"{self.run_path}/stream", cursor.last_event_id)
            if isinstance(reply, Broken) or reply.status in _RETRYABLE:
                # The budget counts from the attempt's start: a transport may
                # spend seconds on its own connect retries before it fails.
                yield from self._backoff(retry, reply if isinstance(reply, Broken) else None, since=opened_at)
                continue
            if reply.status != 200 or not reply.content_type.startswith(_SSE):
                self._fail(answer_error(reply, f"opening the event stream of run {self.run_id}", f"an event stream ({_SSE!r})"))
            decoder = SSEDecoder(self.limits.max_frame_chars)
            fresh = False
            while True:
                chunk = yield _RECEIVE
                if isinstance(chunk, Broken):
                    yield from self._backoff(retry, chunk)
                    break
                if not chunk:
                    if record is _UNASKED:
                        record = yield from self._record(retry)
                        if record is _STILL_RUNNING:
                            if not fresh:
                                yield from self._backoff(retry, None)
                            record = _UNASKED
                    elif not fresh:
                        yield from self._end(record)
                        return
                    break
                for frame in decoder.feed(chunk):
                    cursor.observe(frame.id)
                    if frame.event == "error":
                        yield from self._error_event(frame.data)
                        return
                    if frame.event == "metadata":
                        continue
                    # Inline rather than a sub-generator per event: this loop is
                    # the hot path, and only a message start may need a request.
                    event = self._event(frame.data)
                    if event is None:
                        continue
                    method, params, new = event
                    ns = self.converter.wants_step(method, params) if self._step_reads else None
                    if ns is not None:
                        yield from self._learn_step(ns, params)
                    for part in self.converter.convert(method, params):
                        yield part
                    if new and not fresh:
                        # The first news on this connection resets the backoff;
                        # nothing sets it again before the connection ends.
                        fresh = True
                        retry.progress()

    def _event(self, data: str) -> tuple[str, Mapping[str, Any], bool] | None:
        """One protocol event's ``(method, params, new)``, or ``None`` for what
        is not an event or was delivered already.

        Events are told apart by their protocol ``seq``; one without a seq is
        passed on but cannot count as news (a replay would repeat it).
        """
        try:
            envelope = orjson.loads(data)
        except orjson.JSONDecodeError:
            self._fail(RemoteProtocolError(f"run {self.run_id} sent an event that is not JSON: {data[:200]!r}"))
        if not isinstance(envelope, dict) or envelope.get("type") != "event":
            return None
        seq = envelope.get("seq")
        new = isinstance(seq, int)
        if isinstance(seq, int):
            if seq <= self._last_seq:
                return None
            self._last_seq = seq
        params = envelope.get("params")
        # Parsed JSON: an object is a dict (and ``isinstance(_, dict)`` skips the ABC check).
        return str(envelope.get("method")), params if isinstance(params, dict) else {}, new

    def _learn_step(self, ns: Namespace, params: Mapping[str, Any]) -> Generator[IOAction, Any, None]:
        """A message starts in a step whose node is not known yet: the thread's
        state names the step's tasks. Only the node is at stake, so a failed
        read leaves it unknown instead of failing."""
        query = {"subgraphs": "true" if ns else "false"}
        reply = yield Request("GET", f"{self._thread_path}/state", params=query, timeout=STEP_READ_TIMEOUT)
        state = reply.body if isinstance(reply, Response) and reply.status == 200 else None
        if state is None:
            self._step_reads = False
        if state is not None and self.converter.wants_nodes(ns, state):
            # Rare: only once an update came from a name the state's tasks do not list.
            path = f"/assistants/{quote(self.plan.assistant_id, safe='')}/graph"
            reply = yield Request("GET", path, params={"xray": "true"}, timeout=STEP_READ_TIMEOUT)
            self.converter.learn_nodes(reply.body if isinstance(reply, Response) and reply.status == 200 else None)
        start = params.get("data")
        message_id = start.get("id") if isinstance(start, Mapping) else None
        self.converter.learn_step(ns, state, message_id)

    def _record(self, retry: _Retry) -> Generator[IOAction, Any, Any]:
        """The run's record after a clean close: its body, ``None`` when the run
        was deleted, ``_STILL_RUNNING``, or ``_UNASKED`` after a transport failure."""
        asked_at = self._clock()
        reply = yield Request("GET", self.run_path)
        if isinstance(reply, Broken):
            yield from self._backoff(retry, reply, since=asked_at)
            return _UNASKED
        if reply.status not in (200, 404) or reply.status == 200 and not isinstance(reply.body, Mapping):
            self._fail(answer_error(reply, f"reading the record of run {self.run_id}"))
        record = reply.body if reply.status == 200 else None
        if status_from_server(record, raised_interrupts=False) is None:
            return _STILL_RUNNING
        return record

    def _end(self, record: Any) -> Conversation:
        """End the run with the server's verdict, once every event has arrived."""
        status = status_from_server(record, raised_interrupts=bool(self.converter.interrupts))
        assert status is not None
        if status is RunStatus.FAILED:
            yield from self._failed(record, None)
        for part in self.converter.finish(interrupted=status is RunStatus.INTERRUPTED):
            yield part
        self.state.move(status)

    def _error_event(self, data: str) -> Conversation:
        try:
            wire_error = orjson.loads(data)
        except orjson.JSONDecodeError:
            wire_error = {"message": data}
        reply = yield Request("GET", self.run_path)
        if not isinstance(reply, Broken) and reply.status == 404:
            # The run was deleted while it ran (a rollback); the stream says "Run not found".
            for part in self.converter.finish(interrupted=False):
                yield part
            self.state.move(RunStatus.CANCELLED)
            return
        record = reply.body if not isinstance(reply, Broken) and reply.status == 200 else None
        yield from self._failed(record, wire_error if isinstance(wire_error, Mapping) else None)

    def _failed(self, record: Any, wire_error: Mapping[str, Any] | None) -> Conversation:
        if isinstance(record, Mapping) and record.get("status") == "timeout":
            error: BaseException = RemoteTimeoutError(f"the server stopped run {self.run_id}: it ran past its timeout")
        else:
            reply = yield Request("GET", f"{self._thread_path}/state")
            state = reply.body if not isinstance(reply, Broken) and reply.status == 200 else None
            error = failure_from_state(state, wire_error, max_error_types=self.limits.max_error_types)
        for part in self.converter.finish(interrupted=False):
            yield part
        self._fail(error, verdict=True)

    def _backoff(self, retry: _Retry, broken: Broken | None, *, since: float | None = None) -> Generator[IOAction, Any, None]:
        delay = retry.next_delay(broken, since=since)
        if delay is None:
            error = retry.gave_up(self.run_id, broken)
            if broken is not None and broken.unreachable:
                # The server cannot be reached, so it cannot be told to cancel
                # either; trying would only add the transport's connect retries.
                self.state.move(RunStatus.FAILED, error=error)
                raise error
            self._fail(error)
        logger.debug("run %s: event stream lost (%s); reconnecting in %.2fs", self.run_id, broken, delay)
        yield Sleep(delay)

    # --- cleanup -----------------------------------------------------------------

    def _cleanup(self) -> Conversation:
        if self.state.status is RunStatus.PENDING:
            self.state.move(RunStatus.CANCELLED)
            return
        if self.run_id is None or (self.state.terminal and not self._orphaned):
            return
        reply = yield Request("POST", f"{self.run_path}/cancel", params={"wait": "false", "action": "interrupt"})
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
        status = status_from_server(reply.body if reply.status == 200 else None, raised_interrupts=bool(self.converter.interrupts))
        if status is not None:
            self.state.move(status)


class _Retry:
    """Backoff for one run's stream: doubling delays, reset by every new event,
    until ``budget`` seconds pass with no new event."""

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

    def gave_up(self, run_id: str | None, broken: Broken | None) -> RemoteConnectionError:
        cause = f"the last error was {broken.detail}" if broken is not None else "the server kept closing it"
        error_type = RemoteTimeoutError if broken is not None and broken.timed_out else RemoteConnectionError
        error = error_type(
            f"lost the event stream of run {run_id} and could not resume it: {self._attempts} reconnects over "
            f"{self._budget:.1f}s (Timeouts.reconnect) brought no new event; {cause}"
        )
        error.__cause__ = broken.error if broken is not None else None
        return error


def _transport_error(broken: Broken, doing: str) -> RemoteConnectionError:
    error_type = RemoteTimeoutError if broken.timed_out else RemoteConnectionError
    what = "timed out" if broken.timed_out else "could not send the request" if broken.local else "connection failed"
    error = error_type(f"{what} {doing}: {broken.detail}")
    error.__cause__ = broken.error
    return error
