"""What naming messages' nodes at their start costs: thread-state reads per run and their time.

Runs ``toolflow`` (a streamed summary at the root and one in a subgraph: two
steps that stream) and ``chat`` (one) on an embedded server, each run read to
its end through ``run.messages``, sync; and ``plain_chat`` / ``plain_agent``,
the same graphs served from a module without the hook (no ``updates``), where
a message the server ran past is named from the thread's recent states (the
history reads). The same runs are repeated with both reads switched off (the
node then comes from the node's ``updates``, or not at all), and the medians
compared. Prints one line per graph and a last line ``BENCH {json}``.

    python bench/node_reads.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from langchain_core.messages import HumanMessage  # noqa: E402

from remote_graph import RemoteGraph, _sync  # noqa: E402
from remote_graph._core.convert import WireConverter  # noqa: E402
from remote_graph.testing import LangGraphDevServer  # noqa: E402

warnings.filterwarnings("ignore", message="The v3 streaming protocol")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    reads: list[float] = []
    # Writer reads: a module without the hook names a message the server ran past from these.
    history: list[float] = []
    request = _sync.SyncRequests.request

    def timed(self: Any, action: Any) -> Any:
        started = time.perf_counter()
        reply = request(self, action)
        if action.params and "subgraphs" in action.params:
            reads.append(time.perf_counter() - started)
        elif action.path.endswith("/history"):
            history.append(time.perf_counter() - started)
        return reply

    _sync.SyncRequests.request = timed  # type: ignore[method-assign]
    wants_step, wants_writers = WireConverter.wants_step, WireConverter.wants_writers
    results: dict[str, Any] = {}
    with LangGraphDevServer(ROOT / "app" / "langgraph.json") as server:
        for graph_id in ("toolflow", "chat", "plain_chat", "plain_agent"):
            graph = RemoteGraph(graph_id, url=server.url)

            def one(graph: RemoteGraph = graph) -> float:
                started = time.perf_counter()
                run = graph.stream_events(
                    {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": str(uuid.uuid4())}}, version="v3"
                )
                for message in run.messages:
                    list(message.text)
                _ = run.output
                return time.perf_counter() - started

            one()
            reads.clear()
            history.clear()
            with_reads = [one() for _ in range(args.runs)]
            taken, writers = list(reads), list(history)
            WireConverter.wants_step = lambda self, method, params: None  # type: ignore[method-assign,assignment]
            WireConverter.wants_writers = lambda self, method, params: None  # type: ignore[method-assign,assignment]
            try:
                without = [one() for _ in range(args.runs)]
            finally:
                WireConverter.wants_step = wants_step  # type: ignore[method-assign]
                WireConverter.wants_writers = wants_writers  # type: ignore[method-assign]
            figures = {
                "reads_per_run": len(taken) / args.runs,
                "read_ms_median": statistics.median(taken) * 1000,
                "read_ms_p90": sorted(taken)[int(0.9 * len(taken))] * 1000,
                "history_reads_per_run": len(writers) / args.runs,
                "history_ms_median": statistics.median(writers) * 1000 if writers else 0.0,
                "run_ms_median_with": statistics.median(with_reads) * 1000,
                "run_ms_median_without": statistics.median(without) * 1000,
            }
            results[graph_id] = figures
            print(graph_id, " ".join(f"{k}={v:.1f}" for k, v in figures.items()))
    print("BENCH " + json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
