"""The classic surface's data path through cut connections: ``invoke``, ``ainvoke``,
``stream``, ``astream`` and ``astream_events`` on the ``swarm`` graph (150 custom
events, then 150 ``Send``s each writing one more and returning a result), through
the cutting proxy (``cutproxy.py``), which cuts every event stream after a few
kilobytes. Every run must be intact: every chunk and event exactly once, the
right output, no error, and the proxy must really have cut the API's streams.

The soak test runs many runs per API (``-m soak``); a short variant of one run
per API keeps a regression from reaching the soak lane unseen. With
``CONFORMANCE_LANES=local`` the same checks run on the local graph, without proxy:
a check of the checks.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import pytest

from tests.integration.cutproxy import CuttingProxy
from tests.integration.lanes import LANES, ONLY_LOCAL, Lane

pytestmark = pytest.mark.integration

N = 150
# Response bytes an event stream gets through the cutting proxy before each cut.
# The top must clear the largest frame with room to spare, or no connection
# could ever carry it: astream_events' end of the fan-out node (its 150 Sends)
# is about 7.7 kB.
CUT_BYTES = (300, 16000)
# astream_events' stream is about 400 kB (the others' 20-40 kB), and the
# in-memory server gives every frame of one millisecond the same id, so each
# resume replays up to about 11 kB (two milliseconds of the fan-out's events)
# before anything new: with CUT_BYTES a run takes some 150 connections and a
# minute. This range cuts it about as often per kB of news as the others.
CUT_BYTES_BY_API = {"astream_events": (4000, 64000)}
# API -> the lane flavour and the lane operation that drives it.
APIS = {"invoke": "sync", "ainvoke": "async", "stream": "sync", "astream": "async", "astream_events": "async"}
EXPECTED = {"n": N, "results": [i * i for i in range(N)]}
MODES = ["custom", "updates", "values"]


def problems_of_chunks(chunks: list[Any]) -> list[str]:
    """What is wrong with a swarm run's ``stream_mode=["custom", "updates", "values"]`` chunks."""
    by_mode: dict[str, list[Any]] = {"custom": [], "updates": [], "values": []}
    for mode, data in chunks:
        by_mode[mode].append(data)
    found = []
    plan = [e for e in by_mode["custom"] if "i" in e]
    if plan != [{"i": i} for i in range(N)]:
        seen = Counter(e.get("i") for e in plan)
        missing, twice = [i for i in range(N) if i not in seen][:5], [i for i, c in seen.items() if c > 1][:5]
        found.append(f"plan's custom events: {len(plan)} of {N}, missing {missing}, twice {twice}")
    workers = Counter(e.get("worker") for e in by_mode["custom"] if "worker" in e)
    if workers != Counter(range(N)) or len(by_mode["custom"]) != 2 * N:
        custom = len(by_mode["custom"])
        found.append(f"workers' custom events: {sum(workers.values())} for {N} workers, {custom} custom events in all")
    work = Counter(u["work"]["results"][0] for u in by_mode["updates"] if "work" in u)
    if (
        work != Counter(i * i for i in range(N))
        or by_mode["updates"].count({"plan": None}) != 1
        or len(by_mode["updates"]) != N + 1
    ):
        found.append(f"updates: {len(by_mode['updates'])} for {N + 1}, {sum(work.values())} from workers")
    if by_mode["values"] != [{"n": N, "results": []}, EXPECTED]:
        last = "right" if by_mode["values"][-1:] == [EXPECTED] else "wrong"
        found.append(f"values: {len(by_mode['values'])} snapshots, the last {last}")
    return found


def problems_of_events(events: list[dict[str, Any]]) -> list[str]:
    """What is wrong with a swarm run's ``astream_events(version="v2")`` events."""
    found = []
    # The root run is named as its graph is: "LangGraph" locally, the assistant
    # id remotely (docs/divergences.md).
    root = next((e["name"] for e in events if e["event"] == "on_chain_start" and not e["parent_ids"]), "LangGraph")
    counts = Counter((e["event"], "LangGraph" if e["name"] == root else e["name"]) for e in events)
    want = {
        ("on_chain_start", "work"): N,
        ("on_chain_stream", "work"): N,
        ("on_chain_end", "work"): N,
        ("on_chain_stream", "LangGraph"): N + 1,
        ("on_chain_start", "plan"): 1,
        ("on_chain_end", "plan"): 1,
    }
    wrong = {key: (counts.get(key, 0), n) for key, n in want.items() if counts.get(key, 0) != n}
    if wrong:
        found.append(f"event counts (got, want): {wrong}")
    starts = Counter(e["run_id"] for e in events if e["event"] == "on_chain_start")
    ends = Counter(e["run_id"] for e in events if e["event"] == "on_chain_end")
    if max(starts.values(), default=0) > 1 or starts != ends:
        found.append(
            f"{len(starts)} runs started, {len(ends)} ended, {sum(c > 1 for c in starts.values())} started twice"
        )
    roots = [e for e in events if e["event"] == "on_chain_end" and not e["parent_ids"]]
    if len(roots) != 1 or roots[0]["data"].get("output") != EXPECTED:
        output = "right" if roots and roots[0]["data"].get("output") == EXPECTED else "wrong"
        found.append(f"{len(roots)} root ends, output {output}")
    return found


def one_run(lane: Lane, api: str) -> list[str]:
    """Run ``api`` once on a new thread; return what was wrong with it."""
    graph = lane.graph("swarm")
    config = lane.thread()
    try:
        if api in ("invoke", "ainvoke"):
            output = lane.invoke(graph, {"n": N, "results": []}, config)
            return [] if output == EXPECTED else [f"output: {len(output.get('results', []))} results, equal: False"]
        if api in ("stream", "astream"):
            return problems_of_chunks(lane.stream(graph, {"n": N, "results": []}, config, stream_mode=MODES))
        return problems_of_events(lane.events(graph, {"n": N, "results": []}, config))
    except Exception as exc:
        return [f"raised {type(exc).__name__}: {exc}"]


def soak(url: str, api: str, runs: int) -> None:
    """``runs`` runs of ``api`` through the cutting proxy (or locally): all intact, and cut."""
    failures: list[str] = []
    started = time.monotonic()
    if ONLY_LOCAL:
        lane = LANES[("local", APIS[api])]("")
        try:
            for run in range(runs):
                failures.extend(f"run {run}: {p}" for p in one_run(lane, api))
        finally:
            lane.close()
        assert not failures, failures
        return
    rng = random.Random(f"classic-soak-{api}")
    with CuttingProxy(url, cut_range=CUT_BYTES_BY_API.get(api, CUT_BYTES), seed=rng.randrange(2**32)) as proxy:
        lane = LANES[("remote", APIS[api])](proxy.url)
        try:
            for run in range(runs):
                failures.extend(f"run {run}: {p}" for p in one_run(lane, api))
        finally:
            lane.close()
        cuts = proxy.cuts
    print(f"\n{api}: {runs} runs in {time.monotonic() - started:.1f}s, {cuts} cuts")
    assert not failures, failures
    # The proxy cuts only event streams: an API whose data never went through one was not tested.
    assert cuts >= runs, f"{api}: {cuts} cuts in {runs} runs; its data did not go through a cut event stream"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("api", sorted(APIS))
def test_swarm_through_cut_connections_short(api: str, request: pytest.FixtureRequest) -> None:
    """One run per API: intact through cut connections."""
    soak("" if ONLY_LOCAL else request.getfixturevalue("server_url"), api, runs=1)


@pytest.mark.soak
@pytest.mark.timeout(420)  # 10 runs at about 1 s of server pickup each, plus the reconnects
@pytest.mark.parametrize("api", sorted(APIS))
def test_swarm_through_cut_connections_soak(api: str, request: pytest.FixtureRequest) -> None:
    """Ten runs per API: every run intact through cut connections."""
    soak("" if ONLY_LOCAL else request.getfixturevalue("server_url"), api, runs=10)
