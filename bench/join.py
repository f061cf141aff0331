"""What joining a run costs: a finished 2,000-event run joined against the same run read live, and a join's first event.

    python bench/join.py               # starts the embedded server; about a minute
    python bench/join.py --url URL     # a server already serving app/langgraph.json

Per round (medians over ``--rounds``): a ``ticks`` run of 2,000 custom events
(2,003 events in all) is read live with ``stream_events(version="v3")``, then
joined once it has ended (``join``, the whole replay). For each: the wall time
from the first pull to the end, and the client's CPU (this process's, over the
same span) per event. A join's first-event latency is timed from the ``join``
call to its first event, on the finished run and on a run just started with
``start`` (that one waits for the server to pick the run up, about 1 s on the
embedded server, which is the server's part, not the join's). It ends with a
``BENCH {json}`` line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from remote_graph import RemoteGraph
from remote_graph.testing import LangGraphDevServer

N = 2000
CONFIG = Path(__file__).resolve().parents[1] / "app" / "langgraph.json"


def _thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _read(run: Any) -> tuple[int, float, float, float]:
    """Events, wall seconds, client CPU seconds, seconds to the first event."""
    wall, cpu = time.perf_counter(), time.process_time()
    first = 0.0
    count = 0
    for _ in run:
        if count == 0:
            first = time.perf_counter() - wall
        count += 1
    return count, time.perf_counter() - wall, time.process_time() - cpu, first


def _round(graph: RemoteGraph) -> dict[str, float]:
    config = _thread()
    with graph.stream_events({"n": N}, config, version="v3") as run:
        live_events, live_wall, live_cpu, _ = _read(run)
        run_id = run.run_id
    thread_id = config["configurable"]["thread_id"]
    assert run_id is not None
    with graph.join(run_id, thread_id=thread_id) as joined:
        join_events, join_wall, join_cpu, _ = _read(joined)
    assert join_events == live_events, (join_events, live_events)
    started = time.perf_counter()
    with graph.join(run_id, thread_id=thread_id) as joined:
        next(iter(joined))
        first_finished = time.perf_counter() - started
        joined.wait()
    handle = graph.start({"n": 50}, _thread())
    started = time.perf_counter()
    with graph.join(handle.run_id, thread_id=handle.thread_id) as joined:
        next(iter(joined))
        first_running = time.perf_counter() - started
        joined.wait()
    return {
        "events": live_events,
        "live_wall_s": live_wall,
        "join_wall_s": join_wall,
        "live_cpu_us_per_event": live_cpu / live_events * 1e6,
        "join_cpu_us_per_event": join_cpu / join_events * 1e6,
        "join_first_event_finished_ms": first_finished * 1e3,
        "join_first_event_running_ms": first_running * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server of app/langgraph.json (default: start the embedded one)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = None if args.url else LangGraphDevServer(CONFIG, n_jobs_per_worker=2).start()
    try:
        graph = RemoteGraph("ticks", url=args.url or server.url)  # type: ignore[union-attr]
        _round(graph)  # warm-up: imports, connections, the server's first run
        rounds = [_round(graph) for _ in range(args.rounds)]
    finally:
        if server is not None:
            server.stop()
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    for key, value in medians.items():
        print(f"{key:32} {value:10.2f}")
    print("BENCH " + json.dumps({"join": medians, "rounds": args.rounds}))


if __name__ == "__main__":
    main()
