"""Many v3 runs in flight from one ``RemoteGraph``: do they all succeed?

Starts ``--runs`` concurrent ``astream_events(..., version="v3")`` of the ``linear``
graph from one async ``RemoteGraph``, each followed by ``await run.output()``, and
counts what succeeded and what failed, by error. Each run's stream holds one of the
client's connections for as long as the run goes, so this is what shows whether the
client's pool lets every run through (it once failed runs with ``PoolTimeout``).

The server is the embedded ``langgraph dev`` (``--server embedded``, the default),
the replica stack (``--server replicas``, with ``--replicas-python`` naming the
langhost virtualenv), or a URL. Prints one ``CONCURRENT {json}`` line.

    python bench/concurrent_runs.py [--runs 500] [--server embedded|replicas|URL] [--jobs 32] [--request-timeout 30]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from remote_graph import RemoteGraph, Timeouts  # noqa: E402
from remote_graph.testing import LangGraphDevServer, ReplicaServer, Server  # noqa: E402

LINEAR = {"x": 1, "log": []}


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


async def many(url: str, runs: int, request_timeout: float) -> dict[str, Any]:
    graph = RemoteGraph("linear", url=url, timeouts=Timeouts(request=request_timeout))
    await one(graph)  # the schemas and the client, learned once
    started = time.perf_counter()
    results = await asyncio.gather(*(one(graph) for _ in range(runs)))
    wall = time.perf_counter() - started
    errors = collections.Counter(r for r in results if r is not None)
    return {"runs": runs, "ok": results.count(None), "wall_s": round(wall, 1), "errors": dict(errors.most_common(5))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--server", default="embedded", help="embedded, replicas or a URL")
    parser.add_argument("--jobs", type=int, default=32, help="runs each server process executes at once")
    parser.add_argument("--replicas-python", default=None, help="replicas: the langhost virtualenv")
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        help="Timeouts.request, which also bounds a wait for a pooled connection (default 30)",
    )
    args = parser.parse_args()
    config = ROOT / "app" / "langgraph.json"
    server: Server | None = None
    if args.server == "embedded":
        server = LangGraphDevServer(config, n_jobs_per_worker=args.jobs)
    elif args.server == "replicas":
        server = ReplicaServer(config, python=args.replicas_python, n_jobs_per_worker=args.jobs)
    try:
        url = server.start().url if server is not None else args.server
        result = asyncio.run(many(url, args.runs, args.request_timeout))
    finally:
        if server is not None:
            server.stop()
    print("CONCURRENT " + json.dumps({"server": args.server, "jobs": args.jobs, **result}))


if __name__ == "__main__":
    main()
