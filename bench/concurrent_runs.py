"""Many v3 runs in flight from one ``RemoteGraph``: do they all succeed?

Starts ``--runs`` concurrent ``astream_events(..., version="v3")`` of the ``linear``
graph from one async ``RemoteGraph``, each followed by ``await run.output()``, and
counts what succeeded and what failed, by error. Each run's stream holds one of the
client's connections for as long as the run goes, so this is what shows whether the
client's pool lets every run through (it once failed runs with ``PoolTimeout``).
With ``--raw``, the same number of runs is then read by a raw httpx client (each
``POST /threads/{id}/runs/stream`` with the body RemoteGraph sends, read to its end,
then the run's status), for comparison.

The server is the embedded ``langgraph dev`` (``--server embedded``, the default),
the replica stack (``--server replicas``, with ``--replicas-python`` naming the
langhost virtualenv; it runs in a child process, ``replicas.replica_stack``, so
its balancer's work is not this process's), or a URL. Each batch is given
``--timeout`` seconds: runs still going then are cancelled and counted as
unfinished. Prints one ``CONCURRENT {json}`` line.

    python bench/concurrent_runs.py [--runs 500] [--server embedded|replicas|URL] [--jobs 32] [--raw]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from bench import V3_MARKER, V3_STREAM_MODES  # noqa: E402
from remote_graph import RemoteGraph, Timeouts  # noqa: E402
from remote_graph.testing import LangGraphDevServer  # noqa: E402

LINEAR = {"x": 1, "log": []}
# What RemoteGraph asks of a v3 run (as ``bench.run_body``), for the raw client.
V3_BODY: dict[str, Any] = {
    "assistant_id": "linear",
    "input": LINEAR,
    "config": {"configurable": {V3_MARKER: True}},
    "stream_mode": list(V3_STREAM_MODES),
    "stream_subgraphs": True,
    "stream_resumable": True,
    "if_not_exists": "create",
}


async def one(graph: RemoteGraph) -> str | None:
    """``None`` when the run succeeded, else its error's type and first words."""
    try:
        async with await graph.astream_events(LINEAR, version="v3") as run:
            output = await run.output()
        if not isinstance(output, dict) or output.get("log") != ["a", "b"]:
            return f"wrong output {output!r}"[:120]
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:100]}"
    return None


async def raw_one(client: httpx.AsyncClient) -> str | None:
    """The same run through a raw client: started with its stream, read to the end, then its status."""
    thread_id = str(uuid.uuid4())
    run_id = ""
    try:
        path = f"/threads/{thread_id}/runs/stream"
        async with client.stream("POST", path, json=V3_BODY, headers={"accept": "text/event-stream"}) as response:
            response.raise_for_status()
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event == "metadata" and not run_id:
                    run_id = json.loads(line[5:])["run_id"]
                elif line.startswith("data:") and event == "error":
                    return f"error frame: {line[5:100]}"
        if not run_id:
            return "the stream ended without its metadata frame"
        record = await client.get(f"/threads/{thread_id}/runs/{run_id}")
        record.raise_for_status()
        if (status := record.json().get("status")) != "success":
            return f"status {status!r}"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:100]}"
    return None


async def _at_once(one: Callable[[], Awaitable[str | None]], runs: int, timeout: float) -> dict[str, Any]:
    """Start ``runs`` calls of ``one`` at once and wait at most ``timeout`` seconds for them.

    Returns how many succeeded, the errors (the five most common), how many were
    still going at the deadline (they are then cancelled), the wall time until the
    last one ended (or the deadline), when the first half had ended, and the
    client's CPU time.
    """
    cpu0, started = time.process_time(), time.perf_counter()
    ended: list[float] = []
    tasks = [asyncio.ensure_future(one()) for _ in range(runs)]
    for task in tasks:
        task.add_done_callback(lambda _: ended.append(time.perf_counter() - started))
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=30.0)
    results = [task.result() for task in done]
    errors = collections.Counter(r for r in results if r is not None)
    half = sorted(ended)[runs // 2 - 1] if len(ended) >= runs // 2 > 0 else None
    return {
        "runs": runs,
        "ok": results.count(None),
        "unfinished": len(pending),
        "wall_s": round(wall, 1),
        "half_s": None if half is None else round(half, 1),
        "cpu_s": round(cpu, 2),
        "errors": dict(errors.most_common(5)),
    }


async def many(url: str, runs: int, request_timeout: float, timeout: float = 600.0) -> dict[str, Any]:
    """``runs`` v3 runs at once from one async ``RemoteGraph``, within ``timeout`` seconds (``_at_once``)."""
    graph = RemoteGraph("linear", url=url, timeouts=Timeouts(request=request_timeout))
    try:
        await one(graph)  # the schemas and the client, learned once
        return await _at_once(lambda: one(graph), runs, timeout)
    finally:
        if graph.client is not None:
            await asyncio.wait_for(graph.client.aclose(), 30.0)


async def many_raw(url: str, runs: int, request_timeout: float, timeout: float = 600.0) -> dict[str, Any]:
    """The same with a raw httpx client, its pool unbounded (one connection a run)."""
    http_timeout = httpx.Timeout(request_timeout, read=30.0)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=http_timeout, limits=limits) as client:
        await raw_one(client)
        return await _at_once(lambda: raw_one(client), runs, timeout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--server", default="embedded", help="embedded, replicas or a URL")
    parser.add_argument("--jobs", type=int, default=32, help="runs each server process executes at once")
    parser.add_argument("--replicas-python", default=None, help="replicas: the langhost virtualenv")
    parser.add_argument("--raw", action="store_true", help="then the same runs through a raw httpx client")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds each batch of runs may take; runs still going then are cancelled and counted",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        help="Timeouts.request, which also bounds a wait for a pooled connection (default 30)",
    )
    args = parser.parse_args()
    config = ROOT / "app" / "langgraph.json"
    with ExitStack() as stack:
        if args.server == "embedded":
            url = stack.enter_context(LangGraphDevServer(config, n_jobs_per_worker=args.jobs)).url
        elif args.server == "replicas":
            from replicas import replica_stack

            url = stack.enter_context(replica_stack(args.replicas_python, args.jobs, str(config)))["url"]
        else:
            url = args.server
        result = asyncio.run(many(url, args.runs, args.request_timeout, args.timeout))
        if args.raw:
            result["raw"] = asyncio.run(many_raw(url, args.runs, args.request_timeout, args.timeout))
    print("CONCURRENT " + json.dumps({"server": args.server, "jobs": args.jobs, **result}))


if __name__ == "__main__":
    main()
