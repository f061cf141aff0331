"""Streaming benchmark: RemoteGraph v3 run streams against a raw httpx SSE client.

Run from the repository root:

    python bench/bench_stream.py [--n 2000] [--rounds 5]

One embedded ``langgraph dev`` server is started for the whole run and stopped
at the end. The served graph ``custom`` writes ``n`` custom events from one
node and three more from a ``Send`` fan-out, so every sample sees ``n + 3``
custom items. The raw client reads the endpoint RemoteGraph reads: it creates
the run through the runs API with RemoteGraph's request body and follows
``GET /threads/{id}/runs/{run_id}/stream`` until the server closes it. See
``bench/README.md`` for what each number means.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so ``app.graphs`` imports when run as ``python bench/bench_stream.py``

from app.graphs import TRANSFORMERS  # noqa: E402
from remote_graph import RemoteGraph, Timeouts  # noqa: E402
from remote_graph.testing import LangGraphDevServer  # noqa: E402

ASSISTANT = "custom"
# What RemoteGraph asks of a v3 run it creates through the runs API: the marker
# that turns on the server's v3 events, every stream mode, subgraphs, and a
# resumable stream the run can be followed on.
V3_MARKER = "__event_streaming_v2"
V3_STREAM_MODES = ["values", "updates", "messages", "custom", "tasks", "checkpoints"]
STREAM_HEADERS = {"Last-Event-ID": "-1", "accept": "text/event-stream"}  # replay from the run's first frame
EXPECTED_RESULTS = [0, 1, 4]  # the fan-out's three workers square 0, 1, 2

VARIANTS = ("raw_sync", "rg_sync", "raw_async", "rg_async")
LABELS = {
    "raw_sync": "raw httpx SSE (sync)",
    "rg_sync": "RemoteGraph run.custom (sync)",
    "raw_async": "raw httpx SSE (async)",
    "rg_async": "RemoteGraph run.custom (async)",
}
PAIRS = {"sync": ("rg_sync", "raw_sync"), "async": ("rg_async", "raw_async")}

TARGET_RATIO = 0.9
TARGET_EXIT_MS = 100.0


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

    def next_sample(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BenchTimeout("the benchmark ran past its total budget")
        return min(self.per_sample, left)


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


# --- samples -------------------------------------------------------------------


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
    """

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self._event = ""
        self._data: list[str] = []

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
        envelope = json.loads(data)
        if envelope.get("method") == "custom":
            self.stamps.append(time.perf_counter())


def raw_sync(client: httpx.Client, n: int) -> list[float]:
    thread_id = str(uuid.uuid4())
    run_id = _run_id(client.post(f"/threads/{thread_id}/runs", json=run_body(n)))
    stream = RawStream()
    with client.stream("GET", f"/threads/{thread_id}/runs/{run_id}/stream", headers=STREAM_HEADERS) as response:
        response.raise_for_status()
        for line in response.iter_lines():  # until the server closes the stream at the run's end
            stream.line(line)
    _check_run_status(client.get(f"/threads/{thread_id}/runs/{run_id}"), "sync")
    return stream.stamps


async def raw_async(client: httpx.AsyncClient, n: int) -> list[float]:
    thread_id = str(uuid.uuid4())
    run_id = _run_id(await client.post(f"/threads/{thread_id}/runs", json=run_body(n)))
    stream = RawStream()
    async with client.stream("GET", f"/threads/{thread_id}/runs/{run_id}/stream", headers=STREAM_HEADERS) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():  # until the server closes the stream at the run's end
            stream.line(line)
    _check_run_status(await client.get(f"/threads/{thread_id}/runs/{run_id}"), "async")
    return stream.stamps


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _check_output(output: Any) -> None:
    if not isinstance(output, dict) or sorted(output.get("results", [])) != EXPECTED_RESULTS:
        raise RuntimeError(f"unexpected run output: {output!r}")


def rg_sync(graph: RemoteGraph, n: int) -> list[float]:
    stamps: list[float] = []
    with graph.stream_events(run_input(n), _config(), version="v3") as run:
        for _item in run.custom:
            stamps.append(time.perf_counter())
        _check_output(run.output)
    return stamps


async def rg_async(graph: RemoteGraph, n: int) -> list[float]:
    stamps: list[float] = []
    async with await graph.astream_events(run_input(n), _config(), version="v3") as run:
        async for _item in run.custom:
            stamps.append(time.perf_counter())
        _check_output(await run.output())
    return stamps


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


# --- reporting -----------------------------------------------------------------


def evs(stamps: list[float], n: int) -> tuple[float, float]:
    """(events per second, stream seconds) from the consumer-side item timestamps."""
    if len(stamps) != n + 3:
        raise RuntimeError(f"expected {n + 3} custom items, got {len(stamps)}")
    span = stamps[-1] - stamps[0]
    return ((len(stamps) - 1) / span if span > 0 else float("inf")), span


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="custom events written by the plan node")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved measurement rounds")
    parser.add_argument("--sample-timeout", type=float, default=120.0, help="seconds one sample may take")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds the whole benchmark may take")
    parser.add_argument(
        "--config", default=str(ROOT / "app" / "langgraph.json"), help="langgraph.json of the served graphs"
    )
    args = parser.parse_args(argv)
    if args.n < 1 or args.rounds < 1:
        parser.error("--n and --rounds must be positive")

    budget = Budget(args.budget, args.sample_timeout)
    http_timeout = httpx.Timeout(30.0, read=30.0)  # the server heartbeats every 5 s
    rg_timeouts = Timeouts(request=30.0, read=30.0, reconnect=15.0)
    n = args.n

    started = time.monotonic()
    with LangGraphDevServer(args.config, startup_timeout=90.0) as server:
        print(f"server up in {time.monotonic() - started:.1f}s; n={n} rounds={args.rounds}", flush=True)
        graph = RemoteGraph(ASSISTANT, url=server.url, stream_transformers=TRANSFORMERS, timeouts=rg_timeouts)
        loop = asyncio.new_event_loop()
        sync_client = httpx.Client(base_url=server.url, timeout=http_timeout)
        async_client = httpx.AsyncClient(base_url=server.url, timeout=http_timeout)
        try:

            def run_async(factory: Callable[[], Any]) -> Any:
                seconds = budget.next_sample()
                with alarm(seconds + 5.0):  # backstop behind wait_for
                    return loop.run_until_complete(asyncio.wait_for(factory(), seconds))

            def run_sync(fn: Callable[[], Any]) -> Any:
                with alarm(budget.next_sample()):
                    return fn()

            samples: dict[str, Callable[[], list[float]]] = {
                "raw_sync": lambda: run_sync(lambda: raw_sync(sync_client, n)),
                "rg_sync": lambda: run_sync(lambda: rg_sync(graph, n)),
                "raw_async": lambda: run_async(lambda: raw_async(async_client, n)),
                "rg_async": lambda: run_async(lambda: rg_async(graph, n)),
            }

            # Warm up the sync paths (graph import, connections), then count threads
            # before anything async has run in this process.
            for name in ("raw_sync", "rg_sync"):
                samples[name]()
            threads = run_sync(lambda: thread_check(graph, n))
            print(
                f"threads: before={threads['before']} during={threads['during']} after={threads['after']} "
                f"new={threads['new_threads']}",
                flush=True,
            )
            for name in ("raw_async", "rg_async"):
                samples[name]()

            rates: dict[str, list[float]] = {name: [] for name in VARIANTS}
            spans: dict[str, list[float]] = {name: [] for name in VARIANTS}
            exits: list[float] = []
            sync_thread_starts: list[str] = []
            for r in range(args.rounds):
                order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
                for name in order:
                    if name == "rg_sync":
                        with record_thread_starts() as started_here:
                            stamps = samples[name]()
                        sync_thread_starts += started_here
                    else:
                        stamps = samples[name]()
                    rate, span = evs(stamps, n)
                    rates[name].append(rate)
                    spans[name].append(span)
                with record_thread_starts() as started_here:
                    exits.append(run_sync(lambda: rg_exit_seconds(graph, n)))
                sync_thread_starts += started_here
                line = "  ".join(f"{name}={rates[name][-1]:,.0f}" for name in VARIANTS)
                print(f"round {r + 1}/{args.rounds} ev/s: {line}  exit={exits[-1] * 1e3:.3f}ms", flush=True)
        finally:
            sync_client.close()
            try:
                loop.run_until_complete(asyncio.wait_for(async_client.aclose(), 10.0))
                loop.run_until_complete(asyncio.wait_for(graph.client.aclose(), 10.0))
                graph.sync_client.close()
                loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), 10.0))
            finally:
                loop.close()

    medians = {name: median(rates[name]) for name in VARIANTS}
    ratios = {flavour: medians[rg] / medians[raw] for flavour, (rg, raw) in PAIRS.items()}
    exit_ms = median(exits) * 1e3
    background = threads["background_thread"] or bool(sync_thread_starts)

    print()
    print(f"live throughput, {n + 3} custom items per run, median of {args.rounds} interleaved rounds")
    print(f"{'variant':<32}{'median ev/s':>13}{'min':>11}{'max':>11}{'stream ms':>11}")
    for name in VARIANTS:
        print(
            f"{LABELS[name]:<32}{medians[name]:>13,.0f}{min(rates[name]):>11,.0f}{max(rates[name]):>11,.0f}"
            f"{median(spans[name]) * 1e3:>11.1f}"
        )
    print()
    for flavour, (rg, raw) in PAIRS.items():
        verdict = "ok" if ratios[flavour] >= TARGET_RATIO else "BELOW TARGET"
        print(f"ratio {flavour:<6} {rg} / {raw} = {ratios[flavour]:.3f}  (target >= {TARGET_RATIO}) {verdict}")
    verdict = "ok" if exit_ms < TARGET_EXIT_MS else "ABOVE TARGET"
    print(
        f"sync __exit__ after output: median {exit_ms:.3f} ms, max {max(exits) * 1e3:.3f} ms "
        f"(target < {TARGET_EXIT_MS:.0f} ms) {verdict}"
    )
    verdict = "ok" if not background else "BACKGROUND THREAD STARTED"
    print(
        f"threads around a sync run: before={threads['before']} during={threads['during']} "
        f"after={threads['after']}; started during sync RemoteGraph runs: "
        f"{sorted(set(threads['new_threads']) | set(sync_thread_starts)) or 'none'} {verdict}"
    )

    result = {
        "n": n,
        "items": n + 3,
        "rounds": args.rounds,
        "evs_median": {name: round(medians[name], 1) for name in VARIANTS},
        "stream_ms_median": {name: round(median(spans[name]) * 1e3, 2) for name in VARIANTS},
        "ratio": {flavour: round(value, 4) for flavour, value in ratios.items()},
        "exit_ms_median": round(exit_ms, 4),
        "exit_ms_max": round(max(exits) * 1e3, 4),
        "threads": {
            "before": threads["before"],
            "during": threads["during"],
            "after": threads["after"],
            "background_thread": background,
        },
        "targets_met": {
            "ratio_sync": ratios["sync"] >= TARGET_RATIO,
            "ratio_async": ratios["async"] >= TARGET_RATIO,
            "exit_ms": exit_ms < TARGET_EXIT_MS,
            "no_background_thread": not background,
        },
    }
    print("BENCH " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
