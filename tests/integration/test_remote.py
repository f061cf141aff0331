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
        ({"interrupt_before": ["b"]}, "interrupt_before"),
        ({"interrupt_after": ["a"]}, "interrupt_after"),
        ({"context": {"who": "x"}}, "context"),
        ({"durability": "exit"}, "durability"),
        ({"bogus_kw": 1}, "bogus_kw"),
    ],
)
def test_unhonoured_kwargs_raise_naming_the_kwarg(server_url: str, kwargs: dict[str, Any], name: str) -> None:
    graph = remote(server_url, "linear")
    with pytest.raises(NotImplementedError, match=name):
        graph.stream_events({"x": 1, "log": []}, version="v3", **kwargs)
    with pytest.raises(NotImplementedError, match=name):
        graph.astream_events({"x": 1, "log": []}, version="v3", **kwargs)


def test_unknown_assistant_fails_on_first_pull_with_a_command_error(server_url: str) -> None:
    run = RemoteGraph("no-such-graph", url=server_url).stream_events({}, version="v3")
    with pytest.raises(RemoteCommandError, match="no-such-graph") as info:
        run.output
    assert info.value.status == 422


def test_unreachable_server_raises_a_connection_error() -> None:
    graph = RemoteGraph("linear", url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(RemoteConnectionError):
        graph.stream_events({"x": 1, "log": []}, version="v3").output


def test_new_input_on_an_interrupted_thread_is_refused(server_url: str) -> None:
    graph = remote(server_url, "gate")
    config = thread()
    assert graph.stream_events({"x": 1, "answer": ""}, config, version="v3").interrupted
    with pytest.raises(ValueError, match="interrupted"):
        graph.stream_events({"x": 5, "answer": ""}, config, version="v3").output
    # The refused input did not reach the server: the interrupt is still pending.
    resumed = graph.stream_events(Command(resume="ok"), config, version="v3")
    assert resumed.output == {"x": 20, "answer": "ok"}


def test_plain_resume_with_two_pending_interrupts_is_refused(server_url: str) -> None:
    graph = remote(server_url, "twoask")
    config = thread()
    assert len(graph.stream_events({"out": []}, config, version="v3").interrupts) == 2
    with pytest.raises(ValueError, match="2 pending interrupts"):
        graph.stream_events(Command(resume="x"), config, version="v3").output


def test_resume_with_update_and_goto(server_url: str) -> None:
    graph = remote(server_url, "gate")
    config = thread()
    graph.stream_events({"x": 1, "answer": ""}, config, version="v3").output
    run = graph.stream_events(Command(resume="yes", update={"x": 7}), config, version="v3")
    assert run.output == {"x": 70, "answer": "yes"}


def test_fork_from_checkpoint_id(server_url: str) -> None:
    graph = remote(server_url, "linear")
    config = thread()
    graph.stream_events({"x": 1, "log": []}, config, version="v3").output
    graph.stream_events({"x": 2, "log": []}, config, version="v3").output
    history = list(graph.get_state_history(config))
    # The checkpoint right after the first run finished.
    first_done = next(s for s in history if s.values.get("log") == ["a", "b"] and not s.next)
    fork = {"configurable": {**config["configurable"], "checkpoint_id": first_done.config["configurable"]["checkpoint_id"]}}
    run = graph.stream_events({"x": 3, "log": []}, fork, version="v3")
    assert run.output == {"x": 40, "log": ["a", "b", "a", "b"]}
