"""The session's server, whichever it is: it serves the graphs of app/langgraph.json,
and a failing test shows what the server printed during it. The embedded server is
hermetic: what one server stored, the next one never sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from remote_graph.pytest_plugin import server_python
from remote_graph.testing import LangGraphDevServer
from tests.conftest import APP, ROOT

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


def test_server_serves_every_graph_of_app_langgraph_json(server_url: str) -> None:
    response = httpx.post(f"{server_url}/assistants/search", json={"limit": 100}, timeout=30)
    response.raise_for_status()
    served = {assistant["graph_id"] for assistant in response.json()}
    assert served == set(json.loads((APP / "langgraph.json").read_text())["graphs"])


def test_probe_a_graphs_default_assistant_is_the_one_the_server_made(server_url: str) -> None:
    """What the client's schema lookup relies on (``_core/schema.py``): a graph's
    default assistant, the one a run by graph name uses, is marked ``created_by:
    system`` on every server we test, and is found by that mark when an assistant a
    caller made is newer and comes first in a plain search."""
    made = httpx.post(
        f"{server_url}/assistants", json={"graph_id": "linear", "name": "probe-newer", "config": {}}, timeout=30
    )
    made.raise_for_status()
    newer = made.json()["assistant_id"]
    try:
        found = httpx.post(
            f"{server_url}/assistants/search",
            json={"graph_id": "linear", "metadata": {"created_by": "system"}, "limit": 1},
            timeout=30,
        )
        found.raise_for_status()
        [default] = found.json()
        assert default["graph_id"] == "linear" and default["assistant_id"] != newer
        plain = httpx.post(f"{server_url}/assistants/search", json={"graph_id": "linear", "limit": 1}, timeout=30)
        plain.raise_for_status()
        assert [a["assistant_id"] for a in plain.json()] == [newer], "a plain search no longer puts the newest first"
    finally:
        httpx.delete(f"{server_url}/assistants/{newer}", timeout=30)


def inner_pytest(
    tmp_path: Path, pytestconfig: pytest.Config, test: str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A pytest of its own, on an embedded server of its own, run from ``cwd`` (else
    ``tmp_path``). It runs on the interpreter this session names for the embedded
    server (Python 3.10 needs one)."""
    (tmp_path / "test_inner.py").write_text(test)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "REMOTE_GRAPH_URL"}
    python = server_python(pytestconfig)
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--remote-graph-server=embedded",
            *([f"--remote-graph-python={python}"] if python else []), *args, str(tmp_path),
        ],
        cwd=cwd or tmp_path, capture_output=True, text=True, timeout=170, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


FAILS_AFTER_A_REQUEST = (
    "import httpx\n"
    "def test_fails(remote_graph_server):\n"
    "    httpx.get(remote_graph_server + '/assistants/no-such-assistant-xyz', timeout=10)\n"
    "    assert False, 'planned failure'\n"
)


@pytest.mark.timeout(180)
def test_a_failing_test_shows_the_embedded_servers_log(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """A test that fails after a request for an unknown assistant gets the server's log
    of that request in its report."""
    done = inner_pytest(
        tmp_path, pytestconfig, FAILS_AFTER_A_REQUEST, f"--remote-graph-config={APP / 'langgraph.json'}"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    section = done.stdout.split("remote_graph server log (call)", 1)
    assert len(section) == 2, done.stdout
    assert "no-such-assistant-xyz" in section[1], done.stdout
    assert "embedded server at http://127.0.0.1:" in done.stdout  # the summary's timing line


@pytest.mark.timeout(180)
def test_under_xdist_the_workers_share_one_server_and_see_its_log(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """Two workers, one server (the controller's): both tests get the same URL, and the
    failing one's report holds the server's log of its request, read by the worker."""
    test = FAILS_AFTER_A_REQUEST + (
        "def test_url_1(remote_graph_server):\n    print('URL=' + remote_graph_server)\n"
        "def test_url_2(remote_graph_server):\n    print('URL=' + remote_graph_server)\n"
    )
    done = inner_pytest(
        tmp_path, pytestconfig, test, "-n", "2", "-rA", f"--remote-graph-config={APP / 'langgraph.json'}"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 workers" in done.stdout and "1 failed, 2 passed" in done.stdout, done.stdout
    urls = {line.split("URL=", 1)[1] for line in done.stdout.splitlines() if "URL=" in line}
    assert len(urls) == 1, done.stdout
    assert done.stdout.count("embedded server at http://127.0.0.1:") == 1  # started once, by the controller
    section = done.stdout.split("remote_graph server log (call)", 1)
    assert len(section) == 2 and "no-such-assistant-xyz" in section[1], done.stdout
    assert "Welcome to" not in section[1].split("PASSES")[0]  # from the test's start, not the server's


@pytest.mark.timeout(180)
def test_a_relative_config_is_found_when_pytest_runs_elsewhere(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """``--remote-graph-config`` relative to the rootdir, with pytest started in another
    directory: the server starts and serves it (it used to fail every test)."""
    project = tmp_path / "project"
    (project / "graphs").mkdir(parents=True)
    (project / "graphs" / "doubler.py").write_text(GRAPH)
    config = {"dependencies": ["."], "graphs": {"doubler": "./doubler.py:graph"}}
    (project / "graphs" / "langgraph.json").write_text(json.dumps(config))
    test = (
        "import httpx\n"
        "def test_doubles(remote_graph_server):\n"
        "    http = httpx.Client(base_url=remote_graph_server, timeout=30)\n"
        "    thread = http.post('/threads', json={}).json()['thread_id']\n"
        "    run = http.post(f'/threads/{thread}/runs/wait', json={'assistant_id': 'doubler', 'input': {'x': 21}})\n"
        "    assert run.json() == {'x': 42}\n"
    )
    done = inner_pytest(project, pytestconfig, test, "--remote-graph-config=graphs/langgraph.json", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"serving {project / 'graphs' / 'langgraph.json'}" in done.stdout


def doubler_project(tmp_path: Path) -> Path:
    tmp_path.mkdir()
    (tmp_path / "doubler.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"doubler": "./doubler.py:graph"}})
    )
    return tmp_path / "langgraph.json"


def thread_status(url: str, thread_id: str) -> int:
    return httpx.get(f"{url}/threads/{thread_id}", timeout=10).status_code


@pytest.mark.timeout(180)
def test_each_embedded_server_starts_empty_and_removes_its_data(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """A thread (a fixed id, and its run) stored on one server is absent on the next one
    serving the same project; each server's data directory is its own and is gone after
    it stops, and the project's directory gets no ``.langgraph_api``. ``keep_data``
    keeps the directory, with the server's store and log in it. (And
    ``n_jobs_per_worker`` reaches the server.)"""
    config = doubler_project(tmp_path / "project")
    python = server_python(pytestconfig)
    thread_id = "00000000-0000-4000-8000-000000000017"
    with LangGraphDevServer(config, python=python, n_jobs_per_worker=3) as first:
        http = httpx.Client(base_url=first.url, timeout=30)
        http.post("/threads", json={"thread_id": thread_id}).raise_for_status()
        run = http.post(f"/threads/{thread_id}/runs/wait", json={"assistant_id": "doubler", "input": {"x": 2}})
        assert run.json() == {"x": 4}
        http.close()
        assert thread_status(first.url, thread_id) == 200
        first_data = first.data_dir
        assert first_data is not None and first_data.is_dir()
        assert "Starting 3 background workers" in first.logs()  # n_jobs_per_worker reached the server
    assert not first_data.exists()
    with LangGraphDevServer(config, python=python, keep_data=True) as second:
        assert second.data_dir != first_data
        assert thread_status(second.url, thread_id) == 404
        assert httpx.post(f"{second.url}/threads/search", json={"limit": 10}, timeout=10).json() == []
        httpx.post(f"{second.url}/threads", json={"thread_id": thread_id}, timeout=10).raise_for_status()
    assert second.data_dir is not None and (second.data_dir / "server.log").is_file()
    assert list(second.data_dir.glob("*/.langgraph_api/*")), "the kept store"
    assert "/threads" in second.logs()  # still readable after stop()
    assert sorted(p.name for p in config.parent.iterdir()) == ["doubler.py", "langgraph.json"]
    # Only its own caller removes a kept directory.
    import shutil  # noqa: PLC0415

    shutil.rmtree(second.data_dir)
