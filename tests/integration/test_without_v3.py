"""v3 run streams on a server without the v3 protocol: equal to local.

aegra and langgraph-api releases before the v3 protocol ignore a v3 run's
marker and stream the classic modes the run asks for. The embedded server does
the same for a run created without the marker, so the ``classic-server`` lanes
(``lanes.ClientsWithoutV3``) remove it from each run's creation, and every v3
scenario of the conformance, zero-config and human-in-the-loop suites runs
there on [local, remote] x [sync, async]. Nothing else tells the client: it
reads the format from the run's first event (``_core/v3_formats.py``).

One difference stays, and only where a scenario's state holds a chat model's
answer: a local v3 run streams the model's events (langchain-core's v2 path),
so the model's message holds content blocks (``output_version="v1"``); a
server without the v3 protocol runs the model the classic way, and its message
holds the plain content. That is the server's execution, not the client's
reading, so it is kept (``docs/divergences.md``): those scenarios must be
equal once each AI message's content is read as its text, and differ before.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import toolflow
from graphs import tokens_reply
from langchain_core.messages import HumanMessage

from remote_graph.pytest_plugin import server_choice
from tests.integration import test_conformance, test_hitl, test_zero_config
from tests.integration.cutproxy import RESUME_CUT_BYTES, CuttingProxy
from tests.integration.lanes import Lane, compare, local_twin
from tests.integration.test_data_path import (
    ACTIVE,
    EXIT_MODES,
    AsyncDrive,
    Drive,
    Server,
    SyncDrive,
    assert_ticks,
    new_thread,
    ticks_output,
)
from tests.integration.test_zero_config import ASK
from tests.without_v3 import ClientsWithoutV3

pytestmark = pytest.mark.integration

# Scenarios of a module's own server-side transformers: a server without the v3
# protocol runs none, so their named channels are empty there (the caller gives the
# module's transformers to the client instead: ``module_channel_computed_on_the_client_is_whole_on_every_run``).
SERVER_TRANSFORMERS = frozenset(
    {
        "zero_config.module_channels_by_name",
        "zero_config.module_channel_subscribed_mid_run",
        "zero_config.raw_events_toolflow",
    }
)

SCENARIOS = {
    key: fn
    for module in (test_conformance, test_zero_config, test_hitl)
    for name, fn in module.SCENARIOS.items()
    if (key := f"{module.__name__.rsplit('.', 1)[-1].removeprefix('test_')}.{name}") not in SERVER_TRANSFORMERS
}

# Scenarios whose state holds a chat model's answer: its content's format differs.
CONTENT_FORMAT = frozenset(
    {
        "conformance.message_objects_in_input",
        "conformance.messages_agent_tool_calls",
        "conformance.messages_chat_tokens",
        "conformance.updates_agent",
    }
)


def as_text(value: Any) -> Any:
    """A normalized result with each AI message's content read as its text (``norm``'s dicts)."""
    if isinstance(value, dict):
        out = {key: as_text(item) for key, item in value.items()}
        if value.get("type") == "ai" and isinstance(value.get("content"), list):
            blocks = value["content"]
            out["content"] = "".join(
                b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            )
        return out
    if isinstance(value, (list, tuple)):
        return [as_text(item) for item in value]
    return value


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_equals_remote_on_a_server_without_v3(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url, remote="classic-server")
    assert as_text(remote) == as_text(local)
    assert (remote == local) is (name not in CONTENT_FORMAT), "the model's content format: see the module docstring"


def test_probe_a_server_without_v3_runs_no_module_transformer(server_url: str) -> None:
    # toolflow's module pushes its own channel from a server-side transformer; a
    # server without the v3 protocol runs none, so the channel stays empty there,
    # while the module's transformers given to the client fill it.
    clients = ClientsWithoutV3(server_url)
    try:
        trails = {}
        for kind, graph in (
            ("server", clients.graph("toolflow")),
            ("client", clients.graph("toolflow", stream_transformers=toolflow.stream_transformers())),
        ):
            run = graph.stream_events(ASK, Lane.thread(), version="v3")
            trail = iter(run.extensions["node_trail"])
            assert run.output is not None
            trails[kind] = list(trail)
    finally:
        clients.sync.close()
    assert trails["server"] == []
    assert trails["client"] and trails["client"] == _local_trail()


def _local_trail() -> list[Any]:
    run = local_twin("toolflow").stream_events(ASK, Lane.thread(), version="v3")
    trail = iter(run.extensions["node_trail"])
    assert run.output is not None
    return list(trail)


# --- the data path: the classic frames of a v3 run through cut connections ---------------


@pytest.fixture
def api(flavour: str) -> Iterator[Drive]:
    """The sync or the async API (``test_data_path.py``'s vocabulary)."""
    d: Drive = SyncDrive() if flavour == "sync" else AsyncDrive()
    yield d
    d.close()


@pytest.fixture
def runs(server_url: str) -> Iterator[Server]:
    """The server's own view of runs (``test_data_path.py``'s)."""
    s = Server(server_url)
    yield s
    s.close()


@pytest.mark.soak
@pytest.mark.timeout(240)
def test_cut_connections_lose_and_repeat_nothing_on_a_server_without_v3(
    server_url: str, api: Drive, request: pytest.FixtureRequest
) -> None:
    """Classic frames carry no protocol ``seq``: a resumed stream's repeats are told by
    their ids and content. Five runs of 300-400 custom events, and one model's tokens,
    through a proxy that cuts every event stream: every event once, in order.

    On aegra, whose frames have one id each (CI's aegra lane: ``-m soak
    --remote-graph-server=aegra``). The embedded server
    gives every frame of a millisecond one id, so a resumed stream replays the whole
    millisecond, and the classic modes of a step (its state as ``values``, its
    ``checkpoints``, its tasks' inputs) make that replay longer than many of this
    proxy's budgets: in CI's soak lanes, beside the other lanes, a run's twelve
    reconnects in a row brought no news (the v3 stream of the same runs sends the
    state once per step and passes there).
    """
    if server_choice(request.config) != "aegra":
        pytest.skip("the classic modes' replay outgrows the cut budgets on the embedded server: run on aegra")
    rng = random.Random(f"classic-v3-cuts-{api.flavour}")
    with CuttingProxy(server_url, cut_range=RESUME_CUT_BYTES, seed=rng.randrange(2**32)) as proxy:
        clients = ClientsWithoutV3(proxy.url)
        try:
            graph, config = clients.graph("ticks"), new_thread()
            for turn in range(1, 6):
                n, before = rng.randint(300, 400), proxy.cuts
                run = api.start(graph, {"n": n}, config)
                assert_ticks(api.items(run, "custom"), n, f"run {turn} (n={n})")
                assert api.output(run) == ticks_output(n, turn)
                assert proxy.cuts - before >= 1, f"run {turn} was not cut"
            run = api.start(clients.graph("tokens"), {"n": 400, "messages": [HumanMessage("go")]}, new_thread())
            assert api.message_texts(run) == [tokens_reply(400)]
            assert api.output(run)["messages"][-1].content == tokens_reply(400)
        finally:
            clients.sync.close()
            api.aclose(clients.async_)


@pytest.mark.timeout(120)
def test_leaving_early_stops_the_server_run_on_a_server_without_v3(
    server_url: str, api: Drive, runs: Server, request: pytest.FixtureRequest
) -> None:
    """A v3 run read from classic frames and left after its first tick, in each way a
    caller leaves: the server calls it neither pending nor running within 2 s (aegra:
    10 s), and its handle says cancelled."""
    # aegra's worker stops a cancelled run at its own pace: seconds under load.
    bound = 10.0 if server_choice(request.config) == "aegra" else 2.0
    clients = ClientsWithoutV3(server_url)
    try:
        graph = clients.graph("slow")
        for mode in EXIT_MODES:
            run = api.start(graph, {"x": 50, "log": []})
            api.leave_early(run, mode)
            status, seconds = runs.settle(run.thread_id, str(run.run_id), bound=bound)
            assert status not in ACTIVE, f"{mode}: still {status} after {seconds:.2f}s"
            assert run.snapshot().status == "cancelled", mode
    finally:
        clients.sync.close()
        api.aclose(clients.async_)
