"""pytest plugin: one LangGraph server for a test session.

Installed with the package (entry point ``pytest11``). It adds

- ``--remote-graph-server=embedded|docker|URL`` (default: ``$REMOTE_GRAPH_URL`` when
  set, else ``embedded``): ``embedded`` runs ``langgraph dev`` in a subprocess
  (``LangGraphDevServer``), ``docker`` builds and runs it in a container
  (``DockerServer``), a URL uses a server that is already running;
- the session fixture ``remote_graph_server``: the server's base URL;
- on a failing test, the server's output from the test's start (the tail of it) as a
  report section, so it shows next to the failure. A line the server writes just
  after a test ends (the access log of its last request, say) shows with the next one.

Settings (command line, else ini, else environment, else default):

- ``--remote-graph-config`` / ini ``remote_graph_config``: the ``langgraph.json`` the
  embedded and Docker servers serve, relative to the ini file (default ``langgraph.json``);
- ``--remote-graph-base-image`` / ini ``remote_graph_base_image`` /
  ``$REMOTE_GRAPH_BASE_IMAGE``: the Docker server's base image (default ``python:3.12-slim``);
- ``--remote-graph-keep-image``: keep the Docker server's image as a build cache;
- ``--remote-graph-python`` / ini ``remote_graph_python`` / ``$REMOTE_GRAPH_SERVER_PYTHON``:
  the interpreter (a Python executable or a virtualenv) that runs the embedded
  server, when it is not the tests' own: ``langgraph dev`` needs Python 3.11+ and
  ``langgraph-cli[inmem]``, so a Python 3.10 suite names a 3.11+ environment here;
- ``--remote-graph-log-command``: with a URL, a command printing the server's logs
  (e.g. ``docker-compose -f compose/docker-compose.yml logs --no-color --tail=200``),
  run for a failing test;
- ini ``remote_graph_startup_timeout``: seconds to wait for ``GET /ok`` (default 120).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

ENV_URL = "REMOTE_GRAPH_URL"
ENV_BASE_IMAGE = "REMOTE_GRAPH_BASE_IMAGE"
ENV_SERVER_PYTHON = "REMOTE_GRAPH_SERVER_PYTHON"  # read by LangGraphDevServer
MODES = ("embedded", "docker")
LOG_SECTION = "remote_graph server log"
LOG_LIMIT = 20_000  # characters of server output shown per failing test


class _Session:
    """The session's server, and where each running test's part of its log begins."""

    def __init__(self) -> None:
        self.server: Any = None  # LangGraphDevServer | DockerServer | None
        self.log_command: str | None = None
        self.marks: dict[str, Any] = {}
        self.summary: list[str] = []

    def logs_for(self, nodeid: str) -> str | None:
        if self.server is not None:
            mark = self.marks.get(nodeid)
            text = self.server.logs() if mark is None else self.server.logs_since(mark)
            return text or "(the server printed nothing during this test)"
        if self.log_command:
            try:
                done = subprocess.run(
                    shlex.split(self.log_command),
                    capture_output=True,
                    text=True,
                    timeout=30,
                    stdin=subprocess.DEVNULL,
                )
                return (done.stdout + done.stderr) or f"({self.log_command!r} printed nothing)"
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"({self.log_command!r} failed: {exc})"
        return None


_SESSION = pytest.StashKey[_Session]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("remote_graph", "remote_graph: the LangGraph server of the session")
    group.addoption(
        "--remote-graph-server",
        default=None,
        metavar="embedded|docker|URL",
        help=f"server for the remote_graph_server fixture (default: ${ENV_URL} if set, else embedded)",
    )
    group.addoption("--remote-graph-config", default=None, metavar="PATH", help="langgraph.json to serve")
    group.addoption(
        "--remote-graph-base-image",
        default=None,
        metavar="IMAGE",
        help=f"docker: base image (default: ${ENV_BASE_IMAGE}, else python:3.12-slim)",
    )
    group.addoption(
        "--remote-graph-keep-image",
        action="store_true",
        default=False,
        help="docker: keep the built image as a cache for the next run",
    )
    group.addoption(
        "--remote-graph-python",
        default=None,
        metavar="PATH",
        help="embedded: the Python executable or virtualenv that runs langgraph dev "
        "(3.11+, with langgraph-cli[inmem]; default: $REMOTE_GRAPH_SERVER_PYTHON, else this one)",
    )
    group.addoption(
        "--remote-graph-log-command",
        default=None,
        metavar="COMMAND",
        help="URL: a command printing the server's logs, shown when a test fails",
    )
    parser.addini("remote_graph_config", "langgraph.json served by the embedded and docker servers", default="langgraph.json")
    parser.addini("remote_graph_base_image", "base image of the docker server", default="")
    parser.addini("remote_graph_python", "python or virtualenv running the embedded server", default="")
    parser.addini("remote_graph_startup_timeout", "seconds to wait for the server's GET /ok", default="120")


def server_choice(config: pytest.Config) -> str:
    """``embedded``, ``docker`` or a URL (without a trailing slash)."""
    choice = config.getoption("--remote-graph-server") or os.environ.get(ENV_URL) or "embedded"
    choice = choice.strip()
    if choice in MODES:
        return choice
    if choice.startswith(("http://", "https://")):
        return choice.rstrip("/")
    raise pytest.UsageError(f"--remote-graph-server: expected embedded, docker or an http(s) URL, got {choice!r}")


def _config_path(config: pytest.Config) -> Path:
    option = config.getoption("--remote-graph-config")
    if option:
        return Path(option).resolve()
    base = config.inipath.parent if config.inipath else config.rootpath
    return (base / str(config.getini("remote_graph_config"))).resolve()


def server_python(config: pytest.Config) -> str | None:
    """The embedded server's interpreter if one is named (else LangGraphDevServer's default)."""
    option = config.getoption("--remote-graph-python")
    if option:
        return str(option)
    ini = str(config.getini("remote_graph_python") or "")
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return str(base / ini)
    return None


def base_image(config: pytest.Config) -> str:
    from remote_graph._dockerimage import DEFAULT_BASE_IMAGE  # noqa: PLC0415

    return (
        config.getoption("--remote-graph-base-image")
        or str(config.getini("remote_graph_base_image") or "")
        or os.environ.get(ENV_BASE_IMAGE)
        or DEFAULT_BASE_IMAGE
    )


def pytest_configure(config: pytest.Config) -> None:
    server_choice(config)  # a bad value is a usage error before anything runs
    config.stash[_SESSION] = _Session()


def pytest_report_header(config: pytest.Config) -> str:
    choice = server_choice(config)
    if choice == "docker":
        return f"remote_graph server: docker, base image {base_image(config)}, serving {_config_path(config)}"
    if choice == "embedded":
        python = server_python(config) or os.environ.get(ENV_SERVER_PYTHON)
        detail = f", run by {python}" if python else ""
        return f"remote_graph server: embedded langgraph dev{detail}, serving {_config_path(config)}"
    return f"remote_graph server: {choice}"


@pytest.fixture(scope="session")
def remote_graph_server(pytestconfig: pytest.Config) -> Iterator[str]:
    """Base URL of the session's LangGraph server (see ``--remote-graph-server``)."""
    state = pytestconfig.stash[_SESSION]
    choice = server_choice(pytestconfig)
    if choice not in MODES:
        state.log_command = pytestconfig.getoption("--remote-graph-log-command")
        yield choice
        return

    from remote_graph.testing import DockerServer, LangGraphDevServer  # noqa: PLC0415

    timeout = float(pytestconfig.getini("remote_graph_startup_timeout"))
    server: Any
    if choice == "docker":
        server = DockerServer(
            _config_path(pytestconfig),
            base_image=base_image(pytestconfig),
            keep_image=bool(pytestconfig.getoption("--remote-graph-keep-image")),
            startup_timeout=timeout,
        )
    else:
        server = LangGraphDevServer(_config_path(pytestconfig), startup_timeout=timeout, python=server_python(pytestconfig))
    started = time.monotonic()
    with server:
        ready = time.monotonic() - started
        state.server = server
        detail = f" (image {server.image} on {server.base_image})" if choice == "docker" else ""
        state.summary.append(f"{choice} server at {server.url} ready in {ready:.1f}s{detail}")
        try:
            yield server.url
        finally:
            state.server = None
            stopping = time.monotonic()
    state.summary.append(f"{choice} server stopped in {time.monotonic() - stopping:.1f}s")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash[_SESSION]
    if state.server is not None:
        state.marks[item.nodeid] = state.server.log_mark()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    state = item.config.stash.get(_SESSION, None)
    if state is None:
        return
    if report.failed and "remote_graph_server" in getattr(item, "fixturenames", ()):
        text = state.logs_for(item.nodeid)
        if text is not None:
            if len(text) > LOG_LIMIT:
                text = f"... ({len(text) - LOG_LIMIT} earlier characters left out)\n" + text[-LOG_LIMIT:]
            report.sections.append((f"{LOG_SECTION} ({report.when})", text))
    if report.when == "teardown":
        state.marks.pop(item.nodeid, None)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_SESSION, None)
    if state is not None and state.summary:
        terminalreporter.write_sep("-", "remote_graph server")
        for line in state.summary:
            terminalreporter.write_line(line)
