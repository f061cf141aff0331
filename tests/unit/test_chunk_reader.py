"""``ChunkReader`` and ``CallView``: each stream mode's payload, from the server's JSON, as local has it.

``test_classic_wire`` compares whole runs with local ones; these pin the rules
one by one, with payloads as the server sends them (``classic_server``).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langgraph.types import Interrupt

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.classic import CallView, ChunkReader, interrupts_of, task_error, tuples
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.schema import GraphSchemas, learn_schemas, names_messages
from remote_graph._core.state import RunStatus
from remote_graph.errors import RemoteCommandError, RemoteProtocolError, RemoteRunError
from tests.unit.classic_server import PROBE_SCHEMAS, server_json
from tests.unit.fake_run import THREAD, FakeServer, Wire, plan, run

SERVER = "0c9e6a0b-3f8e-4b8f-9d59-5d2d3f1c7a11"
VIEW = CallView(server_thread=SERVER, thread_name="t1")
NOTE = {"type": "human", "content": "not a message"}


def json_of(value: Any) -> Any:
    """``value`` as the server's JSON, parsed."""
    return orjson.loads(server_json(value))


def schemas(known: Any = PROBE_SCHEMAS) -> GraphSchemas:
    learned = GraphSchemas()
    learned.learn(known)
    return learned


def reader(view: CallView = VIEW, known: Any = PROBE_SCHEMAS) -> ChunkReader:
    return ChunkReader(view, schemas(known))


# --- CallView -----------------------------------------------------------------------------


SERVER_METADATA = {
    "assistant_id": "a",
    "graph_id": "probe",
    "run_id": "r",
    "run_attempt": 1,
    "langgraph_version": "1.2.24",
    "langgraph_api_url": "http://x",
    "langgraph_plan": "enterprise",
    "langgraph_host": "self-hosted",
    "langgraph_api_version": "0.16.7",
    "created_by": "system",
    "user_id": "",
    # aegra's own.
    "user_display_name": "Anonymous User",
}


def test_metadata_drops_the_servers_keys_and_names_the_callers_thread() -> None:
    metadata = {
        **SERVER_METADATA,
        "thread_id": SERVER,
        "langgraph_node": "chat",
        "langgraph_triggers": ["branch:to:chat"],
        "langgraph_path": ["__pregel_pull", "chat"],
        "ls_provider": "fake",
    }
    assert VIEW.metadata(metadata) == {
        "thread_id": "t1",
        "langgraph_node": "chat",
        "langgraph_triggers": ("branch:to:chat",),
        "langgraph_path": ("__pregel_pull", "chat"),
        "ls_provider": "fake",
    }


def test_metadata_keeps_the_callers_own_keys_even_where_the_server_uses_the_name() -> None:
    view = CallView(server_thread=SERVER, thread_name=None, own_keys=frozenset({"user_id", "thread_id"}))
    # The caller named no thread but set these itself: kept as the caller set them.
    assert view.metadata({"user_id": "u-7", "run_id": "r", "thread_id": "mine"}) == {
        "user_id": "u-7",
        "thread_id": "mine",
    }


def test_metadata_without_a_thread_of_the_callers_has_no_thread_id() -> None:
    view = CallView(server_thread=SERVER, thread_name=None)
    assert view.metadata({"thread_id": SERVER, "langgraph_step": 1}) == {"langgraph_step": 1}
    # Not the server's thread: some other thread id the run itself put there.
    assert VIEW.metadata({"thread_id": "other"}) == {"thread_id": "other"}
    assert VIEW.metadata("not metadata") == "not metadata"


def test_a_checkpoint_config_has_only_a_local_checkpoints_keys() -> None:
    config = {
        "configurable": {
            "checkpoint_ns": "",
            "thread_id": SERVER,
            "checkpoint_id": "c1",
            "__request_start_time_ms__": 1,
            "langgraph_auth_user": None,
            "langgraph_request_id": "q",
            "run_id": "r",
            "assistant_id": "a",
        }
    }
    assert VIEW.config(config) == {"configurable": {"checkpoint_ns": "", "thread_id": "t1", "checkpoint_id": "c1"}}
    assert VIEW.config({"tags": []}) == {"tags": []}
    assert VIEW.config(None) is None


# --- payloads, mode by mode ------------------------------------------------------------------


def test_messages_mode_gives_a_message_and_its_metadata() -> None:
    chunk = AIMessageChunk(content="hé", id="ai-1")
    payload = json_of([chunk, {**SERVER_METADATA, "thread_id": SERVER, "langgraph_node": "chat"}])
    message, metadata = reader().read("messages", (), payload)
    assert message == chunk and type(message) is AIMessageChunk
    assert metadata == {"thread_id": "t1", "langgraph_node": "chat"}
    # A whole message a node returned, not a chunk.
    returned = ToolMessage("done", tool_call_id="c1", id="t-1")
    message, _ = reader().read("messages", (), json_of([returned, {}]))
    assert message == returned and type(message) is ToolMessage


def test_messages_mode_leaves_what_is_not_a_message_pair_alone() -> None:
    assert reader().read("messages", (), {"not": "a pair"}) == {"not": "a pair"}
    assert reader().read("messages", (), [1, 2, 3]) == [1, 2, 3]
    assert reader().read("messages", (), [{"text": "x"}, {}]) == ({"text": "x"}, {})


def test_values_revive_messages_where_the_schema_says_and_leave_the_users_dicts() -> None:
    state = {"messages": [HumanMessage("hi", id="h1")], "note": NOTE, "count": 1}
    values = reader().read("values", (), json_of(state))
    assert values == state and type(values["messages"][0]) is HumanMessage
    # A key the schema does not describe is revived by its shape.
    assert reader().read("values", (), json_of({"other": NOTE}))["other"] == HumanMessage("not a message")
    # Without schemas, everything is.
    assert reader(known=None).read("values", (), json_of(state))["note"] == HumanMessage("not a message")


def test_the_schema_describes_the_root_graphs_state_only() -> None:
    # A subgraph's state has a schema of its own the server does not give.
    assert reader().read("values", ("sub:1",), json_of({"note": NOTE}))["note"] == HumanMessage("not a message")


def test_schemas_learned_after_the_reader_was_made_are_used() -> None:
    # A run's reader is made before the run learns the deployed graph's
    # schemas (the first call of a RemoteGraph).
    learned = GraphSchemas()
    chunks = ChunkReader(VIEW, learned)
    learned.learn(PROBE_SCHEMAS)
    assert chunks.read("values", (), json_of({"note": NOTE}))["note"] == NOTE
    assert chunks.read("updates", (), json_of({"chat": {"note": NOTE}}))["chat"]["note"] == NOTE


def test_a_first_classic_run_learns_the_schemas_before_it_revives() -> None:
    learned = GraphSchemas()
    w = Wire().metadata().chunk("updates", server_json({"chat": {"note": NOTE}}))
    server = FakeServer(
        w.frames,
        rest={
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": "a-1", "graph_id": "probe"}]),
            ("GET", "/assistants/a-1/schemas"): Response(200, PROBE_SCHEMAS),
        },
    )
    driver, out = run(server, wire=ClassicWire(ChunkReader(VIEW, learned), THREAD), schemas=learned)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert out.parts[0]["data"] == {"chat": {"note": NOTE}}


def test_values_carry_interrupts_as_a_tuple_of_interrupt_objects() -> None:
    raised = Interrupt(value={"question": "ok?"}, id="i-1")
    values = reader().read("values", (), json_of({"count": 1, "__interrupt__": (raised,)}))
    assert values == {"count": 1, "__interrupt__": (raised,)}
    assert isinstance(values["__interrupt__"], tuple)


def test_updates_name_each_node_and_carry_interrupts() -> None:
    raised = Interrupt(value="inner?", id="i-2")
    assert reader().read("updates", (), json_of({"__interrupt__": [raised]})) == {"__interrupt__": (raised,)}
    update = reader().read("updates", (), json_of({"chat": {"messages": [AIMessage("a", id="m")], "note": NOTE}}))
    assert update == {"chat": {"messages": [AIMessage("a", id="m")], "note": NOTE}}
    # A node that wrote nothing, and a functional API task's return value.
    assert reader().read("updates", (), {"noop": None, "task": [1, 2]}) == {"noop": None, "task": [1, 2]}
    assert reader().read("updates", (), "odd") == "odd"


def test_a_message_handed_out_without_an_id_gets_its_id_from_the_next_state() -> None:
    chunks = reader()
    update = chunks.read("updates", (), json_of({"tools": {"messages": [ToolMessage("42", tool_call_id="c1")]}}))
    (handed_out,) = update["tools"]["messages"]
    assert handed_out.id is None and chunks.idless == [handed_out]
    # A subgraph's state does not name it; the root's next state does, on the very object.
    chunks.read("values", ("sub:1",), json_of({"messages": [ToolMessage("42", tool_call_id="c1", id="x")]}))
    assert handed_out.id is None
    state = {"messages": [HumanMessage("hi", id="h1"), ToolMessage("42", tool_call_id="c1", id="m-9")]}
    chunks.read("values", (), json_of(state))
    assert handed_out.id == "m-9" and chunks.idless == []


def test_idless_messages_are_named_once_each_and_in_order() -> None:
    chunks = reader()
    first, second = HumanMessage("same"), HumanMessage("same")
    chunks.idless.extend([first, second])
    chunks.name_idless({"messages": [HumanMessage("same", id="a"), HumanMessage("same", id="b")]})
    assert (first.id, second.id) == ("a", "b")
    lonely = HumanMessage("never stored")
    chunks.idless.append(lonely)
    chunks.name_idless({"messages": [HumanMessage("other", id="c")]})
    assert lonely.id is None and chunks.idless == [lonely]


def test_a_tasks_start_and_result_as_local_has_them() -> None:
    start = {
        "id": "t1",
        "name": "chat",
        "input": {"messages": [HumanMessage("hi", id="h1")], "note": NOTE},
        "triggers": ["branch:to:chat"],
        "metadata": SERVER_METADATA,
    }
    assert reader().read("tasks", (), json_of(start)) == {
        "id": "t1",
        "name": "chat",
        "input": {"messages": [HumanMessage("hi", id="h1")], "note": NOTE},
        "triggers": ("branch:to:chat",),
    }
    result = {
        "id": "t1",
        "name": "chat",
        "error": None,
        "result": {"messages": [AIMessage("a", id="m")]},
        "interrupts": [],
    }
    assert reader().read("tasks", (), json_of(result)) == {**result, "result": {"messages": [AIMessage("a", id="m")]}}


@pytest.mark.parametrize(
    ("error", "name", "message"),
    [
        ({"error": "ValueError", "message": "bad value"}, "ValueError", "bad value"),
        ({"error": "Kaput", "message": "An internal error occurred"}, "Kaput", "An internal error occurred"),
        # aegra names the type under "type".
        ({"type": "Boom", "message": "kaboom from node"}, "Boom", "kaboom from node"),
        ("Kaput('it broke')", "Kaput", "it broke"),
        ("not a repr", "RemoteRunError", "not a repr"),
    ],
)
def test_a_failed_tasks_error_is_an_exception_of_the_remote_type(error: Any, name: str, message: str) -> None:
    rebuilt = task_error(error)
    assert isinstance(rebuilt, RemoteRunError) and type(rebuilt).__name__ == name and str(rebuilt) == message
    payload = reader().read("tasks", (), {"id": "t", "name": "n", "error": error, "result": {}})
    assert type(payload["error"]).__name__ == name
    assert task_error(None) is None


def test_a_checkpoint_without_the_servers_copies_and_keys() -> None:
    config = {"configurable": {"checkpoint_ns": "", "thread_id": SERVER, "checkpoint_id": "c2", "run_id": "r"}}
    parent = {"configurable": {"checkpoint_ns": "", "thread_id": SERVER, "checkpoint_id": "c1", "run_id": "r"}}
    sub_state = {"configurable": {"thread_id": SERVER, "checkpoint_ns": "sub:9"}}
    payload = {
        "config": config,
        "parent_config": parent,
        "values": {"messages": [HumanMessage("hi", id="h1")], "note": NOTE},
        "metadata": {"source": "loop", "step": 1, "parents": {}, "run_id": "r"},
        "next": ["sub"],
        "tasks": [{"id": "9", "name": "sub", "interrupts": [], "state": sub_state}],
        "checkpoint": {"checkpoint_id": "c2", "thread_id": SERVER, "checkpoint_ns": ""},
        "parent_checkpoint": {"checkpoint_id": "c1", "thread_id": SERVER, "checkpoint_ns": ""},
    }
    local_state = {"configurable": {"thread_id": "t1", "checkpoint_ns": "sub:9"}}
    expected = {
        "config": {"configurable": {"checkpoint_ns": "", "thread_id": "t1", "checkpoint_id": "c2"}},
        "parent_config": {"configurable": {"checkpoint_ns": "", "thread_id": "t1", "checkpoint_id": "c1"}},
        "values": {"messages": [HumanMessage("hi", id="h1")], "note": NOTE},
        "metadata": {"source": "loop", "step": 1, "parents": {}},
        "next": ["sub"],
        "tasks": [{"id": "9", "name": "sub", "interrupts": (), "state": local_state}],
    }
    assert reader().read("checkpoints", (), json_of(payload)) == expected
    # The debug stream names a subgraph task's checkpoint where local has its state.
    task = {"id": "9", "name": "sub", "interrupts": [], "checkpoint": sub_state["configurable"]}
    debug = {"step": 1, "type": "checkpoint", "timestamp": "t", "payload": {**payload, "tasks": [task]}}
    assert reader().read("debug", (), json_of(debug)) == {**debug, "payload": expected}


def test_debug_tasks_and_results_as_the_tasks_mode_has_them() -> None:
    task = {"id": "t", "name": "n", "input": {"count": 1}, "triggers": ["x"], "metadata": SERVER_METADATA}
    debug = {"step": 1, "type": "task", "timestamp": "t", "payload": task}
    assert reader().read("debug", (), json_of(debug)) == {
        **debug,
        "payload": {"id": "t", "name": "n", "input": {"count": 1}, "triggers": ("x",)},
    }
    failed = {"step": 1, "type": "task_result", "timestamp": "t", "payload": {"id": "t", "error": "Kaput('x')"}}
    assert type(reader().read("debug", (), failed)["payload"]["error"]).__name__ == "Kaput"
    assert reader().read("debug", (), "odd") == "odd"


def test_custom_chunks_are_as_the_writer_wrote_them() -> None:
    assert reader().read("custom", ("sub:1",), {"tick": 1}) == {"tick": 1}
    assert reader().read("custom", (), NOTE) == NOTE


def test_helpers() -> None:
    assert tuples([1, [2, [3]]]) == (1, (2, (3,)))
    assert tuples("ab") == "ab"
    assert interrupts_of([{"value": {"a": [{"type": "ai", "content": "x"}]}, "id": "i"}]) == (
        Interrupt(value={"a": [AIMessage("x")]}, id="i"),
    )
    assert interrupts_of("nope") == () and interrupts_of([1, {"value": 1}]) == (Interrupt(value=1, id=""),)


# --- schemas ------------------------------------------------------------------------------


def test_the_schema_names_the_keys_that_hold_messages() -> None:
    learned = schemas()
    assert learned.known and learned.graph_id == "probe"
    assert learned.message_keys == {"messages"} and learned.plain_keys == {"note", "count"}
    assert learned.keys == {"messages", "note", "count"}


def test_message_definitions_are_found_through_references() -> None:
    message = {"properties": {k: {} for k in ("content", "additional_kwargs", "response_metadata", "type")}}
    defs = {
        "Mine": message,
        "Wrapper": {"properties": {"inner": {"$ref": "#/$defs/Mine"}}},
        "Loop": {"$ref": "#/$defs/Loop"},
    }
    assert names_messages({"$ref": "#/$defs/Wrapper"}, defs)
    assert names_messages({"anyOf": [{"type": "null"}, {"items": {"$ref": "#/$defs/AIMessageChunk"}}]}, {})
    assert not names_messages({"$ref": "#/$defs/Loop"}, defs)  # a reference cycle ends
    assert not names_messages({"type": "object", "additionalProperties": True}, defs)


def test_what_the_server_cannot_say_leaves_the_schemas_unknown_but_asked() -> None:
    for answer in (None, {}, {"state_schema": "odd"}, {"output_schema": {"properties": {}}}):
        learned = schemas(answer)
        assert learned.known and learned.keys is None and learned.plain_keys == frozenset()


def converse(talk: Any, answers: dict[tuple[str, str], Any]) -> list[Request]:
    """Run a conversation with one answer per (method, path), or a function of the
    request's body giving it; the requests it made."""
    asked: list[Request] = []
    reply: Any = None
    try:
        while True:
            request = talk.send(reply) if asked else next(talk)
            asked.append(request)
            answer = answers[(request.method, request.path)]
            reply = answer(request.json) if callable(answer) else answer
    except StopIteration:
        return asked


def test_a_graph_name_is_looked_up_then_its_schemas_read() -> None:
    learned = GraphSchemas()
    asked = converse(
        learn_schemas("probe", learned),
        {
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": "a-1"}]),
            ("GET", "/assistants/a-1/schemas"): Response(200, PROBE_SCHEMAS),
        },
    )
    assert [(r.method, r.path) for r in asked] == [("POST", "/assistants/search"), ("GET", "/assistants/a-1/schemas")]
    assert asked[0].json == {"graph_id": "probe", "metadata": {"created_by": "system"}, "limit": 1}
    assert learned.known and learned.assistant_id == "a-1" and learned.plain_keys == {"note", "count"}


def test_a_graph_with_no_assistant_of_the_servers_own_is_found_among_any() -> None:
    """The default assistant is searched for first, since one a caller made may be
    newer; a server that made none itself still finds the graph's."""
    learned = GraphSchemas()

    def search(body: Any) -> Response:
        return Response(200, [] if "metadata" in body else [{"assistant_id": "a-2"}])

    asked = converse(
        learn_schemas("probe", learned),
        {("POST", "/assistants/search"): search, ("GET", "/assistants/a-2/schemas"): Response(200, PROBE_SCHEMAS)},
    )
    assert [r.json for r in asked[:2]] == [
        {"graph_id": "probe", "metadata": {"created_by": "system"}, "limit": 1},
        {"graph_id": "probe", "limit": 1},
    ]
    assert len(asked) == 3 and learned.assistant_id == "a-2"


def test_an_assistant_id_is_read_directly() -> None:
    learned = GraphSchemas()
    assistant = "48528212-457f-5d25-96eb-28212162677b"
    asked = converse(
        learn_schemas(assistant, learned), {("GET", f"/assistants/{assistant}/schemas"): Response(200, PROBE_SCHEMAS)}
    )
    assert len(asked) == 1 and learned.assistant_id == assistant


@pytest.mark.parametrize(
    "answers",
    [
        {("POST", "/assistants/search"): Response(403, {"detail": "Forbidden"})},
        # A 404 that does not name the graph: no assistants API there for the caller.
        {("POST", "/assistants/search"): Response(404, {"detail": "Not Found"})},
        {
            ("POST", "/assistants/search"): Response(200, [{"assistant_id": "a-1"}]),
            ("GET", "/assistants/a-1/schemas"): Response(404, {"detail": "Not Found"}),
        },
    ],
    ids=["search-403", "search-404", "schemas-404"],
)
def test_an_assistant_the_caller_cannot_see_leaves_the_schemas_unknown(answers: Any) -> None:
    learned = GraphSchemas()
    converse(learn_schemas("probe", learned), answers)
    assert learned.known and learned.keys is None and learned.plain_keys == frozenset()


@pytest.mark.parametrize(
    "unknown",
    [Response(200, []), Response(404, {"detail": "Graph 'probe' not found. Expected one of: ['chat', 'linear']"})],
    ids=["none-found", "langgraph-api-404"],
)
def test_a_graph_name_the_server_does_not_serve_fails_naming_the_graphs_it_serves(unknown: Response) -> None:
    learned = GraphSchemas()
    served = [{"assistant_id": "a-1", "graph_id": "linear"}, {"assistant_id": "a-2", "graph_id": "chat"}]

    def search(body: Any) -> Response:
        # The graph's own search finds nothing (langgraph-api: 404); the search of every assistant finds two.
        return unknown if body.get("graph_id") else Response(200, served)

    with pytest.raises(RemoteCommandError, match=r"no graph 'probe'.*serves: chat, linear") as info:
        converse(learn_schemas("probe", learned), {("POST", "/assistants/search"): search})
    assert info.value.status == 404 and info.value.code == "unknown_graph"
    # Not learned: a graph deployed later is found by the next call.
    assert not learned.known


@pytest.mark.parametrize(
    "listing",
    [
        Response(422, {"detail": [{"loc": ["body", "limit"], "msg": "less than or equal to 100"}]}),
        Response(500, {"detail": "boom"}),
        Broken(httpx.ConnectError("refused")),
    ],
    ids=["refused-422", "failed-500", "broken"],
)
def test_an_unknown_graph_is_named_as_such_when_the_server_does_not_list_its_graphs(listing: Any) -> None:
    asked: list[Any] = []

    def search(body: Any) -> Any:
        asked.append(body)
        return Response(200, []) if body.get("graph_id") else listing

    with pytest.raises(RemoteCommandError, match=r"no graph 'probe'.*it did not list them") as info:
        converse(learn_schemas("probe", GraphSchemas()), {("POST", "/assistants/search"): search})
    assert info.value.code == "unknown_graph"
    # A page every server takes (aegra refuses a limit over 100).
    assert asked[-1] == {"limit": 100}


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (Response(500, {"detail": "boom"}), RemoteCommandError),
        (Response(200, "<html>", content_type="text/html"), RemoteProtocolError),
    ],
)
def test_an_answer_that_is_not_the_apis_fails_and_is_asked_again_next_time(answer: Response, error: type) -> None:
    learned = GraphSchemas()
    with pytest.raises(error):
        converse(learn_schemas("probe", learned), {("POST", "/assistants/search"): answer})
    assert not learned.known


def test_a_run_whose_schemas_cannot_be_read_fails_before_it_starts() -> None:
    learned = GraphSchemas()
    server = FakeServer(rest={("POST", "/assistants/search"): Response(500, {"detail": "boom"})})
    driver, out = run(server, start=plan({"x": 1}), schemas=learned)
    assert isinstance(out.error, RemoteCommandError) and driver.status is RunStatus.FAILED
    assert not server.opened
