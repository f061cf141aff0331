"""Integration fixtures: a real LangGraph server, and local/remote graph lanes.

The server is the embedded ``langgraph dev`` by default. Set
``REMOTE_GRAPH_URL`` to run the suite against another deployment of the same
graphs (for example the ``compose/`` stack).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from remote_graph.testing import LangGraphDevServer
from tests.conftest import APP


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    url = os.environ.get("REMOTE_GRAPH_URL")
    if url:
        yield url.rstrip("/")
        return
    with LangGraphDevServer(APP / "langgraph.json", startup_timeout=120) as server:
        yield server.url


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    """The API a conformance scenario runs on: the sync or the async one."""
    return str(request.param)
