"""The data path of a remote run: every event once and in order, over long threads,
cut connections, split UTF-8, slow consumers, several event loops; the status a
run ends with; nothing left running on the server or leaking in the client.

Most scenarios are written once against a ``Drive`` (the sync API, or the async
API on one private event loop per test) and run with both. Timings are printed
(run with ``-s`` to see them); the asserted bounds are stated next to each test.
The embedded server picks up a new run about 1 s after it is created, so a
sequential run costs about 1 s of wall time whatever the client does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import graphs
import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from remote_graph import RemoteGraph
from remote_graph._core.actions import Timeouts
from remote_graph._core.cursor import FROM_START
from remote_graph.errors import RemoteConnectionError, RemoteGraphError
from tests.integration.cutproxy import RESUME_CUT_BYTES, CuttingProxy
from tests.integration.lanes import norm
from tests.integration.server_kinds import is_aegra

# The health check each server answers: langgraph-api's and aegra's.
HEALTH_PATH = {False: "/ok", True: "/health"}

pytestmark = pytest.mark.integration

# Response bytes an event stream gets through the cutting proxy before each cut, for
# the proxy's own test (raw reads; a library run uses ``RESUME_CUT_BYTES``).
CUT_BYTES = (300, 4000)
LINEAR_OUTPUT = {"x": 20, "log": ["a", "b"]}
ACTIVE = ("pending", "running")


# --- helpers -------------------------------------------------------------------------


def remote(url: str, name: str, **kwargs: Any) -> RemoteGraph:
    return RemoteGraph(name, url=url, stream_transformers=graphs.TRANSFORMERS, **kwargs)


def local(name: str) -> Any:
    return graphs.BUILDERS[name]().compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS)


def new_thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def ticks_output(n: int, turns: int) -> dict[str, Any]:
    """The ``ticks`` graph's state after ``turns`` runs on one thread, the last with ``n``."""
    return {"n": n, "turns": list(range(turns))}


def assert_ticks(custom: list[Any], n: int, where: str) -> None:
    """``custom`` is exactly ``{"i": 0} .. {"i": n - 1}``: each event once, in order."""
    if custom == [{"i": i} for i in range(n)]:
        return
    seen = [item.get("i") if isinstance(item, dict) else item for item in custom]
    counts = Counter(seen)
    missing = [i for i in range(n) if i not in counts]
    duplicated = sorted((i for i, count in counts.items() if count > 1), key=repr)
    first_wrong = next((k for k, (got, want) in enumerate(zip(seen, range(n))) if got != want), min(len(seen), n))
    pytest.fail(
        f"{where}: {len(seen)} custom events for {n}; {len(missing)} missing (first {missing[:5]}), "
        f"{len(duplicated)} duplicated (first {duplicated[:5]}), first wrong at position {first_wrong}: "
        f"{seen[first_wrong : first_wrong + 5]}"
    )


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Server:
    """Asks the server directly (not through the library) how a run is doing."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=10)

    def status(self, thread_id: str, run_id: str) -> str:
        response = self.http.get(f"/threads/{thread_id}/runs/{run_id}")
        response.raise_for_status()
        return str(response.json()["status"])

    def settle(self, thread_id: str, run_id: str, bound: float) -> tuple[str, float]:
        """Poll until the run is neither pending nor running, for at most ``bound`` s.
        Returns the last status seen and the seconds it took."""
        start = time.monotonic()
        while True:
            status = self.status(thread_id, run_id)
            elapsed = time.monotonic() - start
            if status not in ACTIVE or elapsed > bound:
                return status, elapsed
            time.sleep(0.02)

    def longest_repeat(self, thread_id: str, run_id: str) -> int:
        """The most bytes a resumed connection to this run's stream must carry to bring
        a new frame: the response head, every frame of the newest id the lost
        connection had (the cursor resumes from the id before it) and the next frame,
        chunk framing included. Read from the run's stored stream; the run must be over."""
        response = self.http.get(f"/threads/{thread_id}/runs/{run_id}/stream", headers={"Last-Event-ID": FROM_START})
        response.raise_for_status()
        head = len(b"HTTP/1.1 200 OK\r\n\r\n") + sum(len(k) + len(v) + 4 for k, v in response.headers.raw)
        groups: list[tuple[bytes | None, list[int]]] = []  # each id and its frames' sizes, in stream order
        for frame in response.content.split(b"\r\n\r\n")[:-1]:
            frame_id = next((line[4:] for line in frame.split(b"\r\n") if line.startswith(b"id: ")), None)
            size = len(frame) + 4
            size += len(f"{size:x}\r\n\r\n")  # each frame is one chunk
            if groups and groups[-1][0] == frame_id:
                groups[-1][1].append(size)
            else:
                groups.append((frame_id, [size]))
        return head + max((sum(a[1]) + b[1][0] for a, b in zip(groups, groups[1:])), default=0)

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def server(server_url: str) -> Iterator[Server]:
    s = Server(server_url)
    yield s
    s.close()


# --- one vocabulary over the sync and the async API -----------------------------------

Pace = Callable[[int], float]  # seconds to pause after item k


class SyncDrive:
    """The sync API, on the test's thread."""

    flavour = "sync"

    def close(self) -> None:
        pass

    def start(self, graph: RemoteGraph, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return graph.stream_events(input, config or new_thread(), version="v3", **kwargs)

    def items(self, run: Any, name: str, *, limit: int | None = None, pace: Pace | None = None) -> list[Any]:
        out: list[Any] = []
        for item in getattr(run, name):
            out.append(item)
            if pace is not None and (pause := pace(len(out) - 1)):
                time.sleep(pause)
            if limit is not None and len(out) >= limit:
                break
        return out

    def message_texts(self, run: Any) -> list[str]:
        """Each message stream's text, read delta by delta."""
        return ["".join(message.text) for message in run.messages]

    def aclose(self, client: httpx.AsyncClient) -> None:
        """Close an async client the sync API never used: nothing to do on this thread."""

    def values_and_custom(self, run: Any) -> tuple[list[Any], list[Any], Any]:
        values, custom = iter(run.values), iter(run.custom)  # both subscribed before any pull
        return list(values), list(custom), run.output

    def timed_events(self, run: Any) -> tuple[int, float, float]:
        """Iterate the raw events; return their count and when the first and the last arrived."""
        count, first = 0, 0.0
        for _ in run:
            count += 1
            if count == 1:
                first = time.monotonic()
        return count, first, time.monotonic()

    def output(self, run: Any) -> Any:
        return run.output

    def interrupted(self, run: Any) -> bool:
        return run.interrupted

    def interrupts(self, run: Any) -> list[Any]:
        return run.interrupts

    def wait(self, run: Any) -> str:
        return run.wait()

    def abort(self, run: Any) -> None:
        run.abort()

    def leave_early(self, run: Any, mode: str) -> None:
        """Stop reading ``run.custom`` after its first item, the way ``mode`` says."""
        if mode == "with-exit":
            with run:
                next(iter(run.custom))
        elif mode == "with-raise":
            try:
                with run:
                    next(iter(run.custom))
                    raise _Leave
            except _Leave:
                pass
        elif mode == "break":
            with run:
                for _ in run.custom:
                    break
        elif mode == "abort":
            next(iter(run.custom))
            run.abort()
        else:
            raise ValueError(mode)


class AsyncDrive:
    """The async API, on one private event loop; every call is bounded by ``bound`` s."""

    flavour = "async"

    def __init__(self, bound: float = 120.0) -> None:
        self.loop = asyncio.new_event_loop()
        self.bound = bound

    def close(self) -> None:
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, self.bound))

    def start(self, graph: RemoteGraph, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self._run(graph.astream_events(input, config or new_thread(), version="v3", **kwargs))

    def items(self, run: Any, name: str, *, limit: int | None = None, pace: Pace | None = None) -> list[Any]:
        async def go() -> list[Any]:
            out: list[Any] = []
            async for item in getattr(run, name):
                out.append(item)
                if pace is not None and (pause := pace(len(out) - 1)):
                    await asyncio.sleep(pause)
                if limit is not None and len(out) >= limit:
                    break
            return out

        return self._run(go())

    def message_texts(self, run: Any) -> list[str]:
        async def go() -> list[str]:
            return ["".join([delta async for delta in message.text]) async for message in run.messages]

        return self._run(go())

    def aclose(self, client: httpx.AsyncClient) -> None:
        self._run(client.aclose())

    def values_and_custom(self, run: Any) -> tuple[list[Any], list[Any], Any]:
        async def go() -> tuple[list[Any], list[Any], Any]:
            values, custom = run.values.__aiter__(), run.custom.__aiter__()
            return [v async for v in values], [c async for c in custom], await run.output()

        return self._run(go())

    def timed_events(self, run: Any) -> tuple[int, float, float]:
        async def go() -> tuple[int, float, float]:
            count, first = 0, 0.0
            async for _ in run:
                count += 1
                if count == 1:
                    first = time.monotonic()
            return count, first, time.monotonic()

        return self._run(go())

    def output(self, run: Any) -> Any:
        return self._run(run.output())

    def interrupted(self, run: Any) -> bool:
        return self._run(run.interrupted())

    def interrupts(self, run: Any) -> list[Any]:
        return self._run(run.interrupts())

    def wait(self, run: Any) -> str:
        return self._run(run.wait())

    def abort(self, run: Any) -> None:
        self._run(run.abort())

    def leave_early(self, run: Any, mode: str) -> None:
        async def go() -> None:
            if mode == "with-exit":
                async with run:
                    await run.custom.__aiter__().__anext__()
            elif mode == "with-raise":
                try:
                    async with run:
                        await run.custom.__aiter__().__anext__()
                        raise _Leave
                except _Leave:
                    pass
            elif mode == "break":
                async with run:
                    async for _ in run.custom:
                        break
            elif mode == "abort":
                await run.custom.__aiter__().__anext__()
                await run.abort()
            else:
                raise ValueError(mode)

        self._run(go())


Drive = SyncDrive | AsyncDrive


class _Leave(Exception):
    """Raised inside a ``with`` block to leave it by an exception."""


@pytest.fixture
def drive(flavour: str) -> Iterator[Drive]:
    d: Drive = SyncDrive() if flavour == "sync" else AsyncDrive()
    yield d
    d.close()


# --- the cutting proxy itself -----------------------------------------------------------


@pytest.mark.timeout(60)
def test_cutting_proxy_cuts_event_streams_only(server_url: str, pytestconfig: pytest.Config) -> None:
    """The harness: REST answers on a kept-alive connection pass untouched, each event
    stream is cut within its budget, and nothing is left behind on exit."""
    aegra = is_aegra(pytestconfig)
    direct = httpx.Client(base_url=server_url, timeout=30)
    thread_id = str(uuid.uuid4())
    direct.post("/threads", json={"thread_id": thread_id}).raise_for_status()
    body = {
        "assistant_id": "ticks",
        "input": {"n": 2000},
        "stream_mode": ["custom", "values"],
        "stream_resumable": True,
    }
    run_id = direct.post(f"/threads/{thread_id}/runs", json=body).json()["run_id"]
    direct.get(f"/threads/{thread_id}/runs/{run_id}/join").raise_for_status()
    stream_path, replay = f"/threads/{thread_id}/runs/{run_id}/stream", {"Last-Event-ID": "0"}
    with direct.stream("GET", stream_path, headers=replay) as response:
        whole = b"".join(response.iter_raw())
    direct.close()
    assert len(whole) > 10 * CUT_BYTES[1]

    gc.collect()  # what earlier tests left for the collector is theirs, not the proxy's
    threads_before, fds_before = threading.active_count(), open_fds()
    with CuttingProxy(server_url, cut_range=CUT_BYTES, seed=11) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=10) as client:
            for _ in range(20):
                assert client.get(HEALTH_PATH[aegra]).status_code == 200
                assert client.post("/threads/search", json={"limit": 100}).status_code == 200
            assert proxy.connections == 1 and proxy.cuts == 0  # one kept-alive connection, never cut
            for attempt in range(1, 6):
                received = bytearray()
                with pytest.raises(httpx.TransportError):
                    with client.stream("GET", stream_path, headers=replay) as response:
                        for chunk in response.iter_raw():
                            received += chunk
                assert proxy.cuts == attempt and len(received) <= CUT_BYTES[1]
                assert client.get(HEALTH_PATH[aegra]).status_code == 200  # a fresh connection, untouched
            proxy.cutting = False
            with client.stream("GET", stream_path, headers=replay) as response:
                assert b"".join(response.iter_raw()) == whole
            assert proxy.cuts == 5 and proxy.stream_requests == 6
        port = proxy.port
    assert threading.active_count() == threads_before and open_fds() == fds_before
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/ok", timeout=2)


# --- long thread: many turns, many events each ----------------------------------------------


@pytest.mark.soak
@pytest.mark.timeout(240)  # 40 runs at about 1 s of server pickup each
def test_long_thread_every_event_once_in_order(server_url: str, drive: Drive) -> None:
    """40 turns of 100 custom events on one thread: each turn's events exactly once and
    in order, and its output has one more turn than the last."""
    graph = remote(server_url, "ticks")
    config = new_thread()
    started = time.monotonic()
    for turn in range(1, 41):
        run = drive.start(graph, {"n": 100}, config)
        assert_ticks(drive.items(run, "custom"), 100, f"turn {turn}")
        assert drive.output(run) == ticks_output(100, turn)
    print(f"\n{drive.flavour}: 40 turns in {time.monotonic() - started:.1f}s")


# --- cut connections ---------------------------------------------------------------------


@pytest.mark.soak
@pytest.mark.timeout(420)  # 15 runs; measured about 50 s with 9-17 cuts per run
def test_cut_connections_lose_and_repeat_nothing(server_url: str, drive: Drive, server: Server) -> None:
    """15 runs of 400-600 custom events through a proxy that cuts every event stream
    after 300-16000 bytes: every event once and in order, right outputs, and the proxy
    really cut (at least 2 cuts per run). The range's top clears what a resumed
    connection repeats (``RESUME_CUT_BYTES``) at least three times over."""
    rng = random.Random(f"cuts-{drive.flavour}")
    with CuttingProxy(server_url, cut_range=RESUME_CUT_BYTES, seed=rng.randrange(2**32)) as proxy:
        graph = remote(proxy.url, "ticks")
        config = new_thread()
        thread_id = config["configurable"]["thread_id"]
        started = time.monotonic()
        per_run, repeats = [], []
        for turn in range(1, 16):
            n = rng.randint(400, 600)
            before = proxy.cuts
            run = drive.start(graph, {"n": n}, config)
            try:
                custom = drive.items(run, "custom")
            except RemoteConnectionError as exc:
                if run.run_id is None:
                    raise
                server.settle(thread_id, str(run.run_id), bound=10.0)
                repeat = server.longest_repeat(thread_id, str(run.run_id))
                pytest.fail(
                    f"run {turn} (n={n}): {exc}; a resumed connection needed up to {repeat} bytes for news, "
                    f"the cuts came after {RESUME_CUT_BYTES}"
                )
            assert_ticks(custom, n, f"run {turn} (n={n})")
            assert drive.output(run) == ticks_output(n, turn)
            per_run.append(proxy.cuts - before)
            repeats.append(server.longest_repeat(thread_id, str(run.run_id)))
        print(
            f"\n{drive.flavour}: 15 runs in {time.monotonic() - started:.1f}s, cuts per run {per_run}, "
            f"longest repeat {max(repeats)} bytes"
        )
        assert proxy.cuts >= 2 * 15, per_run
        assert 3 * max(repeats) <= RESUME_CUT_BYTES[1], (
            f"a resumed connection needed up to {max(repeats)} bytes for news: raise RESUME_CUT_BYTES"
        )


# --- UTF-8 ---------------------------------------------------------------------------------

UNICODE_INPUT = {"size": 20_000}
# A unicode run streams about 272 KB, in frames of up to 108 KB (its final values and its
# update) written within a millisecond or two. The in-memory server gives all frames of a
# millisecond one id, so a resumed stream replays from the start of that millisecond:
# here, about the whole run. Budgets up to 600 KB let some connections carry it all; the
# rest cut it anywhere, mostly inside multi-byte characters.
UNICODE_CUT_BYTES = (300, 600_000)
UNICODE_CUT_RUNS = 8


@functools.cache
def unicode_reference() -> tuple[list[Any], list[Any], Any]:
    """The ``unicode`` graph run locally: its values snapshots, custom events and output."""
    run = local("unicode").stream_events(dict(UNICODE_INPUT), new_thread(), version="v3")
    return SyncDrive().values_and_custom(run)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("via", ["direct", "cut"])
def test_multibyte_text_arrives_intact(server_url: str, drive: Drive, via: str) -> None:
    """20,000 chars of 1-4 byte UTF-8 in the state (plus ten 2,000-char custom events):
    values snapshots, custom events and output equal the local run's, with no U+FFFD.
    Directly, once; through the cutting proxy, 8 runs with at least 4 cuts in all."""
    expected = unicode_reference()
    assert "\ufffd" not in json.dumps(expected, ensure_ascii=False)
    results, cuts = [], 0
    if via == "direct":
        graph = remote(server_url, "unicode")
        results.append(drive.values_and_custom(drive.start(graph, dict(UNICODE_INPUT))))
    else:
        with CuttingProxy(server_url, cut_range=UNICODE_CUT_BYTES, seed=5) as proxy:
            graph = remote(proxy.url, "unicode")
            for _ in range(UNICODE_CUT_RUNS):
                results.append(drive.values_and_custom(drive.start(graph, dict(UNICODE_INPUT))))
            cuts = proxy.cuts
    print(f"\n{drive.flavour} {via}: {len(results)} runs, {cuts} cuts")
    for k, (values, custom, output) in enumerate(results):
        assert "\ufffd" not in json.dumps((values, custom, output), ensure_ascii=False), f"run {k}"
        assert output == expected[2], f"run {k}"
        assert custom == expected[1], f"run {k}"
        assert values == expected[0], f"run {k}"
    if via == "cut":
        assert cuts >= 4


# --- a pause with id-less messages ends at once ---------------------------------------------------


@pytest.mark.serial  # a bound on the server's timing
@pytest.mark.timeout(60)
def test_pause_with_idless_messages_ends_within_a_second(server_url: str, drive: Drive) -> None:
    """``pause_msgs`` pauses in a step where a sibling node adds AIMessages created without
    ids. Measured: from the arrival of the run's first event (so the server's ~1 s run
    pickup is excluded) to the end of the run stream, after which ``interrupted`` is
    known without waiting. Bound: under 1 s. The result matches the local run's."""
    graph_input = {"messages": [], "notes": [], "answer": ""}
    reference = local("pause_msgs").stream_events(dict(graph_input), new_thread(), version="v3")
    graph = remote(server_url, "pause_msgs")
    run = drive.start(graph, dict(graph_input))
    count, first, end = drive.timed_events(run)
    print(f"\n{drive.flavour}: {count} events, first event to end {end - first:.3f}s")
    assert count > 0 and end - first < 1.0
    assert drive.interrupted(run) is True
    assert (
        [i.value for i in drive.interrupts(run)] == [i.value for i in reference.interrupts] == [{"question": "go on?"}]
    )
    assert norm(drive.output(run)) == norm(reference.output)


# --- how a run ends: wait() and snapshot() ----------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", ["unknown-assistant", "garbage-checkpoint-id"])
def test_refused_start_fails(server_url: str, drive: Drive, case: str) -> None:
    """A start the server refuses (422): ``wait()`` returns "failed" (no raise), and the
    snapshot says "failed" with the error."""
    if case == "unknown-assistant":
        graph, config = RemoteGraph("no-such-graph", url=server_url), new_thread()
    else:
        graph = remote(server_url, "linear")
        config = {"configurable": {"thread_id": str(uuid.uuid4()), "checkpoint_id": "not-a-checkpoint"}}
    run = drive.start(graph, {"x": 1, "log": []}, config)
    assert drive.wait(run) == "failed"
    snap = run.snapshot()
    assert snap.status == "failed"
    assert isinstance(snap.error, RemoteGraphError)


@pytest.mark.timeout(30)
def test_abort_after_completion_keeps_completed(server_url: str, drive: Drive) -> None:
    """A run that completed before ``abort()``: "completed", no error, its last values."""
    graph = remote(server_url, "linear")
    run = drive.start(graph, {"x": 1, "log": []})
    assert drive.output(run) == LINEAR_OUTPUT
    drive.abort(run)
    assert drive.wait(run) == "completed"
    snap = run.snapshot()
    assert (snap.status, snap.error, snap.values) == ("completed", None, LINEAR_OUTPUT)


@pytest.mark.serial  # a bound on the server's timing
@pytest.mark.timeout(30)
def test_abort_while_running_cancels(server_url: str, drive: Drive, server: Server) -> None:
    """``slow`` (5 s) aborted after 2 ticks: "cancelled", and within 2 s the server no
    longer calls the run pending or running."""
    graph = remote(server_url, "slow")
    run = drive.start(graph, {"x": 50, "log": []})
    assert drive.items(run, "custom", limit=2) == [{"tick": 0}, {"tick": 1}]
    drive.abort(run)
    assert drive.wait(run) == "cancelled"
    assert run.snapshot().status == "cancelled"
    status, seconds = server.settle(run.thread_id, str(run.run_id), bound=2.0)
    print(f"\n{drive.flavour}: server run {status} after {seconds:.2f}s")
    assert status not in ACTIVE


@pytest.mark.serial  # a bound on the server's timing
@pytest.mark.timeout(30)
def test_abort_from_another_task_ends_a_pull_waiting_for_the_next_event(server_url: str, server: Server) -> None:
    """An async consumer of ``slow`` waits for its next tick in its own task: the pump
    awaits the pause and the read itself, with no task for ``abort()`` to cancel. An
    ``abort()`` from another task closes the run's stream under that wait: the consumer's
    loop ends within 1 s with no error, the run is "cancelled", and the server's run
    stops within 2 s."""

    async def go() -> tuple[Any, list[Any], float]:
        run = await remote(server_url, "slow").astream_events({"x": 50, "log": []}, new_thread(), version="v3")
        seen: list[Any] = []
        first = asyncio.Event()

        async def consume() -> None:
            async for item in run.custom:
                seen.append(item)
                first.set()

        consumer = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 10)
        await asyncio.sleep(0.02)  # the consumer is back in its wait
        started = time.monotonic()
        await run.abort()
        await asyncio.wait_for(consumer, 5)
        return run, seen, time.monotonic() - started

    run, seen, took = asyncio.run(asyncio.wait_for(go(), 20))
    assert seen[0] == {"tick": 0} and len(seen) < 50
    assert took < 1.0, f"the waiting pull ended {took:.2f}s after abort()"
    assert run.snapshot().status == "cancelled"
    status, seconds = server.settle(run.thread_id, str(run.run_id), bound=2.0)
    assert status not in ACTIVE, f"still {status} after {seconds:.2f}s"


@pytest.mark.serial  # a bound on the server's timing
@pytest.mark.timeout(30)
def test_a_consumer_cancelled_while_waiting_for_the_next_event_stops_the_run(server_url: str, server: Server) -> None:
    """An async consumer of ``slow`` cancelled while it waits for its next tick, with
    the server's answer to the cancel held back 1 s: the cancel reaches the consumer at
    once (the run's close goes on in a task of its own, as for upstream's cancelled pull
    task), the run is "cancelled", and the server's run stops."""
    from langgraph_sdk.client import LangGraphClient

    async def hold_cancels(request: httpx.Request) -> None:
        if request.url.path.endswith("/cancel"):
            await asyncio.sleep(1.0)

    async def go() -> tuple[Any, float]:
        async with httpx.AsyncClient(base_url=server_url, event_hooks={"request": [hold_cancels]}, timeout=30) as http:
            graph = RemoteGraph("slow", client=LangGraphClient(http), stream_transformers=graphs.TRANSFORMERS)
            run = await graph.astream_events({"x": 50, "log": []}, new_thread(), version="v3")
            first = asyncio.Event()

            async def consume() -> None:
                async for _ in run.custom:
                    first.set()

            consumer = asyncio.create_task(consume())
            await asyncio.wait_for(first.wait(), 10)
            await asyncio.sleep(0.02)  # the consumer is back in its wait
            started = time.monotonic()
            consumer.cancel()
            with pytest.raises(asyncio.CancelledError):
                await consumer
            took = time.monotonic() - started
            await asyncio.sleep(1.5)  # the close, in its own task, gets the server's answer
            return run, took

    run, took = asyncio.run(asyncio.wait_for(go(), 20))
    assert took < 0.5, f"the cancel took {took:.2f}s to reach the consumer"
    assert run.snapshot().status == "cancelled"
    status, seconds = server.settle(run.thread_id, str(run.run_id), bound=2.0)
    assert status not in ACTIVE, f"still {status} after {seconds:.2f}s"


SMALL_TIMEOUTS = Timeouts(request=2.0, read=2.0, reconnect=3.0)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("failure", ["every-stream-cut-at-0-bytes", "proxy-stopped-mid-run"])
def test_transport_failure_fails_with_a_connection_error(server_url: str, drive: Drive, failure: str) -> None:
    """Event streams that never get through, or a proxy that disappears after 2 ticks:
    once the retries are spent, "failed" with a ``RemoteConnectionError``, within
    ``Timeouts.reconnect`` (3 s) + 2 x ``Timeouts.request`` (2 s) + 3 s of slack = 10 s of
    the failure's start (the start of the run, or the proxy's stop)."""
    cutting = failure == "every-stream-cut-at-0-bytes"
    with CuttingProxy(server_url, cut_range=(0, 0), cutting=cutting) as proxy:
        graph = remote(proxy.url, "slow", timeouts=SMALL_TIMEOUTS)
        run = drive.start(graph, {"x": 50, "log": []})
        if not cutting:
            assert drive.items(run, "custom", limit=2) == [{"tick": 0}, {"tick": 1}]
            proxy.stop()
        started = time.monotonic()
        status = drive.wait(run)
        seconds = time.monotonic() - started
        cuts = proxy.cuts
    print(f"\n{drive.flavour} {failure}: {status} after {seconds:.1f}s, {cuts} cuts")
    assert status == "failed"
    snap = run.snapshot()
    assert snap.status == "failed"
    assert isinstance(snap.error, RemoteConnectionError), repr(snap.error)
    if cutting:
        assert cuts >= 2  # it did retry
    assert seconds < SMALL_TIMEOUTS.reconnect + 2 * SMALL_TIMEOUTS.request + 3


@pytest.mark.timeout(30)
def test_pause_is_interrupted(server_url: str, drive: Drive) -> None:
    """``gate`` pauses: "interrupted", no error, the interrupt and the values at the pause."""
    graph = remote(server_url, "gate")
    run = drive.start(graph, {"x": 1, "answer": ""})
    assert drive.wait(run) == "interrupted"
    snap = run.snapshot()
    assert (snap.status, snap.error, snap.values) == ("interrupted", None, {"x": 2, "answer": ""})
    assert [i.value for i in snap.interrupts] == [{"question": "approve?", "x": 2}]


# --- a run outlives its graph object ---------------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_run_outlives_its_graph_object(server_url: str, drive: Drive) -> None:
    """A run keeps streaming after the caller drops the ``RemoteGraph`` it came from (as a
    local run does after its compiled graph is dropped): all 300 events, the output."""
    run = drive.start(remote(server_url, "ticks"), {"n": 300})

    def drop_the_graph_after_10(k: int) -> float:
        if k == 9:
            gc.collect()  # the graph object is unreachable now
        return 0.0

    custom = drive.items(run, "custom", pace=drop_the_graph_after_10)
    assert_ticks(custom, 300, "after the graph was dropped")
    assert drive.output(run) == ticks_output(300, 1)


# --- event loops (plain test functions: they make their own loops) -------------------------------------


async def ticks_on(graph: RemoteGraph, n: int) -> tuple[list[Any], Any]:
    run = await graph.astream_events({"n": n}, new_thread(), version="v3")
    custom = [item async for item in run.custom]
    return custom, await run.output()


@pytest.mark.timeout(60)
def test_one_graph_streams_from_two_successive_event_loops(server_url: str) -> None:
    graph = remote(server_url, "ticks")
    for loop_number in (1, 2):
        custom, output = asyncio.run(asyncio.wait_for(ticks_on(graph, 50), 25))
        assert_ticks(custom, 50, f"event loop {loop_number}")
        assert output == ticks_output(50, 1)


@pytest.mark.timeout(60)
def test_one_graph_ainvokes_from_two_successive_event_loops(server_url: str) -> None:
    graph = remote(server_url, "linear")
    for _ in (1, 2):
        output = asyncio.run(asyncio.wait_for(graph.ainvoke({"x": 1, "log": []}, new_thread()), 25))
        assert output == LINEAR_OUTPUT


@pytest.mark.timeout(90)
def test_one_graph_used_by_four_threads_each_with_its_own_loop(server_url: str) -> None:
    """Four threads, each in its own ``asyncio.run``, stream and ainvoke with one graph at once."""
    ticks, linear = remote(server_url, "ticks"), remote(server_url, "linear")
    results: dict[int, Any] = {}

    async def work() -> tuple[list[Any], Any, Any]:
        custom, output = await ticks_on(ticks, 200)
        return custom, output, await linear.ainvoke({"x": 1, "log": []}, new_thread())

    def worker(k: int) -> None:
        try:
            results[k] = asyncio.run(asyncio.wait_for(work(), 60))
        except BaseException as exc:
            results[k] = exc

    workers = [threading.Thread(target=worker, args=(k,), name=f"loop-{k}") for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(75)
    assert not any(w.is_alive() for w in workers)
    for k in range(4):
        result = results[k]
        assert not isinstance(result, BaseException), f"thread {k}: {result!r}"
        custom, output, invoked = result
        assert_ticks(custom, 200, f"thread {k}")
        assert (output, invoked) == (ticks_output(200, 1), LINEAR_OUTPUT)


# --- a slow consumer --------------------------------------------------------------------------------


@pytest.mark.soak
@pytest.mark.timeout(180)  # about 21 s of 2 ms reads + the 40 s pause + two runs' pickup
def test_slow_consumer_gets_every_event_in_bounded_memory(server_url: str, drive: Drive) -> None:
    """10,000 custom events read at 2 ms each, with one 40 s pause halfway (longer than the
    read timeout and many heartbeats): every event once and in order, and RSS, sampled
    every 500 events and at the end, never grows by 10 MB or more over the baseline. The
    baseline is taken after a warm-up run of 1,000 events: it warms the code paths and the
    connection without prepaying the high-water mark of a 10,000-event run, so buffering
    the stream ahead of the reader would show."""
    graph = remote(server_url, "ticks")
    warm = drive.start(graph, {"n": 1_000})
    assert_ticks(drive.items(warm, "custom"), 1_000, "warm-up")
    del warm
    gc.collect()
    before = rss_mb()
    peak = before

    def pace(k: int) -> float:
        nonlocal peak
        if k % 500 == 0:
            peak = max(peak, rss_mb())
        return 40.0 if k == 5_000 else 0.002

    started = time.monotonic()
    run = drive.start(graph, {"n": 10_000})
    custom = drive.items(run, "custom", pace=pace)
    assert_ticks(custom, 10_000, "slow read")
    assert drive.output(run) == ticks_output(10_000, 1)
    peak = max(peak, rss_mb())
    print(f"\n{drive.flavour}: read in {time.monotonic() - started:.1f}s, RSS peak +{peak - before:.1f} MB")
    assert peak - before < 10


# --- abort and early exit ------------------------------------------------------------------------------

EXIT_MODES = ("with-exit", "with-raise", "break", "abort")


@pytest.mark.soak
@pytest.mark.timeout(300)  # 60 runs at about 1 s of server pickup each
def test_leaving_early_stops_the_server_run(server_url: str, drive: Drive, server: Server) -> None:
    """60 runs of ``slow`` (5 s each if left alone) left after the first tick: by leaving
    a ``with`` block normally or by an exception, by ``break`` inside one, or by
    ``abort()``. After each, the server calls the run neither pending nor running
    within 2 s (the slowest is printed)."""
    graph = remote(server_url, "slow")
    slowest: dict[str, float] = dict.fromkeys(EXIT_MODES, 0.0)
    started = time.monotonic()
    for k in range(60):
        mode = EXIT_MODES[k % len(EXIT_MODES)]
        run = drive.start(graph, {"x": 50, "log": []})
        drive.leave_early(run, mode)
        status, seconds = server.settle(run.thread_id, str(run.run_id), bound=2.0)
        assert status not in ACTIVE, f"run {k} ({mode}): still {status} after {seconds:.2f}s"
        assert run.snapshot().status == "cancelled", f"run {k} ({mode})"
        slowest[mode] = max(slowest[mode], seconds)
    slowest_text = ", ".join(f"{mode} {seconds:.3f}s" for mode, seconds in slowest.items())
    print(f"\n{drive.flavour}: 60 runs in {time.monotonic() - started:.1f}s; slowest stop per mode: {slowest_text}")


# --- leaks ------------------------------------------------------------------------------------------


def linear_sync(graph: RemoteGraph) -> Any:
    return graph.stream_events({"x": 1, "log": []}, new_thread(), version="v3").output


async def linear_async(graph: RemoteGraph) -> Any:
    run = await graph.astream_events({"x": 1, "log": []}, new_thread(), version="v3")
    return await run.output()


def sequential_async(url: str, count: int) -> list[Any]:
    async def go() -> list[Any]:
        graph = remote(url, "linear")
        return [await linear_async(graph) for _ in range(count)]

    return asyncio.run(asyncio.wait_for(go(), 2 * count + 30))


def concurrent_async(url: str, count: int) -> list[Any]:
    async def go() -> list[Any]:
        graph = remote(url, "linear")
        return list(await asyncio.gather(*(linear_async(graph) for _ in range(count))))

    return asyncio.run(asyncio.wait_for(go(), 120))


def concurrent_sync(graph: RemoteGraph, count: int) -> list[Any]:
    results: list[Any] = [None] * count

    def worker(k: int) -> None:
        try:
            results[k] = linear_sync(graph)
        except BaseException as exc:
            results[k] = exc

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not any(w.is_alive() for w in workers)
    return results


def resources() -> tuple[int, int, float]:
    gc.collect()
    return threading.active_count(), open_fds(), rss_mb()


@pytest.mark.soak
@pytest.mark.timeout(1200)  # 600 sequential runs at about 1 s of server pickup each, plus the concurrent ones
def test_no_leaks_over_many_runs(server_url: str) -> None:
    """300 sequential sync runs, 300 sequential async runs (one ``asyncio.run``), 50
    concurrent async runs (``gather``), 16 concurrent sync runs (threads), all right.
    Afterwards, against a baseline taken after a warm-up of each kind: the thread count
    is back to the baseline (within 5 s), open fds within +10, RSS within +20 MB."""
    graph = remote(server_url, "linear")
    # Warm-up: imports, caches, and the sync connection pool at its concurrent size.
    assert [linear_sync(graph) for _ in range(3)] == [LINEAR_OUTPUT] * 3
    assert sequential_async(server_url, 3) == [LINEAR_OUTPUT] * 3
    assert concurrent_async(server_url, 50) == [LINEAR_OUTPUT] * 50
    assert concurrent_sync(graph, 16) == [LINEAR_OUTPUT] * 16
    threads, fds, rss = resources()
    print(f"\nbaseline: {threads} threads, {fds} fds, {rss:.1f} MB")

    timings = {}
    started = time.monotonic()
    for k in range(300):
        assert linear_sync(graph) == LINEAR_OUTPUT, f"sync run {k}"
    timings["300 sequential sync"] = time.monotonic() - started
    started = time.monotonic()
    assert sequential_async(server_url, 300) == [LINEAR_OUTPUT] * 300
    timings["300 sequential async"] = time.monotonic() - started
    started = time.monotonic()
    assert concurrent_async(server_url, 50) == [LINEAR_OUTPUT] * 50
    timings["50 concurrent async"] = time.monotonic() - started
    started = time.monotonic()
    assert concurrent_sync(graph, 16) == [LINEAR_OUTPUT] * 16
    timings["16 concurrent sync"] = time.monotonic() - started

    deadline = time.monotonic() + 5
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.1)
    threads_after, fds_after, rss_after = resources()
    print("timings: " + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in timings.items()))
    print(f"after: {threads_after} threads, {fds_after} fds, {rss_after:.1f} MB")
    assert threads_after == threads
    assert fds_after <= fds + 10
    assert rss_after <= rss + 20


# --- divergences kept on purpose (docs/divergences.md) ----------------------------------


def server_runs(url: str, thread_id: str) -> list[str]:
    """The statuses of the runs on a server thread, newest first ([] before it exists)."""
    response = httpx.get(f"{url}/threads/{thread_id}/runs", timeout=5)
    return [r["status"] for r in response.json()] if response.status_code == 200 else []


def settled_runs(url: str, thread_id: str, bound: float = 10.0) -> list[str]:
    """``server_runs`` once none is pending or running (or after ``bound`` seconds)."""
    deadline = time.monotonic() + bound
    statuses = server_runs(url, thread_id)
    while (not statuses or set(statuses) & set(ACTIVE)) and time.monotonic() < deadline:
        time.sleep(0.05)
        statuses = server_runs(url, thread_id)
    return statuses


@pytest.mark.timeout(60)
def test_probe_a_run_whose_start_got_no_answer_runs_on_the_server(server_url: str) -> None:
    """Abandoned while its start is in flight, or failed because the start's answer
    was lost and the thread's runs cannot tell it apart: the run's id is not known,
    nothing is cancelled, and the server runs it to its end."""
    from langgraph_sdk.client import LangGraphClient

    short = {"x": 10, "log": []}  # 1 s of ticks

    # 1. The start's answer is held back; the caller gives up meanwhile.
    async def hold(response: httpx.Response) -> None:
        if response.request.method == "POST" and response.request.url.path.endswith("/runs/stream"):
            await asyncio.sleep(30)

    thread_id = str(uuid.uuid4())

    async def abandon_in_flight() -> Any:
        async with httpx.AsyncClient(base_url=server_url, event_hooks={"response": [hold]}, timeout=30) as http:
            graph = RemoteGraph("slow", client=LangGraphClient(http))
            run = await graph.astream_events(short, {"configurable": {"thread_id": thread_id}}, version="v3")
            pulling = asyncio.create_task(run.output())
            deadline = time.monotonic() + 10
            while not await asyncio.to_thread(server_runs, server_url, thread_id):  # the server took the start
                assert time.monotonic() < deadline, "the server never got the start"
                await asyncio.sleep(0.05)
            pulling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pulling
            await run.abort()
            return run

    run = asyncio.run(asyncio.wait_for(abandon_in_flight(), 30))
    assert (run.snapshot().status, run.run_id) == ("cancelled", None)
    assert settled_runs(server_url, thread_id) == ["success"]

    # 2. The start's answer is lost before its first byte, on the caller's thread
    # with multitask_strategy="enqueue": any run there could be another caller's.
    thread_id = str(uuid.uuid4())
    with CuttingProxy(server_url, cut_range=(0, 0)) as proxy:
        lost = RemoteGraph("slow", url=proxy.url).stream_events(
            short, {"configurable": {"thread_id": thread_id}}, version="v3", multitask_strategy="enqueue"
        )
        with pytest.raises(RemoteConnectionError, match="its answer was lost.*cannot be told"):
            lost.output
    assert lost.run_id is None
    assert settled_runs(server_url, thread_id) == ["success"]


@pytest.mark.timeout(30)
def test_probe_a_sync_abort_returns_before_the_running_node_ends(server_url: str) -> None:
    """``slow`` ticks 20 times in one node (2 s), aborted after its first tick: a local
    run's ``abort()`` waits for the node; a remote one sends the cancel and returns."""
    took = {}
    for kind, graph in (("local", local("slow")), ("remote", remote(server_url, "slow"))):
        run = graph.stream_events({"x": 20, "log": []}, new_thread(), version="v3")
        assert next(iter(run.custom)) == {"tick": 0}
        started = time.monotonic()
        run.abort()
        took[kind] = time.monotonic() - started
    print(f"\nabort: local {took['local']:.2f}s, remote {took['remote']:.2f}s")
    assert took["local"] > 1.5
    assert took["remote"] < 1.0
