"""A misbehaving server cannot take the client down: ``Limits`` bound what its
stream makes the client hold, and what it sends that is not an event fails the
run clearly. The server is ``tests.fake_servers.ScriptedRuns``: a real socket,
scripted event-stream bodies."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from remote_graph import Limits, RemoteGraph, RemoteProtocolError, RemoteRunError, errors
from tests.fake_servers import ScriptedRuns, metadata_frame, sse_event

SMALL = Limits(max_frame_chars=100_000)


def run_sync(graph: RemoteGraph) -> tuple[Any, BaseException | None, Any]:
    """(output, error, snapshot) of one v3 run."""
    run = graph.stream_events({"x": 0}, version="v3")
    try:
        return run.output, None, run.snapshot()
    except Exception as exc:
        return None, exc, run.snapshot()


def run_async(graph: RemoteGraph) -> tuple[Any, BaseException | None, Any]:
    async def go() -> tuple[Any, BaseException | None, Any]:
        run = await graph.astream_events({"x": 0}, version="v3")
        try:
            return await run.output(), None, run.snapshot()
        except Exception as exc:
            return None, exc, run.snapshot()

    return asyncio.run(go())


RUNS: dict[str, Callable[[RemoteGraph], tuple[Any, BaseException | None, Any]]] = {"sync": run_sync, "async": run_async}


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def endless_frame() -> Iterator[bytes]:
    """A frame that never ends: one data line growing for as long as anyone reads."""
    yield metadata_frame()
    yield sse_event("values", {"x": 1}, 1)
    yield b"event: values\r\ndata: "
    while True:
        yield b"x" * 16384


def one_huge_frame() -> Iterable[bytes]:
    yield metadata_frame()
    yield sse_event("values", {"x": 1}, 1)
    yield sse_event("values", {"x": "y" * 200_000}, 2)
    yield sse_event("values", {"x": 3}, 3)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("flavour", list(RUNS))
@pytest.mark.parametrize("body", [endless_frame, one_huge_frame], ids=["endless", "huge"])
def test_a_frame_over_the_limit_fails_the_run_and_cancels_it(flavour: str, body: Callable[[], Iterable[bytes]]) -> None:
    with ScriptedRuns(body) as server:
        graph = RemoteGraph("g", url=server.url, limits=SMALL)
        tracemalloc.start()
        try:
            output, error, snapshot = RUNS[flavour](graph)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert isinstance(error, RemoteProtocolError) and "Limits.max_frame_chars (100000 characters)" in str(error)
        # What the client held stays near the limit (the frame, a copy, a chunk), however much is sent.
        assert peak < 20 * SMALL.max_frame_chars, peak
        assert snapshot.status == "failed" and snapshot.error is error and snapshot.values == {"x": 1}
        # The run may still be going on the server: it is cancelled, and the stream let go.
        assert wait_for(lambda: server.asked("POST", "/cancel") == 1)
        assert wait_for(lambda: len(server.streamed) == 1)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("flavour", list(RUNS))
def test_a_frame_that_is_not_json_fails_the_run(flavour: str) -> None:
    def body() -> Iterable[bytes]:
        yield sse_event("values", {"x": 1}, 1)
        yield b"event: values\r\ndata: <html>oops</html>\r\nid: 2\r\n\r\n"

    with ScriptedRuns(body) as server:
        _, error, snapshot = RUNS[flavour](RemoteGraph("g", url=server.url))
        assert isinstance(error, RemoteProtocolError) and "not JSON" in str(error) and "<html>oops" in str(error)
        assert snapshot.status == "failed"
        assert wait_for(lambda: server.asked("POST", "/cancel") == 1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavour", list(RUNS))
def test_events_of_a_kind_the_client_does_not_know_pass_as_raw_events_and_are_not_kept(flavour: str) -> None:
    # A newer server's event kind: it reaches the raw event stream as it came,
    # no projection takes it, and nothing holds it once consumed.
    count = 5000

    def body() -> Iterable[bytes]:
        yield sse_event("values", {"x": 1}, 1)
        for start in range(0, count, 100):
            yield b"".join(sse_event("telemetry", {"pad": "." * 1000}, seq + 2) for seq in range(start, start + 100))
        yield sse_event("values", {"x": 2}, count + 2)

    with ScriptedRuns(body) as server:
        graph = RemoteGraph("g", url=server.url)
        if flavour == "sync":
            run = graph.stream_events({"x": 0}, version="v3")
            methods = [event["method"] for event in run]
            output = run.output
        else:

            async def go() -> tuple[list[str], Any]:
                run = await graph.astream_events({"x": 0}, version="v3")
                return [event["method"] async for event in run], await run.output()

            methods, output = asyncio.run(go())
        assert methods.count("telemetry") == count and methods[0] == methods[-1] == "values"
        assert output == {"x": 2}
        # Read only for its output, the run holds none of them.
        tracemalloc.start()
        try:
            assert run_sync(graph)[0] == {"x": 2}
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # Holding them would take over 5 MB. A read brings what the transport
        # had: about 1 MB at the peak on a quiet machine, 1.25 MB seen on a loaded one.
        assert peak < count * 1000 / 2, f"{peak} bytes held for {count} events of 1 kB"


@pytest.mark.timeout(60)
def test_a_server_naming_a_new_exception_type_in_every_failure_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    registry: dict[str, type] = {}
    monkeypatch.setattr(errors, "_CLASSES", registry)

    def body() -> Iterable[bytes]:
        yield sse_event("values", {"x": 1}, 1)
        yield b'event: error\r\ndata: {"error": "Ignored", "message": "hidden"}\r\nid: 2\r\n\r\n'

    with ScriptedRuns(body, record={"status": "error"}) as server:
        graph = RemoteGraph("g", url=server.url, limits=Limits(max_error_types=3))
        seen = []
        for i in range(6):
            server.state = {
                "values": {},
                "tasks": [{"error": f"Made{i}('failure {i}')"}],
                "checkpoint": {"checkpoint_id": "c"},
            }
            _, error, snapshot = run_sync(graph)
            seen.append(error)
            assert snapshot.status == "failed"
        assert [type(e).__name__ for e in seen[:3]] == ["Made0", "Made1", "Made2"]
        assert all(isinstance(e, RemoteRunError) and str(e) == f"failure {i}" for i, e in enumerate(seen[:3]))
        assert all(isinstance(e, RemoteProtocolError) and "Limits.max_error_types (3)" in str(e) for e in seen[3:])
        assert len(registry) == 3


@pytest.mark.timeout(30)
@pytest.mark.parametrize("flavour", list(RUNS))
def test_a_stream_that_begins_after_the_runs_first_events_is_read_again_from_the_start(flavour: str) -> None:
    """A run's stream subscribed late (a busy server) lacks the run's first frames, its
    ``metadata`` among them: the client reads the run again from its start, and
    delivers every event once."""
    frames = [metadata_frame(), *(sse_event("values", {"x": i}, i) for i in range(1, 5))]

    def body() -> Iterable[bytes]:
        if len(server.streamed) == 0 and not any(path.endswith("/stream") for _, path, _ in server.requests[1:]):
            return frames[3:]  # no metadata frame, no x=1, x=2
        after = server.requests[-1][2].get("last-event-id")
        start = 0 if after in (None, "0-0", "-1") else int(after) + 1
        return frames[start:]

    with ScriptedRuns(body) as server:
        graph = RemoteGraph("g", url=server.url)
        if flavour == "sync":
            with graph.stream_events({"x": 0}, version="v3") as run:
                values = list(run.values)
        else:

            async def go() -> list[Any]:
                async with await graph.astream_events({"x": 0}, version="v3") as run:
                    return [v async for v in run.values]

            values = asyncio.run(go())
        assert values == [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}]
        streams = [headers.get("last-event-id") for method, path, headers in server.requests if "stream" in path]
        # The first stream's first frame was no metadata: the next read starts from the beginning.
        assert streams[:2] == [None, "0-0"], streams
