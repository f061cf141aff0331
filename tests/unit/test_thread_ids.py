"""Thread ids that are not UUIDs: mapped to the server's UUIDs, read back as given (no server needed)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from langgraph.types import PregelTask, StateSnapshot
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph import THREAD_ID_NAMESPACE, RemoteCommandError, RemoteGraph, default_map_thread_id
from remote_graph._core.thread_ids import rename_thread, server_thread_id
from remote_graph.nesting import default_child_thread_id, parent_task

URL = "http://127.0.0.1:9"  # never contacted by the tests that use it
BASE = "http://remote.test"
THREAD = "6f1c5a2e-8d9b-4e7a-9c3d-2b1a0f4e5d6c"


# --- the default mapping ----------------------------------------------------------


def test_the_namespace_and_the_mapping_never_change() -> None:
    # Pinned: a change would move every named thread to a new, empty server thread.
    assert THREAD_ID_NAMESPACE == uuid.UUID("8b8a8146-9882-42b7-ab3c-207d7d9cc17d")
    assert default_map_thread_id("user-42") == "218f6d01-6235-5613-9ec2-218666921a4c"
    assert default_map_thread_id("user-42") == str(uuid.uuid5(THREAD_ID_NAMESPACE, "user-42"))


@pytest.mark.parametrize(
    "name", ["user-42", "my-thread-1", ".", "..", "", "a/b", "../runs", "a?b c%", "é" * 3, "x" * 1000]
)
def test_a_name_maps_to_one_uuid5_every_time(name: str) -> None:
    first = server_thread_id(name)
    assert first == server_thread_id(name) == default_map_thread_id(name)
    assert uuid.UUID(first).version == 5 and str(uuid.UUID(first)) == first


def test_different_names_map_to_different_threads() -> None:
    names = ["user-42", "user-43", "User-42", "user-42 ", "", "5"]
    assert len({server_thread_id(name) for name in names}) == len(names)


@pytest.mark.parametrize(("value", "named"), [(5, "5"), (True, "True"), (4.5, "4.5")])
def test_other_values_are_named_by_their_str_as_locally(value: Any, named: str) -> None:
    # A local graph keys its checkpoints by str(thread_id), so 5 and "5" are one thread.
    assert server_thread_id(value) == server_thread_id(named)


@pytest.mark.parametrize(
    "value",
    [THREAD, THREAD.upper(), "{" + THREAD + "}", "urn:uuid:" + THREAD, THREAD.replace("-", ""), uuid.UUID(THREAD)],
    ids=["canonical", "upper", "braces", "urn", "hex", "uuid-object"],
)
def test_a_uuid_passes_through_in_canonical_form_and_is_never_mapped(value: Any) -> None:
    def never(thread_id: str) -> str:
        raise AssertionError(f"a UUID was mapped: {thread_id!r}")

    assert server_thread_id(value, never) == THREAD


# --- the override -------------------------------------------------------------------


def test_the_mapping_can_be_overridden() -> None:
    seen: list[str] = []

    def per_tenant(thread_id: str) -> uuid.UUID:
        seen.append(thread_id)
        return uuid.uuid5(uuid.NAMESPACE_URL, f"https://example.com/tenants/7/threads/{thread_id}")

    graph = RemoteGraph("g", url=URL, map_thread_id=per_tenant)
    expected = str(uuid.uuid5(uuid.NAMESPACE_URL, "https://example.com/tenants/7/threads/user-42"))
    assert graph.server_thread_id("user-42") == expected
    assert graph.server_thread_id(THREAD.upper()) == THREAD
    assert seen == ["user-42"]
    # Returning a UUID's string in another form is fine too: it is canonicalized.
    upper = RemoteGraph("g", url=URL, map_thread_id=lambda thread_id: expected.upper())
    assert upper.server_thread_id("user-42") == expected


def test_copies_keep_the_mapping() -> None:
    def mapping(thread_id: str) -> str:
        return THREAD

    graph = RemoteGraph("g", url=URL, map_thread_id=mapping)
    for copy in (graph.with_config({"configurable": {"user": "u"}}), graph.copy({"name": "other"})):
        assert isinstance(copy, RemoteGraph) and copy.map_thread_id is mapping
        assert copy.server_thread_id("anything") == THREAD
    assert RemoteGraph("g", url=URL).map_thread_id is default_map_thread_id


def test_a_bad_mapping_fails_early_naming_it() -> None:
    with pytest.raises(TypeError, match="map_thread_id must be callable"):
        RemoteGraph("g", url=URL, map_thread_id="uuid5")  # type: ignore[arg-type]
    graph = RemoteGraph("g", url=URL, map_thread_id=lambda thread_id: thread_id)
    with pytest.raises(ValueError, match=r"map_thread_id must return a UUID.*'user-42'"):
        graph.server_thread_id("user-42")
    with pytest.raises(ValueError, match="map_thread_id must return a UUID"):
        graph.stream_events({}, {"configurable": {"thread_id": "user-42"}}, version="v3")
    # A UUID never reaches the mapping, so it still works.
    assert graph.server_thread_id(THREAD) == THREAD
    with pytest.raises(ValueError, match="map_thread_id must return a UUID"):
        RemoteGraph(
            "g", url=URL, config={"configurable": {"thread_id": "user-42"}}, map_thread_id=lambda thread_id: None
        )  # type: ignore[arg-type,return-value]


# --- read back under the caller's id ------------------------------------------------


def test_a_v3_run_reports_the_callers_thread_id() -> None:
    graph = RemoteGraph("g", url=URL)
    run = graph.stream_events({}, {"configurable": {"thread_id": "user-42"}}, version="v3")
    assert run.thread_id == "user-42" and run.snapshot().thread_id == "user-42"
    assert run._driver.thread_id == default_map_thread_id("user-42")  # where it runs
    with run:
        pass
    # An int names its str, as locally; a UUID reads back as given; a fresh thread as the server's.
    assert graph.stream_events({}, {"configurable": {"thread_id": 5}}, version="v3").thread_id == "5"
    assert (
        graph.stream_events({}, {"configurable": {"thread_id": THREAD.upper()}}, version="v3").thread_id
        == THREAD.upper()
    )
    fresh = graph.stream_events({}, version="v3")
    assert fresh.thread_id == fresh._driver.thread_id and uuid.UUID(fresh.thread_id)
    # The graph's own config names the thread as well.
    named = RemoteGraph("g", url=URL, config={"configurable": {"thread_id": "my-thread-1"}}).stream_events(
        {}, version="v3"
    )
    assert named.thread_id == "my-thread-1" and named._driver.thread_id == default_map_thread_id("my-thread-1")


def test_an_async_v3_run_reports_the_callers_thread_id() -> None:
    async def go() -> tuple[str, str]:
        run = await RemoteGraph("g", url=URL).astream_events(
            {}, {"configurable": {"thread_id": "user-42"}}, version="v3"
        )
        async with run:
            return run.thread_id, run.snapshot().thread_id

    assert asyncio.run(go()) == ("user-42", "user-42")


def _checkpoint(thread_id: str, checkpoint_id: str, ns: str = "") -> dict[str, Any]:
    return {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id, "checkpoint_map": {}}


def _thread_state(thread_id: str, checkpoint_id: str = "c2") -> dict[str, Any]:
    """A thread state as the server answers it, with a task that carries a subgraph checkpoint."""
    return {
        "values": {"x": 1, "thread_id": "a value, not a config"},
        "next": ["b"],
        "tasks": [
            {
                "id": "t1",
                "name": "b",
                "error": None,
                "interrupts": [],
                "state": None,
                "checkpoint": _checkpoint(thread_id, "sub", "b:t1"),
            },
        ],
        "metadata": {"step": 1},
        "created_at": "2024-01-01T00:00:00+00:00",
        "checkpoint": _checkpoint(thread_id, checkpoint_id),
        "parent_checkpoint": _checkpoint(thread_id, "c1"),
        "interrupts": [],
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": "c1",
    }


class StateServer:
    """A thread's REST endpoints over ``httpx.MockTransport``, answering in the server thread's id."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/assistants/"):
            # The graph's schemas, read once: this server does not describe them.
            return httpx.Response(404, json={"detail": "Not Found"})
        self.paths.append(request.url.path)
        self.bodies.append(request.content)
        thread_id = request.url.path.split("/")[2]
        if request.url.path.endswith("/history"):
            return httpx.Response(200, json=[_thread_state(thread_id, "c2"), _thread_state(thread_id, "c1")])
        if request.method == "POST" and request.url.path.endswith("/state"):
            return httpx.Response(200, json={"checkpoint": _checkpoint(thread_id, "c3")})
        return httpx.Response(200, json=_thread_state(thread_id))

    def graph(self, **kwargs: Any) -> RemoteGraph:
        transport = httpx.MockTransport(self)
        return RemoteGraph(
            "g",
            client=LangGraphClient(httpx.AsyncClient(transport=transport, base_url=BASE)),
            sync_client=SyncLangGraphClient(httpx.Client(transport=transport, base_url=BASE)),
            **kwargs,
        )


def _thread_ids(snapshot: StateSnapshot) -> list[Any]:
    task_state = snapshot.tasks[0].state
    assert isinstance(task_state, dict)
    return [
        snapshot.config["configurable"]["thread_id"],
        snapshot.parent_config and snapshot.parent_config["configurable"]["thread_id"],
        task_state["configurable"]["thread_id"],
    ]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_state_methods_address_the_mapped_thread_and_read_back_the_name(flavour: str) -> None:
    server = StateServer()
    graph = server.graph()
    config: Any = {"configurable": {"thread_id": "my-thread-1"}}
    mapped = default_map_thread_id("my-thread-1")
    if flavour == "sync":
        snapshot = graph.get_state(config)
        history = list(
            graph.get_state_history(
                config, before={"configurable": {"thread_id": "my-thread-1", "checkpoint_id": "c2"}}
            )
        )
        updated = graph.update_state(config, {"x": 2})
    else:

        async def go() -> tuple[Any, Any, Any]:
            before: Any = {"configurable": {"thread_id": "my-thread-1", "checkpoint_id": "c2"}}
            return (
                await graph.aget_state(config),
                [s async for s in graph.aget_state_history(config, before=before)],
                await graph.aupdate_state(config, {"x": 2}),
            )

        snapshot, history, updated = asyncio.run(go())
    assert all(path.startswith(f"/threads/{mapped}/") for path in server.paths), server.paths
    # Request bodies name the thread too (the checkpoint, the history's `before`): as the server's.
    assert not any(b"my-thread-1" in body for body in server.bodies) and mapped.encode() in server.bodies[1]
    assert _thread_ids(snapshot) == ["my-thread-1"] * 3
    assert [_thread_ids(s) for s in history] == [["my-thread-1"] * 3] * 2
    assert updated["configurable"]["thread_id"] == "my-thread-1" and updated["configurable"]["checkpoint_id"] == "c3"
    # State values are the graph's, never rewritten.
    assert snapshot.values == {"x": 1, "thread_id": "a value, not a config"}
    # A config read back can be passed back in: it names the same server thread.
    graph.get_state(snapshot.config)
    assert server.paths[-1] == f"/threads/{mapped}/state/checkpoint"


def test_a_uuid_thread_reads_back_as_given() -> None:
    server = StateServer()
    snapshot = server.graph().get_state({"configurable": {"thread_id": THREAD.upper()}})
    assert server.paths == [f"/threads/{THREAD}/state"] and THREAD.upper().encode() not in server.bodies[0]
    assert _thread_ids(snapshot) == [THREAD.upper()] * 3
    snapshot = server.graph().get_state({"configurable": {"thread_id": uuid.UUID(THREAD)}})
    assert _thread_ids(snapshot) == [THREAD] * 3


def test_a_server_error_about_a_named_thread_names_it() -> None:
    def not_found(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/assistants"):
            return httpx.Response(404, json={"detail": "Not Found"})
        thread_id = request.url.path.split("/")[2]
        return httpx.Response(403, json={"detail": f"Thread with ID {thread_id} not found"})

    transport = httpx.MockTransport(not_found)
    graph = RemoteGraph("g", sync_client=SyncLangGraphClient(httpx.Client(transport=transport, base_url=BASE)))
    mapped = default_map_thread_id("my-thread-1")
    with pytest.raises(RemoteCommandError, match=f"{mapped} \\(thread_id 'my-thread-1'\\) not found") as info:
        graph.get_state({"configurable": {"thread_id": "my-thread-1"}})
    assert info.value.status == 403
    with pytest.raises(RemoteCommandError, match=f"ID {THREAD} not found"):
        graph.get_state({"configurable": {"thread_id": THREAD}})


def test_rename_thread_reads_configs_in_every_shape() -> None:
    server, name = default_map_thread_id("n"), "n"
    inner = StateSnapshot({}, (), {"configurable": {"thread_id": server}}, None, None, None, (), ())
    snapshot = StateSnapshot(
        values={"keep": server},
        next=("a",),
        config={"configurable": {"thread_id": server, "checkpoint_id": "c"}},
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(
            PregelTask("t", "a", (), state=inner),
            PregelTask("u", "b", (), state={"configurable": {"thread_id": server}}),
        ),
        interrupts=(),
    )
    renamed = rename_thread(snapshot, server, name)
    assert renamed.config == {"configurable": {"thread_id": name, "checkpoint_id": "c"}}
    assert renamed.values == {"keep": server}  # state is the graph's
    assert renamed.tasks[0].state.config == {"configurable": {"thread_id": name}}  # type: ignore[union-attr]
    assert renamed.tasks[1].state == {"configurable": {"thread_id": name}}
    # Stream parts: checkpoint payloads inside tuples and lists; other threads are left alone.
    part: Any = ("checkpoints", {"config": {"configurable": {"thread_id": server}}, "parent_config": None, "next": []})
    assert rename_thread(part, server, name) == (
        "checkpoints",
        {"config": {"configurable": {"thread_id": name}}, "parent_config": None, "next": []},
    )
    other = {"configurable": {"thread_id": THREAD}}
    assert rename_thread(other, server, name) is other
    # Only configs: a state value that happens to hold the server's id is the graph's.
    state = {"values": {"thread_id": server, "ids": [server]}}
    assert rename_thread(state, server, name) is state
    assert rename_thread(snapshot, server, server) is snapshot


# --- a remote child inside a local parent ------------------------------------------------


def test_a_child_given_a_thread_of_its_own_in_the_task_names_the_parents_thread_in_its_chunks() -> None:
    # langgraph-supervisor calls a served worker with the parent task's config and a
    # thread_id of the worker's own; a local child's chunks then name the thread in
    # the config's metadata (the parent's), which langgraph never overwrites.
    conf = {"thread_id": "worker thread", "checkpoint_ns": "w:t1", "__pregel_task_id": "t1"}
    task = parent_task({"configurable": conf, "metadata": {"thread_id": "parent thread"}})
    assert task is not None and task.parent_thread == "parent thread"
    assert task.thread_id == default_child_thread_id("worker thread", "w:t1")
    task = parent_task({"configurable": conf, "metadata": {"thread_id": 7}})
    assert task is not None and task.parent_thread == "7"
    # No thread id in the metadata: the configurable's.
    task = parent_task({"configurable": conf})
    assert task is not None and task.parent_thread == "worker thread"
    task = parent_task({"configurable": {k: v for k, v in conf.items() if k != "thread_id"}})
    assert task is not None and task.parent_thread is None


def test_a_child_thread_is_a_thread_id_like_any_other() -> None:
    conf = {"thread_id": "parent thread", "checkpoint_ns": "child:t1", "__pregel_task_id": "t1"}
    # The default child thread is a UUID: it passes through, whatever the parent's id.
    task = parent_task({"configurable": conf})
    assert task is not None and task.thread_id == default_child_thread_id("parent thread", "child:t1")
    # A readable child thread (one per parent thread and node) is mapped, by the graph's mapping.
    task = parent_task({"configurable": conf}, lambda parent, ns: f"{parent}/{ns.split(':')[0]}")
    assert task is not None and task.thread_id == default_map_thread_id("parent thread/child")
    task = parent_task({"configurable": conf}, lambda parent, ns: "readable", lambda thread_id: THREAD)
    assert task is not None and task.thread_id == THREAD
    with pytest.raises(ValueError, match="child_thread_id returned"):
        parent_task({"configurable": conf}, lambda parent, ns: "readable", lambda thread_id: "not a uuid")
