"""Remote-only behaviour: cancellation on the server, errors, snapshots, refusals."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import graphs
import pytest
from langgraph.types import Command
from langgraph_sdk import get_sync_client

from remote_graph import RemoteCommandError, RemoteConnectionError, RemoteGraph
from remote_graph.testing import free_port
from tests.integration.server_kinds import is_aegra

pytestmark = pytest.mark.integration


def remote(server_url: str, name: str) -> RemoteGraph:
    return RemoteGraph(name, url=server_url, stream_transformers=graphs.TRANSFORMERS)


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def run_status(server_url: str, thread_id: str, run_id: str, want: str, timeout: float = 10.0) -> str:
    client = get_sync_client(url=server_url)
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        status = client.runs.get(thread_id, run_id)["status"]
        if status == want:
            break
        time.sleep(0.1)
    return status


def test_leaving_with_early_cancels_the_server_run(server_url: str) -> None:
    graph = remote(server_url, "slow")
    with graph.stream_events({"x": 50, "log": []}, thread(), version="v3") as run:
        for _ in run.custom:
            break
    assert run.snapshot().status == "cancelled"
    assert run_status(server_url, run.thread_id, str(run.run_id), "interrupted") == "interrupted"


def test_async_abort_cancels_the_server_run(server_url: str) -> None:
    async def go() -> Any:
        graph = remote(server_url, "slow")
        run = await graph.astream_events({"x": 50, "log": []}, thread(), version="v3")
        async with run:
            async for _ in run.custom:
                break
        return run

    run = asyncio.run(asyncio.wait_for(go(), 60))
    assert run_status(server_url, run.thread_id, str(run.run_id), "interrupted") == "interrupted"


def test_run_id_is_the_servers_newest_run(server_url: str) -> None:
    graph = remote(server_url, "linear")
    config = thread()
    for x in (1, 2):
        run = graph.stream_events({"x": x, "log": []}, config, version="v3")
        assert run.snapshot().status == "pending" and run.run_id is None
        run.output
        runs = get_sync_client(url=server_url).runs.list(config["configurable"]["thread_id"], limit=1)
        assert run.run_id == runs[0]["run_id"]


def test_snapshot_and_wait(server_url: str) -> None:
    graph = remote(server_url, "gate")
    run = graph.stream_events({"x": 1, "answer": ""}, thread(), version="v3")
    assert run.wait() == "interrupted"
    snap = run.snapshot()
    assert snap.status == "interrupted"
    assert [i.value for i in snap.interrupts] == [{"question": "approve?", "x": 2}]
    assert snap.values == {"x": 2, "answer": ""}

    failing = remote(server_url, "boom").stream_events({"x": 1, "log": []}, thread(), version="v3")
    assert failing.wait() == "failed"
    assert type(failing.snapshot().error).__name__ == "Boom"


def test_async_wait(server_url: str) -> None:
    async def go() -> str:
        run = await remote(server_url, "linear").astream_events({"x": 1, "log": []}, thread(), version="v3")
        return await run.wait()

    assert asyncio.run(asyncio.wait_for(go(), 60)) == "completed"


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"output_keys": ["x"]}, "output_keys"),
        ({"bogus_kw": 1}, "bogus_kw"),
    ],
)
def test_unhonoured_kwargs_raise_naming_the_kwarg(server_url: str, kwargs: dict[str, Any], name: str) -> None:
    graph = remote(server_url, "linear")
    with pytest.raises(NotImplementedError, match=name):
        graph.stream_events({"x": 1, "log": []}, version="v3", **kwargs)
    with pytest.raises(NotImplementedError, match=name):
        graph.astream_events({"x": 1, "log": []}, version="v3", **kwargs)


def test_unknown_assistant_fails_on_first_pull_with_a_command_error(
    server_url: str, pytestconfig: pytest.Config
) -> None:
    run = RemoteGraph("no-such-graph", url=server_url).stream_events({}, version="v3")
    with pytest.raises(RemoteCommandError, match="no-such-graph") as info:
        run.output
    # The server's own status: langgraph-api answers 422, aegra 404.
    assert info.value.status == (404 if is_aegra(pytestconfig) else 422)


def test_unreachable_server_raises_a_connection_error() -> None:
    graph = RemoteGraph("linear", url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(RemoteConnectionError):
        graph.stream_events({"x": 1, "log": []}, version="v3").output


def test_plain_resume_with_two_pending_interrupts_is_refused(server_url: str) -> None:
    graph = remote(server_url, "twoask")
    config = thread()
    assert len(graph.stream_events({"out": []}, config, version="v3").interrupts) == 2
    with pytest.raises(RuntimeError, match="2 pending interrupts"):
        graph.stream_events(Command(resume="x"), config, version="v3").output


def test_async_wait_stops_at_the_pause(server_url: str) -> None:
    async def go() -> tuple[str, Any]:
        run = await remote(server_url, "gate").astream_events({"x": 1, "answer": ""}, thread(), version="v3")
        return await run.wait(), run.snapshot()

    status, snap = asyncio.run(asyncio.wait_for(go(), 60))
    assert status == "interrupted" and [i.value for i in snap.interrupts] == [{"question": "approve?", "x": 2}]


def busy_thread(server_url: str, ticks: int = 200) -> tuple[RemoteGraph, dict[str, Any], Any]:
    """A thread whose first run is running on the server (it has ticked once; it
    would tick for ``ticks`` / 10 seconds)."""
    graph = remote(server_url, "slow")
    config = thread()
    first = graph.stream_events({"x": ticks, "log": []}, config, version="v3")
    next(iter(first.custom))
    return graph, config, first


def test_reject_on_a_busy_thread_fails_with_409(server_url: str) -> None:
    graph, config, first = busy_thread(server_url)
    with first:
        with pytest.raises(RemoteCommandError, match="already running") as info:
            graph.stream_events({"x": 1, "log": []}, config, version="v3", multitask_strategy="reject").output
        assert info.value.status == 409
        # The refusal came while the first run was still going.
        assert get_sync_client(url=server_url).runs.get(first.thread_id, str(first.run_id))["status"] == "running"
    assert first.snapshot().status == "cancelled"  # leaving `with` cancelled it


def test_enqueue_on_a_busy_thread_waits_for_the_first_run(server_url: str) -> None:
    graph, config, first = busy_thread(server_url, ticks=10)
    second = graph.stream_events({"x": 1, "log": []}, config, version="v3", multitask_strategy="enqueue")
    # Whenever the second run was created, it ran after the first on the first's state.
    assert second.output == {"x": 1, "log": ["ticked", "ticked"]}
    assert first.output == {"x": 10, "log": ["ticked"]} and first.snapshot().status == "completed"


@pytest.mark.parametrize("strategy, first_status", [("interrupt", "interrupted"), ("rollback", None)])
def test_interrupt_and_rollback_cancel_the_running_run(
    server_url: str, strategy: str, first_status: str | None
) -> None:
    graph, config, first = busy_thread(server_url)
    second = graph.stream_events({"x": 1, "log": []}, config, version="v3", multitask_strategy=strategy)
    # The first run never wrote its update, so the second one starts from the input alone.
    assert second.output == {"x": 1, "log": ["ticked"]}
    assert first.wait() == "cancelled"
    runs = {
        r["run_id"]: r["status"] for r in get_sync_client(url=server_url).runs.list(config["configurable"]["thread_id"])
    }
    assert runs.get(str(first.run_id)) == first_status  # rollback deletes the run


def test_a_replayed_interrupt_is_resumed_although_the_protocol_session_counts_it_consumed(server_url: str) -> None:
    graph = remote(server_url, "gate")
    config = thread()
    graph.stream_events({"x": 1, "answer": ""}, config, version="v3").output
    graph.stream_events(Command(resume="first"), config, version="v3").output
    before_ask = next(s for s in graph.get_state_history(config) if s.next == ("ask",))
    replay = graph.stream_events(None, before_ask.config, version="v3")
    (again,) = replay.interrupts
    # The same id as the first interrupt: input.respond calls it consumed, so the runs API resumes it.
    resumed = graph.stream_events(Command(resume={again.id: "second"}), config, version="v3")
    assert resumed.output == {"x": 20, "answer": "second"}
