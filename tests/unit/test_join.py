"""Joining a run started elsewhere, and starting one without following it: ``RunDriver`` on a scripted server.

The property that matters: a caller that stored ``driver.cursor`` after any
event, and a join from that cursor, together deliver every part of the run
once, in order, even where frames of one millisecond share their SSE id.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.cursor import FROM_START
from remote_graph._core.join import JoinFrom, RunCursor, refusal, run_kind
from remote_graph._core.replay import RepeatFilter
from remote_graph._core.run import RunDriver
from remote_graph._core.run_records import RunRecord, cancel_run, read_run, wait_run
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.state import Phase, RunStatus
from remote_graph.errors import (
    RemoteTimeoutError,
    RunCursorError,
    RunEventsGoneError,
    RunMismatchError,
    RunNotFoundError,
)
from tests.unit.fake_run import (
    CANCEL,
    EVERYTHING,
    RID,
    RUN,
    START,
    THREAD,
    TID,
    Clock,
    Conn,
    FakeServer,
    Frame,
    Wire,
    before_newest,
    cleanup,
    custom_run,
    drive,
    make_driver,
    plan,
    through,
)

V3_RECORD = {"metadata": {"graph_id": "agent"}, "kwargs": {"config": {"configurable": {"__event_streaming_v2": True}}}}
CLASSIC_RECORD = {"metadata": {"graph_id": "agent"}, "kwargs": {"stream_mode": ["custom"], "subgraphs": False}}
LOOK_UP = ("GET", RUN)


def classic_wire() -> ClassicWire:
    view = CallView(server_thread=TID, thread_name="mine")
    return ClassicWire(ChunkReader(view, GraphSchemas()), THREAD)


def classic_run(n: int, per_ms: int = 3) -> list[Frame]:
    """A classic run of ``n`` custom chunks, ``per_ms`` to a millisecond (their ids repeat)."""
    w = Wire().metadata()
    for i in range(n):
        if i and i % per_ms == 0:
            w.tick()
        w.chunk("custom", {"i": i})
    return w.frames


def joiner(server: FakeServer, after: str | None = None, *, kind: str = "v3", clock: Clock | None = None) -> RunDriver:
    clock = clock or server.clock or Clock()
    server.clock = clock
    cursor = RunCursor.decode(after) if after is not None else None
    join = JoinFrom(RID, "v3" if kind == "v3" else "classic", cursor, modes=("custom",))
    wire = classic_wire() if kind == "classic" else None
    return make_driver(clock, plan(None, thread_given=True), join=join, wire=wire)


def until(driver: RunDriver, server: FakeServer, parts: int) -> list[dict[str, Any]]:
    """Step a driver until it delivered ``parts`` parts."""
    got: list[dict[str, Any]] = []
    reply: Any = None
    while len(got) < parts:
        step = driver.step(reply)
        reply = None
        assert step is not None
        if isinstance(step, dict):
            got.append(step)
        else:
            reply = server.answer(step)
    return got


def starter(frames: list[Frame], kind: str) -> tuple[RunDriver, FakeServer]:
    server = FakeServer(frames, record=V3_RECORD if kind == "v3" else CLASSIC_RECORD)
    server.clock = Clock()
    wire = classic_wire() if kind == "classic" else None
    return make_driver(server.clock, wire=wire), server


def whole(frames: list[Frame], kind: str) -> list[dict[str, Any]]:
    driver, server = starter(frames, kind)
    out = drive(driver, server)
    assert out.error is None
    return out.parts


# --- the cursor ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["v3", "classic"])
def test_a_join_from_the_cursor_of_any_event_delivers_the_rest_once(kind: str) -> None:
    frames = custom_run(10) if kind == "v3" else classic_run(10)
    reference = whole(frames, kind)
    for k in range(1, len(reference) + 1):
        first, server = starter(frames, kind)
        seen = until(first, server, k)
        cursor = first.cursor
        assert cursor is not None
        # The starter dies here; its run goes on and ends.
        later = FakeServer(frames, record=server.record_extra, produced=EVERYTHING)
        out = drive(joiner(later, cursor, kind=kind), later)
        assert out.error is None, f"cursor after part {k}"
        assert seen + out.parts == reference, f"cursor after part {k}"


@pytest.mark.parametrize("kind", ["v3", "classic"])
def test_a_join_of_a_running_run_from_a_cursor_follows_it_live(kind: str) -> None:
    frames = custom_run(9) if kind == "v3" else classic_run(9)
    reference = whole(frames, kind)
    first, server = starter(frames, kind)
    seen = until(first, server, 4)
    cursor = first.cursor
    assert cursor is not None
    # The run has produced a few more frames than the starter read; the rest comes live.
    later = FakeServer(frames, record=server.record_extra, produced=server.produced + 1)
    driver = joiner(later, cursor, kind=kind)
    out = drive(driver, later)
    assert out.error is None and seen + out.parts == reference
    assert driver.status is RunStatus.COMPLETED
    assert later.trail()[0] == LOOK_UP
    assert later.opened[0].last_event_id == RunCursor.decode(cursor).resume_from


@pytest.mark.parametrize("kind", ["v3", "classic"])
def test_a_join_cut_mid_body_resumes_and_delivers_every_part_once(kind: str) -> None:
    frames = custom_run(12) if kind == "v3" else classic_run(12)
    reference = whole(frames, kind)
    for offset in range(through(frames, 1), through(frames, len(frames)), 29):
        server = FakeServer(frames, [Conn(cut=offset)], record=V3_RECORD if kind == "v3" else CLASSIC_RECORD)
        server.produced = 4
        out = drive(joiner(server, kind=kind), server)
        assert out.error is None and out.parts == reference, f"cut at byte {offset}"


def test_a_join_of_a_finished_run_replays_it_and_ends() -> None:
    frames = custom_run(6)
    server = FakeServer(frames, record=V3_RECORD, produced=EVERYTHING)
    driver = joiner(server)
    assert driver.follow.phase is Phase.LOOKING_UP and driver.status is RunStatus.PENDING
    out = drive(driver, server)
    assert out.error is None and out.parts == whole(frames, "v3")
    assert driver.status is RunStatus.COMPLETED
    assert server.trail()[:2] == [LOOK_UP, ("open", FROM_START)] and START not in server.trail()


@pytest.mark.parametrize("kind", ["v3", "classic"])
def test_a_cursor_at_the_last_event_delivers_nothing_and_ends(kind: str) -> None:
    frames = custom_run(5) if kind == "v3" else classic_run(5)
    first, server = starter(frames, kind)
    assert drive(first, server).error is None
    later = FakeServer(frames, record=server.record_extra, produced=EVERYTHING)
    driver = joiner(later, first.cursor, kind=kind)
    out = drive(driver, later)
    assert out.error is None and out.parts == [] and driver.status is RunStatus.COMPLETED


def test_a_cursor_survives_its_string_and_names_its_run() -> None:
    cursor = RunCursor("run-1", "17-0", "18-0", seq=7)
    text = cursor.encode()
    assert text.startswith("rg1.") and RunCursor.decode(text) == cursor and cursor.kind == "v3"
    classic = RunCursor("run-1", FROM_START, "18-0", count=3)
    assert RunCursor.decode(classic.encode()) == classic and classic.kind == "classic"
    # A v3 run stream read from a server's classic modes counts frames, and is still a v3 one.
    counted = RunCursor("run-1", FROM_START, "run-1_event_9", count=1, stream="v3")
    assert RunCursor.decode(counted.encode()) == counted and counted.kind == "v3"


@pytest.mark.parametrize(
    "bad",
    [
        None,
        7,
        "",
        "rg1.",
        "rg1.!!!",
        "rg2.abc",
        RunCursor("r", "a", "b").encode(),
        RunCursor("r", "a", "b", 1, None, "v4").encode(),
    ],  # type: ignore[arg-type]
)
def test_a_string_that_is_no_cursor_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(RunCursorError, match="after="):
        RunCursor.decode(bad)


def test_no_cursor_before_the_first_event() -> None:
    first, server = starter(custom_run(3), "v3")
    assert first.cursor is None
    until(first, server, 1)
    assert first.cursor is not None and RunCursor.decode(first.cursor).run_id == RID


# --- what a join refuses ---------------------------------------------------------------------


def test_an_unknown_run_fails_as_not_found() -> None:
    server = FakeServer(custom_run(2), rest={("GET", RUN): Response(404, {"detail": "Not Found"})})
    driver = joiner(server)
    out = drive(driver, server)
    assert isinstance(out.error, RunNotFoundError) and out.error.run_id == RID
    assert driver.follow.phase is Phase.DONE and driver.status is RunStatus.FAILED
    # A run that was never seen running is not cancelled.
    assert cleanup(driver, server) == []


def test_a_run_of_another_graph_is_refused() -> None:
    record = {**V3_RECORD, "metadata": {"graph_id": "other"}, "assistant_id": "a-uuid"}
    server = FakeServer(custom_run(2), record=record)
    out = drive(joiner(server), server)
    assert isinstance(out.error, RunMismatchError) and "'other'" in str(out.error)
    assert server.trail() == [LOOK_UP, ("GET", "/assistants/agent")]


def test_a_run_of_another_assistant_of_the_same_graph_is_joined() -> None:
    record = {**V3_RECORD, "assistant_id": "a-uuid"}
    frames = custom_run(2)
    server = FakeServer(
        frames,
        record={**record, "metadata": {"graph_id": "g"}},
        rest={("GET", "/assistants/agent"): Response(200, {"assistant_id": "b", "graph_id": "g"})},
        produced=EVERYTHING,
    )
    out = drive(joiner(server), server)
    assert out.error is None and out.parts == whole(frames, "v3")


def test_a_record_that_names_no_graph_is_checked_by_its_assistant() -> None:
    # aegra's record names the assistant (a UUID), no graph and no run arguments.
    frames = custom_run(2)
    assistant = {("GET", "/assistants/a-uuid"): Response(200, {"assistant_id": "a-uuid", "graph_id": "agent"})}
    server = FakeServer(frames, record={"assistant_id": "a-uuid"}, rest=assistant, produced=EVERYTHING)
    out = drive(joiner(server), server)
    assert out.error is None and out.parts == whole(frames, "v3")
    assert server.trail()[:2] == [LOOK_UP, ("GET", "/assistants/a-uuid")]
    other = {("GET", "/assistants/a-uuid"): Response(200, {"assistant_id": "a-uuid", "graph_id": "other"})}
    other[("GET", "/assistants/agent")] = Response(404, {"detail": "Not Found"})
    server = FakeServer(frames, record={"assistant_id": "a-uuid"}, rest=other)
    out = drive(joiner(server), server)
    assert isinstance(out.error, RunMismatchError) and "runs graph 'other'" in str(out.error)


def test_a_record_that_keeps_no_run_arguments_refuses_no_join() -> None:
    # Nothing says which kind of run it was: the join reads the stream as the caller says.
    record = {"assistant_id": "a-uuid", "config": {"tags": []}, "status": "success", "run_id": RID}
    assert run_kind(record) is None
    assert refusal(record, JoinFrom(RID, "v3")) is None
    assert refusal(record, JoinFrom(RID, "classic", modes=("values",))) is None
    assert RunRecord.of(record).kind is None and RunRecord.of(record).stream_mode == ()


def test_the_kind_of_run_must_match_the_join() -> None:
    v3 = {"kwargs": {"config": {"configurable": {"__event_streaming_v2": True}}}}
    classic = {"kwargs": {"stream_mode": ["updates", "custom"], "subgraphs": False}}
    assert refusal(v3, JoinFrom(RID, "v3")) is None
    assert "version='v3'" in (refusal(v3, JoinFrom(RID, "classic")) or "")
    assert "stream_mode=" in (refusal(classic, JoinFrom(RID, "v3")) or "")
    assert refusal(classic, JoinFrom(RID, "classic", modes=("custom",))) is None
    assert "'values'" in (refusal(classic, JoinFrom(RID, "classic", modes=("values",))) or "")
    assert "subgraphs=False" in (refusal(classic, JoinFrom(RID, "classic", modes=("custom",), subgraphs=True)) or "")
    server = FakeServer(custom_run(2), record=CLASSIC_RECORD)
    out = drive(joiner(server), server)
    assert isinstance(out.error, RunMismatchError) and "stream_mode=" in str(out.error)


def test_a_run_whose_events_are_gone_fails_instead_of_a_short_stream() -> None:
    frames = custom_run(6)
    # The server kept the run's record but not its first frames.
    server = FakeServer(frames[3:], record=V3_RECORD, produced=EVERYTHING)
    out = drive(joiner(server), server)
    assert isinstance(out.error, RunEventsGoneError) and "first event" in str(out.error)


def test_a_finished_run_with_no_stored_events_fails() -> None:
    server = FakeServer([], record=V3_RECORD, produced=EVERYTHING)
    driver = joiner(server)
    out = drive(driver, server)
    assert isinstance(out.error, RunEventsGoneError) and "holds nothing" in str(out.error)
    # The server's verdict was known: nothing to cancel.
    assert cleanup(driver, server) == []


def test_a_cursor_whose_event_is_gone_fails() -> None:
    frames = custom_run(9)
    first, server = starter(frames, "v3")
    until(first, server, 2)
    cursor = first.cursor
    later_frames = [f for f in frames if f.id is None or f.id > RunCursor.decode(cursor or "").event_id]
    later = FakeServer(later_frames, record=V3_RECORD, produced=EVERYTHING)
    driver = joiner(later, cursor)
    out = drive(driver, later)
    assert isinstance(out.error, RunEventsGoneError) and "after the cursor" in str(out.error)
    # The run is not the join's to stop because the join cannot show it.
    assert cleanup(driver, later) == []


# --- cancelling and detaching ------------------------------------------------------------------


def test_abandoning_a_join_of_a_running_run_cancels_it() -> None:
    server = FakeServer(custom_run(8), record=V3_RECORD, rest={("POST", f"{RUN}/cancel"): Response(202, None)})
    driver = joiner(server)
    until(driver, server, 2)
    assert driver.status is RunStatus.RUNNING
    assert cleanup(driver, server) == [CANCEL]
    assert driver.status is RunStatus.CANCELLED


def test_a_detached_start_ends_once_the_run_is_accepted_and_never_cancels_it() -> None:
    server = FakeServer(custom_run(4))
    server.clock = Clock()
    driver = make_driver(server.clock)
    driver.detach()
    out = drive(driver, server)
    assert out.error is None and out.parts == []
    assert driver.run_id == RID and driver.status is RunStatus.RUNNING and driver.follow.phase is Phase.DONE
    assert server.trail() == [START]
    assert cleanup(driver, server) == []
    assert driver.status is RunStatus.RUNNING


# --- the repeat filter, seeded --------------------------------------------------------------


def test_a_seeded_repeat_filter_drops_the_delivered_frames_of_the_millisecond_by_position() -> None:
    repeats: RepeatFilter[str] = RepeatFilter()
    repeats.resume("5-0", 2)
    assert repeats.reconnected() == []
    # Same content as what follows: only position tells the two delivered ones from the new one.
    assert [repeats.feed("5-0", "a", "first"), repeats.feed("5-0", "a", "second")] == [[], []]
    assert repeats.feed("5-0", "a", "third") == ["third"]
    assert repeats.feed("6-0", "b", "fourth") == ["fourth"]
    assert repeats.position == ("6-0", 1)


def test_a_seeded_repeat_filter_on_a_full_replay_drops_what_came_before() -> None:
    repeats: RepeatFilter[str] = RepeatFilter()
    repeats.resume("5-0", 1)
    repeats.reconnected()
    assert repeats.feed("4-0", "x", "old") == []
    assert repeats.feed("5-0", "y", "delivered") == []
    assert repeats.feed("5-0", "z", "new") == ["new"]


# --- managing runs ---------------------------------------------------------------------------


def test_waiting_for_a_run_asks_the_server_until_it_ends() -> None:
    clock = Clock()
    conversation = wait_run(TID, RID, timeout=5.0, clock=clock)
    assert next(conversation) == Request("GET", RUN)
    action = conversation.send(Response(200, {"run_id": RID, "status": "running"}))
    assert isinstance(action, Request) and action.path == f"{RUN}/join" and action.timeout == 5.0
    clock.now = 1.0
    assert conversation.send(Response(200, {})) == Request("GET", RUN)
    # A success: the run's last checkpoint says whether it paused there.
    action = conversation.send(Response(200, {"run_id": RID, "status": "success"}))
    assert action == Request("POST", f"/threads/{TID}/history", json={"limit": 1, "metadata": {"run_id": RID}})
    with pytest.raises(StopIteration) as done:
        conversation.send(Response(200, [{"values": {}, "tasks": [{"id": "t", "interrupts": []}]}]))
    record = done.value.value
    assert isinstance(record, RunRecord) and record.status is RunStatus.COMPLETED and record.done


@pytest.mark.parametrize(
    ("last", "status"),
    [
        ([{"tasks": [{"id": "t", "interrupts": [{"id": "i", "value": "ok?"}]}]}], RunStatus.INTERRUPTED),
        ([{"tasks": [], "interrupts": [{"id": "i", "value": "ok?"}]}], RunStatus.INTERRUPTED),
        ([{"tasks": []}], RunStatus.COMPLETED),
        ([], RunStatus.COMPLETED),
        (Broken(httpx.ReadTimeout("slow")), RunStatus.COMPLETED),
    ],
    ids=["task-interrupt", "state-interrupt", "none-waiting", "no-checkpoint", "read-failed"],
)
def test_a_success_that_paused_for_input_reads_interrupted(last: Any, status: RunStatus) -> None:
    # The server records a paused run as a success; its last checkpoint tells (a failed read leaves it so).
    conversation = read_run(TID, RID)
    assert next(conversation) == Request("GET", RUN)
    conversation.send(Response(200, {"run_id": RID, "status": "success"}))
    with pytest.raises(StopIteration) as done:
        conversation.send(last if isinstance(last, Broken) else Response(200, last))
    assert done.value.value.status is status


@pytest.mark.parametrize(
    ("checkpoints", "status"),
    [
        (
            [{"metadata": {"run_id": RID}, "tasks": [{"id": "t", "interrupts": [{"id": "i", "value": "?"}]}]}],
            "interrupted",
        ),
        ([{"metadata": {"run_id": RID}, "tasks": []}], "cancelled"),
        # Another run's checkpoint says nothing of this one.
        ([{"metadata": {"run_id": "other"}, "tasks": [{"id": "t", "interrupts": [{"id": "i"}]}]}], "cancelled"),
    ],
    ids=["paused", "cancelled", "another-runs-checkpoint"],
)
def test_an_interrupted_run_on_a_server_that_filters_no_history_reads_its_own_checkpoint(
    checkpoints: list[Any], status: str
) -> None:
    # aegra calls a paused run interrupted, as a cancelled one, and answers a
    # history filtered by metadata with a 500: the thread's newest checkpoints tell.
    conversation = read_run(TID, RID)
    next(conversation)
    action = conversation.send(Response(200, {"run_id": RID, "status": "interrupted"}))
    assert action == Request("POST", f"/threads/{TID}/history", json={"limit": 1, "metadata": {"run_id": RID}})
    action = conversation.send(Response(500, {"detail": "unexpected keyword argument 'metadata'"}))
    assert action == Request("POST", f"/threads/{TID}/history", json={"limit": 20})
    with pytest.raises(StopIteration) as done:
        conversation.send(Response(200, checkpoints))
    assert done.value.value.status == status


def test_a_cancelled_run_on_langgraph_api_reads_no_history() -> None:
    # There "interrupted" is a cancel: its record keeps the run's arguments (kwargs).
    conversation = read_run(TID, RID)
    next(conversation)
    with pytest.raises(StopIteration) as done:
        conversation.send(Response(200, {"run_id": RID, "status": "interrupted", **V3_RECORD}))
    assert done.value.value.status == "cancelled"


def test_a_cancel_names_its_wait_flag_as_every_server_reads_it() -> None:
    # aegra reads ``wait`` as an integer and refuses ``false`` (422).
    conversation = cancel_run(TID, RID)
    assert next(conversation) == Request("POST", f"{RUN}/cancel", params={"wait": "0", "action": "interrupt"})


def test_waiting_past_the_timeout_fails_naming_the_wait() -> None:
    clock = Clock()
    conversation = wait_run(TID, RID, timeout=2.0, clock=clock)
    next(conversation)
    conversation.send(Response(200, {"run_id": RID, "status": "running"}))
    clock.now = 2.5
    conversation.send(Response(200, {}))
    with pytest.raises(RemoteTimeoutError, match="still running after 2s"):
        conversation.send(Response(200, {"run_id": RID, "status": "running"}))


@pytest.mark.parametrize(
    ("server", "status"),
    [("pending", "running"), ("success", "completed"), ("error", "failed"), ("interrupted", "cancelled")],
)
def test_a_run_record_reads_as_a_run_status(server: str, status: str) -> None:
    record = RunRecord.of({"run_id": RID, "status": server, **V3_RECORD})
    assert record.status == status and record.kind == "v3" and record.server_status == server


def test_a_replays_gaps_where_live_only_events_were_cost_a_few_reopens() -> None:
    # Joined once the run ended: a replay has no live-only events (lifecycle), so its
    # seq gaps look like events lost live (a Redis restarted under the stream). The
    # first _UNFILLED_GAPS of them are checked, each by one reopen that brings
    # nothing; then the run's gaps after stored events are no longer checked.
    w = Wire().metadata().tick().event("values", {"x": 0}, interrupts=[])
    for i in range(6):
        w.tick().event("lifecycle", {"event": "started", "namespace": [f"sub:{i}"], "graph_name": "sub"})
        w.tick().event("values", {"y": i}, ns=[f"sub:{i}"], interrupts=[])
        w.tick().event("lifecycle", {"event": "completed", "namespace": [f"sub:{i}"]})
        w.tick().event("values", {"x": i + 1}, interrupts=[])
    stored = [f for f in w.frames if b"event: lifecycle" not in f.raw]
    server = FakeServer(stored, produced=EVERYTHING, record=V3_RECORD)
    out = drive(joiner(server), server)
    assert out.error is None
    # The replay, a reopen before the event ahead of each of three gaps (the first
    # gap, after the run's first event, has no event to reopen before), then the
    # confirming one every clean close gets.
    assert [o.last_event_id for o in server.opened] == [
        FROM_START,
        stored[1].id,
        stored[2].id,
        stored[3].id,
        before_newest(stored),
    ]
    values = [p["data"] for p in out.parts if p["type"] == "values"]
    assert values == [{"x": 0}] + [v for i in range(6) for v in ({"y": i}, {"x": i + 1})]
