"""A classic run end to end through ``RunDriver`` with ``ClassicWire``, on a scripted server.

The frames are what the server streams for a local run of the same graph
(``classic_server``), so what the driver hands out must be what that local
run streamed, chunk for chunk: on a clean run, and after any cut, replay,
rewind or repeated frame the server's stream may bring.
"""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Interrupt

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.cursor import FROM_START
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.state import RunStatus
from remote_graph.errors import RemoteProtocolError, RemoteRunError
from tests.unit.classic_server import (
    HIDDEN,
    LOCAL_THREAD,
    PROBE_SCHEMAS,
    SERVER_THREAD,
    Chunk,
    classic_frames,
    classic_run,
    failing_graph,
    local_chunks,
    local_failure,
    probe_graph,
    server_json,
)
from tests.unit.fake_run import (
    CANCEL,
    EVERYTHING,
    RUN,
    START,
    THREAD,
    VERDICT,
    Conn,
    FakeServer,
    Frame,
    Wire,
    before_newest,
    cleanup,
    numbered,
    run,
    started_driver,
    through,
    wire_bytes,
)

ALL_MODES = ("values", "updates", "messages", "custom", "tasks", "checkpoints", "debug")
# A small run for the tests that cut it at every byte: a streamed reply, a tool
# message, a subgraph's custom events and updates.
SMALL_MODES = ("updates", "messages", "custom")
STATE = f"{THREAD}/state"


def ask() -> dict[str, Any]:
    return {"messages": [HumanMessage("hello", id="h1")]}


def wire(schemas: bool = True) -> ClassicWire:
    known = GraphSchemas()
    known.learn(PROBE_SCHEMAS if schemas else None)
    view = CallView(server_thread=SERVER_THREAD, thread_name=LOCAL_THREAD)
    return ClassicWire(ChunkReader(view, known), THREAD)


def chunks_of(parts: list[dict[str, Any]]) -> list[Chunk]:
    """The parts as a local run's chunks with ``subgraphs=True`` and a list of modes."""
    return [(tuple(part["ns"]), part["type"], part["data"]) for part in parts]


_SMALL: tuple[list[Chunk], list[Frame]] | None = None


def small_run() -> tuple[list[Chunk], list[Frame]]:
    """One local run of the probe graph (no interrupt) in ``SMALL_MODES``, and its frames."""
    global _SMALL
    if _SMALL is None:
        chunks = local_chunks(probe_graph(ask=False), ask(), SMALL_MODES)
        _SMALL = chunks, classic_frames(chunks)
    return _SMALL


# --- clean runs -------------------------------------------------------------------------


def test_a_clean_run_yields_every_chunk_the_local_run_streamed() -> None:
    chunks = local_chunks(probe_graph(), ask(), ALL_MODES)
    frames = classic_frames(chunks)
    server = FakeServer(frames)
    driver, out = run(server, wire=wire())
    assert out.error is None
    assert chunks_of(out.parts) == chunks
    # Paused at "ask": interrupted, with the interrupt the local run raised.
    assert driver.status is RunStatus.INTERRUPTED
    local_interrupts = [p["__interrupt__"] for _, m, p in chunks if m == "updates" and "__interrupt__" in p]
    assert local_interrupts and driver.interrupts == list(local_interrupts[0])
    assert server.trail() == [START, VERDICT, ("open", before_newest(frames))]


def test_a_run_that_finished_before_its_stream_was_read_replays_everything() -> None:
    chunks, frames = small_run()
    server = FakeServer(frames, produced=EVERYTHING)
    driver, out = run(server, wire=wire())
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert chunks_of(out.parts) == chunks


def test_the_revived_payloads_are_objects_as_locally() -> None:
    chunks, frames = small_run()
    _, out = run(FakeServer(frames), wire=wire())
    messages = [part["data"] for part in out.parts if part["type"] == "messages"]
    assert messages and all(isinstance(pair, tuple) and len(pair) == 2 for pair in messages)
    assert [type(message) for message, _ in messages] == [type(p[0]) for _, mode, p in chunks if mode == "messages"]
    assert {type(message) for message, _ in messages} == {AIMessageChunk, ToolMessage}
    # Metadata as local has it: the caller's thread, tuples, none of the server's keys.
    _, metadata = messages[0]
    assert metadata["thread_id"] == LOCAL_THREAD and "assistant_id" not in metadata and "run_id" not in metadata
    assert isinstance(metadata["langgraph_path"], tuple) and isinstance(metadata["langgraph_triggers"], tuple)
    update = next(part["data"] for part in out.parts if part["type"] == "updates" and not part["ns"])
    assert isinstance(update["chat"]["messages"][0], BaseMessage)
    # A dict the state schema says holds no message stays the user's dict.
    assert update["chat"]["note"] == {"type": "human", "content": "not a message"}


def test_without_the_schema_a_dict_shaped_like_a_message_is_revived_by_its_shape() -> None:
    # What the client does when the server cannot say which keys hold messages.
    _, frames = small_run()
    _, out = run(FakeServer(frames), wire=wire(schemas=False))
    update = next(part["data"] for part in out.parts if part["type"] == "updates" and not part["ns"])
    assert isinstance(update["chat"]["note"], HumanMessage)


# --- cut connections ---------------------------------------------------------------------


# Hundreds of whole runs, one per byte offset: CPU-bound, so slow where lanes share the cores.
@pytest.mark.timeout(360)
@pytest.mark.parametrize("ahead", [0, EVERYTHING], ids=["waits", "finishes-meanwhile"])
def test_a_cut_at_every_byte_offset_delivers_every_chunk_once(ahead: int) -> None:
    chunks, frames = small_run()
    total = len(wire_bytes(frames))
    for offset in range(total):
        server = FakeServer(frames, [Conn(cut=offset, chunks=(61,), ahead=ahead)])
        driver, out = run(server, wire=wire())
        assert out.error is None, f"cut at byte {offset}"
        assert chunks_of(out.parts) == chunks, f"cut at byte {offset}"
        assert driver.status is RunStatus.COMPLETED, f"cut at byte {offset}"
        trail = server.trail()
        assert [kind for kind, _ in trail] == ["POST", "sleep", "open", "GET", "open"], f"cut at byte {offset}"


@pytest.mark.timeout(360)
def test_a_cut_at_every_byte_offset_of_a_paused_run_keeps_its_interrupt_once() -> None:
    chunks = local_chunks(probe_graph(), ask(), ("updates",))
    frames = classic_frames(chunks)
    (raised,) = [p["__interrupt__"] for _, _, p in chunks if "__interrupt__" in p]
    for offset in range(len(wire_bytes(frames))):
        server = FakeServer(frames, [Conn(cut=offset, chunks=(61,), ahead=EVERYTHING)])
        classic = wire()
        driver, out = run(server, wire=classic)
        assert chunks_of(out.parts) == chunks, f"cut at byte {offset}"
        assert driver.status is RunStatus.INTERRUPTED, f"cut at byte {offset}"
        assert classic.interrupts == [((), raised[0])], f"cut at byte {offset}"


def test_a_cut_inside_a_multi_byte_character_loses_nothing() -> None:
    chunks, frames = small_run()
    body = wire_bytes(frames)
    inside = [i for i in range(1, len(body)) if 0x80 <= body[i] < 0xC0]
    assert len(inside) > 10  # the reply's "é", "中文" and "😀", in several frames
    for offset in inside:
        # Read a byte at a time too, so characters are split across reads as well.
        server = FakeServer(frames, [Conn(cut=offset, chunks=(1, 3, 2))])
        _, out = run(server, wire=wire())
        assert chunks_of(out.parts) == chunks, f"cut at byte {offset}"
    replies = [p[0] for _, mode, p in chunks if mode == "messages" and isinstance(p[0], AIMessageChunk)]
    text = "".join(str(m.content) for m in replies)
    assert text == "héllo 中文 😀"


@pytest.mark.parametrize("rewind", [1, 2, 3])
def test_a_resumed_stream_that_rewinds_repeats_nothing(rewind: int) -> None:
    # After a cut the run publishes two more frames; the new connection
    # subscribed before its replay read the last ``rewind`` of them, so its
    # live part begins with those again.
    chunks, frames = small_run()
    for after in range(1, len(frames) - 2):
        server = FakeServer(frames, [Conn(cut=through(frames, after), ahead=2), Conn(rewind=rewind)])
        _, out = run(server, wire=wire())
        assert chunks_of(out.parts) == chunks, (after, rewind)
        second = server.served[1]
        assert len(second) - len(set(second)) == min(rewind, 2), "the live part did not repeat the replay's end"


@pytest.mark.parametrize("after", range(1, 10))
def test_a_frame_sent_twice_as_a_connection_goes_live_is_delivered_once(after: int) -> None:
    chunks, frames = small_run()
    server = FakeServer(frames, [Conn(cut=through(frames, after)), Conn(twice=True)])
    _, out = run(server, wire=wire())
    assert chunks_of(out.parts) == chunks
    assert server.served[1].count(after) == 2


def test_equal_chunks_of_one_millisecond_split_by_a_cut_are_both_delivered() -> None:
    # A writer emitting the same event twice within a millisecond; the cut
    # falls anywhere after the first is whole and before the second is.
    event = {"progress": "."}
    w = Wire().metadata().chunk("values", server_json({"n": 0}))
    w.tick().chunk("custom", server_json(event)).chunk("custom", server_json(event))
    w.tick().chunk("values", server_json({"n": 1}))
    frames = w.frames
    for offset in range(through(frames, 3), through(frames, 4)):
        server = FakeServer(frames, [Conn(cut=offset)])
        _, out = run(server, wire=wire())
        assert [part["data"] for part in out.parts] == [{"n": 0}, event, event, {"n": 1}], f"cut at byte {offset}"


def test_a_run_whose_start_answer_was_lost_is_followed_from_its_first_chunk_once() -> None:
    # The start reached the server (three frames published) but its answer
    # was lost; the run found on the thread is followed from its first frame,
    # and that connection's live part repeats the replay's last two.
    chunks, frames = small_run()
    lost = Conn(answer=Broken(httpx.RemoteProtocolError("peer closed connection")), ahead=3)
    listed = {"run_id": "R", "status": "running", "kwargs": {"input": {"x": 1}, "command": None}}
    server = FakeServer(frames, [lost, Conn(rewind=2)], rest={("GET", f"{THREAD}/runs"): Response(200, [listed])})
    driver, out = run(server, wire=wire())
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert chunks_of(out.parts) == chunks
    assert server.opened[1].last_event_id == FROM_START
    assert len(server.served[0]) - len(set(server.served[0])) == 2


# --- a server that numbers its frames (aegra) ---------------------------------------------


@pytest.mark.parametrize("lost", [6, 8, 10])
@pytest.mark.parametrize("cut", [None, 4])
def test_a_numbered_frame_a_server_stored_but_did_not_send_is_replayed_in_its_place(lost: int, cut: int | None) -> None:
    # aegra reads a connection's replay before it subscribes: a frame published
    # in between is stored and never sent. Its number is missing: the stream is
    # reopened after the frame before it, and the replay brings it.
    chunks, frames = small_run()
    frames = numbered(frames)
    first = [] if cut is None else [Conn(cut=through(frames, cut), ahead=1)]
    server = FakeServer(frames, [*first, Conn(lost=[lost])])
    driver, out = run(server, wire=wire())
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert chunks_of(out.parts) == chunks
    # Reopened after the frame before the gap, which the next connection's replay begins with.
    at = [o.last_event_id for o in server.opened].index(frames[lost - 1].id)
    assert server.served[at][0] == lost


@pytest.mark.parametrize("delivered", [0, 1, 2])
def test_a_reopen_for_a_gap_of_two_frames_cut_mid_replay_delivers_each_once(delivered: int) -> None:
    # The reopened connection breaks after ``delivered`` of its replayed frames:
    # the next one resumes from what was delivered, not from before the gap.
    chunks, frames = small_run()
    frames = numbered(frames)
    cut = Conn(cut=lambda served: len(wire_bytes(served[:delivered])))
    server = FakeServer(frames, [Conn(lost=[6, 7]), cut])
    driver, out = run(server, wire=wire())
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert chunks_of(out.parts) == chunks


def test_gaps_in_a_servers_own_numbering_cost_a_reopen_each_then_none() -> None:
    # Numbers the server never used: each gap is checked once (the replay has
    # nothing for it), and after three such gaps the numbering is not judged.
    chunks, frames = small_run()
    frames = numbered(frames, skip=[6, 8, 10, 12])
    server = FakeServer(frames)
    driver, out = run(server, wire=wire())
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert chunks_of(out.parts) == chunks
    rewound = [o.last_event_id for o in server.opened[1:] if o.last_event_id != before_newest(frames)]
    assert rewound == [frames[5].id, frames[7].id, frames[9].id]


@pytest.mark.parametrize("seed", range(30))
def test_repeated_faults_at_random_deliver_every_chunk_once_in_order(seed: int) -> None:
    rng = random.Random(seed)
    chunks, frames = small_run()

    def cutter(served: list[Frame]) -> int | None:
        body = wire_bytes(served)
        return rng.randrange(len(body)) if body else None

    connections = [
        Conn(
            cut=cutter if rng.random() < 0.7 else None,
            live=rng.choice([None, rng.randint(0, 4)]),
            twice=rng.random() < 0.3,
            rewind=rng.choice([0, 0, 1, 2, 3]),
            ahead=rng.choice([0, rng.randint(1, 4), EVERYTHING]),
            chunks=[rng.randint(1, 97) for _ in range(5)],
        )
        for _ in range(rng.randint(2, 8))
    ]
    server = FakeServer(frames, connections, then=Conn(chunks=(rng.randint(1, 50),)))
    driver, out = run(server, wire=wire())
    assert out.error is None, out.error
    assert chunks_of(out.parts) == chunks
    assert driver.status is RunStatus.COMPLETED


def test_a_chunk_that_is_not_json_fails_the_run_and_the_cleanup_cancels_it() -> None:
    w = Wire().metadata().chunk("values", server_json({"n": 0})).chunk("updates", "{not json")
    server = FakeServer(w.frames, rest={("POST", f"{RUN}/cancel"): Response(202, None)})
    driver, out = run(server, wire=wire())
    assert isinstance(out.error, RemoteProtocolError)
    assert "'updates' chunk that is not JSON" in str(out.error) and "run R" in str(out.error)
    assert [part["data"] for part in out.parts] == [{"n": 0}]
    assert cleanup(driver, server) == [CANCEL]


# --- how runs end ----------------------------------------------------------------------------


def failed_run() -> tuple[list[Chunk], BaseException, list[Frame], Any]:
    """A local failure, the frames the server streams for it, and the thread's state after."""
    chunks, error = local_failure(failing_graph(), ask(), ("values", "updates", "custom", "tasks"))
    w = classic_run(chunks)
    w.tick().raw("error", {"error": type(error).__name__, "message": HIDDEN})
    (task_id,) = {p["id"] for _, mode, p in chunks if mode == "tasks" and p.get("name") == "fail"}
    state = {
        "values": {"messages": [], "count": 1},
        "next": ["fail"],
        "tasks": [{"id": task_id, "name": "fail", "path": ["__pregel_pull", "fail"], "error": repr(error)}],
        "metadata": {"step": 1},
        "created_at": "2026-01-01T00:00:00+00:00",
        "checkpoint": {"thread_id": SERVER_THREAD, "checkpoint_ns": "", "checkpoint_id": "c2"},
    }
    return chunks, error, w.frames, state


def test_a_failed_run_raises_the_exception_the_node_raised_rebuilt_by_type() -> None:
    chunks, error, frames, state = failed_run()
    assert type(error).__name__ == "Kaput"
    server = FakeServer(
        frames, rest={("GET", RUN): Response(200, {"status": "error"}), ("GET", STATE): Response(200, state)}
    )
    server.step_states = [Response(200, state)]
    driver, out = run(server, wire=wire())
    assert isinstance(out.error, RemoteRunError)
    assert type(out.error).__name__ == "Kaput" and str(out.error) == "it broke"
    assert driver.status is RunStatus.FAILED and driver.state.error is out.error
    # Every chunk before the failure, as locally; the failed task's error is the
    # node's own (its message read from the thread's state: the stream hides it).
    got = chunks_of(out.parts)
    assert len(got) == len(chunks)
    for (ns, mode, payload), (local_ns, local_mode, local_payload) in zip(got, chunks):
        assert (ns, mode) == (local_ns, local_mode)
        if mode == "tasks" and payload.get("error") is not None:
            assert type(payload["error"]).__name__ == type(local_payload["error"]).__name__ == "Kaput"
            assert payload["error"].args == local_payload["error"].args == ("it broke",)
            assert {**payload, "error": None} == {**local_payload, "error": None}
        else:
            assert payload == local_payload
    # The task error's state read is bounded (a hint: it must not hold the stream up).
    assert [(r.path, r.params) for r in server.step_reads] == [(STATE, {"subgraphs": "true"})]
    assert all(r.timeout is not None and r.timeout <= 2.0 for r in server.step_reads)


def test_a_failed_task_whose_state_cannot_be_read_keeps_the_streams_error() -> None:
    chunks, _, frames, state = failed_run()
    server = FakeServer(
        frames, rest={("GET", RUN): Response(200, {"status": "error"}), ("GET", STATE): Response(200, state)}
    )
    server.step_states = [Broken(httpx.ReadTimeout("slow"), timed_out=True)]
    _, out = run(server, wire=wire())
    failed = [p["data"] for p in out.parts if p["type"] == "tasks" and p["data"].get("error") is not None]
    assert len(failed) == 1
    assert type(failed[0]["error"]).__name__ == "Kaput" and str(failed[0]["error"]) == HIDDEN
    # The run's own error still comes from the state, read at the end.
    assert type(out.error).__name__ == "Kaput" and str(out.error) == "it broke"


def test_an_interrupted_run_hands_out_interrupt_objects_and_ends_interrupted() -> None:
    chunks = local_chunks(probe_graph(), ask(), ("values", "updates"))
    _, out = run(server := FakeServer(classic_frames(chunks)), wire=(w := wire()))
    assert chunks_of(out.parts) == chunks
    interrupts = [p["data"]["__interrupt__"] for p in out.parts if "__interrupt__" in p["data"]]
    # One in the root updates, one in the root values after them: the same, as tuples.
    assert len(interrupts) == 2 and interrupts[0] == interrupts[1]
    (only,) = interrupts[0]
    assert isinstance(interrupts[0], tuple) and isinstance(only, Interrupt)
    assert only.value == {"question": "ok?"} and only.id
    assert w.interrupts == [((), only)]
    assert server.told[-1] == "success"


def test_an_interrupt_raised_in_a_subgraph_is_noted_once_where_it_was_raised() -> None:
    raised = {"value": "inner?", "id": "c6b3", "response_schema": None}
    w = Wire().metadata().chunk("values", server_json({"n": 0}))
    w.tick().chunk("updates|sub:1", server_json({"__interrupt__": [raised]}))
    w.chunk("updates", server_json({"__interrupt__": [raised]}))
    w.tick().chunk("values", server_json({"n": 0, "__interrupt__": [raised]}))
    classic = wire()
    driver, out = run(FakeServer(w.frames), wire=classic)
    assert driver.status is RunStatus.INTERRUPTED
    assert classic.interrupts == [(("sub:1",), Interrupt(value="inner?", id="c6b3"))]
    assert driver.interrupts == [Interrupt(value="inner?", id="c6b3")]
    assert out.parts[1]["ns"] == ("sub:1",)


def test_abandoning_a_running_classic_run_cancels_it() -> None:
    _, frames = small_run()
    server = FakeServer(frames, rest={("POST", f"{RUN}/cancel"): Response(202, None)})
    driver = started_driver(server, parts=2, wire=wire())
    assert cleanup(driver, server) == [CANCEL]
    assert driver.status is RunStatus.CANCELLED


def test_a_message_handed_out_without_an_id_gets_the_id_the_state_gave_it() -> None:
    # A tool message returned without an id, in an updates-only stream: the
    # thread's state at the run's end holds it with the id its reducer gave.
    returned = {"type": "tool", "content": "42", "tool_call_id": "c1", "id": None}
    w = Wire().metadata().chunk("updates", server_json({"tools": {"messages": [returned]}}))
    state = {"values": {"messages": [{"type": "human", "content": "hi", "id": "h1"}, {**returned, "id": "m-9"}]}}
    server = FakeServer(w.frames, rest={("GET", STATE): Response(200, state)})
    classic = wire()
    _, out = run(server, wire=classic)
    (message,) = out.parts[0]["data"]["tools"]["messages"]
    assert isinstance(message, ToolMessage) and message.id == "m-9"
    assert classic.reader.idless == []
    assert Request("GET", STATE, timeout=2.0) in server.requests
