"""RunDriver with a v3 run's wire against a scripted server (``fake_run.FakeServer``).

The runs below are v3 protocol events, each with its ``seq``; the parts a
run's frames stand for are what langgraph's converter makes of each event
once (``reference_parts``), whatever cuts, closes and replays the server
scripts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import pytest
from langgraph.types import Command, Interrupt

from remote_graph._core.actions import Broken, Request, Response, Timeouts
from remote_graph._core.convert import WireConverter
from remote_graph._core.cursor import FROM_START
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.sse import Frame as SSEFrame
from remote_graph._core.sse import SSEDecoder
from remote_graph._core.state import RunStatus
from remote_graph._core.v3_wire import STEP_READ_TIMEOUT
from remote_graph._shell_common import request_args
from remote_graph.errors import (
    RemoteCommandError,
    RemoteConnectionError,
    RemoteProtocolError,
    RemoteRunError,
    RemoteTimeoutError,
)
from tests.unit.fake_run import (
    CANCEL,
    EVERYTHING,
    FAILED_STATE,
    RID,
    RUN,
    START,
    START_PATH,
    THREAD,
    VERDICT,
    Answer,
    Clock,
    Conn,
    Cut,
    FakeServer,
    Frame,
    Wire,
    before_newest,
    cleanup,
    custom_run,
    kinds,
    make_driver,
    plan,
    run,
    started_driver,
    through,
    wire_bytes,
)


def completed_run() -> list[Frame]:
    """A run with a subgraph, a streamed message and multi-byte text, over five milliseconds."""
    text = "héllo 中文 😀 — ok"
    w = Wire().metadata().event("values", {"x": 1, "answer": ""}, interrupts=[])
    w.tick().event("updates", {"prepare": {"x": 2}})
    w.event(
        "lifecycle", {"event": "started", "namespace": ["sub:0c01"], "graph_name": "sub", "trigger_call_id": "0c01"}
    )
    w.event("values", {"y": "é"}, ns=["sub:0c01"], interrupts=[])
    w.tick().event("lifecycle", {"event": "completed", "namespace": ["sub:0c01"]})
    w.event("messages", {"event": "message-start", "role": "ai", "id": "m1"})
    w.event("messages", {"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": text}})
    w.tick().event("messages", {"event": "message-finish", "reason": "stop"})
    w.event("updates", {"answer": {"answer": text, "messages": [{"type": "ai", "content": text, "id": "m1"}]}})
    w.tick().event("values", {"x": 2, "answer": text}, interrupts=[])
    return w.frames


INTERRUPT = {"value": {"question": "approve?"}, "id": "b8fe", "response_schema": None}


def paused_run() -> list[Frame]:
    w = Wire().metadata().event("values", {"x": 1, "answer": ""}, interrupts=[])
    w.tick().event("updates", {"__interrupt__": [INTERRUPT]})
    w.event("values", {"x": 1, "answer": ""}, interrupts=[INTERRUPT])
    return w.frames


INNER_INTERRUPT = {"value": "inner?", "id": "c6b3", "response_schema": None}


def paused_in_subgraph_run() -> list[Frame]:
    """Paused inside a subgraph; the subgraph's "interrupted" lifecycle event never came."""
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.event(
        "lifecycle", {"event": "started", "namespace": ["inner:61b2"], "graph_name": "inner", "trigger_call_id": "61b2"}
    )
    w.tick().event("values", {"y": "ü"}, ns=["inner:61b2"], interrupts=[])
    w.event("updates", {"__interrupt__": [INNER_INTERRUPT]}, ns=["inner:61b2"])
    w.tick().event("values", {"y": "ü"}, ns=["inner:61b2"], interrupts=[INNER_INTERRUPT])
    w.event("updates", {"__interrupt__": [INNER_INTERRUPT]})
    w.event("values", {"x": 1}, interrupts=[INNER_INTERRUPT])
    return w.frames


def failed_run() -> list[Frame]:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.tick().raw("error", {"error": "Boom", "message": "An internal error occurred"})
    return w.frames


def news_in(body: bytes) -> int:
    """How many events with a protocol seq the frames complete in ``body`` carry."""
    count = 0
    for frame in SSEDecoder().feed(body):
        envelope = json.loads(frame.data) if frame.event != "metadata" else None
        count += isinstance(envelope, dict) and isinstance(envelope.get("seq"), int)
    return count


def reference_parts(
    frames: Sequence[Frame], *, interrupted: bool = False, completed: bool = False
) -> list[dict[str, Any]]:
    """The parts a run's frames stand for, converted once each, in order."""
    converter = WireConverter()
    parts: list[dict[str, Any]] = []
    for frame in frames:
        _, data = frame.raw.decode().split("\r\n")[:2]
        envelope = json.loads(data.removeprefix("data: "))
        if isinstance(envelope, dict) and envelope.get("type") == "event":
            parts += converter.convert(envelope["method"], envelope["params"])
    return parts + converter.finish(interrupted=interrupted, completed=completed)


# --- how runs end -------------------------------------------------------------------------------


def test_a_completed_run() -> None:
    frames = completed_run()
    server = FakeServer(frames, [Conn(chunks=(37,))])
    driver, out = run(server)
    assert out.error is None
    assert driver.status is RunStatus.COMPLETED and driver.state.error is None and driver.run_id == RID
    assert kinds(out.parts) == [
        ("values", ()),
        ("updates", ()),
        ("tasks", ("sub:0c01",)),
        ("values", ("sub:0c01",)),
        ("tasks", ()),
        ("messages", ()),
        ("messages", ()),
        ("messages", ()),
        ("updates", ()),
        ("values", ()),
    ]
    assert out.parts[-1]["data"] == {"x": 2, "answer": "héllo 中文 😀 — ok"}
    assert out.parts == reference_parts(frames)
    start = server.requests[0]
    assert start.json["stream_resumable"] is True and start.json["input"] == {"x": 1}
    # Start, follow from the beginning to the close, ask the server how the run
    # ended, then (it is over) reopen from the id before the newest to confirm:
    # the replay brings nothing new. A clean close of a finished run costs no sleep.
    assert server.trail() == [START, VERDICT, ("open", frames[-2].id)]
    assert not server.slept
    assert frames[-2].id != frames[-1].id
    assert server.served[1] == [len(frames) - 1]  # the confirming replay: the newest millisecond again


def test_a_run_that_finished_before_the_stream_was_opened() -> None:
    frames = completed_run()
    server = FakeServer(frames, produced=EVERYTHING)
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    assert server.trail() == [START, VERDICT, ("open", frames[-2].id)]


def test_a_paused_run_ends_interrupted_with_its_interrupts() -> None:
    frames = paused_run()
    server = FakeServer(frames)
    driver, out = run(server)
    assert out.error is None
    assert driver.status is RunStatus.INTERRUPTED
    assert driver.interrupts == [Interrupt(value={"question": "approve?"}, id="b8fe")]
    assert out.parts[1]["data"] == {"__interrupt__": (Interrupt(value={"question": "approve?"}, id="b8fe"),)}
    assert out.parts[2]["interrupts"] == (Interrupt(value={"question": "approve?"}, id="b8fe"),)
    assert server.trail() == [START, VERDICT, ("open", frames[0].id)]


def test_a_run_paused_in_a_subgraph_closes_the_subgraph_at_the_end() -> None:
    server = FakeServer(paused_in_subgraph_run())
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.INTERRUPTED
    assert driver.interrupts == [Interrupt(value="inner?", id="c6b3")]
    closing = out.parts[-1]
    assert closing["type"] == "tasks" and closing["ns"] == ()
    assert closing["data"]["id"] == "61b2" and closing["data"]["interrupts"] == [Interrupt(value="inner?", id="c6b3")]
    assert out.parts == reference_parts(paused_in_subgraph_run(), interrupted=True)


def test_a_failed_run_raises_the_exception_the_node_raised() -> None:
    server = FakeServer(
        failed_run(),
        rest={
            ("GET", RUN): Response(200, {"status": "error"}),
            ("GET", f"{THREAD}/state"): Response(200, FAILED_STATE),
        },
    )
    driver, out = run(server)
    error = out.error
    assert isinstance(error, RemoteRunError)
    assert type(error).__name__ == "Boom" and str(error) == "kaboom from node"
    assert driver.status is RunStatus.FAILED and driver.state.error is error
    assert kinds(out.parts) == [("values", ())]
    # The error event is the end: no confirming connection.
    assert server.trail() == [START, VERDICT, ("GET", f"{THREAD}/state")]


def test_an_error_frame_of_a_run_that_still_runs_is_the_stream_s_and_the_stream_resumes() -> None:
    # A replica whose database went away ends the stream it serves with an error
    # frame (measured on the replica stack: "DBAPIError") while the run goes on.
    w = Wire().metadata()
    for i in range(2):
        w.tick().event("custom", {"i": i})
    w.tick().raw("error", {"error": "DBAPIError", "message": "An internal error occurred"}, frame_id=None)
    for i in range(2, 4):
        w.tick().event("custom", {"i": i})
    w.tick().event("values", {"done": True}, interrupts=[])
    server = FakeServer(
        w.frames,
        [Conn(live=4)],
        rest={("GET", RUN): [Response(200, {"status": "running"}), Response(200, {"status": "success"})]},
    )
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert [p["data"]["i"] for p in out.parts if p["type"] == "custom"] == [0, 1, 2, 3]
    assert server.trail()[:3] == [START, VERDICT, ("sleep", 0.05)]


@pytest.mark.parametrize(
    "answer", [Response(500, {"detail": "Internal Server Error"}), Broken(httpx.ConnectError("refused"))]
)
def test_an_error_frame_whose_run_record_cannot_be_read_is_no_verdict(answer: Response | Broken) -> None:
    # The replica's database is away: its stream fails, and so does the record read.
    w = Wire().metadata()
    w.tick().event("custom", {"i": 0})
    w.tick().raw("error", {"error": "DBAPIError", "message": "An internal error occurred"}, frame_id=None)
    w.tick().event("custom", {"i": 1})
    w.tick().event("values", {"done": True}, interrupts=[])
    server = FakeServer(w.frames, [Conn(live=3)], rest={("GET", RUN): [answer, Response(200, {"status": "success"})]})
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert [p["data"]["i"] for p in out.parts if p["type"] == "custom"] == [0, 1]


def test_a_run_that_failed_while_its_record_could_not_be_read_raises_what_its_error_frame_said() -> None:
    # The worker's database went away: the run fails with the database's error, which
    # its error frame names while the record cannot be read; the state and the thread
    # name none.
    w = Wire().metadata()
    w.tick().event("custom", {"i": 0})
    w.tick().raw("error", {"error": "AdminShutdown", "message": "An internal error occurred"}, frame_id=None)
    server = FakeServer(
        w.frames,
        [Conn(live=3)],
        rest={
            ("GET", RUN): [Response(500, {"detail": "Internal Server Error"}), Response(200, {"status": "error"})],
            ("GET", f"{THREAD}/state"): Response(200, {"values": {}, "tasks": []}),
            ("GET", THREAD): Response(200, {"thread_id": "T", "status": "error"}),
        },
    )
    driver, out = run(server)
    assert type(out.error).__name__ == "AdminShutdown" and isinstance(out.error, RemoteRunError)
    assert driver.status is RunStatus.FAILED


def test_a_failed_run_whose_state_is_unreadable_raises_what_the_error_event_said() -> None:
    server = FakeServer(
        failed_run(),
        rest={
            ("GET", RUN): Response(200, {"status": "error"}),
            ("GET", f"{THREAD}/state"): Broken(httpx.ConnectError("refused")),
        },
    )
    driver, out = run(server)
    assert type(out.error).__name__ == "Boom" and str(out.error) == "An internal error occurred"
    assert driver.status is RunStatus.FAILED


def test_a_run_that_failed_without_an_error_event_reads_its_error_from_the_state() -> None:
    frames = failed_run()[:-1]  # the stream just ends
    server = FakeServer(
        frames,
        rest={
            ("GET", RUN): Response(200, {"status": "error"}),
            ("GET", f"{THREAD}/state"): Response(200, FAILED_STATE),
        },
    )
    driver, out = run(server)
    assert type(out.error).__name__ == "Boom" and str(out.error) == "kaboom from node"
    assert driver.status is RunStatus.FAILED
    # The record says error; the confirming connection brings nothing new, then the state is read.
    assert server.trail() == [START, VERDICT, ("open", FROM_START), ("GET", f"{THREAD}/state")]


def test_a_handoff_whose_error_event_was_lost_reads_its_error_from_the_thread() -> None:
    # A task that raised ParentCommand records no error in the state, and the error
    # event is not stored for a replay: the thread's record keeps the run's error.
    frames = failed_run()[:-1]
    command = "Command(update={'entries': ['handed-off']}, goto='b')"
    server = FakeServer(
        frames,
        rest={
            ("GET", RUN): Response(200, {"status": "error"}),
            ("GET", f"{THREAD}/state"): Response(
                200, {"values": {}, "tasks": [{"id": "t", "name": "b", "error": None}]}
            ),
            ("GET", THREAD): Response(
                200, {"status": "error", "error": {"error": "ParentCommand", "message": command}}
            ),
        },
    )
    driver, out = run(server)
    assert type(out.error).__name__ == "ParentCommand" and out.error.args == (command,)
    assert driver.status is RunStatus.FAILED
    assert server.trail()[-2:] == [("GET", f"{THREAD}/state"), ("GET", THREAD)]


def test_a_handoff_whose_error_event_says_only_its_type_reads_its_command_from_the_run_record() -> None:
    # aegra streams "<type>: execution failed" and keeps the error's own message on the run's record.
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.raw("error", {"error": "ParentCommand", "message": "ParentCommand: execution failed"}, frame_id=None)
    command = "Command(update={'entries': ['handed-off']}, goto='b')"
    server = FakeServer(
        w.frames,
        rest={
            ("GET", RUN): Response(200, {"status": "error", "error_message": command}),
            ("GET", f"{THREAD}/state"): Response(
                200, {"values": {}, "tasks": [{"id": "t", "name": "b", "error": None}]}
            ),
        },
    )
    _, out = run(server)
    assert type(out.error).__name__ == "ParentCommand" and out.error.args == (command,)


def test_a_deleted_run_was_cancelled() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    # A rollback deleted the run: the stream says so, with no id.
    w.raw("error", {"error": "HTTPException", "message": "404: Run not found"}, frame_id=None)
    server = FakeServer(w.frames, rest={("GET", RUN): Response(404, {"detail": "Run not found"})})
    driver, out = run(server)
    assert out.error is None
    assert driver.status is RunStatus.CANCELLED and driver.state.error is None
    assert kinds(out.parts) == [("values", ())]
    assert server.actions[-1] == Request("GET", RUN)
    assert cleanup(driver, server) == []


def test_a_run_cancelled_on_the_server_was_cancelled() -> None:
    frames = Wire().metadata().event("values", {"x": 1}, interrupts=[]).frames
    server = FakeServer(frames, rest={("GET", RUN): Response(200, {"status": "interrupted"})})
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.CANCELLED


def test_a_run_another_run_interrupted_was_cancelled_whatever_its_stream_ends_with() -> None:
    # langgraph-api 0.11 ends the stream of a run that multitask_strategy="interrupt"
    # stopped with an error frame, while its record says interrupted.
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.tick().raw("error", {"error": "UserInterrupt", "message": ""})
    server = FakeServer(w.frames, rest={("GET", RUN): Response(200, {"status": "interrupted"})})
    driver, out = run(server)
    assert out.error is None
    assert driver.status is RunStatus.CANCELLED and driver.state.error is None
    assert kinds(out.parts) == [("values", ())]
    assert cleanup(driver, server) == []


def test_a_run_whose_record_is_gone_when_the_stream_ends_was_cancelled() -> None:
    frames = completed_run()[:3]
    server = FakeServer(frames, rest={("GET", RUN): Response(404, {"detail": "Run not found"})})
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.CANCELLED
    # A deleted run is over too: confirmed by one more connection, no sleep.
    assert server.trail() == [START, VERDICT, ("open", frames[0].id)]
    assert out.parts == reference_parts(frames)


@pytest.mark.parametrize("with_error_event", [False, True])
def test_a_run_stopped_by_its_timeout_fails_with_a_timeout_error(with_error_event: bool) -> None:
    frames = failed_run() if with_error_event else failed_run()[:-1]
    server = FakeServer(frames, rest={("GET", RUN): Response(200, {"status": "timeout"})})
    driver, out = run(server)
    assert isinstance(out.error, RemoteTimeoutError) and "timeout" in str(out.error)
    assert driver.status is RunStatus.FAILED and driver.state.error is out.error
    assert not server.asked("GET", f"{THREAD}/state")


def test_a_refused_start_raises_the_servers_reason() -> None:
    server = FakeServer(rest={("POST", START_PATH): Response(422, {"detail": "Invalid assistant: 'agent'"})})
    driver, out = run(server)
    error = out.error
    assert isinstance(error, RemoteCommandError)
    assert "Invalid assistant: 'agent'" in str(error) and error.status == 422
    assert driver.status is RunStatus.FAILED and driver.state.error is error and driver.run_id is None
    assert not server.opened
    assert cleanup(driver, server) == []


@pytest.mark.parametrize(
    ("broken", "error_type"),
    [
        (Broken(httpx.ConnectError("connection refused")), RemoteConnectionError),
        (Broken(httpx.ConnectTimeout("timed out"), timed_out=True), RemoteTimeoutError),
    ],
)
def test_a_start_that_cannot_reach_the_server(broken: Broken, error_type: type[Exception]) -> None:
    server = FakeServer(rest={("POST", START_PATH): broken})
    driver, out = run(server)
    assert type(out.error) is error_type and "starting the run" in str(out.error)
    assert driver.status is RunStatus.FAILED and driver.state.error is out.error
    assert not server.opened
    assert cleanup(driver, server) == []


# --- delivered once: the protocol seq ------------------------------------------------------------------


def test_events_are_delivered_once_by_their_seq() -> None:
    w = Wire().metadata()
    w.event("updates", {"n": {"i": 1}})  # seq 1
    w.event("updates", {"n": {"i": "no seq"}}, seq=None)  # passes through
    w.event("updates", {"n": {"i": "text seq"}}, seq="9")  # not an int seq: passes through
    w.tick().event("updates", {"n": {"i": 2}}, seq=2)
    w.event("updates", {"n": {"i": "2 again"}}, seq=2)  # dropped: not after the last seq delivered
    w.event("updates", {"n": {"i": "1 again"}}, seq=1)  # dropped
    w.event("updates", {"n": {"i": 3}}, seq=3)
    w.tick().event("updates", {"n": {"i": 5}}, seq=5)
    w.event("updates", {"n": {"i": 4}}, seq=4)  # dropped: older than 5
    server = FakeServer(w.frames)
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert [p["data"]["n"]["i"] for p in out.parts] == [1, "no seq", "text seq", 2, 3, 5]


def test_a_run_whose_last_events_carry_no_seq_still_ends() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.tick().event("updates", {"n": {"i": 1}}, seq=None)
    w.event("values", {"x": 2}, seq=None, interrupts=[])
    server = FakeServer(w.frames)
    driver, out = run(server, limit=5_000)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    # The confirming replay repeats the seq-less events (nothing tells them
    # apart), but they are no news: that connection ends the run.
    assert server.trail() == [START, VERDICT, ("open", w.frames[0].id)]
    assert not server.slept
    assert [p["data"] for p in out.parts[:3]] == [{"x": 1}, {"n": {"i": 1}}, {"x": 2}]


def test_events_without_a_seq_do_not_renew_the_reconnect_budget() -> None:
    # The server keeps closing the stream while the run goes on; every
    # connection replays the same seq-less events, which are no news.
    clock = Clock()
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.tick().event("updates", {"n": {"i": 1}}, seq=None)
    server = FakeServer(
        w.frames,
        rest={("GET", RUN): Response(200, {"status": "running"}), ("POST", f"{RUN}/cancel"): Response(202, None)},
        clock=clock,
    )
    driver, out = run(server, clock, reconnect=2.0, limit=5_000)
    assert type(out.error) is RemoteConnectionError and "kept closing" in str(out.error)
    assert driver.status is RunStatus.FAILED
    assert clock.now == pytest.approx(2.0)
    assert server.slept[:3] == pytest.approx([0.05, 0.1, 0.2])
    assert cleanup(driver, server) == [CANCEL]


def test_metadata_frames_make_no_parts() -> None:
    envelope = {"type": "event", "method": "values", "params": {"namespace": [], "data": {"x": 0}}, "seq": 7}
    w = Wire().metadata(envelope).event("values", {"x": 1}, interrupts=[])
    w.tick().metadata().event("values", {"x": 2}, interrupts=[])
    server = FakeServer(w.frames)
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    # The metadata frame's seq 7 was not taken either: seq 1 and 2 still count.
    assert [p["data"] for p in out.parts] == [{"x": 1}, {"x": 2}]


@pytest.mark.parametrize("after", range(1, len(completed_run())))
def test_a_frame_sent_twice_on_a_reconnect_is_delivered_once(after: int) -> None:
    frames = completed_run()
    # Cut after ``after`` frames; the next connection gets the frame published
    # while it switched from replay to live both ways.
    server = FakeServer(frames, [Conn(cut=through(frames, after)), Conn(twice=True)])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    second = server.served[1]
    assert second.count(after) == 2 and len(set(second)) == len(second) - 1


def test_a_frame_sent_twice_on_a_confirming_connection_is_delivered_once() -> None:
    frames = completed_run()
    # The server closes after four frames while the run goes on; the
    # confirming connection repeats the frame published at its switch to live.
    server = FakeServer(frames, [Conn(live=4), Conn(twice=True)])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    assert server.served[1].count(4) == 2
    # The record said running at the first close (the connection brought news:
    # reopened at once), success at the second; then one confirming connection.
    assert server.trail() == [START, VERDICT, ("open", frames[0].id), VERDICT, ("open", frames[-2].id)]
    assert not server.slept


def _sub_run(*, stored_second: bool = True) -> list[Frame]:
    """A run whose subgraph's start and first state share an id, as on
    langgraph-runtime-pg (its ids are unique otherwise): the live-only
    ``lifecycle`` took it from the server's clock. Without ``stored_second``
    the second is a live-only event too (a module's channel; no id: never replayed)."""
    w = Wire().metadata().tick().event("values", {"x": 1}, interrupts=[])
    w.tick().event("updates", {"enter": {"x": 2}})
    w.tick().event("lifecycle", {"event": "started", "namespace": ["sub:1"], "graph_name": "sub"})
    if stored_second:
        w.event("values", {"y": 1}, ns=["sub:1"], interrupts=[])
    else:
        w.seq += 1
        envelope = {"type": "event", "method": "custom:trail", "seq": w.seq, "params": {"namespace": [], "data": 1}}
        w.raw("custom:trail", envelope, frame_id=None)
    w.tick().event("updates", {"step": {"y": 2}}, ns=["sub:1"])
    w.tick().event("values", {"x": 2}, interrupts=[])
    return w.frames


def test_a_stored_event_dropped_on_its_live_way_is_replayed_in_its_place() -> None:
    frames = _sub_run()
    server = FakeServer(frames, [Conn(lost=[4])])
    _, out = run(server)
    assert out.error is None
    # The gap after the live-only event: reopened after the event before it (then
    # from the newest, as every run's clean close is confirmed).
    assert [o.last_event_id for o in server.opened[1:]] == [frames[2].id, before_newest(frames)]
    assert [(p["type"], p["ns"], p["data"]) for p in out.parts if p["type"] in ("values", "updates")] == [
        ("values", (), {"x": 1}),
        ("updates", (), {"enter": {"x": 2}}),
        ("values", ("sub:1",), {"y": 1}),
        ("updates", ("sub:1",), {"step": {"y": 2}}),
        ("values", (), {"x": 2}),
    ]


def test_a_gap_that_no_replay_fills_is_checked_once() -> None:
    # What did not come was live-only: the replay cannot bring it, and the stream goes on.
    frames = _sub_run(stored_second=False)
    server = FakeServer(frames, [Conn(lost=[4])])
    _, out = run(server)
    assert out.error is None
    assert [o.last_event_id for o in server.opened[1:]] == [frames[2].id, before_newest(frames)]
    assert [p["type"] for p in out.parts if p["type"] in ("values", "updates")] == [
        "values",
        "updates",
        "updates",
        "values",
    ]


def test_stored_events_lost_live_after_a_stored_one_are_replayed_in_their_place() -> None:
    # A replica whose Redis restarted under the stream: the events published until
    # it subscribed again never came live, and nothing broke (measured: 10 of 60).
    frames = custom_run(30)
    # Three events to a millisecond: the last delivered (i=7) shares its id with the
    # one before it and with the first lost one (i=8).
    server = FakeServer(frames, [Conn(lost=range(9, 18))])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    # Reopened after the newest id before the last one's, or i=8 would be skipped.
    assert [o.last_event_id for o in server.opened[1:]] == [frames[6].id, before_newest(frames)]
    assert out.parts == reference_parts(frames)


def _v3_frame(seq: int, method: str = "values", frame_id: str | None = None, data: Any = None) -> SSEFrame:
    """A v3 event frame numbered ``seq``: its id ``<seq>-0`` and its data ``{"seq": seq}`` unless given."""
    params = {"namespace": [], "data": {"seq": seq} if data is None else data}
    return SSEFrame(
        method, json.dumps({"type": "event", "method": method, "params": params, "seq": seq}), frame_id or f"{seq}-0"
    )


def test_a_gap_a_replay_fills_in_part_does_not_stop_the_checks() -> None:
    # A stored event and a live-only one lost together, four times: each replay
    # brings the stored one, so each gap was worth its reopen, and the next is
    # checked too (only checks that bring nothing count toward the limit).
    from remote_graph._core.v3_wire import V3Wire

    wire = V3Wire(THREAD, "agent")
    assert wire.accept(_v3_frame(1)) is not None
    for base in range(2, 18, 4):
        assert wire.accept(_v3_frame(base)) is not None
        assert wire.accept(_v3_frame(base + 3)) is None  # base + 1 (stored) and base + 2 (live-only) did not come
        assert wire.rewind() == f"{base - 1}-0"
        # The replay: the last event again, the stored one, then the next (the live-only one is not stored).
        assert wire.accept(_v3_frame(base)) is None
        assert wire.accept(_v3_frame(base + 1)) is not None
        assert wire.accept(_v3_frame(base + 3)) is not None


def test_a_retried_attempt_checks_its_own_gaps() -> None:
    # Its seq counts from 1 again: a gap the lost attempt checked at a higher seq
    # says nothing of the new attempt's.
    from remote_graph._core.v3_wire import V3Wire

    def frame(seq: int, method: str, frame_id: str, attempt: int) -> SSEFrame:
        # Each attempt's events differ: a retried attempt's repeats of delivered ones are dropped.
        return _v3_frame(seq, method, frame_id, data={"attempt": attempt})

    wire = V3Wire(THREAD, "agent")
    for attempt, base in ((1, 100), (2, 200)):
        wire.attempt(attempt, f"{base}-0")
        assert wire.accept(frame(1, "values", f"{base + 1}-0", attempt)) is not None
        assert wire.accept(frame(2, "lifecycle", f"{base + 2}-0", attempt)) is not None
        assert wire.accept(frame(4, "values", f"{base + 3}-0", attempt)) is None  # seq 3 did not come
        assert wire.rewind() == f"{base + 1}-0"
        # Reopened: the replay brings seq 3, or the gap was a live-only event's (once per gap).
        assert wire.accept(frame(4, "values", f"{base + 3}-0", attempt)) is not None
        assert wire.rewind() is None


def test_a_live_only_event_after_a_gap_is_delivered_not_replayed() -> None:
    # A named channel's push, then the update it goes with, lost live, then the
    # next push: no replay brings a push back, so it is delivered.
    from remote_graph._core.v3_wire import V3Wire

    wire = V3Wire(THREAD, "agent")
    assert wire.accept(_v3_frame(1, "values", "1-0")) is not None
    assert wire.accept(_v3_frame(2, "custom:trail", "2-0")) is not None
    assert wire.accept(_v3_frame(4, "custom:trail", "3-0")) is not None  # seq 3 (an update) did not come
    assert wire.rewind() is None


# --- lost connections -------------------------------------------------------------------------------------


@pytest.mark.parametrize("ahead", [0, EVERYTHING], ids=["waits", "finishes-meanwhile"])
@pytest.mark.parametrize(
    ("make", "status"),
    [(completed_run, RunStatus.COMPLETED), (paused_in_subgraph_run, RunStatus.INTERRUPTED)],
    ids=["completed", "paused"],
)
def test_a_cut_at_every_byte_offset_delivers_every_part_once(
    make: Callable[[], list[Frame]], status: RunStatus, ahead: int
) -> None:
    frames = make()
    expected = reference_parts(frames, interrupted=status is RunStatus.INTERRUPTED)
    total = len(wire_bytes(frames))
    for offset in range(total):
        server = FakeServer(frames, [Conn(cut=offset, chunks=(61,), ahead=ahead)])
        driver, out = run(server)
        assert out.error is None, f"cut at byte {offset}"
        assert out.parts == expected, f"cut at byte {offset}"
        assert driver.status is status
        # The break, one backoff, the rest, then the verdict and the confirming connection.
        trail = server.trail()
        assert [kind for kind, _ in trail] == ["POST", "sleep", "open", "GET", "open"], f"cut at byte {offset}"
        assert trail[-1] == ("open", before_newest(frames)), f"cut at byte {offset}"
        assert server.slept == [0.05]


@pytest.mark.parametrize("ahead", [0, EVERYTHING], ids=["goes-on", "finished"])
@pytest.mark.parametrize(
    ("make", "status"),
    [(completed_run, RunStatus.COMPLETED), (paused_in_subgraph_run, RunStatus.INTERRUPTED)],
    ids=["completed", "paused"],
)
def test_a_clean_close_at_every_byte_offset_delivers_every_part_once(
    make: Callable[[], list[Frame]], status: RunStatus, ahead: int
) -> None:
    # A proxy passes a cut on as a normal end of body (or a restart closes the
    # stream); with "finished" the run has ended by the time the client asks.
    frames = make()
    expected = reference_parts(frames, interrupted=status is RunStatus.INTERRUPTED)
    body = wire_bytes(frames)
    events = news_in(body)
    last_frame_start = through(frames, len(frames) - 1)
    for offset in range(len(body)):
        server = FakeServer(frames, [Conn(close=offset, chunks=(61,), ahead=ahead)])
        driver, out = run(server)
        assert out.error is None, f"close at byte {offset}"
        assert out.parts == expected, f"close at byte {offset}"
        assert driver.status is status
        # The record is read at the close. A run still going (nothing of its
        # last frame sent yet) is followed again, after a backoff only when the
        # connection brought no new event, and the record is read again at the
        # next close. Once it says the run is over, the stream is reopened at
        # once, and again as long as a connection brings news.
        delivered = news_in(body[:offset])
        over = ahead == EVERYTHING or offset > last_frame_start
        if over:
            shape = ["POST", "GET", "open"] + (["open"] if delivered < events else [])
        else:
            shape = ["POST", "GET"] + ([] if delivered else ["sleep"]) + ["open", "GET", "open"]
        trail = server.trail()
        assert [kind for kind, _ in trail] == shape, f"close at byte {offset}"
        assert server.slept == ([] if over or delivered else [0.05]), f"close at byte {offset}"
        assert trail[-1] == ("open", before_newest(frames)), f"close at byte {offset}"
        assert max(server.served[-1]) <= server.touched_before, (
            f"close at byte {offset}: the last connection brought news"
        )


def awkward_offsets(body: bytes) -> dict[str, list[int]]:
    """Byte offsets inside a multi-byte UTF-8 character, and between a CR and its LF."""
    inside_char = [i for i in range(1, len(body)) if 0x80 <= body[i] < 0xC0]
    inside_crlf = [i + 1 for i in range(len(body) - 1) if body[i : i + 2] == b"\r\n"]
    return {"utf8": inside_char, "crlf": inside_crlf}


@pytest.mark.parametrize("seed", range(40))
def test_repeated_faults_at_random_offsets_deliver_every_part_once_in_order(seed: int) -> None:
    rng = random.Random(seed)
    frames = completed_run()
    expected = reference_parts(frames)
    server: FakeServer

    def cutter(served: list[Frame]) -> int | None:
        """A break mid-body, preferably inside a character or between CR and LF."""
        body = wire_bytes(served)
        kind = rng.choice(["utf8", "crlf", "any"])
        choices = awkward_offsets(body).get(kind) or list(range(len(body)))
        return rng.choice(choices) if choices else None

    def closer(served: list[Frame]) -> int | None:
        """A clean end passed on by a proxy, once this connection has brought a
        frame no earlier one had touched (a quiet end once the record has said
        the run is over is indistinguishable from the run's end)."""
        indices = server.served[-1]
        fresh = [k for k, index in enumerate(indices) if index > server.touched_before]
        if not fresh:
            return None
        after_first_new = through(served, fresh[0] + 1)
        return rng.randint(after_first_new, len(wire_bytes(served)))

    connections = []
    for _ in range(rng.randint(3, 10)):
        fault = rng.choice(["cut", "close", "none"])
        connections.append(
            Conn(
                cut=cutter if fault == "cut" else None,
                close=closer if fault == "close" else None,
                # 0 too: a connection that ends with nothing new while the run
                # goes on is followed again after a backoff.
                live=rng.choice([None, rng.randint(0, 4)]),
                twice=rng.random() < 0.3,
                ahead=rng.choice([0, rng.randint(1, 4), EVERYTHING]),
                chunks=[rng.randint(1, 97) for _ in range(5)],
            )
        )
    server = FakeServer(frames, connections, then=Conn(chunks=(rng.randint(1, 50),)))
    driver, out = run(server)
    assert out.error is None, out.error
    assert out.parts == expected
    assert driver.status is RunStatus.COMPLETED
    # The run ends on a connection opened after the record said it was over
    # (records read earlier said it was running), which brought nothing new.
    trail = server.trail()
    verdict = len(trail) - 1 - trail[::-1].index(VERDICT)
    assert server.told[-1] == "success" and set(server.told[:-1]) <= {"running"}
    assert trail.count(VERDICT) == len(server.told)
    assert trail[-1] == ("open", before_newest(frames))
    assert {kind for kind, _ in trail[verdict + 1 :]} <= {"open", "sleep"}
    assert max(server.served[-1]) <= server.touched_before, "the last connection brought news"
    # Every reconnect resumes at or after where the previous one did.
    ids = [o.last_event_id for o in server.opened]
    assert ids[0] is None  # the start's own stream
    assert ids[1:] == sorted(str(i) for i in ids[1:])


def test_a_cut_between_cr_and_lf_at_a_frame_end() -> None:
    frames = completed_run()
    body = wire_bytes(frames)
    end_of_second = len(frames[0].raw) + len(frames[1].raw)
    assert body[end_of_second - 2 : end_of_second] == b"\r\n"
    server = FakeServer(frames, [Conn(cut=end_of_second - 1)])
    _, out = run(server)
    assert out.parts == reference_parts(frames)
    # The frame was whole at its first CR; the resume point is still before its millisecond.
    assert server.opened[1].last_event_id == FROM_START


def test_the_resume_point_and_the_replay_with_repeated_ids() -> None:
    frames = completed_run()  # ids: 2 x A, 3 x B, 3 x C, ...
    server = FakeServer(frames, [Conn(cut=through(frames, 4))])  # A, A, B, B delivered
    _, out = run(server)
    assert server.opened[1].last_event_id == frames[0].id  # the id before the newest
    assert server.served[1][:2] == [2, 3]  # the frames of B replayed, dropped by their seq
    assert out.parts == reference_parts(frames)


def test_unique_ids_resume_too() -> None:
    # A Redis-backed server: every frame has its own id.
    frames = []
    for i, f in enumerate(completed_run()):
        assert f.id is not None
        unique = f"{1796018881846 + i}-0"
        frames.append(Frame(unique, f.raw.replace(f"id: {f.id}".encode(), f"id: {unique}".encode())))
    assert len({f.id for f in frames}) == len(frames)
    server = FakeServer(frames, [Conn(cut=through(frames, 5) + 3), Conn(cut=50)])
    driver, out = run(server)
    assert out.parts == reference_parts(frames) and driver.status is RunStatus.COMPLETED
    assert [o.last_event_id for o in server.opened] == [None, frames[3].id, frames[3].id, frames[-2].id]
    assert server.served[1][0] == 4 and server.served[3] == [len(frames) - 1]  # one replayed frame each


def test_a_clean_early_close_while_the_run_goes_on_reconnects() -> None:
    frames = completed_run()
    # The server closes after three frames while the run goes on: the record
    # says running and the connection brought news, so it is reopened at once.
    # The next one closes too with nothing new (the run is in a silent node):
    # running again, so back off and reopen. The third brings the rest; the
    # record says success, and one more connection confirms.
    server = FakeServer(frames, [Conn(live=3), Conn(live=0)])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    assert server.trail() == [
        START,
        VERDICT,
        ("open", frames[0].id),
        VERDICT,
        ("sleep", 0.05),
        ("open", frames[0].id),
        VERDICT,
        ("open", frames[-2].id),
    ]
    assert server.told == ["running", "running", "success"]


def test_a_clean_close_mid_stream_of_a_finished_run_does_not_lose_the_tail() -> None:
    frames = completed_run()
    # A proxy passes a cut on as a normal end; the run has finished meanwhile,
    # so the record already says success.
    server = FakeServer(frames, [Conn(close=through(frames, 3), ahead=EVERYTHING)])
    driver, out = run(server)
    assert driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    # The record says success at the close, so the stream is reopened: that
    # connection brings the tail, so it is confirmed again without asking the
    # record again; no sleep.
    assert server.trail() == [START, VERDICT, ("open", frames[0].id), ("open", frames[-2].id)]
    assert not server.slept


def test_connections_closed_with_news_while_the_run_goes_on_are_reopened_at_once() -> None:
    frames = completed_run()
    # Each connection ends cleanly after two new frames while the run goes on.
    server = FakeServer(frames, then=Conn(live=2))
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    # Ceil(n/2) connections bring the run, the record read at each close, one
    # more confirms it once the record says success; no sleep.
    bringing = (len(frames) + 1) // 2
    assert not server.slept and len(server.opened) == bringing + 1
    assert server.told == ["running"] * (bringing - 1) + ["success"]
    # (The first connection is the start's own stream.)
    assert [kind for kind, _ in server.trail()] == ["POST", "GET"] + ["open", "GET"] * (bringing - 1) + ["open"]


def test_interrupts_a_confirming_connection_brings_make_the_run_interrupted() -> None:
    frames = paused_run()
    # A clean close before the interrupt; the run pauses meanwhile, and the
    # server's record says success either way.
    server = FakeServer(frames, [Conn(close=through(frames, 2), ahead=EVERYTHING)])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.INTERRUPTED
    assert driver.interrupts == [Interrupt(value={"question": "approve?"}, id="b8fe")]
    assert out.parts == reference_parts(frames, interrupted=True)
    assert server.trail() == [START, VERDICT, ("open", FROM_START), ("open", frames[0].id)]
    assert server.told == ["success"]


def test_a_confirming_connection_that_brings_new_events_is_followed_and_confirmed_again() -> None:
    frames = completed_run()
    # Two frames, a clean close; the run finishes meanwhile, so the record says
    # success. Every connection after that is closed after two new frames.
    server: FakeServer

    def after_two_new(served: list[Frame]) -> int | None:
        fresh = [k for k, index in enumerate(server.served[-1]) if index > server.touched_before]
        return through(served, fresh[1] + 1) if len(fresh) > 2 else None

    server = FakeServer(frames, [Conn(live=2, ahead=EVERYTHING)], then=Conn(close=after_two_new))
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    # The record is read once; ceil((n - 2) / 2) connections bring the rest,
    # each reopened at once, and one more confirms; no sleep.
    bringing = (len(frames) - 2 + 1) // 2
    assert not server.slept and server.told == ["success"]
    assert server.trail()[:2] == [START, VERDICT]
    assert server.trail()[2:] == [("open", o.last_event_id) for o in server.opened[1:]]
    assert len(server.opened) == 1 + bringing + 1
    assert server.opened[-1].last_event_id == frames[-2].id


def test_a_run_that_ends_between_a_quiet_confirming_close_and_the_verdict_loses_nothing() -> None:
    frames = completed_run()
    # Three frames, a clean close while the run goes on; the next connection
    # is closed too before anything new, and the run finishes meanwhile.
    server = FakeServer(frames, [Conn(live=3), Conn(live=0, ahead=EVERYTHING)])
    driver, out = run(server)
    assert driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    # The record read after the quiet close says success; the stream is
    # reopened (no sleep) and brings the tail, and one more connection confirms.
    assert server.told == ["running", "success"] and not server.slept
    assert server.trail() == [
        START,
        VERDICT,
        ("open", frames[0].id),
        VERDICT,
        ("open", frames[0].id),
        ("open", frames[-2].id),
    ]


@pytest.mark.parametrize(
    "first",
    [Broken(httpx.ReadError("reset")), Response(500, {"detail": "shutting down"})],
    ids=["broken", "5xx"],
)
def test_a_run_record_read_that_fails_is_read_again(first: Answer) -> None:
    frames = completed_run()
    record: list[Answer] = [first, Response(200, {"status": "success"})]
    server = FakeServer(frames, rest={("GET", RUN): record})
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    # The record read fails: back off, reopen; the next close reads it again.
    last = frames[-2].id
    assert server.trail() == [START, VERDICT, ("sleep", 0.05), ("open", last), VERDICT, ("open", last)]
    assert cleanup(driver, server) == []


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateway_error_opening_the_stream_is_retried_with_backoff(status: int) -> None:
    frames = completed_run()
    unavailable = Conn(answer=Response(status, {"detail": "upstream unavailable"}))
    # The start's own stream breaks at once; reopening it meets the gateway errors.
    server = FakeServer(frames, [Conn(cut=0), unavailable, unavailable, Conn(cut=through(frames, 4)), unavailable])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    # Backoff doubles over the failures, and starts again after a new event.
    assert server.slept == pytest.approx([0.05, 0.1, 0.2, 0.05, 0.1])
    assert [o.last_event_id for o in server.opened] == [
        None,
        FROM_START,
        FROM_START,
        FROM_START,
        frames[0].id,
        frames[0].id,
        frames[-2].id,
    ]


@pytest.mark.parametrize("status", [500, 502])
def test_a_replica_shutting_down_is_a_reason_to_reconnect_not_a_verdict(status: int) -> None:
    # A replica that got SIGTERM answers 500 on a kept-alive connection until it exits;
    # the next connection reaches another replica, which serves the rest of the run.
    frames = completed_run()
    shutting_down = Conn(answer=Response(status, {"detail": "Internal Server Error"}))
    server = FakeServer(frames, [Conn(cut=through(frames, 4)), shutting_down, shutting_down])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts == reference_parts(frames)
    assert server.slept == pytest.approx([0.05, 0.1, 0.2])
    # Nothing to cancel: the run was fine all along.
    assert cleanup(driver, server) == []


@pytest.mark.parametrize("status", [500, 503])
def test_a_stream_that_stays_unavailable_is_given_up_after_the_reconnect_budget(status: int) -> None:
    clock = Clock()
    server = FakeServer(
        completed_run(),
        [Conn(cut=0)],
        rest={("POST", f"{RUN}/cancel"): Response(202, None)},
        then=Conn(answer=Response(status, {"detail": "Service Unavailable"})),
        clock=clock,
    )
    driver, out = run(server, clock, reconnect=2.0)
    assert type(out.error) is RemoteConnectionError and "Timeouts.reconnect" in str(out.error)
    assert f"the server last answered HTTP {status}" in str(out.error)
    assert clock.now == pytest.approx(2.0) and len(server.slept) > 3
    assert driver.status is RunStatus.FAILED and out.parts == []
    assert cleanup(driver, server) == [CANCEL] and driver.status is RunStatus.FAILED


def test_a_server_that_keeps_failing_is_given_up_after_the_reconnect_budget() -> None:
    frames = completed_run()
    clock = Clock()
    refused = Conn(answer=Broken(httpx.ConnectError("connection refused")))
    server = FakeServer(
        frames,
        [Conn(cut=through(frames, 4))],
        rest={("POST", f"{RUN}/cancel"): Response(202, None)},
        then=refused,
        clock=clock,
    )
    driver, out = run(server, clock, reconnect=3.0)
    error = out.error
    assert type(error) is RemoteConnectionError
    attempts = len(server.slept)
    assert attempts > 3
    assert (
        f"{attempts} reconnects" in str(error)
        and "Timeouts.reconnect" in str(error)
        and "connection refused" in str(error)
    )
    assert clock.now == pytest.approx(3.0)
    assert all(s <= 2.0 for s in server.slept) and server.slept[:3] == pytest.approx([0.05, 0.1, 0.2])
    assert driver.status is RunStatus.FAILED and driver.state.error is error
    assert kinds(out.parts) == kinds(reference_parts(frames[:4]))
    # The run may still be going on the server: the cleanup cancels it, and FAILED stays.
    actions = cleanup(driver, server)
    assert actions == [CANCEL]
    assert driver.status is RunStatus.FAILED and driver.state.error is error


def test_an_unreachable_server_is_not_asked_to_cancel_after_the_budget() -> None:
    """A run given up on because no connection can be made is not cancelled: the
    cancel could not reach the server either, and would only add the transport's
    own connect retries to the time the failure takes."""
    frames = completed_run()
    clock = Clock()
    unreachable = Conn(answer=Broken(httpx.ConnectError("connection refused"), unreachable=True))
    server = FakeServer(frames, [Conn(cut=through(frames, 4))], then=unreachable, clock=clock)
    driver, out = run(server, clock, reconnect=3.0)
    assert type(out.error) is RemoteConnectionError and "connection refused" in str(out.error)
    assert isinstance(out.error.__cause__, httpx.ConnectError)
    assert driver.status is RunStatus.FAILED
    assert cleanup(driver, server) == []
    assert driver.status is RunStatus.FAILED


def test_read_timeouts_that_never_end_give_up_with_a_timeout_error() -> None:
    clock = Clock()
    timing_out = Conn(cut=0, fail_with=Broken(httpx.ReadTimeout("read timed out"), timed_out=True))
    server = FakeServer(completed_run(), then=timing_out, clock=clock)
    driver, out = run(server, clock, reconnect=1.0)
    assert isinstance(out.error, RemoteTimeoutError) and "read timed out" in str(out.error)
    assert driver.status is RunStatus.FAILED


def test_a_server_that_keeps_closing_early_is_given_up_too() -> None:
    clock = Clock()
    server = FakeServer(
        completed_run()[:2],
        rest={("GET", RUN): Response(200, {"status": "running"}), ("POST", f"{RUN}/cancel"): Response(202, None)},
        clock=clock,
    )
    driver, out = run(server, clock, reconnect=2.0)
    assert type(out.error) is RemoteConnectionError and "kept closing" in str(out.error)
    assert driver.status is RunStatus.FAILED
    assert len(out.parts) == 1  # the replays on later connections were dropped
    assert clock.now == pytest.approx(2.0)
    assert cleanup(driver, server) == [CANCEL]


def test_every_new_event_renews_the_reconnect_budget() -> None:
    frames = completed_run()
    clock = Clock()
    refused = Conn(answer=Broken(httpx.ConnectError("connection refused")))

    def after(index: int) -> Cut:
        """Break right after the frame at ``index`` of the run."""

        def cut(served: list[Frame]) -> int:
            first = len(frames) - len(served)  # what a connection serves is a suffix of the run
            return through(served, index - first + 1)

        return cut

    connections: list[Conn] = [Conn(cut=after(0))]
    for index in range(1, len(frames)):
        # Two refused attempts (each costs a second of connect time), then one
        # more frame before the next break: long past the budget in all, never
        # that long without a new event.
        connections += [refused, refused, Conn(cut=after(index))]
    server = FakeServer(frames, connections, clock=clock, connect_time=1.0)
    driver, out = run(server, clock, reconnect=3.5)
    assert out.error is None, out.error
    assert clock.now > 3 * 3.5
    assert out.parts == reference_parts(frames) and driver.status is RunStatus.COMPLETED


# --- a start whose answer is lost ------------------------------------------------------------------------

LOST_START = Conn(
    answer=Broken(httpx.RemoteProtocolError("peer closed connection without sending a response")), ahead=3
)


def runs_listed(*runs: dict[str, Any]) -> dict[tuple[str, str], Answer]:
    return {("GET", f"{THREAD}/runs"): Response(200, list(runs))}


def mine(status: str = "running", **kwargs: Any) -> dict[str, Any]:
    return {"run_id": RID, "status": status, "kwargs": {"input": {"x": 1}, "command": None, **kwargs}}


def test_a_start_whose_answer_is_lost_follows_the_run_it_started_from_its_first_event() -> None:
    # The server took the start (3 frames produced) but its answer never came:
    # the thread's one active run, holding the input sent, is this run.
    frames = completed_run()
    server = FakeServer(frames, [LOST_START], rest=runs_listed(mine()))
    driver, out = run(server)
    assert out.error is None, out.error
    assert out.parts == reference_parts(frames) and driver.status is RunStatus.COMPLETED
    assert driver.run_id == RID and server.opened[1].last_event_id == FROM_START  # replayed from its first event


def test_a_start_whose_answer_is_lost_is_told_by_a_record_that_keeps_its_input_on_top() -> None:
    # aegra's run records hold the run's input at their top, and no kwargs.
    frames = completed_run()
    record = {"run_id": RID, "status": "running", "input": {"x": 1}, "config": {}}
    server = FakeServer(frames, [LOST_START], rest=runs_listed(record))
    driver, out = run(server, start=plan({"x": 1}, thread_given=True))
    assert out.error is None, out.error
    assert out.parts == reference_parts(frames) and driver.run_id == RID
    other = FakeServer(frames, [LOST_START], rest=runs_listed({**record, "input": {"x": 2}}))
    _, failed = run(other, start=plan({"x": 1}, thread_given=True))
    assert isinstance(failed.error, RemoteConnectionError) and "cannot be told" in str(failed.error)


@pytest.mark.parametrize(
    ("listed", "options", "words"),
    [
        ([], {}, "the thread has no run going"),
        ([mine("success")], {}, "the thread has no run going"),
        ([mine(input={"x": 2})], {}, "cannot be told"),  # another run, going already
        ([mine(), {**mine(), "run_id": "other"}], {}, "cannot be told"),
        ([mine()], {"multitask_strategy": "enqueue"}, "cannot be told"),
    ],
    ids=["none", "ended", "another-input", "two-going", "enqueue"],
)
def test_a_start_whose_answer_is_lost_fails_when_its_run_cannot_be_told(
    listed: list[dict[str, Any]], options: dict[str, Any], words: str
) -> None:
    server = FakeServer(completed_run(), [LOST_START], rest=runs_listed(*listed))
    driver, out = run(server, start=plan({"x": 1}, thread_given=True, **options))
    assert isinstance(out.error, RemoteConnectionError) and words in str(out.error)
    assert "its answer was lost" in str(out.error) and driver.status is RunStatus.FAILED
    assert driver.run_id is None and cleanup(driver, server) == []  # nothing it could cancel


def test_a_start_whose_answer_is_lost_on_a_thread_of_its_own_takes_any_one_run_going() -> None:
    # No thread named: whatever runs on the fresh thread is this run's.
    server = FakeServer(completed_run(), [LOST_START], rest=runs_listed(mine(multitask_strategy="enqueue")))
    driver, out = run(server, start=plan({"x": 1}, thread_given=False, multitask_strategy="enqueue"))
    assert out.error is None and driver.status is RunStatus.COMPLETED


def test_a_start_that_never_reached_the_server_does_not_look_for_its_run() -> None:
    refused = Conn(answer=Broken(httpx.ConnectError("refused"), unreachable=True))
    server = FakeServer(completed_run(), [refused], rest=runs_listed(mine()))
    driver, out = run(server)
    assert isinstance(out.error, RemoteConnectionError) and "starting the run" in str(out.error)
    assert not server.asked("GET", f"{THREAD}/runs") and driver.status is RunStatus.FAILED


# --- answers that break the protocol ------------------------------------------------------------------------


@pytest.mark.parametrize("when", ["start", "reopen"])
def test_a_stream_answered_with_html_is_a_protocol_error(when: str) -> None:
    html = Conn(answer=Response(200, "<html><body>Login required</body></html>", "text/html"))
    server = FakeServer(completed_run(), [html] if when == "start" else [Conn(cut=0), html])
    driver, out = run(server)
    assert isinstance(out.error, RemoteProtocolError)
    assert "text/html" in str(out.error) and "Login required" in str(out.error)
    assert ("starting the run" in str(out.error)) if when == "start" else (RID in str(out.error))
    assert driver.status is RunStatus.FAILED and driver.state.error is out.error


def test_an_event_that_is_not_json_is_a_protocol_error() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.raw("values", "{not json at all")
    server = FakeServer(w.frames)
    driver, out = run(server)
    assert isinstance(out.error, RemoteProtocolError) and "not JSON" in str(out.error) and "{not json" in str(out.error)
    assert driver.status is RunStatus.FAILED
    assert kinds(out.parts) == [("values", ())]


@pytest.mark.parametrize("status", [400, 403, 404, 409])
def test_a_stream_refused_with_an_error_status_fails_with_its_reason(status: int) -> None:
    server = FakeServer(completed_run(), [Conn(cut=0), Conn(answer=Response(status, {"detail": f"refused: {status}"}))])
    driver, out = run(server)
    assert (
        isinstance(out.error, RemoteCommandError)
        and f"refused: {status}" in str(out.error)
        and out.error.status == status
    )
    assert driver.status is RunStatus.FAILED
    # The start's stream broke at once, one backoff, then the refusal: no more tries.
    assert len(server.opened) == 2 and server.slept == [0.05]


def orphaning_failure(kind: str) -> tuple[FakeServer, type[Exception]]:
    """A server on which a started run fails without the server's verdict."""
    cancel = {("POST", f"{RUN}/cancel"): Response(202, None)}
    frames = completed_run()
    if kind == "html":
        return FakeServer(
            frames, [Conn(cut=0), Conn(answer=Response(200, "<html></html>", "text/html"))], cancel
        ), RemoteProtocolError
    if kind == "not-json":
        return FakeServer(Wire().metadata().raw("values", "{not json").frames, rest=cancel), RemoteProtocolError
    if kind == "stream-refused":
        return FakeServer(
            frames, [Conn(cut=0), Conn(answer=Response(403, {"detail": "Forbidden"}))], cancel
        ), RemoteCommandError
    if kind == "record-refused":
        return FakeServer(
            frames, rest={**cancel, ("GET", RUN): Response(403, {"detail": "Forbidden"})}
        ), RemoteCommandError
    assert kind == "budget"
    refused = Conn(answer=Broken(httpx.ConnectError("connection refused")))
    return FakeServer(frames, [Conn(cut=through(frames, 2))], cancel, then=refused), RemoteConnectionError


@pytest.mark.parametrize("kind", ["html", "not-json", "stream-refused", "record-refused", "budget"])
def test_a_run_given_up_without_the_servers_verdict_is_cancelled_by_the_cleanup(kind: str) -> None:
    server, error_type = orphaning_failure(kind)
    driver, out = run(server, reconnect=1.0)
    assert type(out.error) is error_type and driver.status is RunStatus.FAILED
    assert cleanup(driver, server) == [CANCEL]
    # The cancel was accepted, but how the run failed for the caller stays.
    assert driver.status is RunStatus.FAILED and driver.state.error is out.error


@pytest.mark.parametrize(
    ("frames", "record"),
    [(failed_run(), "error"), (failed_run()[:-1], "error"), (failed_run(), "timeout"), (failed_run()[:-1], "timeout")],
    ids=["error-event", "error-record", "timeout-event", "timeout-record"],
)
def test_a_run_failed_by_the_servers_verdict_is_not_cancelled(frames: list[Frame], record: str) -> None:
    server = FakeServer(
        frames,
        rest={
            ("GET", RUN): Response(200, {"status": record}),
            ("GET", f"{THREAD}/state"): Response(200, FAILED_STATE),
            ("POST", f"{RUN}/cancel"): Response(202, None),
        },
    )
    driver, out = run(server)
    assert out.error is not None and driver.status is RunStatus.FAILED
    assert cleanup(driver, server) == []
    assert driver.state.error is out.error


def test_heartbeats_and_other_envelopes_make_no_parts() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.frames.append(Frame(None, b": heartbeat\r\n\r\n"))
    w.raw("values", {"type": "control", "x": 1})  # not a protocol event
    server = FakeServer(w.frames)
    driver, out = run(server)
    assert out.error is None and kinds(out.parts) == [("values", ())] and driver.status is RunStatus.COMPLETED


# --- cleanup ------------------------------------------------------------------------------------------


def test_abandoning_a_running_run_cancels_it() -> None:
    server = FakeServer(completed_run(), rest={("POST", f"{RUN}/cancel"): Response(202, None)})
    driver = started_driver(server)
    assert cleanup(driver, server) == [CANCEL]
    assert driver.status is RunStatus.CANCELLED


@pytest.mark.parametrize(
    ("record", "interrupts", "status"),
    [
        ({"status": "success"}, False, RunStatus.COMPLETED),
        ({"status": "success"}, True, RunStatus.INTERRUPTED),
        ({"status": "error"}, False, RunStatus.FAILED),
    ],
)
def test_a_cancel_that_comes_too_late_records_how_the_run_ended(
    record: dict[str, Any], interrupts: bool, status: RunStatus
) -> None:
    server = FakeServer(
        paused_run() if interrupts else completed_run(),
        rest={
            ("POST", f"{RUN}/cancel"): Response(404, {"detail": "Run not found"}),
            ("GET", RUN): Response(200, record),
        },
    )
    driver = started_driver(server, parts=3)
    assert cleanup(driver, server) == [CANCEL, Request("GET", RUN)]
    assert driver.status is status


def test_a_cancel_that_finds_the_run_deleted_records_it_cancelled() -> None:
    server = FakeServer(
        completed_run(),
        rest={("POST", f"{RUN}/cancel"): Response(404, None), ("GET", RUN): Response(404, {"detail": "Run not found"})},
    )
    driver = started_driver(server)
    cleanup(driver, server)
    assert driver.status is RunStatus.CANCELLED


def test_abandoning_before_the_start_sends_nothing() -> None:
    server = FakeServer(completed_run())
    driver = make_driver(Clock())
    assert cleanup(driver, server) == []
    assert driver.status is RunStatus.CANCELLED and driver.run_id is None


def test_abandoning_a_finished_run_sends_nothing() -> None:
    server = FakeServer(completed_run())
    driver, out = run(server)
    assert driver.status is RunStatus.COMPLETED
    assert cleanup(driver, server) == []
    assert driver.status is RunStatus.COMPLETED


def test_abandoning_a_failed_run_sends_nothing_and_keeps_its_error() -> None:
    server = FakeServer(
        failed_run(),
        rest={
            ("GET", RUN): Response(200, {"status": "error"}),
            ("GET", f"{THREAD}/state"): Response(200, FAILED_STATE),
        },
    )
    driver, out = run(server)
    assert cleanup(driver, server) == []
    assert driver.status is RunStatus.FAILED and driver.state.error is out.error


def test_a_cancel_that_cannot_be_sent_leaves_the_status_alone() -> None:
    server = FakeServer(completed_run(), rest={("POST", f"{RUN}/cancel"): Broken(httpx.ConnectError("refused"))})
    driver = started_driver(server)
    assert cleanup(driver, server) == [CANCEL]
    assert driver.status is RunStatus.RUNNING


# --- what the start sends -------------------------------------------------------------------------------


PENDING_STATE = {
    "values": {"x": 1},
    "tasks": [{"id": "t", "name": "ask", "interrupts": [{"value": {"question": "approve?"}, "id": "b8fe"}]}],
}


def test_a_resume_answers_the_pending_interrupt_by_id() -> None:
    server = FakeServer(completed_run(), rest={("GET", f"{THREAD}/state"): Response(200, PENDING_STATE)})
    driver, out = run(server, start=plan(Command(resume="yes"), thread_given=True))
    assert out.error is None and driver.status is RunStatus.COMPLETED
    state, start = server.requests[:2]
    assert (state.method, state.path) == ("GET", f"{THREAD}/state")
    assert (start.method, start.path) == ("POST", START_PATH)
    assert start.json["command"] == {"resume": {"b8fe": "yes"}} and start.json["input"] is None


@pytest.mark.parametrize(
    "state", [Response(404, {"detail": "Thread not found"}), Response(200, {"values": {}, "tasks": []})]
)
def test_a_resume_on_a_thread_with_no_checkpoint_runs_from_the_start(state: Response) -> None:
    # As locally: no thread (or one the caller may not see: the server answers
    # 404 for both), or one that never ran, and the graph runs from the start.
    server = FakeServer(completed_run(), rest={("GET", f"{THREAD}/state"): state})
    driver, out = run(server, start=plan(Command(resume="yes"), thread_given=True))
    assert out.error is None and driver.status is RunStatus.COMPLETED
    start = next(r for r in server.requests if (r.method, r.path) == ("POST", START_PATH))
    assert start.json["input"] == {} and "command" not in start.json


def test_a_resume_the_server_refuses_fails_with_its_status() -> None:
    # Another user's thread: invisible to the state read (404), and the start
    # of the run is refused, so nothing is written to it.
    refused = Response(404, {"detail": "Thread or assistant not found."})
    server = FakeServer(
        rest={("GET", f"{THREAD}/state"): Response(404, {"detail": "Thread not found"}), ("POST", START_PATH): refused}
    )
    driver, out = run(server, start=plan(Command(resume="yes"), thread_given=True))
    assert isinstance(out.error, RemoteCommandError) and out.error.status == 404
    assert "Thread or assistant not found." in str(out.error) and "starting the run" in str(out.error)
    assert driver.status is RunStatus.FAILED


def test_a_resume_whose_state_cannot_be_read() -> None:
    server = FakeServer(rest={("GET", f"{THREAD}/state"): Response(500, {"detail": "db down"})})
    driver, out = run(server, start=plan(Command(resume="yes"), thread_given=True))
    assert isinstance(out.error, RemoteCommandError) and "db down" in str(out.error)
    server = FakeServer(rest={("GET", f"{THREAD}/state"): Broken(httpx.ReadTimeout("slow"), timed_out=True)})
    driver, out = run(server, start=plan(Command(resume="yes"), thread_given=True))
    assert isinstance(out.error, RemoteTimeoutError) and "thread's state" in str(out.error)
    assert driver.status is RunStatus.FAILED


def test_a_fresh_run_does_not_read_the_state() -> None:
    server = FakeServer(completed_run())
    run(server, start=plan({"x": 1}, thread_given=True))
    assert not server.asked("GET", f"{THREAD}/state")


ASSISTANT = "6f1b2c9e-0000-4000-8000-000000000001"
SCHEMAS = {"input_schema": {}, "output_schema": {"properties": {"answer": {"type": "string"}}}}


def test_the_output_schema_is_learned_before_the_start() -> None:
    schema = GraphSchemas()
    server = FakeServer(
        completed_run(),
        rest={
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": ASSISTANT, "graph_id": "agent"}]),
            ("GET", f"/assistants/{ASSISTANT}/schemas"): Response(200, SCHEMAS),
        },
    )
    driver, out = run(server, schemas=schema)
    assert out.error is None and schema.known and schema.keys == {"answer"}
    search, schemas, start = server.requests[:3]
    assert (search.method, search.path, search.json) == (
        "POST",
        "/assistants/search",
        {"graph_id": "agent", "metadata": {"created_by": "system"}, "limit": 1},
    )
    assert (schemas.method, schemas.path) == ("GET", f"/assistants/{ASSISTANT}/schemas")
    assert start.path == START_PATH
    # Learned once: a second run with the same schema asks nothing more.
    server2 = FakeServer(completed_run())
    run(server2, schemas=schema)
    assert [r.path for r in server2.requests] == [START_PATH, RUN]


def test_an_assistant_id_needs_no_search() -> None:
    schema = GraphSchemas()
    server = FakeServer(completed_run(), rest={("GET", f"/assistants/{ASSISTANT}/schemas"): Response(200, SCHEMAS)})
    run(server, start=plan({"x": 1}, assistant_id=ASSISTANT), schemas=schema)
    assert server.requests[0].path == f"/assistants/{ASSISTANT}/schemas"
    assert schema.keys == {"answer"}


@pytest.mark.parametrize(
    "rest",
    [
        {("POST", "/assistants/search"): Response(403, {"detail": "Forbidden"})},
        {
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": ASSISTANT}]),
            ("GET", f"/assistants/{ASSISTANT}/schemas"): Response(404, {"detail": "Assistant not found"}),
        },
    ],
    ids=["search-forbidden", "schemas-gone"],
)
def test_an_output_schema_the_server_does_not_have_stays_unknown(rest: dict[tuple[str, str], Answer]) -> None:
    schema = GraphSchemas()
    server = FakeServer(completed_run(), rest=rest)
    driver, out = run(server, schemas=schema)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert schema.known and schema.keys is None


@pytest.mark.parametrize(
    ("rest", "error_type", "words"),
    [
        (
            {("POST", "/assistants/search"): Broken(httpx.ConnectError("refused"))},
            RemoteConnectionError,
            "finding the assistant",
        ),
        (
            {("POST", "/assistants/search"): Response(200, "<html>sign in</html>", "text/html")},
            RemoteProtocolError,
            "JSON list",
        ),
        (
            {
                ("POST", "/assistants/search"): Response(200, [{"assistant_id": ASSISTANT}]),
                ("GET", f"/assistants/{ASSISTANT}/schemas"): Response(500, {"detail": "db down"}),
            },
            RemoteCommandError,
            "db down",
        ),
    ],
    ids=["search-broken", "search-not-json", "schemas-failed"],
)
def test_schemas_the_server_fails_to_give_fail_the_run_before_it_starts(
    rest: dict[tuple[str, str], Answer], error_type: type[Exception], words: str
) -> None:
    # Not silently unknown: the next call asks again.
    schema = GraphSchemas()
    server = FakeServer(completed_run(), rest=rest)
    driver, out = run(server, schemas=schema)
    assert isinstance(out.error, error_type) and words in str(out.error)
    assert driver.status is RunStatus.FAILED and not schema.known
    assert not server.asked("POST", START_PATH)


# --- naming a streaming message's node ----------------------------------------------


def test_a_message_start_reads_the_thread_state_once_per_step_and_names_the_node() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    for message_id in ("m1", "m2"):  # two messages in one step: one read
        w.event("messages", {"event": "message-start", "role": "ai", "id": message_id})
        w.event("messages", {"event": "message-finish"})
    w.tick().event("values", {"x": 2}, interrupts=[])
    w.event("messages", {"event": "message-start", "role": "ai", "id": "m3"}, ns=["sub:9"])
    server = FakeServer(w.frames)
    server.step_states = [
        Response(200, {"values": {}, "tasks": [{"id": "1", "name": "agent", "state": None, "result": None}]}),
        Broken(httpx.ConnectError("refused")),
    ]
    _, out = run(server)
    assert out.error is None
    assert [(r.path, r.params) for r in server.step_reads] == [
        (f"{THREAD}/state", {"subgraphs": "false"}),
        (f"{THREAD}/state", {"subgraphs": "true"}),
    ]
    starts = [p for p in out.parts if p["type"] == "messages" and p["data"][0].get("event") == "message-start"]
    # A read that failed costs the node, not the run.
    assert [p["data"][1]["langgraph_node"] for p in starts] == ["agent", "agent", None]


def test_a_failed_step_read_is_bounded_and_not_repeated_for_the_run() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.event("messages", {"event": "message-start", "role": "ai", "id": "m1"})
    w.event("messages", {"event": "message-finish"})
    w.tick().event("values", {"x": 2}, interrupts=[])
    w.event("messages", {"event": "message-start", "role": "ai", "id": "m2"})
    w.event("messages", {"event": "message-finish"})
    server = FakeServer(w.frames)
    server.step_states = [Broken(httpx.ReadTimeout("slow"), timed_out=True)]
    _, out = run(server)
    assert out.error is None
    # One read, with a budget of its own; a slow state endpoint is not asked again.
    assert [r.timeout for r in server.step_reads] == [STEP_READ_TIMEOUT]
    starts = [p for p in out.parts if p["type"] == "messages" and p["data"][0].get("event") == "message-start"]
    assert len(starts) == 2


def _returned_without_updates() -> Wire:
    # A module without the hook: only values. The second state brings a message a node returned.
    human = {"type": "human", "content": "hi", "id": "h1"}
    call = {"type": "ai", "content": "", "id": "a1", "tool_calls": []}
    w = Wire().metadata().event("values", {"messages": [human]}, interrupts=[])
    w.tick().event("values", {"messages": [human, call]}, interrupts=[])
    return w


def test_a_writer_read_has_the_full_request_budget_and_names_the_returned_message() -> None:
    call = {"type": "ai", "content": "", "id": "a1"}
    history = [{"values": {}, "tasks": [{"name": "agent", "result": {"messages": [call]}}]}]
    server = FakeServer(
        _returned_without_updates().frames, rest={("POST", f"{THREAD}/history"): [Response(200, history)]}
    )
    _, out = run(server)
    assert out.error is None
    reads = [r for r in server.requests if r.path == f"{THREAD}/history"]
    # Nothing else names a returned message's node: no hint's short budget (a
    # loaded server took over 2 s), the request timeout bounds it.
    assert [(r.json, r.timeout) for r in reads] == [({"limit": 10}, None)]
    messages = [p["data"] for p in out.parts if p["type"] == "messages"]
    assert [(m.id, meta["langgraph_node"]) for m, meta in messages] == [("a1", "agent")]


def test_a_failed_writer_read_costs_the_node_not_the_message() -> None:
    timed_out = Broken(httpx.ReadTimeout("slow"), timed_out=True)
    server = FakeServer(_returned_without_updates().frames, rest={("POST", f"{THREAD}/history"): [timed_out]})
    _, out = run(server)
    assert out.error is None
    messages = [p["data"] for p in out.parts if p["type"] == "messages"]
    assert [(m.id, meta["langgraph_node"]) for m, meta in messages] == [("a1", None)]


def test_a_request_budget_of_its_own_never_exceeds_the_request_timeout() -> None:
    timeouts = Timeouts(request=1.0)
    assert request_args(Request("GET", "/x", timeout=STEP_READ_TIMEOUT), timeouts, {})["timeout"] == 1.0
    assert request_args(Request("GET", "/x", timeout=0.5), timeouts, {})["timeout"] == 0.5
    assert request_args(Request("GET", "/x"), timeouts, {})["timeout"] == 1.0


# --- what was received before the end is delivered ------------------------------------


def test_a_deleted_run_delivers_the_channel_event_it_sent_last() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.event("custom:trail", {"step": 1})
    w.raw("error", {"error": "HTTPException", "message": "404: Run not found"}, frame_id=None)
    server = FakeServer(w.frames, rest={("GET", RUN): Response(404, {"detail": "Run not found"})})
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.CANCELLED
    assert kinds(out.parts) == [("values", ()), ("custom:trail", ())]


def test_a_run_given_up_on_delivers_what_it_received_before_the_error() -> None:
    w = Wire().metadata().event("values", {"x": 1}, interrupts=[])
    w.event("custom:trail", {"step": 1})
    # A message the state shows the server ran past: held until its node's update, which never comes.
    w.event("messages", {"event": "message-start", "role": "ai", "id": "m1"})
    w.event("values", {"x": 2}, ns=["sub:1"], interrupts=[])
    frames = w.frames
    refused = Conn(answer=Broken(httpx.ConnectError("connection refused")))
    server = FakeServer(frames, [Conn(cut=through(frames, len(frames)))], then=refused)
    server.step_states = [
        Response(200, {"values": {"messages": [{"type": "ai", "content": "hi", "id": "m1"}]}, "tasks": []})
    ]
    driver, out = run(server, reconnect=1.0)
    assert type(out.error) is RemoteConnectionError and driver.status is RunStatus.FAILED
    assert kinds(out.parts) == [("values", ()), ("custom:trail", ()), ("messages", ()), ("values", ("sub:1",))]
