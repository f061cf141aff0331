"""A v3 run on a server without the v3 protocol (``_core/classic_v3.py``, ``_core/v3_formats.py``):
its classic frames become the parts a local v3 run feeds its mux."""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest
from langchain_core.language_models._compat_bridge import chunks_to_events
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.outputs import ChatGenerationChunk
from langgraph.types import Interrupt

from remote_graph._core.classic_v3 import ClassicV3Wire
from remote_graph._core.join import RunCursor
from remote_graph._core.sse import Frame
from remote_graph._core.v3_formats import V3Formats, is_protocol_event
from remote_graph._core.v3_wire import V3Wire
from remote_graph._private import ChunkEvents

THREAD = "4a1c0a52-2b0e-4c55-9a3e-6d0f2b1c9e11"


def _wire() -> V3Formats:
    return V3Formats(f"/threads/{THREAD}", "chat", THREAD)


def _feed(wire: V3Formats, frames: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for n, (event, data) in enumerate(frames, start=1):
        accepted = wire.accept(Frame(event, orjson.dumps(data).decode(), f"{n}-0"))
        if accepted is not None:
            parts.extend(wire.convert(accepted[0]))
    return parts


def _chunk(text: str, *, last: bool = False, **kwargs: Any) -> dict[str, Any]:
    chunk = AIMessageChunk(content=text, id="lc_run--m1", chunk_position="last" if last else None, **kwargs)
    return chunk.model_dump()


META = {"langgraph_node": "respond", "langgraph_step": 1, "run_id": "server-run", "graph_id": "chat"}


def test_the_first_event_chooses_the_format() -> None:
    assert is_protocol_event('{"type":"event","method":"values","params":{},"seq":1}')
    assert is_protocol_event('{"type": "event", "method": "values", "params": {}}')
    assert not is_protocol_event('{"x": 1}')
    assert not is_protocol_event("not json")
    v3 = _wire()
    v3.accept(Frame("values", '{"type":"event","method":"values","params":{"namespace":[],"data":{}},"seq":1}', "1"))
    assert isinstance(v3.chosen, V3Wire)
    classic = _wire()
    classic.accept(Frame("values", '{"x": 1}', "1"))
    assert isinstance(classic.chosen, ClassicV3Wire)


def test_values_carry_their_interrupts_beside_the_state() -> None:
    raw = [{"value": {"question": "ok?"}, "id": "i1"}]
    parts = _feed(_wire(), [("values", {"x": 1}), ("values|sub:1", {"x": 2, "__interrupt__": raw})])
    assert parts == [
        {"type": "values", "ns": (), "data": {"x": 1}, "interrupts": ()},
        {"type": "values", "ns": ("sub:1",), "data": {"x": 2}, "interrupts": (Interrupt({"question": "ok?"}, "i1"),)},
    ]


def test_chunks_become_the_protocol_events_of_langchain_cores_own_bridge() -> None:
    chunks = [
        AIMessageChunk(content="hel", id="m"),
        AIMessageChunk(content="lo", id="m", usage_metadata={"input_tokens": 2, "output_tokens": 1, "total_tokens": 3}),
        AIMessageChunk(
            content="",
            id="m",
            tool_call_chunks=[{"name": "add", "args": '{"a": ', "id": "c1", "index": 1, "type": "tool_call_chunk"}],
        ),
        AIMessageChunk(
            content="",
            id="m",
            tool_call_chunks=[{"name": None, "args": "1}", "id": None, "index": 1, "type": "tool_call_chunk"}],
            response_metadata={"finish_reason": "tool_calls"},
        ),
    ]
    events = ChunkEvents()
    pushed = [event for chunk in chunks for event in events.feed(chunk)] + events.finish()
    assert pushed == list(chunks_to_events(iter(ChatGenerationChunk(message=c) for c in chunks)))
    assert pushed[0]["event"] == "message-start" and pushed[-1]["event"] == "message-finish"


def test_a_models_tokens_are_one_message_named_by_their_node() -> None:
    parts = _feed(
        _wire(),
        [
            ("messages", [_chunk("hello"), META]),
            ("messages", [_chunk(" there", last=True), META]),
            ("updates", {"respond": {"messages": [AIMessage("hello there", id="lc_run--m1").model_dump()]}}),
        ],
    )
    messages = [p["data"] for p in parts if p["type"] == "messages"]
    assert [event["event"] for event, _ in messages] == [
        "message-start",
        "content-block-start",
        "content-block-delta",
        "content-block-delta",
        "content-block-finish",
        "message-finish",
    ]
    metadata = messages[0][1]
    assert metadata["langgraph_node"] == "respond" and metadata["run_id"] == "lc_run--m1"
    # The server's own keys are not the run's.
    assert "graph_id" not in metadata
    assert [p["type"] for p in parts][-1] == "updates"


def test_a_message_with_no_last_chunk_ends_when_its_node_does() -> None:
    parts = _feed(
        _wire(),
        [
            ("messages", [_chunk("hello"), META]),
            ("updates", {"other": {"x": 1}}),
            ("messages", [_chunk(" there"), META]),
            ("updates", {"respond": {"x": 2}}),
        ],
    )
    kinds = [p["data"][0]["event"] if p["type"] == "messages" else p["type"] for p in parts]
    assert kinds == [
        "message-start",
        "content-block-start",
        "content-block-delta",
        "updates",
        "content-block-delta",
        "content-block-finish",
        "message-finish",
        "updates",
    ]


def test_a_message_still_streaming_at_the_end_is_ended() -> None:
    wire = _wire()
    parts = _feed(wire, [("messages", [_chunk("hello"), META])])
    ends = wire.finish(interrupted=False, completed=True)
    assert [p["data"][0]["event"] for p in parts + ends][-2:] == ["content-block-finish", "message-finish"]


def test_whole_messages_pass_but_tool_results_and_unasked_modes_do_not() -> None:
    wire = _wire()
    returned = AIMessage("done", id="a1").model_dump()
    tool = ToolMessage("3", tool_call_id="c1", id="t1").model_dump()
    parts = _feed(
        wire,
        [
            ("messages", [returned, META]),
            ("messages", [tool, META]),
            ("checkpoints", {"config": {}}),
            ("end", {"status": "success"}),
        ],
    )
    assert len(parts) == 1 and isinstance(parts[0]["data"][0], AIMessage)
    wire.serve(frozenset({"values", "messages", "tasks", "checkpoints"}))
    assert [p["type"] for p in _feed(wire, [("checkpoints", {"config": {}, "metadata": {}})])] == ["checkpoints"]


def test_a_resumed_connection_repeats_nothing_the_first_one_delivered() -> None:
    # Frames of one millisecond share an id; the replay after a cut sends that
    # millisecond's frames again. The first connection opened before any frame chose
    # the format, and the classic repeat filter must count it too.
    wire = _wire()
    delivered: list[Any] = []

    def connection(frames: list[tuple[str, int]]) -> None:
        delivered.extend(p["data"] for p in wire.reconnected())
        for frame_id, tick in frames:
            accepted = wire.accept(Frame("custom", orjson.dumps({"tick": tick}).decode(), frame_id))
            if accepted is not None:
                delivered.extend(p["data"] for p in wire.convert(accepted[0]))

    connection([("1-0", 0), ("2-0", 1), ("2-0", 2)])
    # The replay (the newest millisecond again), news, then the live part rewinding
    # to the replay's last frame: only a resumed connection rewinds, so the filter
    # must know this is the second.
    connection([("2-0", 1), ("2-0", 2), ("3-0", 3), ("3-0", 3), ("4-0", 4)])
    delivered.extend(p["data"] for p in wire.finish(interrupted=False, completed=True))
    assert delivered == [{"tick": t} for t in range(5)]


def test_parallel_tasks_of_one_node_each_end_their_own_message() -> None:
    # Two Sends to one node stream at once, their last chunks unmarked: one task's
    # update ends neither (it may be either's); each task's result ends its own.
    def meta(task_id: str) -> dict[str, Any]:
        return {**META, "langgraph_node": "work", "langgraph_checkpoint_ns": f"work:{task_id}"}

    def chunk(text: str, message_id: str) -> dict[str, Any]:
        return AIMessageChunk(content=text, id=message_id).model_dump()

    parts = _feed(
        _wire(),
        [
            ("messages", [chunk("a", "m1"), meta("t1")]),
            ("messages", [chunk("b", "m2"), meta("t2")]),
            ("updates", {"work": {"x": 1}}),
            ("messages", [chunk("c", "m2"), meta("t2")]),
            ("tasks", {"id": "t1", "name": "work", "error": None, "result": {"x": 1}, "interrupts": []}),
            ("tasks", {"id": "t2", "name": "work", "error": None, "result": {"x": 2}, "interrupts": []}),
        ],
    )
    flow = [(p["data"][1]["run_id"], p["data"][0]["event"]) if p["type"] == "messages" else p["type"] for p in parts]
    assert flow == [
        ("m1", "message-start"),
        ("m1", "content-block-start"),
        ("m1", "content-block-delta"),
        ("m2", "message-start"),
        ("m2", "content-block-start"),
        ("m2", "content-block-delta"),
        "updates",
        ("m2", "content-block-delta"),
        ("m1", "content-block-finish"),
        ("m1", "message-finish"),
        "tasks",
        ("m2", "content-block-finish"),
        ("m2", "message-finish"),
        "tasks",
    ]


def test_a_dict_of_the_users_with_a_type_is_no_protocol_event() -> None:
    assert not is_protocol_event('{"type": "event", "note": "a custom write"}')
    assert not is_protocol_event('{"type":"event","payload":1}')


def test_a_join_from_a_cursor_takes_the_format_the_cursor_was_made_in() -> None:
    classic = _wire()
    classic.joined(RunCursor("r1", "1-0", "2-0", None, 2))
    assert isinstance(classic.chosen, ClassicV3Wire) and classic.mark() == ("2-0", 2)
    v3 = _wire()
    v3.joined(RunCursor("r1", "1-0", "2-0", 7, None))
    assert isinstance(v3.chosen, V3Wire) and v3.mark() == (None, 7)
    # A v3 run stream read from classic modes (aegra) gave out a counted cursor of a v3 stream.
    counted = _wire()
    counted.joined(RunCursor("r1", "1-0", "2-0", None, 2, "v3"))
    assert isinstance(counted.chosen, ClassicV3Wire) and counted.mark() == ("2-0", 2)


def _v3_frame(seq: int, method: str, data: Any) -> tuple[str, Any]:
    return method, {"type": "event", "method": method, "params": {"namespace": [], "data": data}, "seq": seq}


def test_a_run_whose_module_sends_no_updates_warns_the_transformers_that_wanted_them() -> None:
    wire = _wire()
    wire.serve(frozenset({"values", "updates"}), wanted=frozenset({"updates"}))
    _feed(wire, [_v3_frame(1, "values", {"x": 1}), _v3_frame(2, "values", {"x": 2})])
    with pytest.warns(UserWarning, match="sent no 'updates' events"):
        wire.finish(interrupted=False, completed=True)
    # A run in which no node ran (its input state only) is no sign of a missing hook.
    quiet = _wire()
    quiet.serve(frozenset({"values", "updates"}), wanted=frozenset({"updates"}))
    _feed(quiet, [_v3_frame(1, "values", {"x": 1})])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.finish(interrupted=False, completed=True)


def test_a_number_the_server_skipped_asks_for_a_replay_after_the_frame_before_it() -> None:
    # aegra numbers its frames; one it stored but did not send (as a connection
    # resumes) leaves a gap, which the classic frames' wire finds for a v3 run too.
    wire = _wire()
    for n in (1, 3, 5, 7, 9):
        assert wire.accept(Frame("custom", orjson.dumps({"n": n}).decode(), f"run_event_{n}")) is not None
    assert isinstance(wire.chosen, ClassicV3Wire)
    assert wire.accept(Frame("custom", '{"n": 13}', "run_event_13")) is None
    assert wire.rewind() == "run_event_9"
    assert wire.rewind() is None
    accepted = wire.accept(Frame("custom", '{"n": 11}', "run_event_11"))
    assert accepted is not None
    assert [p["data"] for p in wire.convert(accepted[0])] == [{"n": 11}]
