"""Integration fixtures: a real LangGraph server, and local/remote graph lanes.

The server comes from the package's pytest plugin (``remote_graph.pytest_plugin``):
the embedded ``langgraph dev`` by default, the same server in a Docker container
with ``--remote-graph-server=docker``, or an already running deployment of the
same graphs with ``--remote-graph-server=URL`` or ``REMOTE_GRAPH_URL`` (for
example the ``compose/`` stack). ``pyproject.toml`` points it at
``app/langgraph.json``. Under pytest-xdist (the default) every worker uses the one
server of the session. When a test fails, the server's output during that test is
shown with it.
"""

from __future__ import annotations

import pytest

from tests.integration import objects
from tests.integration.server_kinds import aegra_gap, sends_whole_messages_as_chunks


def pytest_configure(config: pytest.Config) -> None:
    # Every worker compares as its server sends (``objects.WHOLE_MESSAGES``).
    objects.WHOLE_MESSAGES = sends_whole_messages_as_chunks(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A server's known, probed gaps (``server_kinds.AEGRA_GAPS``) skip the tests that meet them.
    for item in items:
        reason = aegra_gap(config, item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"aegra: {reason}"))


@pytest.fixture(scope="session")
def server_url(remote_graph_server: str) -> str:
    return remote_graph_server


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    """The API a conformance scenario runs on: the sync or the async one."""
    return str(request.param)
