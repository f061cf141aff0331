"""``remote_graph.testing.AegraServer`` on its own: it serves a project's graphs on a
Postgres and a Redis of its own, and stops every process it started, removing its
data. Runs in the aegra lane (``--remote-graph-server=aegra``); other lanes skip it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remote_graph import RemoteGraph
from remote_graph.pytest_plugin import server_choice
from remote_graph.testing import AegraServer

pytestmark = pytest.mark.integration

GRAPH = """
from typing_extensions import TypedDict
from langgraph.graph import START, StateGraph


class State(TypedDict):
    x: int


def double(state: State) -> dict:
    return {"x": state["x"] * 2}


graph = StateGraph(State).add_node("double", double).add_edge(START, "double").compile()
"""


@pytest.fixture
def aegra_python(pytestconfig: pytest.Config) -> str | None:
    if server_choice(pytestconfig) != "aegra":
        pytest.skip("AegraServer's own tests run in the aegra lane: --remote-graph-server=aegra")
    option = pytestconfig.getoption("--remote-graph-aegra-python")
    return str(option) if option else None


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)  # any process left in the group it led
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(240)
def test_it_serves_a_project_and_leaves_nothing_behind(tmp_path: Path, aegra_python: str | None) -> None:
    (tmp_path / "doubler.py").write_text(GRAPH)
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"doubler": "./doubler.py:graph"}}))
    server = AegraServer(config, python=aegra_python)
    with server:
        assert server.data_dir is not None and server.data_dir.is_dir()
        data_dir = server.data_dir
        pids = [process.pid for _, process, _ in server._processes]
        assert len(pids) == 3  # postgres, redis, aegra
        assert RemoteGraph("doubler", url=server.url).invoke({"x": 21}) == {"x": 42}
    assert [pid for pid in pids if _group_alive(pid)] == []
    assert not data_dir.exists()
    assert "aegra" in server.logs().lower()
