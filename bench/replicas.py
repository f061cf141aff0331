"""The replica stack's figures, against raw clients on the same stack in the same run.

Run from the repository root, naming the langhost virtualenv (``ReplicaServer``):

    python bench/replicas.py --replicas-python VENV            # about 10 minutes
    python bench/replicas.py --replicas-python VENV --quick    # about 4 minutes

The replica stack (``remote_graph.testing.ReplicaServer``: Postgres, Redis, two
``langhost`` replicas and the round-robin balancer) runs in a child process of
this script (``replica_stack``), so that the balancer, which is a thread of the
process that starts the stack, is not counted in the client's CPU time. On it:

1. **First event.** The time from a call to its run's first event: ``invoke``
   (the first chunk its stream hands to ``invoke``'s collector) against a raw
   httpx client posting the same request (``POST /threads/{id}/runs/stream``,
   the body checked against RemoteGraph's own), and ``stream_events(version="v3")``
   (sync and async: the first ``run.custom`` item) against a raw client posting
   the same v3 run to ``POST /threads/{id}/runs/stream``. Interleaved rounds;
   the v3 runs' time is split with the server's own timestamps, as in ``bench.py``.
2. **CPU per event.** v3 ``run.custom`` (sync, async) and the classic ``stream`` /
   ``astream(stream_mode="custom")`` against the raw readers of the same run that
   ``bench.py`` uses, interleaved, paired ratios per round.
3. **Concurrent runs.** ``concurrent_runs.many``: many v3 runs at once from one
   async ``RemoteGraph`` across the replicas, then ``concurrent_runs.many_raw``.

Then the embedded ``langgraph dev`` server (``LangGraphDevServer``) is started
and phase 1 is taken again there, for comparison. Every wait is bounded (the
samples as in ``bench.py``, ``--budget`` for the whole). Prints progress, a
table and a last line ``BENCH {json}``. See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import httpx

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _path in (BENCH_DIR, ROOT / "src"):  # this tree's package, and bench.py beside this script
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # ``app.graphs``

import concurrent_runs  # noqa: E402

from app.graphs import TRANSFORMERS  # noqa: E402
from bench import (  # noqa: E402
    ASSISTANT,
    LINEAR,
    LINEAR_INPUT,
    LINEAR_OUTPUT,
    N_JOBS_PER_WORKER,
    Budget,
    Guard,
    Sample,
    Workload,
    _config,
    check_count,
    check_items,
    classic_call,
    classic_workloads,
    close_clients,
    median,
    raw_async,
    raw_classic_async,
    raw_classic_sync,
    raw_sync,
    rg_astream,
    rg_async,
    rg_stream,
    rg_sync,
    run_body,
    run_input,
    stamp_server_side,
)
from remote_graph import RemoteGraph, Timeouts  # noqa: E402
from remote_graph import graph as graph_module  # noqa: E402
from remote_graph._invoke import InvokeCollector  # noqa: E402
from remote_graph.testing import LangGraphDevServer, ReplicaServer  # noqa: E402

STACK_LINE = "STACK "
STACK_START_TIMEOUT = 300.0  # Postgres, Redis and two replicas one after the other
STACK_STOP_TIMEOUT = 90.0  # the child stops each process by its PID, 10 s at most each


@dataclass(frozen=True)
class Scale:
    first_rounds: int  # phase 1 rounds, on each server
    first_n: int  # custom events of a v3 run in phase 1
    cpu_rounds: int
    cpu_n: int  # custom events per run in phase 2
    concurrent: int  # runs at once in phase 3


FULL = Scale(15, 10, 9, 2000, 500)
QUICK = Scale(5, 10, 3, 1000, 200)

# Phase 1: each RemoteGraph call beside the raw client of the same request.
FIRST_VARIANTS = ("invoke", "raw_invoke", "v3_sync", "raw_v3_sync", "v3_async", "raw_v3_async")
FIRST_PAIRS = {
    "invoke": ("invoke", "raw_invoke"),
    "sync": ("v3_sync", "raw_v3_sync"),
    "async": ("v3_async", "raw_v3_async"),
}
FIRST_LABELS = {
    "invoke": "RemoteGraph invoke",
    "raw_invoke": "raw POST runs/stream (invoke's body)",
    "v3_sync": "RemoteGraph stream_events v3 (sync)",
    "raw_v3_sync": "raw POST runs/stream v3 (sync)",
    "v3_async": "RemoteGraph astream_events v3",
    "raw_v3_async": "raw POST runs/stream v3 (async)",
}
# Phase 2: the same readers as bench.py's v3 and classic custom rounds.
CPU_VARIANTS = ("raw_sync", "rg_sync", "raw_async", "rg_async", "raw_stream", "stream", "raw_astream", "astream")
CPU_PAIRS = {
    "v3_sync": ("rg_sync", "raw_sync"),
    "v3_async": ("rg_async", "raw_async"),
    "stream": ("stream", "raw_stream"),
    "astream": ("astream", "raw_astream"),
}
CPU_LABELS = {
    "raw_sync": "raw httpx SSE, run stream (sync)",
    "rg_sync": "RemoteGraph run.custom (sync)",
    "raw_async": "raw httpx SSE, run stream (async)",
    "rg_async": "RemoteGraph run.custom (async)",
    "raw_stream": "raw POST runs/stream custom (sync)",
    "stream": 'stream(stream_mode="custom")',
    "raw_astream": "raw POST runs/stream custom (async)",
    "astream": 'astream(stream_mode="custom")',
}


# --- the replica stack, in a process of its own --------------------------------------


def serve_stack(python: str | None, jobs: int, config: str, lifetime: float) -> int:
    """In the child: start the stack, print its URL, hold it until stdin closes (or ``lifetime``), stop it."""

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    with ReplicaServer(config, python=python, n_jobs_per_worker=jobs) as server:
        print(STACK_LINE + json.dumps({"url": server.url, "replicas": server.replica_urls}), flush=True)
        deadline = time.monotonic() + lifetime
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([sys.stdin], [], [], min(left, 1.0))
            if ready and not sys.stdin.readline():
                break  # the parent closed our stdin: it is done with the stack
    return 0


@contextmanager
def replica_stack(python: str | None, jobs: int, config: str, lifetime: float = 3600.0) -> Iterator[dict[str, Any]]:
    """Run ``ReplicaServer`` in a child process; yield ``{"url", "replicas"}`` once it answers.

    On exit the child's stdin is closed and it stops the stack (each process by its
    PID); if it has not exited in time it is sent SIGTERM, then SIGKILL. The child
    also stops the stack by itself after ``lifetime`` seconds.
    """
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-stack", "--jobs", str(jobs)]
    command += ["--config", config, "--stack-lifetime", str(lifetime)]
    if python is not None:
        command += ["--replicas-python", python]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield _stack_answer(child, STACK_START_TIMEOUT)
    finally:
        _stop_child(child)


def _stack_answer(child: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    assert child.stdout is not None
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([child.stdout], [], [], min(left, 1.0))
        if not ready:
            continue
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"the replica stack's process exited ({child.wait(10)}) before it answered")
        if line.startswith(STACK_LINE):
            answer: dict[str, Any] = json.loads(line[len(STACK_LINE) :])
            return answer
    raise TimeoutError(f"the replica stack did not answer within {timeout:.0f} s")


def _stop_child(child: subprocess.Popen[str]) -> None:
    if child.stdin is not None:
        try:
            child.stdin.close()
        except OSError:
            pass
    try:
        child.wait(STACK_STOP_TIMEOUT)
        return
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)
    try:
        child.wait(STACK_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        child.kill()  # the stack's processes may be left; their PIDs are in its log
        child.wait(10)


# --- phase 1: the first event ----------------------------------------------------------


class StampedCollector(InvokeCollector):
    """``invoke``'s own collector, noting when the run's first chunk reaches it."""

    first: ClassVar[float] = 0.0

    def add(self, chunk: Any) -> None:
        if not StampedCollector.first:
            StampedCollector.first = time.perf_counter()
        super().add(chunk)


LATE_CLOSE = 0.3  # seconds between a call's first event and its return past which the close counts as late


@dataclass
class First:
    """One call: seconds from the call to the run's first event, and to the call's return."""

    first: float
    end: float
    sample: Sample | None = None  # a v3 run's, for the server's timestamps


def invoke_first(graph: RemoteGraph) -> First:
    StampedCollector.first = 0.0
    config: Any = _config()
    started = time.perf_counter()
    output = graph.invoke(LINEAR_INPUT, config)
    end = time.perf_counter() - started
    if output != LINEAR_OUTPUT:
        raise RuntimeError(f"unexpected invoke output: {output!r}")
    if not StampedCollector.first:
        raise RuntimeError("invoke returned without its collector seeing a chunk (is StampedCollector installed?)")
    return First(StampedCollector.first - started, end)


def sample_first(sample: Sample, ended: float) -> First:
    return First(sample.ttfe, ended - sample.started, sample)


def timed(sample: Callable[[], Sample]) -> First:
    s = sample()
    return sample_first(s, time.perf_counter())


async def atimed(sample: Callable[[], Any]) -> First:
    s = await sample()
    return sample_first(s, time.perf_counter())


@dataclass(frozen=True)
class V3Workload(Workload):
    """A v3 run started with its stream: the body RemoteGraph sends for a v3 run, to ``/runs/stream``.

    Its frames are named after their method, so ``RawClassicStream`` counts the ``custom`` ones.
    """

    def body(self) -> dict[str, Any]:
        return {**run_body(0), "assistant_id": self.assistant, "input": self.input}


def invoke_workload(graph: RemoteGraph) -> Workload:
    """What ``invoke`` of ``linear`` sends, built by RemoteGraph itself (no I/O); its ``values`` frames counted."""
    config: Any = _config()
    # What ``invoke`` streams (``InvokeCollector.stream_kwargs``).
    call = classic_call(graph, LINEAR_INPUT, config, ["updates", "values"], "invoke()")
    request = call.driver.plan.request("/threads/t", None)
    assert isinstance(request.json, dict)
    work = Workload(LINEAR, LINEAR_INPUT, tuple(request.json["stream_mode"]), "values", None, 3)
    if (request.method, request.path, request.json) != ("POST", "/threads/t/runs/stream", work.body()):
        raise RuntimeError(f"the raw invoke client's request is not RemoteGraph's: {request}")
    return work


def first_event_rounds(url: str, rounds: int, n: int, guard: Guard, timeouts: Timeouts) -> dict[str, list[First]]:
    """Phase 1 on the server at ``url``: ``rounds`` interleaved rounds, the variants' order rotating."""
    graph = RemoteGraph(ASSISTANT, url=url, stream_transformers=TRANSFORMERS, timeouts=timeouts)
    linear = RemoteGraph(LINEAR, url=url, timeouts=timeouts)
    sync_client = httpx.Client(base_url=url, timeout=httpx.Timeout(30.0, read=30.0))
    async_client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30.0, read=30.0))
    invoke_work = invoke_workload(linear)
    v3_work = V3Workload(ASSISTANT, run_input(n), (), "custom", None, n + 3)
    try:
        calls: dict[str, Callable[[], First]] = {
            "invoke": lambda: guard.run_sync(lambda: invoke_first(linear)),
            "raw_invoke": lambda: guard.run_sync(lambda: timed(lambda: raw_classic_sync(sync_client, invoke_work))),
            "v3_sync": lambda: guard.run_sync(lambda: timed(lambda: rg_sync(graph, n))),
            "raw_v3_sync": lambda: guard.run_sync(lambda: timed(lambda: raw_classic_sync(sync_client, v3_work))),
            "v3_async": lambda: guard.run_async(lambda: atimed(lambda: rg_async(graph, n))),
            "raw_v3_async": lambda: guard.run_async(lambda: atimed(lambda: raw_classic_async(async_client, v3_work))),
        }
        for name in FIRST_VARIANTS:  # warm-up: imports, connections, the graphs' schemas
            calls[name]()
        taken: dict[str, list[First]] = {name: [] for name in FIRST_VARIANTS}
        for r in range(rounds):
            for name in FIRST_VARIANTS[r % len(FIRST_VARIANTS) :] + FIRST_VARIANTS[: r % len(FIRST_VARIANTS)]:
                first = calls[name]()
                if name == "raw_invoke" and first.sample is not None:
                    check_count(first.sample, invoke_work.items, name)
                    first.sample = None  # a classic stream: its frames carry no timestamps
                elif first.sample is not None:
                    stamp_server_side(sync_client, check_items(first.sample, n))
                taken[name].append(first)
            print(
                f"  round {r + 1}/{rounds}: "
                + "  ".join(
                    f"{name}={taken[name][-1].first * 1e3:.0f}/{taken[name][-1].end * 1e3:.0f}ms"
                    for name in FIRST_VARIANTS
                ),
                flush=True,
            )
        return taken
    finally:
        close_clients(guard.loop, sync_client, async_client, (graph, linear))


def first_event_figures(taken: dict[str, list[First]]) -> dict[str, Any]:
    """Medians per variant, and RemoteGraph minus raw (the difference of the medians, and the median of the
    per-round differences)."""
    figures: dict[str, Any] = {
        "first_ms": {k: round(median([f.first for f in v]) * 1e3, 1) for k, v in taken.items()},
        "end_ms": {k: round(median([f.end for f in v]) * 1e3, 1) for k, v in taken.items()},
        "split_ms": {
            k: {
                "create": round(median([f.sample.before_create for f in v if f.sample]) * 1e3, 1),
                "server": round(median([f.sample.pickup for f in v if f.sample]) * 1e3, 1),
                "deliver": round(median([f.sample.delivery for f in v if f.sample]) * 1e3, 1),
            }
            for k, v in taken.items()
            if v and v[0].sample is not None
        },
        "over_raw_ms": {},
        # Calls whose return came more than LATE_CLOSE after their first event: the server held the
        # stream open after the run's last event (a wait of about 0.5 s on the replica stack).
        "late_close": {k: sum(f.end - f.first > LATE_CLOSE for f in v) for k, v in taken.items()},
    }
    for pair, (rg, raw) in FIRST_PAIRS.items():
        figures["over_raw_ms"][pair] = {
            "first": round(figures["first_ms"][rg] - figures["first_ms"][raw], 1),
            "first_paired": round(median([(a.first - b.first) * 1e3 for a, b in zip(taken[rg], taken[raw])]), 1),
            "end": round(figures["end_ms"][rg] - figures["end_ms"][raw], 1),
        }
    return figures


# --- phase 2: CPU per event --------------------------------------------------------------


def cpu_rounds(url: str, rounds: int, n: int, guard: Guard, timeouts: Timeouts) -> dict[str, list[Sample]]:
    graph = RemoteGraph(ASSISTANT, url=url, stream_transformers=TRANSFORMERS, timeouts=timeouts)
    sync_client = httpx.Client(base_url=url, timeout=httpx.Timeout(30.0, read=30.0))
    async_client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30.0, read=30.0))
    custom = classic_workloads(n)["custom"]
    try:
        samples: dict[str, Callable[[], Sample]] = {
            "raw_sync": lambda: guard.run_sync(lambda: raw_sync(sync_client, n)),
            "rg_sync": lambda: guard.run_sync(lambda: rg_sync(graph, n)),
            "raw_async": lambda: guard.run_async(lambda: raw_async(async_client, n)),
            "rg_async": lambda: guard.run_async(lambda: rg_async(graph, n)),
            "raw_stream": lambda: guard.run_sync(lambda: raw_classic_sync(sync_client, custom)),
            "stream": lambda: guard.run_sync(lambda: rg_stream(graph, custom, "custom")),
            "raw_astream": lambda: guard.run_async(lambda: raw_classic_async(async_client, custom)),
            "astream": lambda: guard.run_async(lambda: rg_astream(graph, custom, "custom")),
        }
        for name in CPU_VARIANTS:
            samples[name]()
        runs: dict[str, list[Sample]] = {name: [] for name in CPU_VARIANTS}
        for r in range(rounds):
            for name in CPU_VARIANTS[r % len(CPU_VARIANTS) :] + CPU_VARIANTS[: r % len(CPU_VARIANTS)]:
                runs[name].append(check_count(samples[name](), n + 3, name))
            print(
                f"  round {r + 1}/{rounds}: "
                + "  ".join(f"{k}={v[-1].cpu * 1e6 / v[-1].items:.0f}us,{v[-1].evs:,.0f}ev/s" for k, v in runs.items()),
                flush=True,
            )
        return runs
    finally:
        close_clients(guard.loop, sync_client, async_client, (graph,))


def cpu_figures(runs: dict[str, list[Sample]]) -> dict[str, Any]:
    def per_event(s: Sample) -> float:
        return s.cpu / s.items

    return {
        "items": runs["rg_sync"][0].items,
        "cpu_us_per_event": {k: round(median([per_event(s) for s in v]) * 1e6, 2) for k, v in runs.items()},
        "evs_median": {k: round(median([s.evs for s in v]), 1) for k, v in runs.items()},
        "cpu_ratio": {
            pair: round(median([per_event(a) / per_event(b) for a, b in zip(runs[rg], runs[raw])]), 3)
            for pair, (rg, raw) in CPU_PAIRS.items()
        },
        "evs_ratio": {
            pair: round(median([a.evs / b.evs for a, b in zip(runs[rg], runs[raw])]), 3)
            for pair, (rg, raw) in CPU_PAIRS.items()
        },
    }


# --- the run -----------------------------------------------------------------------------


def print_first(title: str, figures: dict[str, Any]) -> None:
    print(title)
    print(f"  {'variant':<40}{'1st event ms':>13}{'return ms':>11}{'late':>6}{'create':>9}{'server':>9}{'deliver':>9}")
    for name in FIRST_VARIANTS:
        split = figures["split_ms"].get(name)
        parts = "".join(f"{split[k]:>9.1f}" for k in ("create", "server", "deliver")) if split else ""
        print(
            f"  {FIRST_LABELS[name]:<40}{figures['first_ms'][name]:>13.1f}{figures['end_ms'][name]:>11.1f}"
            f"{figures['late_close'][name]:>6}{parts}"
        )
    for pair, over in figures["over_raw_ms"].items():
        print(
            f"  {pair}: RemoteGraph - raw: first event {over['first']:+.1f} ms (paired {over['first_paired']:+.1f}), "
            f"return {over['end']:+.1f} ms"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every figure on a smaller scale")
    parser.add_argument("--replicas-python", default=None, help="the langhost virtualenv (ReplicaServer's python=)")
    parser.add_argument("--jobs", type=int, default=32, help="runs each replica executes at once (default 32)")
    parser.add_argument("--concurrent", type=int, default=None, help="runs at once in phase 3 (full: 500)")
    parser.add_argument(
        "--concurrent-timeout", type=float, default=300.0, help="seconds each batch of concurrent runs may take"
    )
    parser.add_argument("--no-embedded", action="store_true", help="skip phase 1 on the embedded server")
    parser.add_argument("--sample-timeout", type=float, default=120.0, help="seconds one sample may take")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds the whole benchmark may take")
    parser.add_argument("--config", default=str(ROOT / "app" / "langgraph.json"), help="the served langgraph.json")
    parser.add_argument("--serve-stack", action="store_true", help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--stack-lifetime", type=float, default=3600.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_stack:
        return serve_stack(args.replicas_python, args.jobs, args.config, args.stack_lifetime)
    warnings.filterwarnings("ignore", message="The v3 streaming protocol", category=Warning)
    scale = QUICK if args.quick else FULL
    concurrent = args.concurrent or scale.concurrent
    budget = Budget(args.budget, args.sample_timeout)
    timeouts = Timeouts(request=30.0, read=30.0, reconnect=15.0)
    graph_module.InvokeCollector = StampedCollector  # type: ignore[attr-defined]  # invoke's first chunk, stamped
    began, load_before = time.monotonic(), os.getloadavg()
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    loop = asyncio.new_event_loop()
    guard = Guard(budget, loop)
    result: dict[str, Any] = {"scale": "quick" if args.quick else "full", "date": date, **scale.__dict__}
    result["concurrent"] = concurrent
    try:
        with replica_stack(args.replicas_python, args.jobs, args.config) as stack:
            url = stack["url"]
            print(
                f"replica stack up in {time.monotonic() - began:.1f} s at {url} ({len(stack['replicas'])} replicas, "
                f"--n-jobs-per-worker {args.jobs}); {scale}",
                flush=True,
            )
            print("1. first event, replica stack", flush=True)
            replicas_first = first_event_figures(
                first_event_rounds(url, scale.first_rounds, scale.first_n, guard, timeouts)
            )
            print("2. CPU per event, replica stack", flush=True)
            replicas_cpu = cpu_figures(cpu_rounds(url, scale.cpu_rounds, scale.cpu_n, guard, timeouts))
            print(f"3. {concurrent} concurrent runs, replica stack", flush=True)
            # Each batch gets --concurrent-timeout; what is still going then is cancelled and counted.
            wait = args.concurrent_timeout
            conc = guard.run_async(lambda: concurrent_runs.many(url, concurrent, 30.0, wait), wait + 90.0)
            print(f"  RemoteGraph: {conc}", flush=True)
            conc_raw = guard.run_async(lambda: concurrent_runs.many_raw(url, concurrent, 30.0, wait), wait + 90.0)
            print(f"  raw: {conc_raw}", flush=True)
        result["replicas"] = {
            "replicas": 2,
            "jobs_per_replica": args.jobs,
            "first_event": replicas_first,
            "cpu": replicas_cpu,
            "concurrent": {"remote_graph": conc, "raw": conc_raw},
        }
        if not args.no_embedded:
            print("1. first event, embedded langgraph dev", flush=True)
            with LangGraphDevServer(args.config, startup_timeout=90.0, n_jobs_per_worker=N_JOBS_PER_WORKER) as server:
                embedded_first = first_event_figures(
                    first_event_rounds(server.url, scale.first_rounds, scale.first_n, guard, timeouts)
                )
            result["embedded"] = {"first_event": embedded_first}
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), 10.0))
    finally:
        loop.close()

    print()
    print_first(
        f"first event, replica stack (medians of {scale.first_rounds} rounds; v3 runs of {scale.first_n + 3} events)",
        replicas_first,
    )
    if "embedded" in result:
        print_first("first event, embedded langgraph dev", result["embedded"]["first_event"])
        result["replicas_over_embedded_first"] = {
            name: round(replicas_first["first_ms"][name] / result["embedded"]["first_event"]["first_ms"][name], 3)
            for name in FIRST_VARIANTS
        }
    print(f"CPU per event, replica stack ({replicas_cpu['items']} items a run, medians of {scale.cpu_rounds} rounds)")
    for name in CPU_VARIANTS:
        print(
            f"  {CPU_LABELS[name]:<40}{replicas_cpu['cpu_us_per_event'][name]:>8.1f} us"
            f"{replicas_cpu['evs_median'][name]:>9,.0f} ev/s"
        )
    for pair in CPU_PAIRS:
        print(
            f"  {pair}: CPU {replicas_cpu['cpu_ratio'][pair]:.2f}x raw, "
            f"live ev/s {replicas_cpu['evs_ratio'][pair]:.2f}x raw"
        )
    for who, figures in (("RemoteGraph", conc), ("raw httpx", conc_raw)):
        print(
            f"{concurrent} concurrent runs, {who}: {figures['ok']}/{figures['runs']} succeeded, "
            f"wall {figures['wall_s']} s, client CPU {figures['cpu_s']} s, errors {figures['errors']}"
        )
    result["load"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    result["elapsed_s"] = round(time.monotonic() - began, 1)
    print("BENCH " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
