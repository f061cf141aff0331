"""RunProtocol driven by a scripted server: no sockets, no clock."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.types import Command

from remote_graph._core.actions import Done, Emit, Fail, OpenStream, Receive, Request, Response, Sleep, Timeouts
from remote_graph._core.commands import RunOptions, StartPlan
from remote_graph._core.protocol import RunProtocol, values_fingerprint
from remote_graph.errors import RemoteCommandError, RemoteConnectionError

RUN = "r2"


def frame(seq: int, method: str, data: Any, ns: list[str] | None = None, event_id: str | None = None) -> bytes:
    envelope = {
        "type": "event",
        "event_id": event_id or f"{seq}-0",
        "seq": seq,
        "method": method,
        "params": {"namespace": ns or [], "timestamp": 0, "data": data},
    }
    return f"event: {method}\r\ndata: {json.dumps(envelope)}\r\nid: {seq}\r\n\r\n".encode()


def lifecycle(seq: int, run: str, event: str, **extra: Any) -> bytes:
    return frame(seq, "lifecycle", {"event": event, "graph_name": "g", **extra}, event_id=f"synth:{run}:lc||{event}")


class Server:
    """Answers the protocol's actions from canned responses; records what it was asked."""

    def __init__(self, chunks: list[list[bytes]], rest: Callable[[Request], Response] | None = None) -> None:
        self.connections = list(chunks)
        self.rest = rest or (lambda r: Response(404, {"detail": "not found"}))
        self.requests: list[Request] = []
        self.opened: list[OpenStream] = []
        self.current: list[bytes] = []

    def answer(self, action: Any) -> Any:
        if isinstance(action, Request):
            self.requests.append(action)
            if action.path.endswith("/runs") and action.method == "POST":
                return Response(200, {"run_id": RUN, "status": "pending"})
            if action.path.endswith("/commands"):
                return Response(200, {"type": "success", "id": 1, "result": {}})
            if action.path.endswith("/runs"):
                return Response(200, [{"run_id": RUN}])
            return self.rest(action)
        if isinstance(action, OpenStream):
            self.opened.append(action)
            self.current = list(self.connections.pop(0))
            return Response(200, None)
        if isinstance(action, Receive):
            return self.current.pop(0) if self.current else b""
        if isinstance(action, Sleep):
            return None
        raise AssertionError(action)


def drive(protocol: RunProtocol, server: Server) -> tuple[list[dict[str, Any]], Any]:
    parts, reply = [], None
    for _ in range(10_000):
        action = protocol.next_action(reply)
        reply = None
        if isinstance(action, Emit):
            parts.append(action.part)
        elif isinstance(action, (Done, Fail)):
            return parts, action
        else:
            reply = server.answer(action)
    raise AssertionError("protocol did not finish")


def protocol(input: Any = None, *, thread_given: bool = False) -> RunProtocol:
    plan = StartPlan(assistant_id="g", input=input, config={}, options=RunOptions(), thread_given=thread_given)
    return RunProtocol(plan, "t1", timeouts=Timeouts(), clock=lambda: 0.0)


def test_only_this_runs_events_pass() -> None:
    stream = [
        lifecycle(1, "r1", "running"),
        frame(2, "values", {"x": "old"}),
        lifecycle(3, "r1", "completed"),
        lifecycle(4, RUN, "running") + frame(5, "values", {"x": "new"}),
        lifecycle(6, RUN, "completed") + frame(7, "values", {"x": "next run"}),
    ]
    p = protocol({"x": 1})
    parts, end = drive(p, Server([stream]))
    assert isinstance(end, Done) and p.status == "completed"
    assert [part["data"] for part in parts] == [{"x": "new"}]


def test_interrupted_run_waits_for_the_interrupts_the_state_names() -> None:
    stream = [
        lifecycle(1, RUN, "running"),
        frame(2, "updates", {}) + frame(3, "input.requested", {"interrupt_id": "a", "payload": "A?"}),
        lifecycle(4, RUN, "interrupted"),
        frame(5, "values", {"out": []}),
        frame(6, "updates", {}) + frame(7, "input.requested", {"interrupt_id": "b", "payload": "B?"}),
        frame(8, "values", {"out": []}),
        frame(9, "values", {"never": "read"}),
    ]

    def rest(request: Request) -> Response:
        if request.path.endswith(f"/runs/{RUN}"):
            return Response(200, {"status": "success"})
        return Response(200, {"tasks": [{"interrupts": [{"id": "a"}]}, {"interrupts": [{"id": "b"}]}]})

    p = protocol({"out": []})
    parts, end = drive(p, Server([stream], rest))
    assert isinstance(end, Done) and p.status == "interrupted"
    assert [i.value for i in p.interrupts] == ["A?", "B?"]
    assert [part["type"] for part in parts] == ["updates", "values", "updates", "values"]


def test_interrupted_run_waits_for_tasks_that_finished_beside_the_interrupt() -> None:
    ai = {"type": "ai", "id": "m1", "content": [{"type": "text", "text": "hi"}]}
    stream = [
        lifecycle(1, RUN, "running"),
        frame(2, "updates", {}) + frame(3, "input.requested", {"interrupt_id": "a", "payload": "A?"}),
        lifecycle(4, RUN, "interrupted"),
        frame(5, "values", {"x": 3, "messages": []}),
        frame(6, "updates", {"finish": {"x": 30}}),
        frame(7, "values", {"x": 30, "messages": [ai]}),
        frame(8, "values", {"never": "read"}),
    ]
    # The REST state serializes the message differently from the event stream.
    state = {"values": {"x": 30, "messages": [{"type": "ai", "id": "m1", "content": "hi", "tool_calls": []}]}, "tasks": [{"interrupts": [{"id": "a"}]}]}

    def rest(request: Request) -> Response:
        return Response(200, {"status": "success"} if request.path.endswith(f"/runs/{RUN}") else state)

    p = protocol({"x": 1})
    parts, end = drive(p, Server([stream], rest))
    assert isinstance(end, Done) and p.status == "interrupted"
    assert [part["type"] for part in parts] == ["updates", "values", "updates", "values"]
    assert parts[-1]["data"]["x"] == 30


def test_a_paused_run_keeps_streaming_while_a_sibling_task_still_runs() -> None:
    stream = [
        lifecycle(1, RUN, "running"),
        frame(2, "updates", {}) + frame(3, "input.requested", {"interrupt_id": "a", "payload": "A?"}),
        lifecycle(4, RUN, "interrupted"),
        frame(5, "values", {"x": 1}),
        frame(6, "custom", {"tick": 1}),
        frame(7, "updates", {"sibling": {"x": 2}}) + frame(8, "values", {"x": 2}),
        frame(9, "values", {"never": "read"}),
    ]
    ticks = iter(range(10_000))
    polls: list[int] = []
    server: Server

    def rest(request: Request) -> Response:
        if request.path.endswith(f"/runs/{RUN}"):
            # The run stays busy until the sibling's events have been read off the stream.
            polls.append(len(server.current))
            return Response(200, {"status": "success" if len(server.current) <= 1 else "running"})
        return Response(200, {"values": {"x": 2}, "tasks": [{"interrupts": [{"id": "a"}]}]})

    # Every look at the clock finds 60 ms gone: the back-to-back polls give up
    # after their window, and polls then fall due between chunks.
    p = RunProtocol(
        StartPlan(assistant_id="g", input={"x": 1}, config={}, options=RunOptions()), "t1", timeouts=Timeouts(), clock=lambda: next(ticks) * 0.06
    )
    server = Server([stream], rest)
    parts, end = drive(p, server)
    assert isinstance(end, Done) and p.status == "interrupted"
    assert [part["type"] for part in parts] == ["updates", "values", "custom", "updates", "values"]
    assert polls[0] > 1 and polls[-1] <= 1  # polled while events were still to come, and once they were read


@pytest.mark.parametrize(
    "rest_values, wire_values",
    [
        ({"m": [{"type": "ai", "id": "1", "content": "hi", "tool_calls": [{"id": "c", "name": "f", "args": {}}]}]},
         {"m": [{"type": "ai", "id": "1", "content": [{"type": "text", "text": "hi"}], "tool_calls": [{"id": "c", "name": "f", "args": {}}]}]}),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, {"tools": [{"type": "function", "content": []}]}),
        ({"who": [{"type": "user", "id": "u", "content": "x"}]}, {"who": [{"type": "human", "id": "u", "content": [{"type": "text", "text": "x"}]}]}),
        ({"n": 1.5, "nested": {"a": [1, {"b": None}]}}, {"n": 1.5, "nested": {"a": [1, {"b": None}]}}),
    ],
)
def test_values_fingerprint_sees_through_the_streams_message_rewrite(rest_values: Any, wire_values: Any) -> None:
    assert values_fingerprint(rest_values) == values_fingerprint(wire_values)


def test_a_paused_functional_graph_ends_on_its_interrupts_alone() -> None:
    # An @entrypoint's REST state has values None while the stream sends {}.
    stream = [
        lifecycle(1, RUN, "running"),
        frame(2, "updates", {}) + frame(3, "input.requested", {"interrupt_id": "a", "payload": "A?"}),
        lifecycle(4, RUN, "interrupted"),
        frame(5, "values", {}),
        frame(6, "values", {"never": "read"}),
    ]

    def rest(request: Request) -> Response:
        if request.path.endswith(f"/runs/{RUN}"):
            return Response(200, {"status": "success"})
        return Response(200, {"values": None, "tasks": [{"interrupts": [{"id": "a"}]}]})

    p = protocol({"x": 1})
    parts, end = drive(p, Server([stream], rest))
    assert isinstance(end, Done) and p.status == "interrupted"
    assert [part["type"] for part in parts] == ["updates", "values"]


def test_values_fingerprint_tells_an_edited_message_apart() -> None:
    before = {"messages": [{"type": "ai", "id": "1", "content": "draft"}]}
    after = {"messages": [{"type": "ai", "id": "1", "content": "final"}]}
    assert values_fingerprint(before) != values_fingerprint(after)


def test_cancelled_run_ends_on_interrupted_without_interrupts_or_on_the_next_run() -> None:
    p = protocol({"x": 1})
    _, end = drive(p, Server([[lifecycle(1, RUN, "running"), lifecycle(2, RUN, "interrupted")]]))
    assert isinstance(end, Done) and p.status == "cancelled"
    p = protocol({"x": 1})
    _, end = drive(p, Server([[lifecycle(1, RUN, "running"), lifecycle(2, "r3", "running")]]))
    assert isinstance(end, Done) and p.status == "cancelled"


def test_failed_run_raises_the_remote_exception_type() -> None:
    stream = [lifecycle(1, RUN, "running"), lifecycle(2, RUN, "failed", error="An internal error occurred")]
    rest = lambda r: Response(200, {"tasks": [{"error": "Boom('kaboom')"}]})  # noqa: E731
    p = protocol({"x": 1})
    _, end = drive(p, Server([stream], rest))
    assert isinstance(end, Fail) and type(end.error).__name__ == "Boom" and str(end.error) == "kaboom"


def test_a_dropped_stream_is_reopened_after_the_last_seq() -> None:
    first = [lifecycle(1, RUN, "running"), frame(2, "values", {"x": 1})]
    second = [frame(3, "values", {"x": 2}), lifecycle(4, RUN, "completed")]
    server = Server([first, second])
    p = protocol({"x": 1})
    parts, end = drive(p, server)
    assert isinstance(end, Done)
    assert [o.json.get("since") for o in server.opened] == [None, 2]
    assert [part["data"] for part in parts] == [{"x": 1}, {"x": 2}]


def test_a_stream_that_keeps_dropping_fails_with_a_connection_error() -> None:
    server = Server([[lifecycle(1, RUN, "running")]] + [[] for _ in range(5)])
    _, end = drive(protocol({"x": 1}), server)
    assert isinstance(end, Fail) and isinstance(end.error, RemoteConnectionError)


def test_refused_command_is_a_command_error() -> None:
    class Refusing(Server):
        def answer(self, action: Any) -> Any:
            if isinstance(action, Request) and action.path.endswith("/runs"):
                return Response(409, {"detail": "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."})
            return super().answer(action)

    _, end = drive(protocol({"x": 1}), Refusing([]))
    assert isinstance(end, Fail) and isinstance(end.error, RemoteCommandError)
    assert end.error.status == 409 and "already running" in str(end.error)


def test_cancel_request_only_while_running() -> None:
    p = protocol({"x": 1})
    assert p.cancel_request() is None
    server = Server([[lifecycle(1, RUN, "running"), frame(2, "values", {"x": 1})]])
    action = p.next_action()
    while not isinstance(action, Emit):
        action = p.next_action(server.answer(action))
    cancel = p.cancel_request()
    assert cancel is not None and cancel.path.endswith(f"/runs/{RUN}/cancel")
    assert p.status == "cancelled" and p.cancel_request() is None


@pytest.mark.parametrize(
    "input, thread_given, fetches_state",
    [({"x": 1}, True, False), (Command(resume="y"), False, False), (Command(resume="y"), True, True)],
)
def test_thread_state_is_read_only_to_resume_a_named_thread(input: Any, thread_given: bool, fetches_state: bool) -> None:
    state = Response(200, {"tasks": [{"interrupts": [{"id": "i1"}]}]})
    server = Server([[lifecycle(1, RUN, "running"), lifecycle(2, RUN, "completed")]], rest=lambda r: state)
    drive(protocol(input, thread_given=thread_given), server)
    assert any(r.path.endswith("/state") for r in server.requests) is fetches_state


def test_resume_learns_its_run_from_the_thread_newest_run() -> None:
    state = Response(200, {"tasks": [{"interrupts": [{"id": "i1"}]}]})
    server = Server([[lifecycle(1, RUN, "running"), lifecycle(2, RUN, "completed")]], rest=lambda r: state)
    p = protocol(Command(resume="y"), thread_given=True)
    _, end = drive(p, server)
    assert isinstance(end, Done) and p.run_id == RUN
    assert [r.path for r in server.requests] == ["/threads/t1/state", "/threads/t1/commands", "/threads/t1/runs"]
