"""A replica lost mid-run: every event once, no hang, and no error, on every run method.

A stack of its own (``ReplicaServer``: two ``langhost`` replicas on one Postgres
and one Redis, behind a balancer, ``LG_BG_JOB_HEARTBEAT=5``) serves ``relay``:
three nodes, 20 ticks each, 0.1 s apart, each writing the PID of the replica
executing it to a file the test names. Once the run is in its second node, the
test signals either the replica *executing* it or the other one (which may be
*serving* the caller's stream), with ``SIGKILL`` (a crash) or ``SIGTERM`` (a
rolling deploy), then starts it again for the next trial.

- The serving replica: the balancer takes the reconnected stream elsewhere.
- The executing replica: the server queues the run again (at once on ``SIGTERM``;
  on ``SIGKILL`` once its heartbeat is 5 s stale) and the new attempt runs
  ``relay`` again from its latest checkpoint, sending the second node's ticks
  again under new ids. The caller must see each tick once (``attempts.py``).

The same stack also loses its stores mid-run (Redis restarted, Postgres down for
3 s: the runtime fails those runs, and the client must say what the server
says), and serves a run joined on the replica that did not start it.

Slow (about 20 s a trial), so soak-marked, and they need the replica stack's
virtualenv: CI runs them in the replica-faults lane (``-m soak
--remote-graph-server=replicas``); other lanes skip them.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph_sdk import get_sync_client

from remote_graph import RemoteGraph, RunStatus
from remote_graph.errors import RemoteGraphError, RemoteRunError
from remote_graph.pytest_plugin import config_path, server_choice
from remote_graph.testing import ReplicaServer

pytestmark = [pytest.mark.integration, pytest.mark.soak]

TICKS = 20
INPUT: dict[str, Any] = {"x": TICKS, "log": []}
OUTPUT = {"x": TICKS, "log": ["leg0", "leg1", "leg2"]}
# Into the second node: the first takes 2 s, the run's pickup well under a second.
KILL_AFTER = 2.5
# A trial must end well before this: the retried attempt starts within the heartbeat's
# staleness (5 s) plus the sweep, then runs 4 s.
BOUND = 90.0


@pytest.fixture(scope="module")
def stack(pytestconfig: pytest.Config) -> Iterator[ReplicaServer]:
    if server_choice(pytestconfig) != "replicas":
        pytest.skip("the replica fault tests run in the replica-faults lane: --remote-graph-server=replicas")
    server = ReplicaServer(
        config_path(pytestconfig),
        replicas=2,
        python=pytestconfig.getoption("--remote-graph-replicas-python"),
        bg_job_heartbeat=5.0,
    )
    with server:
        yield server


def _ticks(chunks: list[Any]) -> list[int]:
    return [chunk["tick"] for chunk in chunks]


def _stream(graph: RemoteGraph, config: RunnableConfig) -> Any:
    return _ticks(list(graph.stream(INPUT, config, stream_mode="custom")))


def _astream(graph: RemoteGraph, config: RunnableConfig) -> Any:
    async def go() -> list[Any]:
        return [chunk async for chunk in graph.astream(INPUT, config, stream_mode="custom")]

    return _ticks(asyncio.run(go()))


def _v3(graph: RemoteGraph, config: RunnableConfig) -> Any:
    run = graph.stream_events(INPUT, config, version="v3")
    ticks = _ticks(list(run.custom))
    assert run.output == OUTPUT
    return ticks


def _av3(graph: RemoteGraph, config: RunnableConfig) -> Any:
    async def go() -> list[Any]:
        run = await graph.astream_events(INPUT, config, version="v3")
        ticks = [chunk async for chunk in run.custom]
        assert await run.output() == OUTPUT
        return ticks

    return _ticks(asyncio.run(go()))


def _invoke(graph: RemoteGraph, config: RunnableConfig) -> Any:
    return graph.invoke(INPUT, config)


def _ainvoke(graph: RemoteGraph, config: RunnableConfig) -> Any:
    return asyncio.run(graph.ainvoke(INPUT, config))


CALLS: dict[str, tuple[Callable[[RemoteGraph, RunnableConfig], Any], Any]] = {
    "stream": (_stream, list(range(3 * TICKS))),
    "astream": (_astream, list(range(3 * TICKS))),
    "v3": (_v3, list(range(3 * TICKS))),
    "av3": (_av3, list(range(3 * TICKS))),
    "invoke": (_invoke, OUTPUT),
    "ainvoke": (_ainvoke, OUTPUT),
}


class _Fault(threading.Thread):
    """Strikes once the run is in its second node (``KILL_AFTER`` after its first node started)."""

    def __init__(self, stack: ReplicaServer, pid_file: Path) -> None:
        super().__init__(daemon=True)
        self.stack, self.pid_file = stack, pid_file
        self.done = False
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + 30
            while not self.pid_file.exists():
                if time.monotonic() > deadline:
                    raise TimeoutError("the run never started")
                time.sleep(0.02)
            time.sleep(KILL_AFTER)
            self.strike(int(self.pid_file.read_text()))
            self.done = True
        except BaseException as exc:  # reported by the test
            self.error = exc

    def strike(self, executing_pid: int) -> None:
        raise NotImplementedError


class _Killer(_Fault):
    """Signals the replica executing the run, or the other one."""

    def __init__(self, stack: ReplicaServer, pid_file: Path, executing: bool, sig: signal.Signals) -> None:
        super().__init__(stack, pid_file)
        self.executing, self.sig = executing, sig
        self.victim: int | None = None

    def strike(self, executing_pid: int) -> None:
        executing = self.stack.replica_pids.index(executing_pid)
        self.victim = executing if self.executing else 1 - executing
        self.stack.signal_replica(self.victim, self.sig)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("target", ["executing", "serving"])
@pytest.mark.parametrize("call", list(CALLS))
def test_a_replica_lost_mid_run_loses_and_repeats_nothing(
    stack: ReplicaServer, tmp_path: Path, call: str, target: str, sig: signal.Signals
) -> None:
    method, expected = CALLS[call]
    pid_file = tmp_path / "pid"
    thread_id = str(uuid.uuid4())
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "pid_file": str(pid_file)}}
    killer = _Killer(stack, pid_file, target == "executing", sig)
    killer.start()
    started = time.monotonic()
    try:
        got = method(RemoteGraph("relay", url=stack.url), config)
        took = time.monotonic() - started
    finally:
        killer.join(35)
        if killer.victim is not None:
            stack.restart_replica(killer.victim)
    assert killer.error is None and killer.victim is not None
    assert got == expected
    assert took < BOUND
    runs = get_sync_client(url=stack.url).runs.list(thread_id)
    assert [run["status"] for run in runs] == ["success"]


# --- what the server does, not the client: a probe (docs/divergences.md) -------------------


def _replay(url: str, thread_id: str, run_id: str) -> list[tuple[str, Any]]:
    """Every stored frame of a finished run, as ``(event, data)``."""
    client = get_sync_client(url=url)
    return [
        (part.event, part.data)
        for part in client.runs.join_stream(thread_id, run_id, last_event_id="0-0")  # the whole stream
    ]


@pytest.mark.timeout(240)
def test_probe_a_retried_attempts_events_have_new_run_ids(stack: ReplicaServer, tmp_path: Path) -> None:
    # Why astream_events cannot drop a retried attempt's repeats: its events mode
    # frames name the root chain and the rerun node under new run ids.
    client = get_sync_client(url=stack.url)
    pid_file = tmp_path / "pid"
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(
        thread_id,
        "relay",
        input=INPUT,
        config={"configurable": {"pid_file": str(pid_file)}},
        stream_mode="events",
        stream_resumable=True,
    )
    killer = _Killer(stack, pid_file, True, signal.SIGKILL)
    killer.start()
    killer.join(35)
    if killer.victim is not None:
        stack.restart_replica(killer.victim)
    assert killer.error is None and killer.victim is not None
    # A new client: the old one's kept-alive connections may lead to the killed replica.
    assert get_sync_client(url=stack.url).runs.join(thread_id, run["run_id"]) == OUTPUT
    frames = _replay(stack.url, thread_id, run["run_id"])
    attempts = [data["attempt"] for event, data in frames if event == "metadata"]
    assert attempts == [1, 2]
    starts = [
        (data["name"], data["run_id"])
        for event, data in frames
        if event == "events" and data["event"] == "on_chain_start"
    ]
    root_runs = {run_id for name, run_id in starts if name == "relay"}
    leg1_runs = {run_id for name, run_id in starts if name == "leg1"}
    assert len(root_runs) == 2 and len(leg1_runs) == 2


# --- joins across replicas -------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["v3", "classic"])
def test_a_run_started_on_one_replica_is_joined_on_the_other_once_from_a_cursor(
    stack: ReplicaServer, kind: str
) -> None:
    # Started past the balancer on replica 0, read halfway on replica 1, then
    # joined from the cursor on replica 0 by a second reader: every tick once, in
    # order. (The first reader stays open: leaving a join early cancels the run.)
    first, second = (RemoteGraph("relay", url=url) for url in stack.replica_urls)
    thread_id = str(uuid.uuid4())
    classic: dict[str, Any] = {} if kind == "v3" else {"stream_mode": "custom"}
    modes: dict[str, Any] = {} if kind == "v3" else {"version": "v2", **classic}

    def tick(item: Any) -> int | None:
        if kind == "v3":
            return item["params"]["data"]["tick"] if item["method"] == "custom" else None
        return int(item["data"]["tick"])

    handle = first.start(INPUT, {"configurable": {"thread_id": thread_id}}, **classic)
    reader = second.join(handle.run_id, thread_id=thread_id, **modes)
    seen: list[int] = []
    for item in reader:
        if (value := tick(item)) is not None:
            seen.append(value)
        if len(seen) == 25:
            break
    cursor = reader.cursor
    rest = [
        value
        for item in first.join(handle.run_id, thread_id=thread_id, after=cursor, **modes)
        if (value := tick(item)) is not None
    ]
    assert seen + rest == list(range(3 * TICKS))
    assert handle.wait(timeout=30).status is RunStatus.COMPLETED
    # The first reader ends too (the run is over: nothing is cancelled).
    reader.abort() if kind == "v3" else reader.close()


# --- the stores: Redis restarted, Postgres down for a few seconds (last: the replicas recover slowly) ------


class _StoreFault(_Fault):
    """Restarts Redis (as after a crash: it keeps nothing) or takes Postgres down for 3 s."""

    def __init__(self, stack: ReplicaServer, pid_file: Path, store: str) -> None:
        super().__init__(stack, pid_file)
        self.store = store

    def strike(self, executing_pid: int) -> None:
        if self.store == "redis":
            self.stack.stores.restart_redis()
        else:
            self.stack.stores.restart_postgres(down=3.0)


@pytest.mark.timeout(480)
@pytest.mark.parametrize("store", ["redis", "postgres"])
@pytest.mark.parametrize("call", ["stream", "v3", "invoke"])
def test_a_store_lost_mid_run_ends_the_run_as_the_server_ends_it(
    stack: ReplicaServer, tmp_path: Path, call: str, store: str
) -> None:
    # langgraph-runtime-pg 0.11 fails a run whose Redis or Postgres went away under
    # it (measured: "error", with the store's error). The client must say what the
    # server says, in bounded time: the run's error where it failed, every tick
    # once where it went on.
    method, expected = CALLS[call]
    # A run can fail before its first node while the replicas recover from the last
    # fault (a worker's stale Redis connection: ConnectionError): consistent, but
    # not this test's case; such a trial is tried again.
    for trial in range(3):
        _wait_until_serving(stack)
        pid_file = tmp_path / f"pid-{trial}"
        thread_id = str(uuid.uuid4())
        fault = _StoreFault(stack, pid_file, store)
        fault.start()
        started = time.monotonic()
        outcome: Any = None
        try:
            outcome = method(
                RemoteGraph("relay", url=stack.url),
                {"configurable": {"thread_id": thread_id, "pid_file": str(pid_file)}},
            )
        except RemoteGraphError as exc:
            outcome = exc
        took = time.monotonic() - started
        fault.join(60)
        status = _status_once_recovered(stack.url, thread_id)
        if fault.done or pid_file.exists():
            break
        assert status == "error" and isinstance(outcome, RemoteRunError), (status, outcome)
    assert fault.error is None and fault.done, (fault.error, status, outcome)
    assert took < BOUND
    if status == "success":
        if outcome != expected and call != "invoke":
            _xfail_on_the_runtimes_redis_gaps(stack.url, thread_id, call, outcome)
        assert outcome == expected
    else:
        assert status == "error", (status, outcome)
        assert isinstance(outcome, RemoteRunError), outcome


def _xfail_on_the_runtimes_redis_gaps(url: str, thread_id: str, call: str, outcome: Any) -> None:
    """Mark the trial an expected failure where the server's stored stream shows one
    of the runtime's gaps across a Redis restart (docs/replicas.md), once the ticks
    delivered are checked to be the ones the server sent: those before Redis
    restarted (not stored any more), in order, then a part of the stored stream,
    in its order. The gaps:

    - the run was started again while its first attempt still ran: in the frames
      stored since Redis restarted, ticks go back after the retried attempt's
      ``metadata`` frame (a retry of a lost attempt, a replica killed, goes on
      from a checkpoint, in order). A v3 stream follows one attempt: its ticks
      still go up;
    - a classic stream (no ``seq`` shows a gap) lacks one run of at most 15
      ticks of the second node (where Redis restarts), which the server stored:
      published while the serving replica subscribed to Redis again.
    """
    if not isinstance(outcome, list):
        return  # the client raised: the caller's comparison says so
    ticks: list[int] = outcome
    (run,) = get_sync_client(url=url).runs.list(thread_id)
    stored: list[int] = []
    retried_at: int | None = None
    for event, data in _replay(url, thread_id, run["run_id"]):
        if event == "metadata" and isinstance(data, dict) and (data.get("attempt") or 1) > 1 and retried_at is None:
            retried_at = len(stored)
        # A classic custom chunk is the tick itself; a v3 event holds it in its params.
        chunk = data.get("params", {}).get("data") if isinstance(data, dict) and "params" in data else data
        if isinstance(chunk, dict) and isinstance(chunk.get("tick"), int):
            stored.append(chunk["tick"])
    before_restart = next((i for i, tick in enumerate(ticks) if tick != i), len(ticks))
    rest = iter(stored)
    sent = all(tick in rest for tick in ticks[before_restart:])  # in order within the stored stream
    rising = ticks == sorted(set(ticks))
    after = stored[retried_at:] if retried_at is not None else []
    if sent and (rising or call != "v3") and any(b <= a for a, b in zip(after, after[1:])):
        pytest.xfail(
            "the runtime ran the run a second time while the first still ran (a Redis restart lost "
            "its lease): both streamed, and the first's events while Redis was away came neither "
            "live nor in the retry's order (docs/replicas.md)"
        )
    missing = sorted(set(range(3 * TICKS)) - set(ticks))
    one_run = bool(missing) and missing == list(range(missing[0], missing[-1] + 1)) and len(missing) <= 15
    in_second_node = bool(missing) and TICKS <= missing[0] and missing[-1] < 2 * TICKS
    if call == "stream" and sent and rising and one_run and in_second_node and set(missing) <= set(stored):
        pytest.xfail(
            f"ticks {missing[0]}-{missing[-1]}, stored, never came live: the serving replica "
            "subscribed to Redis again after it restarted, and a classic stream has no seq to "
            "show the gap (docs/replicas.md)"
        )


def _wait_until_serving(stack: ReplicaServer) -> None:
    """Until each replica runs a run promptly again: after Postgres came back their
    database pools fail requests for some seconds (measured: about 8), each replica's
    its own way."""
    deadline = time.monotonic() + 120
    for url in stack.replica_urls:
        graph = RemoteGraph("linear", url=url)
        while True:
            started = time.monotonic()
            try:
                graph.invoke({"x": 1, "log": []}, {"configurable": {"thread_id": str(uuid.uuid4())}})
                if time.monotonic() - started < 5:
                    break
            except RemoteGraphError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"replica {url} does not run runs promptly again")
            time.sleep(1)


def _status_once_recovered(url: str, thread_id: str) -> str:
    """The thread's one run's final status, read once the replicas answer again
    (their database pools reconnect after Postgres is back) and the run is over:
    across a Redis restart the runtime can queue a run again after its first
    attempt ended (measured once: ``pending`` after the caller had every tick),
    and the retry then runs it to its end."""
    deadline = time.monotonic() + 60
    while True:
        try:
            runs = get_sync_client(url=url).runs.list(thread_id)
            assert len(runs) == 1
            status = str(runs[0]["status"])
            if status not in ("pending", "running") or time.monotonic() > deadline:
                return status
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(1)
