"""One remote run, from its start command to its end, as a sans-I/O conversation.

``RunProtocol`` is a generator-driven state machine. The shell calls
``next_action(reply)`` and carries out what comes back (see ``actions``); the
protocol decides everything else:

* **run scoping**: the thread stream replays the whole thread on every
  connection, so only the events between this run's own ``lifecycle
  running`` (its run id is in the ``event_id``) and its root terminal pass;
* **end of run**: ``completed`` and ``failed`` end it; ``interrupted`` ends it
  once the events that trail the eager ``interrupted`` have arrived (the
  thread's REST state says which interrupts to wait for); a cancelled run ends
  on an ``interrupted`` with no interrupt before it, or on the next run's
  ``running``;
* **reconnects**: a stream that ends early is reopened with ``since`` = the
  last ``seq`` seen, which is valid because every connection numbers a
  thread's events identically;
* **errors**: a failed run is rebuilt from the thread state's ``Type('msg')``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any
from urllib.parse import quote
from uuid import UUID

from langgraph.types import Interrupt

from remote_graph._core.actions import (
    Action,
    Done,
    Emit,
    Fail,
    OpenStream,
    Receive,
    Request,
    Response,
    Sleep,
    Timeouts,
)
from remote_graph._core.commands import StartPlan, pending_interrupts
from remote_graph._core.convert import WireConverter
from remote_graph._core.nested import OutputSchema
from remote_graph._core.sse import SSEDecoder
from remote_graph.errors import (
    RemoteCommandError,
    RemoteConnectionError,
    RemoteProtocolError,
    RemoteRunError,
    exception_from_repr,
    remote_exception,
)

logger = logging.getLogger("remote_graph")

CHANNELS = ("values", "updates", "messages", "tools", "custom", "lifecycle", "input")
_RUN_DONE = frozenset({"success", "error", "interrupted", "timeout"})
_STATUS_PREFIX = re.compile(r"^(\d{3}): ")
_MAX_RECONNECTS = 3

Conversation = Generator[Action, Any, None]


def command_error(body: Any, http_status: int) -> RemoteCommandError:
    """Build the error for a refused command or a non-2xx REST answer."""
    if isinstance(body, Mapping):
        message = str(body.get("message") or body.get("detail") or body)
        code = str(body.get("error") or f"http_{http_status}")
    else:
        message, code = str(body), f"http_{http_status}"
    match = _STATUS_PREFIX.match(message)
    status = int(match.group(1)) if match else (http_status if http_status >= 400 else None)
    return RemoteCommandError(f"{code}: {message}", code=code, status=status)


def failure_from_state(state: Any, wire_message: str | None) -> RemoteRunError:
    """The exception a failed run raised, as the thread's REST state records it."""
    tasks = state.get("tasks") if isinstance(state, Mapping) else None
    for task in tasks or ():
        error = task.get("error") if isinstance(task, Mapping) else None
        if isinstance(error, str) and error:
            rebuilt = exception_from_repr(error)
            return rebuilt if rebuilt is not None else remote_exception(None, error)
        if isinstance(error, Mapping):
            return remote_exception(error.get("error"), str(error.get("message", "")))
    return remote_exception(None, wire_message or "remote run failed")


class RunProtocol:
    """The conversation for one run stream. See the module docstring."""

    def __init__(
        self,
        plan: StartPlan,
        thread_id: str,
        *,
        timeouts: Timeouts,
        clock: Callable[[], float] = time.monotonic,
        output_schema: OutputSchema | None = None,
    ) -> None:
        self.plan = plan
        # Learned before the run when set and not yet known (a run inside a parent task).
        self.output_schema = output_schema
        self.thread_id = thread_id
        self.timeouts = timeouts
        self.run_id: str | None = None
        self.status: str = "pending"
        self.converter = WireConverter()
        self._clock = clock
        self._thread_path = f"/threads/{quote(thread_id, safe='')}"
        self._gen = self._conversation()
        self._started = False
        self._last_seq: int | None = None

    # --- the shell's interface -------------------------------------------------

    def next_action(self, reply: Any = None) -> Action:
        """Advance the conversation with the outcome of the previous action."""
        if not self._started:
            self._started = True
            return next(self._gen)
        return self._gen.send(reply)

    @property
    def in_flight(self) -> bool:
        """True while the server may still be running this run."""
        return self.status == "running" and self.run_id is not None

    def cancel_request(self) -> Request | None:
        """The request that cancels the run on the server, if it is still running."""
        if not self.in_flight:
            return None
        self.status = "cancelled"
        return Request(
            "POST",
            f"{self._thread_path}/runs/{quote(str(self.run_id), safe='')}/cancel",
            params={"wait": "false", "action": "interrupt"},
        )

    @property
    def interrupts(self) -> list[Interrupt]:
        """Every interrupt this run has raised so far, in arrival order."""
        return [interrupt for _, interrupt in self.converter.interrupts]

    # --- the conversation ------------------------------------------------------

    def _conversation(self) -> Conversation:
        if self.output_schema is not None and not self.output_schema.known:
            yield from self._learn_output_schema()
        state: Any = None
        if self.plan.needs_state():
            reply: Response = yield Request("GET", f"{self._thread_path}/state")
            if reply.status == 200:
                state = reply.body
            elif reply.status != 404:
                yield Fail(command_error(reply.body, reply.status))
                return
        try:
            start = self.plan.request(self._thread_path, state)
        except Exception as exc:
            yield Fail(exc)
            return
        reply = yield start
        if _session_forgot_interrupt(reply):
            # The thread state names the interrupt as pending, but the server's
            # protocol session counts it consumed: a replayed step re-raises the
            # id it raised before. The runs API resumes from the thread state.
            start = self.plan.request(self._thread_path, state, via_runs=True)
            reply = yield start
        if start.path.endswith("/runs"):
            if reply.status != 200 or not isinstance(reply.body, Mapping) or "run_id" not in reply.body:
                yield Fail(command_error(reply.body, reply.status))
                return
            self.run_id = str(reply.body["run_id"])
        else:
            if reply.status != 200 or not isinstance(reply.body, Mapping) or reply.body.get("type") != "success":
                yield Fail(command_error(reply.body, reply.status))
                return
            # input.respond returns no run id; the resumed run is the thread's newest.
            reply = yield Request("GET", f"{self._thread_path}/runs", params={"limit": 1})
            runs = reply.body if reply.status == 200 else None
            if not runs:
                yield Fail(RemoteProtocolError("the server accepted input.respond but no run was created"))
                return
            self.run_id = str(runs[0]["run_id"])
        self.status = "running"
        yield from self._stream()

    def _learn_output_schema(self) -> Conversation:
        assert self.output_schema is not None
        assistant_id = self.plan.assistant_id
        if not _is_uuid(assistant_id):
            # The schemas endpoint takes an assistant id; a graph name names its default assistant.
            reply: Response = yield Request("POST", "/assistants/search", json={"graph_id": assistant_id, "limit": 1})
            found = reply.body if reply.status == 200 and isinstance(reply.body, list) else []
            if not found:
                self.output_schema.learn(None)
                return
            assistant_id = str(found[0].get("assistant_id"))
        reply = yield Request("GET", f"/assistants/{quote(assistant_id, safe='')}/schemas")
        self.output_schema.learn(reply.body if reply.status == 200 else None)

    def _stream(self) -> Conversation:
        scope = _RunScope(self)
        reconnects = 0
        while True:
            request: dict[str, Any] = {"channels": list(CHANNELS)}
            if self._last_seq is not None:
                request["since"] = self._last_seq
            reply = yield OpenStream(f"{self._thread_path}/stream/events", request)
            if reply.status != 200:
                yield Fail(command_error(reply.body, reply.status))
                return
            decoder = SSEDecoder()
            while True:
                chunk: bytes = yield Receive()
                if not chunk:
                    break
                for frame in decoder.feed(chunk):
                    envelope = _envelope(frame.data)
                    if envelope is None:
                        continue
                    if isinstance(envelope.get("seq"), int):
                        self._last_seq = envelope["seq"]
                    yield from scope.feed(envelope)
                    if scope.over:
                        return
                if scope.poll_due():
                    yield from scope.poll()
                    if scope.over:
                        return
                if scope.settle_expired():
                    logger.warning(
                        "run %s: events trailing the interrupt did not all arrive within %.1fs; "
                        "ending the run with what arrived",
                        self.run_id,
                        self.timeouts.settle,
                    )
                    yield from scope.end("interrupted")
                    return
            reconnects += 1
            if reconnects > _MAX_RECONNECTS:
                self.status = "failed"
                yield Fail(RemoteConnectionError(f"the event stream of run {self.run_id} kept closing before the run ended"))
                return


class _RunScope:
    """Keeps this run's events, converts them, and decides when the run is over."""

    def __init__(self, protocol: RunProtocol) -> None:
        self.p = protocol
        self.ours = protocol._last_seq is not None
        self.over = False
        self._running_id = f"synth:{protocol.run_id}:lc||running"
        self._expected: set[str] | None = None
        self._settle_deadline: float | None = None
        # After an eager root ``interrupted``: when to next ask whether the run is done,
        # and until when to ask back to back (the run is usually done within ms).
        self._next_poll: float | None = None
        self._eager_until = 0.0
        self._input_since_values = False
        # Shape of the thread's final values, and of the last root values seen.
        self._final_values: Any = _UNKNOWN
        self._last_values: Any = _UNKNOWN

    def feed(self, envelope: dict[str, Any]) -> Conversation:
        method = envelope.get("method")
        params = envelope.get("params") or {}
        ns = tuple(params.get("namespace") or ())
        data = params.get("data")
        root_lifecycle = data if method == "lifecycle" and not ns and isinstance(data, Mapping) else None
        if not self.ours:
            self.ours = root_lifecycle is not None and envelope.get("event_id") == self._running_id
            return
        if root_lifecycle is not None:
            data = root_lifecycle
            event = data.get("event")
            if event == "running":
                # A later run started: ours ended with no terminal event (a rollback cancel).
                yield from self.end("cancelled")
            elif event == "completed":
                yield from self.end("completed")
            elif event == "failed":
                yield from self._failed(data.get("error"))
            elif event == "interrupted":
                if self.p.converter.interrupts:
                    self._next_poll = self.p._clock()
                    self._eager_until = self._next_poll + _EAGER_POLL_WINDOW
                    yield from self.poll()
                else:
                    yield from self.end("cancelled")
            return
        if method == "input.requested":
            self._input_since_values = True
        elif method == "values" and not ns:
            self._input_since_values = False
            self._last_values = values_fingerprint(data)
        for part in self.p.converter.convert(str(method), ns, data):
            yield Emit(part)
        if self._expected is not None and self._settled():
            yield from self.end("interrupted")

    def end(self, status: str) -> Conversation:
        self.over = True
        if self.p.status == "running":
            self.p.status = status
        for part in self.p.converter.finish(interrupted=status == "interrupted"):
            yield Emit(part)
        yield Done()

    def settle_expired(self) -> bool:
        return not self.over and self._settle_deadline is not None and self.p._clock() > self._settle_deadline

    def poll_due(self) -> bool:
        return not self.over and self._next_poll is not None and self.p._clock() >= self._next_poll

    def _settled(self) -> bool:
        seen = {interrupt.id for interrupt in self.p.interrupts}
        if self._expected is None or not self._expected <= seen or self._input_since_values:
            return False
        # Tasks that finished in the step that paused report their updates and a
        # last root values after the interrupt; that values equals the thread's.
        return self._final_values is _UNKNOWN or self._last_values == self._final_values

    def poll(self) -> Conversation:
        """Ask whether the paused run is done; once it is, learn what it raised and left.

        The eager ``interrupted`` arrives while sibling tasks of the step may
        still run. The run is usually done within milliseconds, so it is asked
        back to back for a short window; after that the stream is read between
        polls, so a sibling that keeps running keeps streaming. The settle
        deadline only starts once the server calls the run done.
        """
        p = self.p
        while True:
            reply: Response = yield Request("GET", f"{p._thread_path}/runs/{quote(str(p.run_id), safe='')}")
            run = reply.body if reply.status == 200 and isinstance(reply.body, Mapping) else None
            if run is None or run.get("status") in _RUN_DONE:
                break
            if p._clock() >= self._eager_until:
                self._next_poll = p._clock() + _POLL_INTERVAL
                return
            yield Sleep(_EAGER_POLL_SLEEP)
        self._next_poll = None
        self._settle_deadline = p._clock() + p.timeouts.settle
        reply = yield Request("GET", f"{p._thread_path}/state")
        state = reply.body if reply.status == 200 else None
        self._expected = {item["interrupt_id"] for item in pending_interrupts(state)}
        if isinstance(state, Mapping) and isinstance(state.get("values"), Mapping):
            self._final_values = values_fingerprint(state["values"])
        if self._settled():
            yield from self.end("interrupted")

    def _failed(self, wire_error: Any) -> Conversation:
        p = self.p
        reply: Response = yield Request("GET", f"{p._thread_path}/state")
        error = failure_from_state(reply.body if reply.status == 200 else None, str(wire_error) if wire_error else None)
        self.over = True
        p.status = "failed"
        for part in p.converter.finish(interrupted=False):
            yield Emit(part)
        yield Fail(error)


_UNKNOWN: Any = object()
_POLL_INTERVAL = 0.1
_EAGER_POLL_WINDOW = 1.0
_EAGER_POLL_SLEEP = 0.02
# The server's rule for which dicts in a state are messages (it rewrites them on the stream).
_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "remove"})
_TYPE_ALIASES = {"user": "human", "assistant": "ai"}


def values_fingerprint(value: Any) -> Any:
    """A comparable shape of a state, equal for the REST state and the event stream.

    The event stream rewrites every dict in a list whose ``type`` names a
    message kind into a protocol message, while the REST state keeps it as
    stored; such a dict compares by kind, id, name, text and tool call ids.
    """
    if isinstance(value, Mapping):
        return {key: values_fingerprint(item) for key, item in value.items() if key != "__interrupt__"}
    if isinstance(value, (list, tuple)):
        return [_message_fingerprint(item) if _message_kind(item) else values_fingerprint(item) for item in value]
    return value


def _message_kind(value: Any) -> str | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        return None
    kind = _TYPE_ALIASES.get(value["type"], value["type"])
    return kind if kind in _MESSAGE_TYPES else None


def _message_fingerprint(message: Mapping[str, Any]) -> tuple[Any, ...]:
    calls = message.get("tool_calls") or (message.get("additional_kwargs") or {}).get("tool_calls") or []
    call_ids = tuple(call.get("id") for call in calls if isinstance(call, Mapping)) if isinstance(calls, list) else ()
    message_id = message.get("id")
    name = message.get("name")
    return (
        "message",
        _message_kind(message),
        message_id if isinstance(message_id, str) else None,
        name if isinstance(name, str) else None,
        _text(message.get("content", "")),
        call_ids,
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block if isinstance(block, str) else str(block.get("text", "")) if isinstance(block, Mapping) and block.get("type", "text") == "text" else ""
            for block in content
        )
    return ""


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except ValueError:
        return False
    return True


def _session_forgot_interrupt(reply: Response) -> bool:
    body = reply.body
    return reply.status == 200 and isinstance(body, Mapping) and body.get("type") == "error" and body.get("error") == "no_such_interrupt"


def _envelope(data: str) -> dict[str, Any] | None:
    try:
        envelope = json.loads(data)
    except ValueError:
        return None
    if not isinstance(envelope, dict) or envelope.get("type") != "event":
        return None
    return envelope
