"""What a v3 run stream costs per event when the server streams the classic modes instead.

A server without the v3 protocol (aegra, langgraph-api before v3) answers a
v3 run with the classic modes it asks for, which the client turns into the
parts a local v3 run has (``_core/classic_v3.py``). This measures that path
against today's (the server's v3 protocol events) on one embedded server, in
the same run: the ``classic`` runs are created without the v3 marker
(``tests/without_v3.py``), so the server streams exactly what a server without
the v3 protocol does.

Two workloads, read sync through ``stream_events(version="v3")``: ``custom``
(N custom events, read from ``run.custom``) and ``tokens`` (a model streaming
about 2N chunks, read from ``run.messages``). Each is also read by a raw httpx
client (same request body; every frame's JSON parsed), so each path has its own
floor. Rounds are interleaved; CPU is the client process's. Prints a table and
a last line ``BENCH {json}``; quote medians.

    python bench/classic_v3.py [--n 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so ``tests.without_v3`` imports when run as ``python bench/classic_v3.py``

from langchain_core.messages import HumanMessage  # noqa: E402

from remote_graph import RemoteGraph  # noqa: E402
from remote_graph.testing import LangGraphDevServer  # noqa: E402
from tests.without_v3 import V3_MARKER, ClientsWithoutV3  # noqa: E402

warnings.filterwarnings("ignore", message="The v3 streaming protocol")

MODES = ["values", "updates", "messages", "messages-tuple", "custom", "tasks", "checkpoints"]


def workload(graph_id: str, n: int) -> dict[str, Any]:
    if graph_id == "custom":
        return {"n": n, "results": []}
    return {"n": n, "messages": [HumanMessage("go")]}


def read_remote(graph: RemoteGraph, graph_id: str, n: int) -> int:
    """Read one run through the v3 projections; return how many items it gave."""
    run = graph.stream_events(workload(graph_id, n), {"configurable": {"thread_id": str(uuid.uuid4())}}, version="v3")
    if graph_id == "custom":
        count = sum(1 for _ in run.custom)
    else:
        count = sum(1 for message in run.messages for _ in message.text)
    if run.output is None:
        raise RuntimeError(f"{graph_id}: the run gave no output")
    return count


def read_raw(http: httpx.Client, graph_id: str, n: int, *, v3: bool) -> int:
    """Read the same run with httpx alone: every frame's JSON parsed; return the frames."""
    body = {
        "assistant_id": graph_id,
        "input": json.loads(json.dumps(workload(graph_id, n), default=lambda m: {"type": "human", "content": "go"})),
        "stream_mode": MODES,
        "stream_subgraphs": True,
        "stream_resumable": True,
        "on_disconnect": "continue",
        "if_not_exists": "create",
    }
    if v3:
        body["checkpoint"] = {V3_MARKER: True}
    frames = 0
    with http.stream("POST", f"/threads/{uuid.uuid4()}/runs/stream", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data:"):
                orjson.loads(line[5:])
                frames += 1
    return frames


def cpu(fn: Callable[[], int]) -> tuple[float, int]:
    started = time.process_time()
    count = fn()
    return time.process_time() - started, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with LangGraphDevServer(ROOT / "app" / "langgraph.json", n_jobs_per_worker=10) as server:
        classic = ClientsWithoutV3(server.url)
        raw = httpx.Client(base_url=server.url, timeout=120)
        try:
            for graph_id in ("custom", "tokens"):
                # One graph each, made once: their clients are reused across runs, as raw's is.
                v3_graph, classic_graph = RemoteGraph(graph_id, url=server.url), classic.graph(graph_id)
                ways: dict[str, Callable[[], int]] = {
                    "v3": lambda g=graph_id, r=v3_graph: read_remote(r, g, args.n),
                    "classic": lambda g=graph_id, r=classic_graph: read_remote(r, g, args.n),
                    "raw_v3": lambda g=graph_id: read_raw(raw, g, args.n, v3=True),
                    "raw_classic": lambda g=graph_id: read_raw(raw, g, args.n, v3=False),
                }
                for way in ways.values():  # warm-up
                    way()
                samples: dict[str, list[float]] = {name: [] for name in ways}
                counts: dict[str, int] = {}
                for _ in range(args.rounds):
                    for name, way in ways.items():
                        seconds, counts[name] = cpu(way)
                        samples[name].append(seconds)
                items = counts["v3"]
                if counts["classic"] != items:
                    raise RuntimeError(f"{graph_id}: v3 gave {items} items, classic {counts['classic']}")
                median = {name: statistics.median(values) for name, values in samples.items()}
                figures = {
                    "items": items,
                    "us_per_item_v3": median["v3"] / items * 1e6,
                    "us_per_item_classic": median["classic"] / items * 1e6,
                    "classic_over_v3": median["classic"] / median["v3"],
                    "v3_over_raw": median["v3"] / median["raw_v3"],
                    "classic_over_raw": median["classic"] / median["raw_classic"],
                    "raw_frames_v3": counts["raw_v3"],
                    "raw_frames_classic": counts["raw_classic"],
                }
                results[graph_id] = figures
                shown = (f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
                print(graph_id, " ".join(shown))
        finally:
            raw.close()
            classic.sync.close()
    print("BENCH " + json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
