"""Runs that outlive their caller, on the embedded server: start, join from another process, manage.

The joins compare what they saw, as objects, with a join of the whole finished
run (the server's own record of the run's events), and with each other. The
``slow`` graph writes one custom event every 0.1 s, so a run is still going
while a caller dies.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.types import Command

from remote_graph import RemoteGraph, RunStatus
from remote_graph._core.cursor import FROM_START, id_after
from remote_graph.errors import RunCursorError, RunMismatchError, RunNotFoundError
from tests.integration.cutproxy import RESUME_CUT_BYTES, CuttingProxy
from tests.integration.server_kinds import keeps_run_arguments, paused_run_status

pytestmark = pytest.mark.integration

CLASSIC_MODES = ["updates", "custom"]


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"join-{uuid.uuid4().hex[:10]}"}}


def v3_events(run: Any, limit: int | None = None, cursors: list[str] | None = None) -> list[Any]:
    """A run stream's raw events as (method, namespace, data), in order."""
    seen: list[Any] = []
    for event in run:
        params = event["params"]
        seen.append((event["method"], tuple(params["namespace"]), params["data"]))
        if cursors is not None:
            cursors.append(run.cursor)
        if limit is not None and len(seen) >= limit:
            break
    return seen


def chunks(joined: Any) -> list[Any]:
    return list(joined)


# --- a starter that dies mid-run ---------------------------------------------------------------

# The starter's run: 8 s of ticks, so that it is still going when the starter is
# killed, though a loaded machine takes seconds to start the starter and its join
# (3 s of ticks ended first there, once in a CI run beside the soak lanes).
_TICKS = 80
_STARTER = r"""
import json, sys
from remote_graph import RemoteGraph
url, kind, thread_id, out = sys.argv[1:5]
graph = RemoteGraph("slow", url=url)
config = {"configurable": {"thread_id": thread_id}}
modes = ["updates", "custom"]
handle = graph.start({"x": int(sys.argv[5]), "log": []}, config, **({} if kind == "v3" else {"stream_mode": modes}))
with open(out, "w") as log:
    log.write(json.dumps({"run_id": handle.run_id}) + "\n")
    log.flush()
    if kind == "v3":
        joined = graph.join(handle.run_id, thread_id=thread_id)
        for event in joined:
            params = event["params"]
            seen = [event["method"], params["namespace"], params["data"]]
            log.write(json.dumps({"seen": seen, "cursor": joined.cursor}) + "\n")
            log.flush()
    else:
        joined = graph.join(handle.run_id, thread_id=thread_id, version="v1", stream_mode=modes)
        for chunk in joined:
            log.write(json.dumps({"seen": chunk, "cursor": joined.cursor}) + "\n")
            log.flush()
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text() if path.exists() else ""
    # The last line may be cut by the kill.
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


@pytest.mark.parametrize("kind", ["v3", "classic"])
def test_a_join_from_another_process_after_the_starter_was_killed_loses_and_repeats_nothing(
    server_url: str, tmp_path: Path, kind: str
) -> None:
    config = thread()
    thread_id = config["configurable"]["thread_id"]
    out = tmp_path / "starter.jsonl"
    child = subprocess.Popen([sys.executable, "-c", _STARTER, server_url, kind, thread_id, str(out), str(_TICKS)])
    try:
        deadline = time.monotonic() + 30
        while len(_lines(out)) < 6 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        # Popen.kill (SIGKILL) signals only a child not yet reaped: one that
        # ended by itself (its join failed) is reported below, not as a lost PID.
        child.kill()
    finally:
        child.wait(10)
    lines = _lines(out)
    assert len(lines) >= 6, f"the starter did not get far enough before the kill (exit code {child.returncode})"
    run_id, stored = lines[0]["run_id"], lines[1:]
    # What the dead process saw, in JSON (as it stored it), and the last cursor it stored.
    seen = [line["seen"] for line in stored]
    cursor = stored[-1]["cursor"]
    graph = RemoteGraph("slow", url=server_url)
    handle = graph.get_run(run_id, thread_id=thread_id)
    assert handle.status is RunStatus.RUNNING, "the run ended before the starter died: make it longer"
    if kind == "v3":
        rest = v3_events(graph.join(run_id, thread_id=thread_id, after=cursor))
        whole = v3_events(graph.join(run_id, thread_id=thread_id))
        assert [list(json.loads(json.dumps(e))) for e in whole[: len(seen)]] == seen
    else:
        rest = chunks(graph.join(run_id, thread_id=thread_id, after=cursor, version="v1", stream_mode=CLASSIC_MODES))
        whole = chunks(graph.join(run_id, thread_id=thread_id, version="v1", stream_mode=CLASSIC_MODES))
        assert json.loads(json.dumps(whole[: len(seen)])) == seen
    assert rest, "the join after the kill saw nothing: the run should still have been going"
    assert whole[len(seen) :] == rest
    ticks = [e for e in whole if (e[0] if kind == "v3" else e[0]) == "custom"]
    assert [t[2] if kind == "v3" else t[1] for t in ticks] == [{"tick": i} for i in range(_TICKS)]
    assert graph.get_run(run_id, thread_id=thread_id).status is RunStatus.COMPLETED


# --- joining, sync and async ----------------------------------------------------------------


def test_three_joiners_at_once_see_the_same_run(server_url: str) -> None:
    graph = RemoteGraph("slow", url=server_url)
    handle = graph.start({"x": 12, "log": []}, thread())
    results: list[Any] = [None] * 3

    def join(i: int) -> None:
        with graph.join(handle.run_id, thread_id=handle.thread_id) as run:
            results[i] = (v3_events(run), run.output)

    threads = [threading.Thread(target=join, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(r is not None for r in results)
    assert results[0] == results[1] == results[2]
    events, output = results[0]
    assert output == {"x": 12, "log": ["ticked"]}
    assert [e[2] for e in events if e[0] == "custom"] == [{"tick": i} for i in range(12)]
    assert handle.wait(30).status is RunStatus.COMPLETED


def test_a_join_after_the_end_replays_the_run_and_a_cursor_at_the_last_event_yields_nothing(
    server_url: str,
) -> None:
    graph = RemoteGraph("slow", url=server_url)
    handle = graph.start({"x": 4, "log": []}, thread())
    assert handle.wait(30).done and handle.status is RunStatus.COMPLETED
    cursors: list[str] = []
    with graph.join(handle.run_id, thread_id=handle.thread_id) as run:
        events = v3_events(run, cursors=cursors)
        assert run.output == {"x": 4, "log": ["ticked"]}
        assert run.thread_id == handle.thread_id and run.run_id == handle.run_id
    assert [e[2] for e in events if e[0] == "custom"] == [{"tick": i} for i in range(4)]
    for k in (0, len(events) // 2):
        assert v3_events(graph.join(handle.run_id, thread_id=handle.thread_id, after=cursors[k])) == events[k + 1 :]
    with graph.join(handle.run_id, thread_id=handle.thread_id, after=cursors[-1]) as run:
        assert v3_events(run) == []
        assert run.wait() is RunStatus.COMPLETED


def test_a_run_that_paused_for_input_reads_interrupted_on_its_handle_as_on_its_join(
    server_url: str, pytestconfig: pytest.Config
) -> None:
    # langgraph-api records a paused run as a success, aegra as interrupted (as a
    # cancelled one); neither the handle nor a join may call it completed or cancelled.
    graph = RemoteGraph("gate", url=server_url)
    config = thread()
    handle = graph.start({"x": 1, "answer": ""}, config)
    assert handle.wait(30).status is RunStatus.INTERRUPTED
    assert handle.server_status == paused_run_status(pytestconfig)
    with graph.join(handle.run_id, thread_id=handle.thread_id) as run:
        assert run.interrupted and run.snapshot().status == "interrupted"
    (listed,) = graph.list_runs(config["configurable"]["thread_id"])
    assert listed.status is RunStatus.INTERRUPTED
    # Resumed by the next run, it still ended paused; the resume completes.
    resumed = graph.start(Command(resume="yes"), config)
    assert resumed.wait(30).status is RunStatus.COMPLETED
    assert graph.get_run(handle.run_id, thread_id=handle.thread_id).status is RunStatus.INTERRUPTED


def test_a_classic_join_yields_what_stream_yields(server_url: str, pytestconfig: pytest.Config) -> None:
    graph = RemoteGraph("slow", url=server_url)
    config = thread()
    streamed = list(graph.stream({"x": 3, "log": []}, config, stream_mode=CLASSIC_MODES))
    handle = graph.start({"x": 3, "log": []}, config, stream_mode=CLASSIC_MODES)
    joined = handle.join()
    got = list(joined)
    assert got == streamed
    assert joined.cursor is not None and joined.run_id == handle.run_id
    if not keeps_run_arguments(pytestconfig):
        return  # nothing on the run's record says it is a classic run
    # A v3 join of a classic run says how to join it.
    with pytest.raises(RunMismatchError, match="stream_mode="):
        v3_events(graph.join(handle.run_id, thread_id=handle.thread_id))


def test_a_cut_connection_during_a_join_loses_and_repeats_nothing(server_url: str) -> None:
    graph = RemoteGraph("ticks", url=server_url)
    handle = graph.start({"n": 400}, thread())
    handle.wait(60)
    whole = v3_events(graph.join(handle.run_id, thread_id=handle.thread_id))
    with CuttingProxy(server_url, cut_range=RESUME_CUT_BYTES, seed=3) as proxy:
        cut = RemoteGraph("ticks", url=proxy.url)
        got = v3_events(cut.join(handle.run_id, thread_id=handle.thread_id))
        classic_whole = None
        assert proxy.cuts >= 2
    assert got == whole and classic_whole is None
    assert [e[2] for e in got if e[0] == "custom"] == [{"i": i} for i in range(400)]


def test_cancelling_from_a_joiner_stops_the_run(server_url: str) -> None:
    graph = RemoteGraph("slow", url=server_url)
    handle = graph.start({"x": 50, "log": []}, thread())
    run = graph.join(handle.run_id, thread_id=handle.thread_id)
    v3_events(run, limit=3)
    run.abort()
    assert handle.wait(30).status is RunStatus.CANCELLED
    # And through the handle, from anywhere.
    other = graph.start({"x": 50, "log": []}, thread())
    assert other.cancel().wait(30).status is RunStatus.CANCELLED


def test_handles_list_a_threads_runs(server_url: str, pytestconfig: pytest.Config) -> None:
    graph = RemoteGraph("slow", url=server_url)
    config = thread()
    first = graph.start({"x": 1, "log": []}, config).wait(30)
    second = graph.start({"x": 1, "log": []}, config).wait(30)
    listed = graph.list_runs(config["configurable"]["thread_id"])
    assert [h.run_id for h in listed] == [second.run_id, first.run_id]
    # A record that keeps no run arguments (aegra's) does not say which kind of run it was.
    kind = "v3" if keeps_run_arguments(pytestconfig) else None
    assert all(h.thread_id == config["configurable"]["thread_id"] and h.kind == kind for h in listed)
    assert graph.list_runs(config["configurable"]["thread_id"], status="running") == []


def test_joins_that_cannot_be_made_fail_clearly(server_url: str) -> None:
    graph = RemoteGraph("slow", url=server_url)
    handle = graph.start({"x": 1, "log": []}, thread())
    handle.wait(30)
    with pytest.raises(RunNotFoundError, match="not on thread"):
        v3_events(graph.join(str(uuid.uuid4()), thread_id=handle.thread_id))
    with pytest.raises(RunNotFoundError):
        graph.get_run(str(uuid.uuid4()), thread_id=handle.thread_id)
    with pytest.raises(RunMismatchError, match="runs graph 'slow'"):
        v3_events(RemoteGraph("ticks", url=server_url).join(handle.run_id, thread_id=handle.thread_id))
    other = graph.start({"x": 1, "log": []}, thread())
    other.wait(30)
    with graph.join(other.run_id, thread_id=other.thread_id) as run:
        v3_events(run)
        cursor = run.cursor
    with pytest.raises(RunMismatchError, match="taken from run"):
        graph.join(handle.run_id, thread_id=handle.thread_id, after=cursor)
    with pytest.raises(RunCursorError):
        graph.join(handle.run_id, thread_id=handle.thread_id, after="page-2")


def test_the_async_api(server_url: str) -> None:
    async def main() -> None:
        graph = RemoteGraph("slow", url=server_url)
        handle = await graph.astart({"x": 6, "log": []}, thread())
        seen: list[Any] = []
        cursor = None
        run = await graph.ajoin(handle.run_id, thread_id=handle.thread_id)
        async for event in run:
            seen.append((event["method"], tuple(event["params"]["namespace"]), event["params"]["data"]))
            cursor = run.cursor
            if len(seen) == 3:
                break
        rest = []
        async with await handle.join(after=cursor) as later:
            async for event in later:
                rest.append((event["method"], tuple(event["params"]["namespace"]), event["params"]["data"]))
        assert (await handle.wait(30)).status is RunStatus.COMPLETED
        whole = v3_events(graph.join(handle.run_id, thread_id=handle.thread_id))
        assert seen + rest == whole
        runs = await graph.alist_runs(handle.thread_id)
        assert [h.run_id for h in runs] == [handle.run_id]
        assert (await graph.aget_run(handle.run_id, thread_id=handle.thread_id)).status is RunStatus.COMPLETED
        classic = await graph.astart({"x": 2, "log": []}, thread(), stream_mode=CLASSIC_MODES)
        got = [chunk async for chunk in await classic.join()]
        assert [c for c in got if c[0] == "custom"] == [("custom", {"tick": 0}), ("custom", {"tick": 1})]

    asyncio.run(main())


def test_probe_a_stored_stream_replays_from_its_first_event_and_after_any_id(server_url: str) -> None:
    """What a join sends as ``Last-Event-ID`` is one every server takes: ``FROM_START``
    replays the run's stream from its ``metadata`` frame (a Redis-backed server
    refuses ``-1``, which is no stream id), and a frame's id replays what follows it."""
    thread_id = str(uuid.uuid4())  # a UUID is the server's thread id as it is
    config = {"configurable": {"thread_id": thread_id}}
    graph = RemoteGraph("slow", url=server_url)
    handle = graph.start({"x": 3, "log": []}, config)
    assert chunks(graph.join(handle.run_id, thread_id=thread_id))  # to the end
    with httpx.Client(base_url=server_url, timeout=30) as http:

        def replay(last_event_id: str) -> list[tuple[str, str]]:
            path = f"/threads/{thread_id}/runs/{handle.run_id}/stream"
            response = http.get(path, headers={"Last-Event-ID": last_event_id})
            assert response.status_code == 200
            frames = []
            for block in response.text.replace("\r\n", "\n").split("\n\n"):
                fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
                if "id" in fields:
                    frames.append((fields["id"], fields.get("event", "")))
            return frames

        whole = replay(FROM_START)
        assert whole and whole[0][1] == "metadata"
        assert len({frame_id for frame_id, _ in whole}) >= 3
        middle = whole[len(whole) // 2][0]
        assert replay(middle) == [frame for frame in whole if id_after(frame[0], middle)]
