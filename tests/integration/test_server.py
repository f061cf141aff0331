"""The session's server, whichever it is: it serves the graphs of app/langgraph.json,
and a failing test shows what the server printed during it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from remote_graph.pytest_plugin import server_python
from tests.conftest import APP

pytestmark = pytest.mark.integration


def test_server_serves_every_graph_of_app_langgraph_json(server_url: str) -> None:
    response = httpx.post(f"{server_url}/assistants/search", json={"limit": 1000}, timeout=30)
    response.raise_for_status()
    served = {assistant["graph_id"] for assistant in response.json()}
    assert served == set(json.loads((APP / "langgraph.json").read_text())["graphs"])


@pytest.mark.timeout(180)
def test_a_failing_test_shows_the_embedded_servers_log(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    """A pytest of its own on the embedded server: a test that fails after a request
    for an unknown assistant gets the server's log of that request in its report."""
    (tmp_path / "test_inner.py").write_text(
        "import httpx\n"
        "def test_fails(remote_graph_server):\n"
        "    httpx.get(remote_graph_server + '/assistants/no-such-assistant-xyz', timeout=10)\n"
        "    assert False, 'planned failure'\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "REMOTE_GRAPH_URL"}
    # The interpreter this session names for the embedded server (Python 3.10 needs one).
    python = server_python(pytestconfig)
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            "--remote-graph-server=embedded", f"--remote-graph-config={APP / 'langgraph.json'}",
            *([f"--remote-graph-python={python}"] if python else []),
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=170, env=env, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    section = done.stdout.split("remote_graph server log (call)", 1)
    assert len(section) == 2, done.stdout
    assert "no-such-assistant-xyz" in section[1], done.stdout
    assert "embedded server at http://127.0.0.1:" in done.stdout  # the summary's timing line
