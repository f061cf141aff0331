"""``remote_graph.testing.DockerServer`` on its own: it serves a project's graphs, keeps
the container's output, and leaves no container or image behind, also when the
server cannot start. Runs in the Docker lane (``--remote-graph-server=docker``),
whose engine and base image it uses; the embedded lane skips it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from remote_graph.pytest_plugin import base_image, server_choice
from remote_graph.testing import DockerServer

pytestmark = pytest.mark.integration

GRAPH = """
from typing_extensions import TypedDict
from langgraph.graph import START, StateGraph


class State(TypedDict):
    x: int


def double(state: State) -> dict:
    print("double ran with", state["x"], flush=True)
    return {"x": state["x"] * 2}


graph = StateGraph(State).add_node("double", double).add_edge(START, "double").compile()
"""


@pytest.fixture
def docker_base(pytestconfig: pytest.Config) -> str:
    if server_choice(pytestconfig) != "docker":
        pytest.skip("DockerServer's own tests run in the Docker lane: --remote-graph-server=docker")
    return base_image(pytestconfig)


def project(tmp_path: Path, graph_path: str) -> Path:
    (tmp_path / "doubler.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": {"doubler": graph_path}}))
    return tmp_path / "langgraph.json"


def leftovers(image: str | None) -> tuple[list[str], list[str]]:
    import docker

    client = docker.from_env(timeout=30)
    try:
        containers = [c.name for c in client.containers.list(all=True, filters={"ancestor": image})] if image else []
        images = [t for i in client.images.list(name="remote-graph-server") for t in i.tags if t == image]
        return containers, images
    finally:
        client.close()


@pytest.mark.timeout(600)
def test_serves_a_project_and_removes_what_it_made(tmp_path: Path, docker_base: str) -> None:
    server = DockerServer(project(tmp_path, "./doubler.py:graph"), base_image=docker_base, n_jobs_per_worker=3)
    with server:
        assert server.url.startswith("http://127.0.0.1:")
        http = httpx.Client(base_url=server.url, timeout=30)
        thread = http.post("/threads", json={}).json()["thread_id"]
        run = http.post(f"/threads/{thread}/runs/wait", json={"assistant_id": "doubler", "input": {"x": 21}})
        assert run.json() == {"x": 42}
        http.close()
        # The container's output reaches the log file through a copier that
        # follows ``docker logs``: a line printed just now may be a moment behind.
        deadline = time.monotonic() + 10
        while "double ran with 21" not in server.logs() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "double ran with 21" in server.logs()
        assert "Starting 3 background workers" in server.logs()  # the image's command, with the option
        assert server.log_path.is_file()
        image = server.image
        assert leftovers(image)[0], "the container is running"
    assert leftovers(image) == ([], [])
    assert "double ran with 21" in server.logs()  # kept after the container is gone
    assert not server.log_path.exists()


@pytest.mark.timeout(600)
def test_a_server_that_cannot_start_fails_with_its_log_and_leaves_nothing(tmp_path: Path, docker_base: str) -> None:
    server = DockerServer(project(tmp_path, "./missing_module.py:graph"), base_image=docker_base, startup_timeout=60)
    with pytest.raises(RuntimeError, match="missing_module"):
        server.start()
    assert leftovers(server.image) == ([], [])


@pytest.mark.timeout(600)
def test_a_failing_test_shows_the_containers_log(tmp_path: Path, docker_base: str) -> None:
    """A pytest of its own on the Docker server: a failing test's report carries the
    container's output during that test, and only that."""
    import os
    import subprocess
    import sys

    from tests.conftest import APP

    # The server logs a request after answering it: the passing test gives that line
    # time to land, or it could show with the next test.
    (tmp_path / "test_inner.py").write_text(
        "import httpx, time\n"
        "def test_passes(remote_graph_server):\n"
        "    httpx.get(remote_graph_server + '/assistants/earlier-test-xyz', timeout=10)\n"
        "    time.sleep(1)\n"
        "def test_fails(remote_graph_server):\n"
        "    httpx.get(remote_graph_server + '/assistants/no-such-assistant-xyz', timeout=10)\n"
        "    assert False, 'planned failure'\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "REMOTE_GRAPH_URL"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--remote-graph-server=docker",
            f"--remote-graph-base-image={docker_base}",
            f"--remote-graph-config={APP / 'langgraph.json'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=590,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    section = done.stdout.split("remote_graph server log (call)", 1)
    assert len(section) == 2, done.stdout
    assert "no-such-assistant-xyz" in section[1], done.stdout
    assert "earlier-test-xyz" not in section[1], done.stdout
