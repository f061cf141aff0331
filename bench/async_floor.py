"""What the async lane costs over the sync lane where no I/O is involved.

Two parts of the gap between ``RemoteGraph`` v3 async and sync are not the
client's own, and this measures both, with no server and no socket:

- **The lane.** A run's parts (``--n`` custom events between a root values
  part at each end) are handed to langgraph's run stream, sync
  (``GraphRunStream``) and async (``_private.ReadyPartPump``, the async run
  stream ``RemoteGraph`` uses, over a source that always has its next part
  ready), each with the mux ``RemoteGraph`` builds for the bench's
  transformers, and read through ``run.custom``. What differs is langgraph's
  async cursor, the pump's coroutine and ``StreamMux.apush``.
- **The read pause.** After a read that caught up, a run stream waits
  ``Timeouts.read_batch`` (1 ms) before the next: ``time.sleep`` on the sync
  lane, ``asyncio.sleep`` on the event loop. The CPU of one wait, each way.

The candidates run interleaved for several rounds, each timed by the CPU
time of this thread; medians, and the gaps are medians of the per-round
gaps. Prints the two figures, the gap they make per event at
``--reads-per-event`` (a 2,000-event run reads about 0.18 times an event on
this machine), and ``FLOOR {json}``.

    python bench/async_floor.py [--n 2000] [--rounds 15] [--waits 500] [--reads-per-event 0.18]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from langgraph.stream.run_stream import GraphRunStream  # noqa: E402

from app.graphs import TRANSFORMERS  # noqa: E402
from remote_graph import RemoteGraph  # noqa: E402
from remote_graph._private import ReadyPartPump  # noqa: E402

warnings.filterwarnings("ignore", message="The v3 streaming protocol")

PAUSE = 0.001


def parts(n: int) -> list[dict[str, Any]]:
    """The parts of a run writing ``n`` custom events, as ``RemoteGraph``'s source hands them over."""
    values = {"type": "values", "ns": (), "data": {"n": n}, "interrupts": []}
    custom = [{"type": "custom", "ns": (), "data": {"i": i, "msg": f"event {i}"}} for i in range(n)]
    return [values, *custom, {**values, "interrupts": []}]


class ReadySource:
    """A run source whose next part never needs I/O (``take_ready``), as after a read."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self._items: Iterator[dict[str, Any]] = iter(items)

    def take_ready(self) -> dict[str, Any] | None:
        return next(self._items, None)

    async def take_after_pause(self) -> None:
        return None

    def __aiter__(self) -> ReadySource:
        return self

    async def __anext__(self) -> dict[str, Any]:
        part = next(self._items, None)
        if part is None:
            raise StopAsyncIteration
        return part


def lane_sync(graph: RemoteGraph, n: int) -> float:
    items = parts(n)
    cpu = time.thread_time()
    run = GraphRunStream(iter(items), graph._deployment().mux(None, is_async=False))
    count = sum(1 for _ in run.custom)
    assert count == n, count
    return (time.thread_time() - cpu) / n * 1e6


async def lane_async(graph: RemoteGraph, n: int) -> float:
    items = parts(n)
    cpu = time.thread_time()
    run = ReadyPartPump(ReadySource(items), graph._deployment().mux(None, is_async=True))
    count = 0
    async for _ in run.custom:
        count += 1
    assert count == n, count
    return (time.thread_time() - cpu) / n * 1e6


def pause_sync(waits: int) -> float:
    cpu = time.thread_time()
    for _ in range(waits):
        time.sleep(PAUSE)
    return (time.thread_time() - cpu) / waits * 1e6


async def pause_async(waits: int) -> float:
    cpu = time.thread_time()
    for _ in range(waits):
        await asyncio.sleep(PAUSE)
    return (time.thread_time() - cpu) / waits * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--waits", type=int, default=500)
    parser.add_argument("--reads-per-event", type=float, default=0.18)
    args = parser.parse_args(argv)
    # The mux is built from the graph's settings alone: nothing is sent to this address.
    graph = RemoteGraph("bench", url="http://127.0.0.1:9", stream_transformers=TRANSFORMERS)
    loop = asyncio.new_event_loop()
    figures: dict[str, list[float]] = {"lane_sync": [], "lane_async": [], "pause_sync": [], "pause_async": []}
    try:
        lane_sync(graph, args.n)
        loop.run_until_complete(lane_async(graph, args.n))
        pause_sync(args.waits // 10)
        loop.run_until_complete(pause_async(args.waits // 10))
        for _ in range(args.rounds):
            figures["lane_sync"].append(lane_sync(graph, args.n))
            figures["lane_async"].append(loop.run_until_complete(lane_async(graph, args.n)))
            figures["pause_sync"].append(pause_sync(args.waits))
            figures["pause_async"].append(loop.run_until_complete(pause_async(args.waits)))
    finally:
        loop.close()
    med = {name: statistics.median(values) for name, values in figures.items()}
    lane_gap = statistics.median(a - s for a, s in zip(figures["lane_async"], figures["lane_sync"]))
    pause_gap = statistics.median(a - s for a, s in zip(figures["pause_async"], figures["pause_sync"]))
    per_event = lane_gap + pause_gap * args.reads_per_event
    print(f"lane, us CPU per event: sync {med['lane_sync']:.2f}, async {med['lane_async']:.2f} (+{lane_gap:.2f})")
    print(f"read pause, us CPU per wait: time.sleep {med['pause_sync']:.1f}, asyncio.sleep {med['pause_async']:.1f}")
    print(f"  (+{pause_gap:.1f}; at {args.reads_per_event} reads an event, +{pause_gap * args.reads_per_event:.2f})")
    print(f"async over sync with no I/O of the client's own: +{per_event:.2f} us per event")
    print("FLOOR " + json.dumps({**{k: round(v, 2) for k, v in med.items()}, "per_event": round(per_event, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
