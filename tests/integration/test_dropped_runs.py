"""A run stream dropped unfinished, with no ``with`` and no ``abort()``, stops its server run.

Locally, a run nobody pulls does no more work. Remotely the server would run
on; the run stream's finalizer cancels it once Python collects the stream.
The run stream and its projections reference each other, so the cycle
collector frees them: the test collects explicitly rather than wait for it.
"""

from __future__ import annotations

import asyncio
import gc
import time
import uuid
import weakref
from typing import Any

import graphs
import httpx
import pytest

from remote_graph import RemoteGraph

pytestmark = pytest.mark.integration

SLOW = {"x": 50, "log": []}  # 50 ticks of 0.1 s: still running when dropped


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _server_status(url: str, thread_id: str, run_id: str) -> str:
    return str(httpx.get(f"{url}/threads/{thread_id}/runs/{run_id}", timeout=5).json()["status"])


def _stopped_within(url: str, thread_id: str, run_id: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    status = _server_status(url, thread_id, run_id)
    while status in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.05)
        status = _server_status(url, thread_id, run_id)
    return status


@pytest.mark.timeout(60)
def test_a_dropped_sync_run_stream_cancels_its_run(server_url: str) -> None:
    graph = RemoteGraph("slow", url=server_url, stream_transformers=graphs.TRANSFORMERS)
    config = _config()

    def read_one_tick_and_leave() -> str | None:
        run = graph.stream_events(SLOW, config, version="v3")
        for _ in run.extensions["custom"]:
            break
        return run.run_id

    run_id = read_one_tick_and_leave()
    assert run_id is not None
    gc.collect()
    assert _stopped_within(server_url, config["configurable"]["thread_id"], run_id, 2.0) == "interrupted"


@pytest.mark.timeout(60)
def test_a_dropped_async_run_stream_cancels_its_run(server_url: str) -> None:
    graph = RemoteGraph("slow", url=server_url, stream_transformers=graphs.TRANSFORMERS)
    config = _config()

    async def main() -> str | None:
        run = await graph.astream_events(SLOW, config, version="v3")
        async for _ in run.extensions["custom"]:
            break
        run_id = run.run_id
        del run
        # Let the loop finish the abandoned async iterator, then collect the cycle;
        # the cancel is scheduled on this loop.
        await asyncio.sleep(0.05)
        gc.collect()
        await asyncio.sleep(0.2)
        return run_id

    run_id = asyncio.run(main())
    assert run_id is not None
    assert _stopped_within(server_url, config["configurable"]["thread_id"], run_id, 2.0) == "interrupted"


@pytest.mark.timeout(60)
def test_a_dropped_finished_run_stream_sends_nothing(server_url: str, caplog: pytest.LogCaptureFixture) -> None:
    graph = RemoteGraph("linear", url=server_url)

    async def main() -> tuple[Any, dict[str, Any] | None]:
        run = await graph.astream_events({"x": 1, "log": []}, _config(), version="v3")
        return run, await run.output()

    # Dropped after its loop has closed: a run that ended needs no cancel, and
    # must not warn that its loop is gone. An earlier test's run, unfinished in
    # a cycle on a loop now closed, rightly warns when collected: not here.
    gc.collect()
    caplog.clear()
    run, output = asyncio.run(main())
    assert output == {"x": 20, "log": ["a", "b"]}
    del run
    gc.collect()
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


@pytest.mark.timeout(60)
def test_probe_a_dropped_run_stream_is_cancelled_when_collected_not_when_dropped(server_url: str) -> None:
    graph = RemoteGraph("slow", url=server_url, stream_transformers=graphs.TRANSFORMERS)
    config = _config()

    def read_one_tick_and_leave() -> tuple[str | None, weakref.ref[Any]]:
        run = graph.stream_events(SLOW, config, version="v3")
        for _ in run.extensions["custom"]:
            break
        return run.run_id, weakref.ref(run)

    gc.disable()
    try:
        run_id, dropped = read_one_tick_and_leave()
        assert run_id is not None
        time.sleep(0.5)
        # No reference is left, yet the run stream lives on in its cycle, and so does the run.
        assert dropped() is not None
        assert _server_status(server_url, config["configurable"]["thread_id"], run_id) == "running"
        gc.collect()
    finally:
        gc.enable()
    assert dropped() is None
    assert _stopped_within(server_url, config["configurable"]["thread_id"], run_id, 2.0) == "interrupted"
