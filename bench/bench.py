"""The benchmark: what following a remote run costs, against a raw SSE client.

Run from the repository root:

    python bench/bench.py            # the full run, about 10-15 minutes
    python bench/bench.py --quick    # every figure on a smaller scale, about 3 minutes
    python bench/bench.py --profile sync   # cProfile of one long RemoteGraph run
    python bench/bench.py --profile stream-messages   # ... of one long classic call

The v3 run streams and the classic methods (``stream`` / ``astream`` in
``custom`` and ``messages`` mode, ``astream_events(version="v2")``) are each
read beside a raw httpx SSE client on the same endpoint, in the same rounds;
``invoke`` is timed beside upstream's ``langgraph.pregel.remote.RemoteGraph``.
One embedded ``langgraph dev`` server is started for the whole run and stopped
at the end. Every ratio is taken between samples of the same run, interleaved,
as a ratio of medians; absolute times are reported, never compared. See
``bench/README.md`` for what each figure means and how it is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import signal
import statistics
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so ``app.graphs`` imports when run as ``python bench/bench.py``

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import START, StateGraph  # noqa: E402
from langgraph.pregel.remote import RemoteGraph as UpstreamRemoteGraph  # noqa: E402

from app.graphs import TRANSFORMERS, FanState, build_custom  # noqa: E402
from remote_graph import RemoteGraph, Timeouts  # noqa: E402
from remote_graph._classic import ClassicCall  # noqa: E402
from remote_graph._core.events import EventFilters  # noqa: E402
from remote_graph.testing import LangGraphDevServer  # noqa: E402

ASSISTANT = "custom"
# What RemoteGraph asks of a v3 run it creates through the runs API: the marker
# that turns on the server's v3 events, every stream mode, subgraphs, and a
# resumable stream the run can be followed on.
V3_MARKER = "__event_streaming_v2"
V3_STREAM_MODES = ["values", "updates", "messages", "custom", "tasks", "checkpoints"]
# Replay from the run's first frame. ``0-0``, as RemoteGraph sends: langgraph-runtime-pg's replicas
# other than the run's own read ``-1`` as a Redis stream id, fail, and serve an empty stream.
STREAM_HEADERS = {"Last-Event-ID": "0-0", "accept": "text/event-stream"}
SSE_ACCEPT = {"accept": "text/event-stream"}  # a run started with its stream: the stream holds it all
EXPECTED_RESULTS = [0, 1, 4]  # the fan-out's three workers square 0, 1, 2
N_JOBS_PER_WORKER = 10  # what the server is given: langgraph-api's own default, not dev's 1

VARIANTS = ("raw_sync", "rg_sync", "raw_async", "rg_async", "raw_thread_sync", "raw_thread_async")
LABELS = {
    "raw_sync": "raw httpx SSE (sync)",
    "rg_sync": "RemoteGraph run.custom (sync)",
    "raw_async": "raw httpx SSE (async)",
    "rg_async": "RemoteGraph run.custom (async)",
    "raw_thread_sync": "raw httpx thread stream (sync)",
    "raw_thread_async": "raw httpx thread stream (async)",
}
PAIRS = {"sync": ("rg_sync", "raw_sync"), "async": ("rg_async", "raw_async")}
# The second baseline: the thread event stream, which the SDK's thread stream and
# upstream's adapter read (it loses events on long threads; a fresh thread here).
THREAD_PAIRS = {"sync": ("rg_sync", "raw_thread_sync"), "async": ("rg_async", "raw_thread_async")}
THREAD_CHANNELS = {"channels": ["custom", "lifecycle"]}

TARGETS = {
    "cpu_sync": 1.2,  # client CPU per event, RemoteGraph / raw, at most
    "cpu_async": 1.5,
    "evs": 0.95,  # live events per second, RemoteGraph / raw, at least
    "ttfe_ms": 5.0,  # time to first event above raw, at most
    "turns": 1.2,  # late turns / first turns on one thread, at most
    "rss_mb": 10.0,  # RSS growth per 100,000 events, under
    "exit_ms": 100.0,  # leaving a finished sync run's ``with`` block, under
    "invoke_ms": 5.0,  # RemoteGraph's invoke median over upstream RemoteGraph's, at most
    "cpu_thread": 1.0,  # client CPU per event, RemoteGraph / raw on the thread stream, at most
    "async_over_sync": 1.2,  # client CPU per event, RemoteGraph async / sync, at most
    # The nested overhead (remote child - local child, CPU per event) over raw sync's CPU
    # per event, at most: half the 3.95x measured before reads were batched.
    "nest_over_raw": 1.98,
}


@dataclass(frozen=True)
class Scale:
    n: int  # custom events per run in the stream rounds
    rounds: int
    turns: int
    turn_threads: int
    turn_n: int
    concurrent_async: int
    concurrent_sync: int
    concurrent_n: int
    nest_rounds: int
    nest_n: int
    memory_n: int
    invoke_calls: int  # invoke calls of each client, interleaved


FULL = Scale(2000, 9, 40, 3, 100, 50, 16, 200, 7, 500, 100_000, 30)
QUICK = Scale(1000, 3, 10, 2, 100, 50, 16, 100, 3, 300, 20_000, 10)


class BenchTimeout(BaseException):
    """A sample or the whole benchmark ran past its time budget.

    A ``BaseException`` so that no ``except Exception`` on the way up can turn
    it into an ordinary stream error.
    """


# --- guards --------------------------------------------------------------------


def _on_alarm(signum: int, frame: Any) -> None:
    raise BenchTimeout("sample exceeded its time budget")


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Interrupt the main thread with ``BenchTimeout`` after ``seconds`` (no helper thread)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Budget:
    """The overall guard: every sample gets at most what is left of the total."""

    def __init__(self, total: float, per_sample: float) -> None:
        self.deadline = time.monotonic() + total
        self.per_sample = per_sample

    def next_sample(self, at_most: float | None = None) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BenchTimeout("the benchmark ran past its total budget")
        return min(at_most or self.per_sample, left)


class Guard:
    """Runs each sample within the budget: sync ones under ``alarm``, async ones on
    ``loop`` under ``asyncio.wait_for`` with ``alarm`` as a backstop."""

    def __init__(self, budget: Budget, loop: asyncio.AbstractEventLoop) -> None:
        self.budget = budget
        self.loop = loop

    def run_async(self, factory: Callable[[], Any], at_most: float | None = None) -> Any:
        seconds = self.budget.next_sample(at_most)
        with alarm(seconds + 5.0):  # backstop behind wait_for
            return self.loop.run_until_complete(asyncio.wait_for(factory(), seconds))

    def run_sync(self, fn: Callable[[], Any], at_most: float | None = None) -> Any:
        with alarm(self.budget.next_sample(at_most)):
            return fn()


def close_clients(
    loop: asyncio.AbstractEventLoop, sync_client: httpx.Client, async_client: httpx.AsyncClient, graphs: Any
) -> None:
    """Close the raw clients and each graph's SDK clients (the async ones on ``loop``), each within 10 s."""
    sync_client.close()
    loop.run_until_complete(asyncio.wait_for(async_client.aclose(), 10.0))
    for remote in graphs:
        if remote.client is not None:
            loop.run_until_complete(asyncio.wait_for(remote.client.aclose(), 10.0))
        if remote.sync_client is not None:
            remote.sync_client.close()


@contextmanager
def record_thread_starts() -> Iterator[list[str]]:
    """Collect the names of threads started (via ``threading.Thread.start``) inside the block."""
    started: list[str] = []
    original = threading.Thread.start

    def start(self: threading.Thread, *args: Any, **kwargs: Any) -> None:
        started.append(self.name)
        original(self, *args, **kwargs)

    threading.Thread.start = start  # type: ignore[method-assign]
    try:
        yield started
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]


def rss_bytes() -> int:
    """The process's resident set size now (Linux ``/proc``; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --- one run, four ways ----------------------------------------------------------


@dataclass
class Sample:
    """What one run cost its client."""

    stamps: list[float]  # perf_counter at each custom item the consumer received
    cpu: float  # process CPU seconds for the whole run, start to end
    started: float  # perf_counter before the run was asked for
    wall_start: float = 0.0  # time.time() before the run was asked for
    wall_first: float = 0.0  # time.time() when the first custom item reached the consumer
    path: str = ""  # /threads/{id}/runs/{run_id}
    # Filled in after the sample (see ``stamp_server_side``), in time.time() seconds:
    created: float = 0.0  # the run record's created_at
    emitted: float = 0.0  # the server's timestamp on the first custom event

    @property
    def items(self) -> int:
        return len(self.stamps)

    @property
    def evs(self) -> float:
        span = self.stamps[-1] - self.stamps[0]
        return (len(self.stamps) - 1) / span if span > 0 else float("inf")

    @property
    def ttfe(self) -> float:
        return self.stamps[0] - self.started

    @property
    def before_create(self) -> float:
        """From the call to the server's record of the run: the client's start-up plus one request."""
        return self.created - self.wall_start

    @property
    def pickup(self) -> float:
        """From the run's creation to the server emitting its first custom event: all server."""
        return self.emitted - self.created

    @property
    def delivery(self) -> float:
        """From the server emitting the first custom event to the consumer holding it."""
        return self.wall_first - self.emitted


def run_input(n: int) -> dict[str, Any]:
    return {"n": n, "results": []}


def run_body(n: int) -> dict[str, Any]:
    """The ``POST /threads/{id}/runs`` body RemoteGraph sends to start a v3 run."""
    return {
        "assistant_id": ASSISTANT,
        "input": run_input(n),
        "config": {"configurable": {V3_MARKER: True}},
        "stream_mode": list(V3_STREAM_MODES),
        "stream_subgraphs": True,
        "stream_resumable": True,
        "if_not_exists": "create",
    }


def _run_id(response: httpx.Response) -> str:
    response.raise_for_status()
    body = response.json()
    if not isinstance(body, dict) or "run_id" not in body:
        raise RuntimeError(f"creating the run returned no run id: {body}")
    return str(body["run_id"])


def _check_run_status(response: httpx.Response, flavour: str) -> None:
    response.raise_for_status()
    status = response.json().get("status")
    if status != "success":
        raise RuntimeError(f"raw {flavour} run ended with status {status!r}, expected 'success'")


class RawStream:
    """Minimal SSE handling for the raw client: ``event:`` and ``data:`` lines, JSON envelopes.

    The per-run stream sends one ``metadata`` frame, then every event of the
    run as ``{"type": "event", "method": ..., "params": ...}``, and an
    ``error`` frame if the run fails; the server closes it when the run ends.
    It decodes every event, as any client that looks at the events must.
    """

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self.wall_first = 0.0
        self._event = ""
        self._data: list[str] = []

    def item(self) -> None:
        """A counted item reached the consumer: stamp it."""
        self.stamps.append(time.perf_counter())
        if not self.wall_first:
            self.wall_first = time.time()

    def line(self, line: str) -> None:
        if not line:
            if self._data:
                self._frame(self._event, "\n".join(self._data))
            self._event, self._data = "", []
            return
        if line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
        elif line.startswith("event:"):
            self._event = line[6:].strip()
        # ``id:`` lines only matter for resuming; ``:`` lines are heartbeats.

    def _frame(self, event: str, data: str) -> None:
        if event == "error":
            raise RuntimeError(f"run failed: {data}")
        if event == "metadata":
            return
        envelope = orjson.loads(data)
        if envelope.get("method") == "custom":
            self.item()


def _started() -> tuple[float, float, float]:
    """CPU, perf_counter and wall time at a raw sample's start."""
    return time.process_time(), time.perf_counter(), time.time()


def _raw_sample(stream: RawStream, started: tuple[float, float, float], thread_id: str, run_id: str) -> Sample:
    cpu0, t0, wall0 = started
    cpu = time.process_time() - cpu0
    return Sample(stream.stamps, cpu, t0, wall0, stream.wall_first, f"/threads/{thread_id}/runs/{run_id}")


def raw_sync(client: httpx.Client, n: int) -> Sample:
    started, thread_id = _started(), str(uuid.uuid4())
    run_id = _run_id(client.post(f"/threads/{thread_id}/runs", json=run_body(n)))
    stream = RawStream()
    with client.stream("GET", f"/threads/{thread_id}/runs/{run_id}/stream", headers=STREAM_HEADERS) as response:
        response.raise_for_status()
        for line in response.iter_lines():  # until the server closes the stream at the run's end
            stream.line(line)
    _check_run_status(client.get(f"/threads/{thread_id}/runs/{run_id}"), "sync")
    return _raw_sample(stream, started, thread_id, run_id)


async def raw_async(client: httpx.AsyncClient, n: int) -> Sample:
    started, thread_id = _started(), str(uuid.uuid4())
    run_id = _run_id(await client.post(f"/threads/{thread_id}/runs", json=run_body(n)))
    stream = RawStream()
    async with client.stream("GET", f"/threads/{thread_id}/runs/{run_id}/stream", headers=STREAM_HEADERS) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():  # until the server closes the stream at the run's end
            stream.line(line)
    _check_run_status(await client.get(f"/threads/{thread_id}/runs/{run_id}"), "async")
    return _raw_sample(stream, started, thread_id, run_id)


class RawThreadStream(RawStream):
    """The thread event stream's frames: the run's custom events, until its root lifecycle ends."""

    def __init__(self) -> None:
        super().__init__()
        self.ended = False

    def _frame(self, event: str, data: str) -> None:
        envelope = orjson.loads(data)
        method = envelope.get("method")
        if method == "custom":
            self.item()
        elif method == "lifecycle":
            params = envelope.get("params") or {}
            if params.get("namespace") == [] and (params.get("data") or {}).get("event") in _LIFECYCLE_ENDS:
                self.ended = True


_LIFECYCLE_ENDS = ("completed", "failed", "interrupted")


def raw_thread_sync(client: httpx.Client, n: int) -> Sample:
    """The thread stream, subscribed on a new thread before the run is created, read to the run's end."""
    started, thread_id = _started(), str(uuid.uuid4())
    client.post("/threads", json={"thread_id": thread_id}).raise_for_status()
    stream = RawThreadStream()
    with client.stream("POST", f"/threads/{thread_id}/stream/events", json=THREAD_CHANNELS) as response:
        response.raise_for_status()
        run_id = _run_id(client.post(f"/threads/{thread_id}/runs", json=run_body(n)))
        for line in response.iter_lines():  # the stream stays open: the run's end ends the read
            stream.line(line)
            if stream.ended:
                break
    _check_run_status(client.get(f"/threads/{thread_id}/runs/{run_id}"), "thread sync")
    return _raw_sample(stream, started, thread_id, run_id)


async def raw_thread_async(client: httpx.AsyncClient, n: int) -> Sample:
    started, thread_id = _started(), str(uuid.uuid4())
    (await client.post("/threads", json={"thread_id": thread_id})).raise_for_status()
    stream = RawThreadStream()
    async with client.stream("POST", f"/threads/{thread_id}/stream/events", json=THREAD_CHANNELS) as response:
        response.raise_for_status()
        run_id = _run_id(await client.post(f"/threads/{thread_id}/runs", json=run_body(n)))
        async for line in response.aiter_lines():
            stream.line(line)
            if stream.ended:
                break
    _check_run_status(await client.get(f"/threads/{thread_id}/runs/{run_id}"), "thread async")
    return _raw_sample(stream, started, thread_id, run_id)


def _config(thread_id: str | None = None) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id or str(uuid.uuid4())}}


def _check_output(output: Any, turns: int = 1) -> None:
    if not isinstance(output, dict) or sorted(output.get("results", [])) != sorted(EXPECTED_RESULTS * turns):
        raise RuntimeError(f"unexpected run output: {output!r}")


def rg_sync(graph: RemoteGraph, n: int, thread_id: str | None = None, turn: int = 1) -> Sample:
    cpu0, t0, wall0 = time.process_time(), time.perf_counter(), time.time()
    stamps: list[float] = []
    wall_first = 0.0
    with graph.stream_events(run_input(n), _config(thread_id), version="v3") as run:
        for _item in run.custom:
            stamps.append(time.perf_counter())
            if not wall_first:
                wall_first = time.time()
        _check_output(run.output, turn)
    cpu = time.process_time() - cpu0
    return Sample(stamps, cpu, t0, wall0, wall_first, f"/threads/{run.thread_id}/runs/{run.run_id}")


async def rg_async(graph: RemoteGraph, n: int, thread_id: str | None = None, turn: int = 1) -> Sample:
    cpu0, t0, wall0 = time.process_time(), time.perf_counter(), time.time()
    stamps: list[float] = []
    wall_first = 0.0
    async with await graph.astream_events(run_input(n), _config(thread_id), version="v3") as run:
        async for _item in run.custom:
            stamps.append(time.perf_counter())
            if not wall_first:
                wall_first = time.time()
        _check_output(await run.output(), turn)
    cpu = time.process_time() - cpu0
    return Sample(stamps, cpu, t0, wall0, wall_first, f"/threads/{run.thread_id}/runs/{run.run_id}")


def stamp_server_side(client: httpx.Client, sample: Sample) -> Sample:
    """Read, after the sample, when the server created the run and emitted its first custom event.

    The run record has ``created_at``; the run's stream, replayed from the
    start, carries each event's emission ``timestamp`` (ms). The server runs on
    this machine, so its clock is the client's.
    """
    record = client.get(sample.path)
    record.raise_for_status()
    sample.created = datetime.fromisoformat(record.json()["created_at"]).timestamp()
    with client.stream("GET", f"{sample.path}/stream", headers=STREAM_HEADERS) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data:") and '"method":"custom"' in line:
                sample.emitted = orjson.loads(line[5:])["params"]["timestamp"] / 1e3
                break
    if not sample.emitted:
        raise RuntimeError(f"no custom event in the replay of {sample.path}")
    return sample


def rg_exit_seconds(graph: RemoteGraph, n: int) -> float:
    """``with graph.stream_events(...) as run: run.output``; time only ``__exit__``."""
    manager = graph.stream_events(run_input(n), _config(), version="v3")
    run = manager.__enter__()
    try:
        _check_output(run.output)
    except BaseException:
        if not manager.__exit__(*sys.exc_info()):
            raise
    t0 = time.perf_counter()
    manager.__exit__(None, None, None)
    return time.perf_counter() - t0


def thread_check(graph: RemoteGraph, n: int) -> dict[str, Any]:
    """Thread counts before, during (after the first item) and after one sync run."""
    before_names = {t.ident: t.name for t in threading.enumerate()}
    before = threading.active_count()
    during: int | None = None
    during_names: dict[int | None, str] = {}
    with record_thread_starts() as started:
        with graph.stream_events(run_input(n), _config(), version="v3") as run:
            for _item in run.custom:
                if during is None:
                    during = threading.active_count()
                    during_names = {t.ident: t.name for t in threading.enumerate()}
            _check_output(run.output)
    after = threading.active_count()
    after_names = {t.ident: t.name for t in threading.enumerate()}
    new = sorted(
        {name for ident, name in {**during_names, **after_names}.items() if ident not in before_names} | set(started)
    )
    return {
        "before": before,
        "during": during,
        "after": after,
        "new_threads": new,
        "background_thread": bool(new) or (during or 0) > before or after > before,
    }


# --- memory ----------------------------------------------------------------------

MEMORY_WARMUP = 5_000  # items read before the baseline RSS is taken
MEMORY_EVERY = 1_000  # items between RSS readings


class RssWatch:
    """RSS at the warm-up point, then the highest reading after it."""

    def __init__(self, slow: bool) -> None:
        self.slow = slow
        self.count = 0
        self.base: int | None = None
        self.peak = 0

    def item(self) -> None:
        self.count += 1
        if self.slow and self.count % 2 == 0:
            time.sleep(0.001)  # at most ~2,000 items/s: slower than the server writes them
        if self.count % MEMORY_EVERY == 0:
            rss = rss_bytes()
            if self.count == MEMORY_WARMUP:
                self.base = rss
            elif self.base is not None:
                self.peak = max(self.peak, rss)

    def growth_per_100k(self) -> float:
        if self.base is None or self.count <= MEMORY_WARMUP:
            raise RuntimeError(f"memory sample too short: {self.count} items")
        return max(0, self.peak - self.base) / (self.count - MEMORY_WARMUP) * 100_000 / 2**20


def memory_sync(graph: RemoteGraph, n: int, slow: bool) -> float:
    gc.collect()
    watch = RssWatch(slow)
    with graph.stream_events(run_input(n), _config(), version="v3") as run:
        for _item in run.custom:
            watch.item()
        _check_output(run.output)
    return watch.growth_per_100k()


async def memory_async(graph: RemoteGraph, n: int, slow: bool) -> float:
    gc.collect()
    watch = RssWatch(slow)
    async with await graph.astream_events(run_input(n), _config(), version="v3") as run:
        async for _item in run.custom:
            watch.item()  # a slow async consumer that blocks its loop, as CPU work would
        _check_output(await run.output())
    return watch.growth_per_100k()


# --- a child inside a local parent -----------------------------------------------


def parent_with(child: Any) -> Any:
    g = StateGraph(FanState)
    g.add_node("child", child)
    g.add_edge(START, "child")
    return g.compile(checkpointer=InMemorySaver(), transformers=TRANSFORMERS)


def parent_turn(parent: Any, n: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, events) of one parent turn on a new parent thread, reading every event."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    events = 0
    with parent.stream_events(run_input(n), _config(), version="v3") as run:
        for _event in run:
            events += 1
        _check_output(run.output)
    return time.perf_counter() - t0, time.process_time() - cpu0, events


# --- the classic methods ---------------------------------------------------------

TOKENS = "tokens"  # app/graphs.py: a fake chat model streaming a reply of n words as 2n - 1 chunks
LINEAR = "linear"  # app/graphs.py: two nodes, no events; the invoke latency graph
LINEAR_INPUT: dict[str, Any] = {"x": 1, "log": []}
LINEAR_OUTPUT: dict[str, Any] = {"x": 20, "log": ["a", "b"]}

# The classic stream rounds: each RemoteGraph method beside a raw client reading the same endpoint.
CLASSIC_VARIANTS = (
    "raw_custom_sync",
    "stream_custom",
    "raw_custom_async",
    "astream_custom",
    "raw_messages_sync",
    "stream_messages",
    "raw_messages_async",
    "astream_messages",
    "raw_events",
    "astream_events",
)
CLASSIC_LABELS = {
    "raw_custom_sync": "raw httpx SSE custom (sync)",
    "stream_custom": 'stream(stream_mode="custom")',
    "raw_custom_async": "raw httpx SSE custom (async)",
    "astream_custom": 'astream(stream_mode="custom")',
    "raw_messages_sync": "raw httpx SSE messages (sync)",
    "stream_messages": 'stream(stream_mode="messages")',
    "raw_messages_async": "raw httpx SSE messages (async)",
    "astream_messages": 'astream(stream_mode="messages")',
    "raw_events": "raw httpx SSE events (async)",
    "astream_events": 'astream_events(version="v2")',
}
# A figure: (the RemoteGraph variant, the raw one it is paired with, the v3 flavour its CPU ratio is held to).
CLASSIC_PAIRS = {
    "custom_sync": ("stream_custom", "raw_custom_sync", "sync"),
    "custom_async": ("astream_custom", "raw_custom_async", "async"),
    "messages_sync": ("stream_messages", "raw_messages_sync", "sync"),
    "messages_async": ("astream_messages", "raw_messages_async", "async"),
    "events": ("astream_events", "raw_events", "async"),
}
# The figures with targets (astream_events' ratio is only reported).
CLASSIC_TARGETED = ("custom_sync", "custom_async", "messages_sync", "messages_async")


@dataclass(frozen=True)
class Workload:
    """One classic run: what is asked of the server, and which frames carry the items counted."""

    assistant: str
    input: dict[str, Any]
    server_modes: tuple[str, ...]  # what RemoteGraph asks the server for (``_core.shape.server_modes``)
    frame: str  # the SSE event name of the frames counted
    kind: str | None  # for ``events`` frames, the event counted; ``None``: every frame named ``frame``
    items: int  # how many items a run carries

    def body(self) -> dict[str, Any]:
        """The ``POST /threads/{id}/runs/stream`` body RemoteGraph sends for a classic call on a new thread."""
        return {
            "assistant_id": self.assistant,
            "input": self.input,
            # The call's config without its thread id (in the path): langchain's merge adds the empty tags.
            "config": {"tags": []},
            "stream_mode": list(self.server_modes),
            "stream_subgraphs": False,
            "stream_resumable": True,
            "on_disconnect": "continue",
            "if_not_exists": "create",
        }


def classic_workloads(n: int) -> dict[str, Workload]:
    """The three classic workloads, each carrying about ``n`` items a run."""
    words = n // 2 + 1  # 2 * words - 1 chunks, about as many as a custom run's n + 3 items
    chunks = 2 * words - 1
    tokens = {"n": words, "messages": []}
    return {
        "custom": Workload(ASSISTANT, run_input(n), ("custom", "updates"), "custom", None, n + 3),
        # ``messages`` is ``messages-tuple`` on the server; ``updates`` is always asked for (interrupts).
        "messages": Workload(TOKENS, tokens, ("messages-tuple", "updates"), "messages", None, chunks),
        "events": Workload(TOKENS, tokens, ("events", "updates"), "events", "on_chat_model_stream", chunks),
    }


def check_classic_bodies(graphs: dict[str, RemoteGraph], workloads: dict[str, Workload]) -> None:
    """Fail unless the raw clients send the very request RemoteGraph's classic calls send.

    RemoteGraph's own start plan is built (no I/O) and its request compared, so
    the raw clients cannot drift from the library they are measured against.
    """
    for mode, work in workloads.items():
        graph = graphs[work.assistant]
        if mode == "events":
            call: Any = ClassicCall.start_events(
                graph._deployment(), work.input, _config(), version="v2", filters=EventFilters(), kwargs={}
            )
        else:
            call = classic_call(graph, work.input, _config(), mode, "stream()")
        request = call.driver.plan.request("/threads/t", None)
        if (request.method, request.path, request.json) != ("POST", "/threads/t/runs/stream", work.body()):
            raise RuntimeError(f"the raw {mode} client's request is not RemoteGraph's: {request}")


def classic_call(graph: RemoteGraph, input: Any, config: Any, stream_mode: Any, method: str) -> ClassicCall:
    """The classic call RemoteGraph plans for ``stream(input, config, stream_mode=...)`` (no I/O)."""
    return ClassicCall.start(
        graph._deployment(),
        input,
        config,
        stream_mode=stream_mode,
        print_mode=(),
        subgraphs=False,
        debug=None,
        version="v1",
        kwargs={},
        method=method,
    )


class RawClassicStream(RawStream):
    """The raw client's reading of a classic run's stream.

    A classic run's stream sends one ``metadata`` frame (the run id), then one
    frame per chunk, named after its mode (``custom``, ``messages``, ``events``,
    ``updates``), its data the chunk's JSON. Every frame is decoded, as any
    client that looks at the chunks must; the frames named ``frame`` (of event
    ``kind`` for ``events``) are counted. Nothing is revived.
    """

    def __init__(self, work: Workload) -> None:
        super().__init__()
        self.run_id = ""
        self._counted = work.frame
        self._kind = work.kind

    def _frame(self, event: str, data: str) -> None:
        if event == "error":
            raise RuntimeError(f"run failed: {data}")
        payload = orjson.loads(data)
        if event == "metadata":
            self.run_id = payload["run_id"]
        elif event == self._counted and (self._kind is None or payload.get("event") == self._kind):
            self.item()


def raw_classic_sync(client: httpx.Client, work: Workload) -> Sample:
    """Start the run with its stream, read it to the end, then check the run's record."""
    started, thread_id = _started(), str(uuid.uuid4())
    stream = RawClassicStream(work)
    path = f"/threads/{thread_id}/runs/stream"
    with client.stream("POST", path, json=work.body(), headers=SSE_ACCEPT) as response:
        response.raise_for_status()
        for line in response.iter_lines():  # until the server closes the stream at the run's end
            stream.line(line)
    _check_run_status(client.get(f"/threads/{thread_id}/runs/{stream.run_id}"), "sync")
    return _raw_sample(stream, started, thread_id, stream.run_id)


async def raw_classic_async(client: httpx.AsyncClient, work: Workload) -> Sample:
    started, thread_id = _started(), str(uuid.uuid4())
    stream = RawClassicStream(work)
    path = f"/threads/{thread_id}/runs/stream"
    async with client.stream("POST", path, json=work.body(), headers=SSE_ACCEPT) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():  # until the server closes the stream at the run's end
            stream.line(line)
    _check_run_status(await client.get(f"/threads/{thread_id}/runs/{stream.run_id}"), "async")
    return _raw_sample(stream, started, thread_id, stream.run_id)


def rg_stream(graph: RemoteGraph, work: Workload, mode: str) -> Sample:
    """``for chunk in graph.stream(input, config, stream_mode=mode)``: every chunk is an item."""
    cpu0, t0, wall0 = time.process_time(), time.perf_counter(), time.time()
    stamps: list[float] = []
    wall_first = 0.0
    for _chunk in graph.stream(work.input, _config(), stream_mode=mode):
        stamps.append(time.perf_counter())
        if not wall_first:
            wall_first = time.time()
    cpu = time.process_time() - cpu0
    return Sample(stamps, cpu, t0, wall0, wall_first)


async def rg_astream(graph: RemoteGraph, work: Workload, mode: str) -> Sample:
    cpu0, t0, wall0 = time.process_time(), time.perf_counter(), time.time()
    stamps: list[float] = []
    wall_first = 0.0
    async with aclosing(graph.astream(work.input, _config(), stream_mode=mode)) as chunks:
        async for _chunk in chunks:
            stamps.append(time.perf_counter())
            if not wall_first:
                wall_first = time.time()
    cpu = time.process_time() - cpu0
    return Sample(stamps, cpu, t0, wall0, wall_first)


async def rg_astream_events(graph: RemoteGraph, work: Workload) -> Sample:
    """``astream_events(version="v2")``; every event is revived, the model's stream events are counted."""
    cpu0, t0, wall0 = time.process_time(), time.perf_counter(), time.time()
    stamps: list[float] = []
    wall_first = 0.0
    async with aclosing(graph.astream_events(work.input, _config(), version="v2")) as events:
        async for event in events:
            if event["event"] == work.kind:
                stamps.append(time.perf_counter())
                if not wall_first:
                    wall_first = time.time()
    cpu = time.process_time() - cpu0
    return Sample(stamps, cpu, t0, wall0, wall_first)


def check_count(sample: Sample, expected: int, what: str) -> Sample:
    if sample.items != expected:
        raise RuntimeError(f"{what}: expected {expected} items, got {sample.items}")
    return sample


def invoke_once(graph: Any) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``invoke`` of ``linear`` on a new thread; the output is checked after."""
    config = _config()
    cpu0, t0 = time.process_time(), time.perf_counter()
    output = graph.invoke(LINEAR_INPUT, config)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if output != LINEAR_OUTPUT:
        raise RuntimeError(f"unexpected invoke output: {output!r}")
    return wall, cpu


# --- reporting -----------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def check_items(sample: Sample, n: int) -> Sample:
    if sample.items != n + 3:
        raise RuntimeError(f"expected {n + 3} custom items, got {sample.items}")
    return sample


def turn_window(turns: int) -> int:
    """How many first and last turns are compared."""
    return min(3, max(1, turns // 4))


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


# ``--profile`` targets for the classic methods: ``<method>-<workload>``.
CLASSIC_PROFILES = ("stream-custom", "astream-custom", "stream-messages", "astream-messages", "astream-events")


def classic_profile_run(target: str, graphs: dict[str, RemoteGraph], n: int, run_async: Callable[[Any], Any]) -> Sample:
    """One run of the classic method ``target`` names, on a workload of about ``n`` items."""
    method, mode = target.split("-")
    work = classic_workloads(n)[mode]
    graph = graphs[work.assistant]
    if method == "stream":
        return check_count(rg_stream(graph, work, mode), work.items, target)
    if mode == "events":
        return check_count(run_async(lambda: rg_astream_events(graph, work)), work.items, target)
    return check_count(run_async(lambda: rg_astream(graph, work, mode)), work.items, target)


def profile(args: argparse.Namespace, graphs: dict[str, RemoteGraph], run_async: Callable[[Any], Any]) -> None:
    n = args.n or 20_000
    graph = graphs[ASSISTANT]
    if args.profile in CLASSIC_PROFILES:
        classic_profile_run(args.profile, graphs, 200, run_async)
        profiler = cProfile.Profile(time.process_time)  # CPU, not time spent waiting
        profiler.enable()
        sample = classic_profile_run(args.profile, graphs, n, run_async)
    elif args.profile == "nested":
        parent = parent_with(graph)
        parent_turn(parent, 200)
        profiler = cProfile.Profile(time.process_time)  # CPU, not time spent waiting
        profiler.enable()
        wall, cpu, events = parent_turn(parent, n)
        profiler.disable()
        print(f"nested: {events} parent events, {cpu * 1e6 / events:.1f} us CPU/event, {wall:.2f} s")
    elif args.profile == "sync":
        rg_sync(graph, 200)
        profiler = cProfile.Profile(time.process_time)  # CPU, not time spent waiting
        profiler.enable()
        sample = rg_sync(graph, n)
    else:
        run_async(lambda: rg_async(graph, 200))
        profiler = cProfile.Profile(time.process_time)  # CPU, not time spent waiting
        profiler.enable()
        sample = run_async(lambda: rg_async(graph, n))
    if args.profile != "nested":
        profiler.disable()
        print(
            f"{args.profile}: {sample.items} items, {sample.cpu * 1e6 / sample.items:.1f} us CPU/item, "
            f"{sample.evs:,.0f} ev/s"
        )
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(args.top)
        text = out.getvalue()
        print(text[text.find("   ncalls") :])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every figure on a smaller scale (about 3 minutes)")
    parser.add_argument("--n", type=int, default=None, help="custom events per run in the stream rounds")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved stream rounds")
    parser.add_argument(
        "--profile",
        choices=("sync", "async", "nested", *CLASSIC_PROFILES),
        help="profile one long RemoteGraph run (or parent turn, or classic call) and stop",
    )
    parser.add_argument("--top", type=int, default=25, help="frames to print with --profile")
    parser.add_argument("--sample-timeout", type=float, default=120.0, help="seconds one sample may take")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds the whole benchmark may take")
    parser.add_argument(
        "--config", default=str(ROOT / "app" / "langgraph.json"), help="langgraph.json of the served graphs"
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message="The v3 streaming protocol", category=Warning)
    scale = QUICK if args.quick else FULL
    if args.n is not None or args.rounds is not None:
        if (args.n is not None and args.n < 1) or (args.rounds is not None and args.rounds < 1):
            parser.error("--n and --rounds must be positive")
        if not args.profile:
            scale = Scale(**{**scale.__dict__, "n": args.n or scale.n, "rounds": args.rounds or scale.rounds})

    budget = Budget(args.budget, args.sample_timeout)
    http_timeout = httpx.Timeout(30.0, read=30.0)  # the server heartbeats every 5 s
    rg_timeouts = Timeouts(request=30.0, read=30.0, reconnect=15.0)
    n = scale.n
    began = time.monotonic()
    load_before = os.getloadavg()

    with LangGraphDevServer(args.config, startup_timeout=90.0, n_jobs_per_worker=N_JOBS_PER_WORKER) as server:
        print(
            f"server up in {time.monotonic() - began:.1f}s (n_jobs_per_worker={N_JOBS_PER_WORKER}); {scale}", flush=True
        )
        graph = RemoteGraph(ASSISTANT, url=server.url, stream_transformers=TRANSFORMERS, timeouts=rg_timeouts)
        # The classic methods: ``custom`` (through ``graph``), the token stream, and invoke's graph,
        # beside upstream's RemoteGraph on the same server.
        tokens_graph = RemoteGraph(TOKENS, url=server.url, timeouts=rg_timeouts)
        linear_graph = RemoteGraph(LINEAR, url=server.url, timeouts=rg_timeouts)
        upstream = UpstreamRemoteGraph(LINEAR, url=server.url)
        workloads = classic_workloads(n)
        check_classic_bodies({ASSISTANT: graph, TOKENS: tokens_graph}, workloads)
        loop = asyncio.new_event_loop()
        sync_client = httpx.Client(base_url=server.url, timeout=http_timeout)
        async_client = httpx.AsyncClient(base_url=server.url, timeout=http_timeout)
        try:
            guard = Guard(budget, loop)
            run_async, run_sync = guard.run_async, guard.run_sync
            if args.profile:
                profile(args, {ASSISTANT: graph, TOKENS: tokens_graph}, run_async)
                return 0

            samples: dict[str, Callable[[], Sample]] = {
                "raw_sync": lambda: run_sync(lambda: raw_sync(sync_client, n)),
                "rg_sync": lambda: run_sync(lambda: rg_sync(graph, n)),
                "raw_async": lambda: run_async(lambda: raw_async(async_client, n)),
                "rg_async": lambda: run_async(lambda: rg_async(graph, n)),
                "raw_thread_sync": lambda: run_sync(lambda: raw_thread_sync(sync_client, n)),
                "raw_thread_async": lambda: run_async(lambda: raw_thread_async(async_client, n)),
            }
            cw, mw, ew = workloads["custom"], workloads["messages"], workloads["events"]
            classic: dict[str, Callable[[], Sample]] = {
                "raw_custom_sync": lambda: run_sync(lambda: raw_classic_sync(sync_client, cw)),
                "stream_custom": lambda: run_sync(lambda: rg_stream(graph, cw, "custom")),
                "raw_custom_async": lambda: run_async(lambda: raw_classic_async(async_client, cw)),
                "astream_custom": lambda: run_async(lambda: rg_astream(graph, cw, "custom")),
                "raw_messages_sync": lambda: run_sync(lambda: raw_classic_sync(sync_client, mw)),
                "stream_messages": lambda: run_sync(lambda: rg_stream(tokens_graph, mw, "messages")),
                "raw_messages_async": lambda: run_async(lambda: raw_classic_async(async_client, mw)),
                "astream_messages": lambda: run_async(lambda: rg_astream(tokens_graph, mw, "messages")),
                "raw_events": lambda: run_async(lambda: raw_classic_async(async_client, ew)),
                "astream_events": lambda: run_async(lambda: rg_astream_events(tokens_graph, ew)),
            }
            classic_items = {
                name: workloads["custom" if "custom" in name else "events" if "events" in name else "messages"].items
                for name in CLASSIC_VARIANTS
            }
            clients: dict[str, Any] = {"remote_graph": linear_graph, "upstream": upstream}

            # Warm up the sync paths (graph import, connections), then count threads
            # before anything async has run in this process.
            for name in ("raw_sync", "rg_sync", "raw_thread_sync"):
                samples[name]()
            for name in ("raw_custom_sync", "stream_custom", "raw_messages_sync", "stream_messages"):
                classic[name]()
            for client in clients.values():
                run_sync(partial(invoke_once, client))
            threads = run_sync(lambda: thread_check(graph, n))
            for name in ("raw_async", "rg_async", "raw_thread_async"):
                samples[name]()
            for name in CLASSIC_VARIANTS:
                if name not in ("raw_custom_sync", "stream_custom", "raw_messages_sync", "stream_messages"):
                    classic[name]()

            # 1. Memory first, while the heap has no free space left by the phases below.
            memory: dict[str, float] = {}
            for flavour in ("sync", "async"):
                for speed in ("fast", "slow"):
                    slow = speed == "slow"
                    if flavour == "sync":
                        mb = run_sync(lambda slow=slow: memory_sync(graph, scale.memory_n, slow), at_most=600.0)
                    else:
                        mb = run_async(lambda slow=slow: memory_async(graph, scale.memory_n, slow), at_most=600.0)
                    memory[f"{flavour}_{speed}"] = mb
                    print(f"memory {flavour} {speed}: {mb:+.2f} MB per 100k events", flush=True)

            # 2. The stream rounds: ev/s, CPU per event, time to first event, exit.
            runs: dict[str, list[Sample]] = {name: [] for name in VARIANTS}
            classic_runs: dict[str, list[Sample]] = {name: [] for name in CLASSIC_VARIANTS}
            exits: list[float] = []
            sync_thread_starts: list[str] = []
            for r in range(scale.rounds):
                order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
                for name in order:
                    if name == "rg_sync":
                        with record_thread_starts() as started_here:
                            sample = samples[name]()
                        sync_thread_starts += started_here
                    else:
                        sample = samples[name]()
                    runs[name].append(stamp_server_side(sync_client, check_items(sample, n)))
                with record_thread_starts() as started_here:
                    exits.append(run_sync(lambda: rg_exit_seconds(graph, n)))
                sync_thread_starts += started_here
                line = "  ".join(
                    f"{name}={runs[name][-1].evs:,.0f}ev/s,{runs[name][-1].cpu * 1e6 / (n + 3):.0f}us"
                    for name in VARIANTS
                )
                print(f"round {r + 1}/{scale.rounds}: {line}", flush=True)
                # The classic methods in the same round, each right beside its raw client: the
                # pairs' order rotates, and which of a pair goes first alternates.
                pairs = list(CLASSIC_PAIRS.values())
                order: list[str] = []
                for rg, raw, _ in pairs[r % len(pairs) :] + pairs[: r % len(pairs)]:
                    order += [raw, rg] if r % 2 == 0 else [rg, raw]
                for name in order:
                    if name.startswith("stream_"):
                        with record_thread_starts() as started_here:
                            sample = classic[name]()
                        sync_thread_starts += started_here
                    else:
                        sample = classic[name]()
                    classic_runs[name].append(check_count(sample, classic_items[name], name))
                line = "  ".join(
                    f"{name}={classic_runs[name][-1].evs:,.0f}ev/s,"
                    f"{classic_runs[name][-1].cpu * 1e6 / classic_items[name]:.0f}us"
                    for name in CLASSIC_VARIANTS
                )
                print(f"  classic: {line}", flush=True)

            # 2b. invoke latency: RemoteGraph against upstream's RemoteGraph, interleaved, a new thread each call.
            invokes: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
            for i in range(scale.invoke_calls):
                for name in ("remote_graph", "upstream") if i % 2 == 0 else ("upstream", "remote_graph"):
                    with record_thread_starts() as started_here:
                        invokes[name].append(run_sync(partial(invoke_once, clients[name])))
                    if name == "remote_graph":
                        sync_thread_starts += started_here
            print(
                "invoke: " + ", ".join(f"{k} {median([w for w, _ in v]) * 1e3:.1f} ms" for k, v in invokes.items()),
                flush=True,
            )

            # 3. Turns on one thread: a few threads, each turn taken on every thread in turn.
            turn_wall: dict[int, list[float]] = {}
            turn_cpu: dict[int, list[float]] = {}
            # In the last turns each long-thread turn is paired with a first turn on a
            # new thread right after it, so the ratio compares runs taken together.
            turn_pairs: list[tuple[float, float, float, float]] = []
            turn_threads = [str(uuid.uuid4()) for _ in range(scale.turn_threads)]
            window = turn_window(scale.turns)
            for turn in range(1, scale.turns + 1):
                for thread_id in turn_threads:
                    s = run_sync(partial(rg_sync, graph, scale.turn_n, thread_id, turn))
                    check_items(s, scale.turn_n)
                    turn_wall.setdefault(turn, []).append(s.stamps[-1] - s.started)
                    turn_cpu.setdefault(turn, []).append(s.cpu)
                    if turn > scale.turns - window:
                        f = check_items(run_sync(lambda: rg_sync(graph, scale.turn_n)), scale.turn_n)
                        turn_pairs.append((s.stamps[-1] - s.started, f.stamps[-1] - f.started, s.cpu, f.cpu))
            print(f"turns: {scale.turns} on each of {scale.turn_threads} threads", flush=True)

            # 4. A child inside a local parent: remote child against the same graph compiled locally.
            parents = {"remote": parent_with(graph), "local": parent_with(build_custom().compile())}
            nest: dict[str, dict[str, list[float]]] = {kind: {"wall": [], "cpu": [], "events": []} for kind in parents}
            for r in range(scale.nest_rounds + 1):  # the first round warms up
                for kind in ("remote", "local") if r % 2 else ("local", "remote"):
                    wall, cpu, events = run_sync(partial(parent_turn, parents[kind], scale.nest_n))
                    if r:
                        nest[kind]["wall"].append(wall)
                        nest[kind]["cpu"].append(cpu)
                        nest[kind]["events"].append(events)
            print("nesting: done", flush=True)

            # 5. Concurrency: many runs from one process, RemoteGraph then raw.
            async def many_async(one: Callable[[], Any], count: int) -> tuple[float, float, int]:
                cpu0, t0 = time.process_time(), time.perf_counter()
                results = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
                failed = [r for r in results if isinstance(r, BaseException)]
                for r in results:
                    if not isinstance(r, BaseException) and r.items != scale.concurrent_n + 3:
                        failed.append(RuntimeError(f"{r.items} items"))
                if failed:
                    print(f"  failures: {failed[:3]!r}", flush=True)
                return time.perf_counter() - t0, time.process_time() - cpu0, len(failed)

            def many_sync(one: Callable[[], Sample], count: int) -> tuple[float, float, int]:
                cpu0, t0 = time.process_time(), time.perf_counter()
                failed: list[BaseException] = []
                with ThreadPoolExecutor(max_workers=count, thread_name_prefix="bench") as pool:
                    futures = [pool.submit(one) for _ in range(count)]
                    for future in futures:
                        try:
                            s = future.result(timeout=max(1.0, budget.next_sample(300.0)))
                            if s.items != scale.concurrent_n + 3:
                                failed.append(RuntimeError(f"{s.items} items"))
                        except FutureTimeout:
                            raise BenchTimeout("a concurrent sync run did not finish in time") from None
                        except Exception as exc:
                            failed.append(exc)
                if failed:
                    print(f"  failures: {failed[:3]!r}", flush=True)
                return time.perf_counter() - t0, time.process_time() - cpu0, len(failed)

            cn = scale.concurrent_n
            concurrency = {
                "rg_async": run_async(lambda: many_async(lambda: rg_async(graph, cn), scale.concurrent_async), 300.0),
                "raw_async": run_async(
                    lambda: many_async(lambda: raw_async(async_client, cn), scale.concurrent_async), 300.0
                ),
                "rg_sync": many_sync(lambda: rg_sync(graph, cn), scale.concurrent_sync),
                "raw_sync": many_sync(lambda: raw_sync(sync_client, cn), scale.concurrent_sync),
            }
            print("concurrency: done", flush=True)
        finally:
            try:
                close_clients(loop, sync_client, async_client, (graph, tokens_graph, linear_graph, upstream))
                loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), 10.0))
            finally:
                loop.close()

    return report(
        scale,
        runs,
        exits,
        threads,
        sync_thread_starts,
        memory,
        turn_wall,
        turn_cpu,
        turn_pairs,
        nest,
        concurrency,
        load_before,
        time.monotonic() - began,
        classic_runs,
        classic_items,
        invokes,
    )


def report(
    scale: Scale,
    runs: dict[str, list[Sample]],
    exits: list[float],
    threads: dict[str, Any],
    sync_thread_starts: list[str],
    memory: dict[str, float],
    turn_wall: dict[int, list[float]],
    turn_cpu: dict[int, list[float]],
    turn_pairs: list[tuple[float, float, float, float]],
    nest: dict[str, dict[str, list[float]]],
    concurrency: dict[str, tuple[float, float, int]],
    load_before: tuple[float, float, float],
    elapsed: float,
    classic_runs: dict[str, list[Sample]],
    classic_items: dict[str, int],
    invokes: dict[str, list[tuple[float, float]]],
) -> int:
    items = scale.n + 3
    evs = {name: median([s.evs for s in runs[name]]) for name in VARIANTS}
    cpu_us = {name: median([s.cpu / s.items for s in runs[name]]) * 1e6 for name in VARIANTS}
    ttfe_ms = {name: median([s.ttfe for s in runs[name]]) * 1e3 for name in VARIANTS}
    before_ms = {name: median([s.before_create for s in runs[name]]) * 1e3 for name in VARIANTS}
    pickup_ms = {name: median([s.pickup for s in runs[name]]) * 1e3 for name in VARIANTS}
    delivery_ms = {name: median([s.delivery for s in runs[name]]) * 1e3 for name in VARIANTS}
    # What the client adds: its part before the run exists plus its part after the server emitted.
    client_ms = {name: median([s.before_create + s.delivery for s in runs[name]]) * 1e3 for name in VARIANTS}
    # Each round pairs a RemoteGraph run with the raw run of the same flavour,
    # taken minutes apart at most; the verdict is the median of those ratios.
    evs_ratio = {f: median([a.evs / b.evs for a, b in zip(runs[rg], runs[raw])]) for f, (rg, raw) in PAIRS.items()}
    cpu_ratio = {
        f: median([(a.cpu / a.items) / (b.cpu / b.items) for a, b in zip(runs[rg], runs[raw])])
        for f, (rg, raw) in PAIRS.items()
    }
    thread_ratio = {
        f: median([(a.cpu / a.items) / (b.cpu / b.items) for a, b in zip(runs[rg], runs[raw])])
        for f, (rg, raw) in THREAD_PAIRS.items()
    }
    async_over_sync = median([(a.cpu / a.items) / (b.cpu / b.items) for a, b in zip(runs["rg_async"], runs["rg_sync"])])
    ttfe_over = {f: client_ms[rg] - client_ms[raw] for f, (rg, raw) in PAIRS.items()}
    exit_ms = median(exits) * 1e3
    background = threads["background_thread"] or bool(sync_thread_starts)

    window = turn_window(scale.turns)
    first = list(range(1, window + 1))
    last = list(range(scale.turns - window + 1, scale.turns + 1))
    wall_first = median([w for t in first for w in turn_wall[t]]) * 1e3
    wall_last = median([w for t in last for w in turn_wall[t]]) * 1e3
    cpu_first = median([c for t in first for c in turn_cpu[t]]) * 1e3
    cpu_last = median([c for t in last for c in turn_cpu[t]]) * 1e3
    # The verdict: late turns against first turns on new threads taken right after them.
    turn_ratio = median([late / fresh for late, fresh, _, _ in turn_pairs])
    turn_cpu_ratio = median([late / fresh for _, _, late, fresh in turn_pairs])

    nest_wall = {kind: median(v["wall"]) * 1e3 for kind, v in nest.items()}
    nest_cpu = {kind: median(v["cpu"]) * 1e3 for kind, v in nest.items()}
    nest_events = int(median(nest["remote"]["events"]))
    nest_local_events = int(median(nest["local"]["events"]))
    nest_over_wall_us = (nest_wall["remote"] - nest_wall["local"]) * 1e3 / nest_events
    nest_over_cpu_us = (nest_cpu["remote"] - nest_cpu["local"]) * 1e3 / nest_events
    nest_over_raw = nest_over_cpu_us / cpu_us["raw_sync"]

    conc_ok = concurrency["rg_async"][2] == 0 and concurrency["rg_sync"][2] == 0

    # The classic methods: each RemoteGraph method over the raw client of its round (paired ratios).
    c_evs = {name: median([s.evs for s in classic_runs[name]]) for name in CLASSIC_VARIANTS}
    c_cpu_us = {name: median([s.cpu / s.items for s in classic_runs[name]]) * 1e6 for name in CLASSIC_VARIANTS}
    c_evs_ratio = {
        f: median([a.evs / b.evs for a, b in zip(classic_runs[rg], classic_runs[raw])])
        for f, (rg, raw, _) in CLASSIC_PAIRS.items()
    }
    c_cpu_ratio = {
        f: median([(a.cpu / a.items) / (b.cpu / b.items) for a, b in zip(classic_runs[rg], classic_runs[raw])])
        for f, (rg, raw, _) in CLASSIC_PAIRS.items()
    }
    inv_wall = {k: median([w for w, _ in v]) * 1e3 for k, v in invokes.items()}
    inv_cpu = {k: median([c for _, c in v]) * 1e3 for k, v in invokes.items()}
    inv_over = inv_wall["remote_graph"] - inv_wall["upstream"]
    # Each call paired with the other client's call of the same pair (taken one after the other).
    inv_paired = median([(a - b) * 1e3 for (a, _), (b, _) in zip(invokes["remote_graph"], invokes["upstream"])])
    mem_worst = max(memory.values())

    targets = {
        "cpu_sync": cpu_ratio["sync"] <= TARGETS["cpu_sync"],
        "cpu_async": cpu_ratio["async"] <= TARGETS["cpu_async"],
        "evs_sync": evs_ratio["sync"] >= TARGETS["evs"],
        "evs_async": evs_ratio["async"] >= TARGETS["evs"],
        "ttfe_sync": ttfe_over["sync"] <= TARGETS["ttfe_ms"],
        "ttfe_async": ttfe_over["async"] <= TARGETS["ttfe_ms"],
        "turns": turn_ratio <= TARGETS["turns"],
        "concurrency": conc_ok,
        "memory": mem_worst < TARGETS["rss_mb"],
        "exit_ms": exit_ms < TARGETS["exit_ms"],
        "no_background_thread": not background,
        **{f"classic_evs_{f}": c_evs_ratio[f] >= TARGETS["evs"] for f in CLASSIC_TARGETED},
        # No worse than the v3 run stream's CPU ratio of the same flavour, in this run.
        **{f"classic_cpu_{f}": c_cpu_ratio[f] <= cpu_ratio[CLASSIC_PAIRS[f][2]] for f in CLASSIC_TARGETED},
        "invoke_ms": inv_over <= TARGETS["invoke_ms"],
        "cpu_thread_sync": thread_ratio["sync"] <= TARGETS["cpu_thread"],
        "cpu_thread_async": thread_ratio["async"] <= TARGETS["cpu_thread"],
        "async_over_sync": async_over_sync <= TARGETS["async_over_sync"],
        "nest_over_raw": nest_over_raw <= TARGETS["nest_over_raw"],
    }

    print()
    print(
        f"stream rounds: {items} custom items per run, medians of {scale.rounds} interleaved rounds "
        "(ratios below: median of the per-round ratios)"
    )
    print(
        f"{'variant':<32}{'ev/s':>8}{'CPU us/ev':>11}{'1st ev ms':>11}{'= create':>10}{'+ server':>10}{'+ deliver':>11}"
    )
    for name in VARIANTS:
        print(
            f"{LABELS[name]:<32}{evs[name]:>8,.0f}{cpu_us[name]:>11.1f}{ttfe_ms[name]:>11.1f}"
            f"{before_ms[name]:>10.1f}{pickup_ms[name]:>10.1f}{delivery_ms[name]:>11.1f}"
        )
    print(
        f"turns on one thread ({scale.turn_threads} threads, {scale.turn_n + 3} items per turn): "
        f"turns {first[0]}-{first[-1]} {wall_first:.0f} ms wall / {cpu_first:.1f} ms CPU, "
        f"turns {last[0]}-{last[-1]} {wall_last:.0f} ms wall / {cpu_last:.1f} ms CPU"
    )
    print(
        f"parent turn ({nest_events} events, {scale.nest_rounds} rounds): remote child {nest_wall['remote']:.0f} ms "
        f"wall / {nest_cpu['remote']:.0f} ms CPU, local child {nest_wall['local']:.0f} ms / "
        f"{nest_cpu['local']:.0f} ms CPU;"
        f" remote - local per event: {nest_over_wall_us:+.0f} us wall, {nest_over_cpu_us:+.1f} us CPU"
    )
    print(f"concurrency (server n_jobs_per_worker={N_JOBS_PER_WORKER}, {scale.concurrent_n + 3} items per run):")
    for name, (wall, cpu, failed) in concurrency.items():
        count = scale.concurrent_async if name.endswith("async") else scale.concurrent_sync
        how = "tasks" if name.endswith("async") else "threads"
        print(f"  {LABELS[name]:<32} {count} {how}: wall {wall:.1f} s, client CPU {cpu:.2f} s, failures {failed}")
    print("memory, RSS growth per 100k events: " + ", ".join(f"{k} {v:+.2f} MB" for k, v in memory.items()))
    print(f"sync __exit__ after output: median {exit_ms:.3f} ms, max {max(exits) * 1e3:.3f} ms")
    print(f"threads around a sync run: before={threads['before']} during={threads['during']} after={threads['after']}")
    print(f"classic methods: medians of {scale.rounds} interleaved rounds, in the same rounds as the v3 runs")
    print(f"{'variant':<34}{'items':>7}{'ev/s':>8}{'CPU us/ev':>11}")
    for name in CLASSIC_VARIANTS:
        print(f"{CLASSIC_LABELS[name]:<34}{classic_items[name]:>7}{c_evs[name]:>8,.0f}{c_cpu_us[name]:>11.1f}")
    print(
        f"invoke of {LINEAR!r}, a new thread each call, {scale.invoke_calls} calls each, interleaved: "
        f"RemoteGraph {inv_wall['remote_graph']:.1f} ms wall / {inv_cpu['remote_graph']:.2f} ms CPU, "
        f"upstream {inv_wall['upstream']:.1f} ms wall / {inv_cpu['upstream']:.2f} ms CPU"
    )
    print()
    print("verdicts:")
    for f in ("sync", "async"):
        print(
            f"  CPU/event {f}: {cpu_ratio[f]:.2f}x raw (target <= {TARGETS['cpu_' + f]}x) "
            f"{verdict(targets['cpu_' + f])}"
        )
    for f in ("sync", "async"):
        print(
            f"  CPU/event {f} against the raw thread stream: {thread_ratio[f]:.2f}x "
            f"(target <= {TARGETS['cpu_thread']}x) {verdict(targets['cpu_thread_' + f])}"
        )
    print(
        f"  CPU/event async / sync: {async_over_sync:.2f}x (target <= {TARGETS['async_over_sync']}x) "
        f"{verdict(targets['async_over_sync'])}"
    )
    print(
        f"  remote child in a local parent: {nest_over_cpu_us:+.1f} us CPU per event over a local child, "
        f"{nest_over_raw:.2f}x raw sync's CPU per event (target <= {TARGETS['nest_over_raw']}x) "
        f"{verdict(targets['nest_over_raw'])}"
    )
    for f in ("sync", "async"):
        print(f"  live ev/s {f}: {evs_ratio[f]:.3f}x raw (target >= {TARGETS['evs']}x) {verdict(targets['evs_' + f])}")
    for f in ("sync", "async"):
        print(
            f"  first event {f}, client's part (create + deliver): {ttfe_over[f]:+.2f} ms vs raw "
            f"(target <= +{TARGETS['ttfe_ms']:.0f} ms) "
            f"{verdict(targets['ttfe_' + f])}"
        )
    print(
        f"  turn {last[0]}-{last[-1]} vs turn 1 taken right after: {turn_ratio:.2f}x wall, {turn_cpu_ratio:.2f}x CPU "
        f"(target <= {TARGETS['turns']}x wall) {verdict(targets['turns'])}"
    )
    print(
        f"  concurrent runs: {scale.concurrent_async - concurrency['rg_async'][2]}/{scale.concurrent_async} async, "
        f"{scale.concurrent_sync - concurrency['rg_sync'][2]}/{scale.concurrent_sync} sync succeeded {verdict(conc_ok)}"
    )
    print(
        f"  RSS growth: worst {mem_worst:+.2f} MB per 100k events (target < {TARGETS['rss_mb']:.0f}) "
        f"{verdict(targets['memory'])}"
    )
    print(f"  sync __exit__: {exit_ms:.3f} ms (target < {TARGETS['exit_ms']:.0f}) {verdict(targets['exit_ms'])}")
    print(
        f"  background threads: {'none' if not background else sorted(set(sync_thread_starts))} "
        f"{verdict(not background)}"
    )
    for f in CLASSIC_TARGETED:
        rg, _, flavour = CLASSIC_PAIRS[f]
        print(
            f"  {CLASSIC_LABELS[rg]} live ev/s: {c_evs_ratio[f]:.3f}x raw (target >= {TARGETS['evs']}x) "
            f"{verdict(targets['classic_evs_' + f])}"
        )
        print(
            f"  {CLASSIC_LABELS[rg]} CPU/event: {c_cpu_ratio[f]:.2f}x raw (target <= v3 {flavour}'s "
            f"{cpu_ratio[flavour]:.2f}x) {verdict(targets['classic_cpu_' + f])}"
        )
    print(
        f"  {CLASSIC_LABELS['astream_events']} CPU/event: {c_cpu_ratio['events']:.2f}x raw "
        f"(no target; v3 async {cpu_ratio['async']:.2f}x), live ev/s {c_evs_ratio['events']:.3f}x raw"
    )
    print(
        f"  invoke: RemoteGraph {inv_over:+.2f} ms vs upstream's median (paired: {inv_paired:+.2f} ms; "
        f"target <= +{TARGETS['invoke_ms']:.0f} ms) {verdict(targets['invoke_ms'])}"
    )

    load_after = os.getloadavg()
    result = {
        "scale": "quick" if scale == QUICK else ("full" if scale == FULL else "custom"),
        "items": items,
        "rounds": scale.rounds,
        "evs_median": {k: round(v, 1) for k, v in evs.items()},
        "cpu_us_per_event": {k: round(v, 2) for k, v in cpu_us.items()},
        "ttfe_ms": {k: round(v, 1) for k, v in ttfe_ms.items()},
        "ttfe_split_ms": {
            name: {
                "create": round(before_ms[name], 2),
                "server": round(pickup_ms[name], 1),
                "deliver": round(delivery_ms[name], 2),
            }
            for name in VARIANTS
        },
        "ratio": {
            "cpu_sync": round(cpu_ratio["sync"], 3),
            "cpu_async": round(cpu_ratio["async"], 3),
            "evs_sync": round(evs_ratio["sync"], 3),
            "evs_async": round(evs_ratio["async"], 3),
            "cpu_thread_sync": round(thread_ratio["sync"], 3),
            "cpu_thread_async": round(thread_ratio["async"], 3),
            "cpu_async_over_sync": round(async_over_sync, 3),
            "nest_over_raw_sync": round(nest_over_raw, 3),
            "turns_wall": round(turn_ratio, 3),
            "turns_cpu": round(turn_cpu_ratio, 3),
        },
        "ttfe_over_raw_ms": {k: round(v, 2) for k, v in ttfe_over.items()},
        "turns": {
            "count": scale.turns,
            "threads": scale.turn_threads,
            "first_ms": round(wall_first, 1),
            "pairs": len(turn_pairs),
            "last_ms": round(wall_last, 1),
            "first_cpu_ms": round(cpu_first, 2),
            "last_cpu_ms": round(cpu_last, 2),
        },
        "nested": {
            "events": nest_events,
            "local_events": nest_local_events,
            "wall_ms": {k: round(v, 1) for k, v in nest_wall.items()},
            "cpu_ms": {k: round(v, 1) for k, v in nest_cpu.items()},
            "over_wall_us_per_event": round(nest_over_wall_us, 1),
            "over_cpu_us_per_event": round(nest_over_cpu_us, 2),
        },
        "concurrency": {
            "n_jobs_per_worker": N_JOBS_PER_WORKER,
            **{
                k: {
                    "runs": scale.concurrent_async if k.endswith("async") else scale.concurrent_sync,
                    "wall_s": round(w, 2),
                    "cpu_s": round(c, 3),
                    "failures": f,
                }
                for k, (w, c, f) in concurrency.items()
            },
        },
        "rss_mb_per_100k": {k: round(v, 2) for k, v in memory.items()},
        "exit_ms_median": round(exit_ms, 3),
        "threads": {
            "before": threads["before"],
            "during": threads["during"],
            "after": threads["after"],
            "background_thread": background,
        },
        "load": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
            "cpus": os.cpu_count(),
        },
        "classic": {
            "items": dict(classic_items),
            "evs_median": {k: round(v, 1) for k, v in c_evs.items()},
            "cpu_us_per_event": {k: round(v, 2) for k, v in c_cpu_us.items()},
            "ratio": {
                **{f"evs_{f}": round(v, 3) for f, v in c_evs_ratio.items()},
                **{f"cpu_{f}": round(v, 3) for f, v in c_cpu_ratio.items()},
            },
            "v3_cpu_ratio": {k: round(v, 3) for k, v in cpu_ratio.items()},
        },
        "invoke": {
            "graph": LINEAR,
            "calls": scale.invoke_calls,
            "wall_ms": {k: round(v, 2) for k, v in inv_wall.items()},
            "cpu_ms": {k: round(v, 3) for k, v in inv_cpu.items()},
            "over_upstream_ms": round(inv_over, 2),
            "paired_over_ms": round(inv_paired, 2),
        },
        "elapsed_s": round(elapsed, 1),
        "targets_met": targets,
    }
    print("BENCH " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
