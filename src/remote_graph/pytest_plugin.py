"""pytest plugin: one LangGraph server for a test session.

Installed with the package (entry point ``pytest11``). It adds

- ``--remote-graph-server=embedded|docker|replicas|aegra|URL`` (default: ``$REMOTE_GRAPH_URL``
  when set, else ``embedded``): ``embedded`` runs ``langgraph dev`` in a subprocess
  (``LangGraphDevServer``), ``docker`` builds and runs it in a container
  (``DockerServer``), ``replicas`` runs two ``langhost`` replicas on a Postgres and
  a Redis of their own behind a balancer (``ReplicaServer``), ``aegra`` runs aegra
  on a Postgres and a Redis of its own (``AegraServer``), a URL uses a server that
  is already running;
- the session fixture ``remote_graph_server``: the server's base URL. The server
  starts when the first test asks for it, and stops at the session's end;
- on a failing test, the server's output from the test's start (the tail of it) as a
  report section, so it shows next to the failure. A line the server writes just
  after a test ends (the access log of its last request, say) shows with the next one.

Under pytest-xdist (``-n``) the session still has one server: the controller
starts it when the first worker asks, and every worker uses it (see
``remote_graph._serverbroker``). A failing test's section then also holds the lines
of tests that ran meanwhile on other workers.

Settings (command line, else ini, else environment, else default):

- ``--remote-graph-config`` / ini ``remote_graph_config``: the ``langgraph.json`` the
  embedded and Docker servers serve. The option's relative path is taken from the
  directory pytest was started in, else from the rootdir (where the ini file is);
  the ini's is relative to the ini file (default ``langgraph.json``);
- ``--remote-graph-base-image`` / ini ``remote_graph_base_image`` /
  ``$REMOTE_GRAPH_BASE_IMAGE``: the Docker server's base image (default ``python:3.12-slim``);
- ``--remote-graph-keep-image``: keep the Docker server's image as a build cache;
- ``--remote-graph-python`` / ini ``remote_graph_python`` / ``$REMOTE_GRAPH_SERVER_PYTHON``:
  the interpreter (a Python executable or a virtualenv) that runs the embedded
  server, when it is not the tests' own: ``langgraph dev`` needs Python 3.11+ and
  ``langgraph-cli[inmem]``, so a Python 3.10 suite names a 3.11+ environment here;
- ``--remote-graph-replicas-python`` / ``$REMOTE_GRAPH_REPLICAS_PYTHON``: the Python 3.12
  virtualenv (or its python) with ``langhost==0.11.1.post1`` that runs the replicas;
- ``--remote-graph-replicas`` (default 2) and ``--remote-graph-bg-job-heartbeat`` (the
  replicas' ``LG_BG_JOB_HEARTBEAT``, default 5 seconds);
- ``--remote-graph-aegra-python`` / ``$REMOTE_GRAPH_AEGRA_PYTHON``: the interpreter
  (Python 3.12+, with ``aegra-cli``) that runs the aegra server;
- ``--remote-graph-log-command``: with a URL, a command printing the server's logs
  (e.g. ``docker-compose -f compose/docker-compose.yml logs --no-color --tail=200``),
  run for a failing test;
- ini ``remote_graph_startup_timeout``: seconds to wait for ``GET /ok`` (default 120);
- ini ``remote_graph_n_jobs_per_worker``: runs the embedded or Docker server executes
  at once (default 10, a deployed server's default; ``langgraph dev`` alone runs one).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from remote_graph._serverbase import LogFile
    from remote_graph._serverbroker import ServerBroker
    from remote_graph.testing import Server

ENV_URL = "REMOTE_GRAPH_URL"
ENV_BASE_IMAGE = "REMOTE_GRAPH_BASE_IMAGE"
ENV_SERVER_PYTHON = "REMOTE_GRAPH_SERVER_PYTHON"  # read by LangGraphDevServer
ENV_REPLICAS_PYTHON = "REMOTE_GRAPH_REPLICAS_PYTHON"  # read by ReplicaServer
MODES = ("embedded", "docker", "replicas", "aegra")
LOG_SECTION = "remote_graph server log"
LOG_LIMIT = 20_000  # characters of server output shown per failing test
FIXTURE = "remote_graph_server"
_BROKER_KEY = "remote_graph_server_broker"  # in an xdist worker's workerinput
_DOCKER_BUILD_TIMEOUT = 900.0  # DockerServer's default


class _Session:
    """The session's server, its log, and where each running test's part of it begins."""

    def __init__(self) -> None:
        self.server: Server | None = None  # started by this process
        self.broker: ServerBroker | None = None  # this process is the xdist controller
        self.log: LogFile | None = None  # the server's log, read by its path (also in a worker)
        self.log_command: str | None = None
        self.marks: dict[str, int] = {}
        self.current: str | None = None  # the test being set up
        self.summary: list[str] = []

    def logs_for(self, nodeid: str) -> str | None:
        if self.log is not None:
            self.log.settle()  # the server may still be writing the test's last request
            text = self.log.since(self.marks.get(nodeid, 0))
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
        metavar="embedded|docker|replicas|aegra|URL",
        help=f"server for the remote_graph_server fixture (default: ${ENV_URL} if set, else embedded)",
    )
    group.addoption(
        "--remote-graph-config",
        default=None,
        metavar="PATH",
        help="langgraph.json to serve (relative: to the directory pytest runs in, else to the rootdir)",
    )
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
        "--remote-graph-replicas-python",
        default=None,
        metavar="PATH",
        help="replicas: the Python 3.12 virtualenv (or its python) with langhost==0.11.1.post1 "
        "(default: $REMOTE_GRAPH_REPLICAS_PYTHON)",
    )
    group.addoption(
        "--remote-graph-replicas",
        default=2,
        type=int,
        metavar="N",
        help="replicas: how many API replicas run behind the balancer (default 2)",
    )
    group.addoption(
        "--remote-graph-bg-job-heartbeat",
        default=5.0,
        type=float,
        metavar="SECONDS",
        help="replicas: their LG_BG_JOB_HEARTBEAT, how soon a run of a dead replica is retried (default 5)",
    )
    group.addoption(
        "--remote-graph-aegra-python",
        default=None,
        metavar="PATH",
        help="aegra: the Python executable or virtualenv with aegra-cli (3.12+; default: $REMOTE_GRAPH_AEGRA_PYTHON)",
    )
    group.addoption(
        "--remote-graph-log-command",
        default=None,
        metavar="COMMAND",
        help="URL: a command printing the server's logs, shown when a test fails",
    )
    parser.addini(
        "remote_graph_config", "langgraph.json served by the embedded and docker servers", default="langgraph.json"
    )
    parser.addini("remote_graph_base_image", "base image of the docker server", default="")
    parser.addini("remote_graph_python", "python or virtualenv running the embedded server", default="")
    parser.addini("remote_graph_startup_timeout", "seconds to wait for the server's GET /ok", default="120")
    parser.addini("remote_graph_n_jobs_per_worker", "runs the embedded or docker server executes at once", default="10")


def server_choice(config: pytest.Config) -> str:
    """``embedded``, ``docker`` or a URL (without a trailing slash)."""
    choice = config.getoption("--remote-graph-server") or os.environ.get(ENV_URL) or "embedded"
    choice = choice.strip()
    if choice in MODES:
        return choice
    if choice.startswith(("http://", "https://")):
        return choice.rstrip("/")
    raise pytest.UsageError(
        f"--remote-graph-server: expected embedded, docker, replicas, aegra or an http(s) URL, got {choice!r}"
    )


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def config_candidates(config: pytest.Config) -> list[Path]:
    """Where the ``langgraph.json`` to serve is looked for, in order.

    ``--remote-graph-config``, when relative, is taken from the directory pytest was
    started in (not the current one: a test may have moved), then from the rootdir,
    so that it also works from ``addopts`` and from another directory. The ini's
    ``remote_graph_config`` is relative to the ini file.
    """
    option = config.getoption("--remote-graph-config")
    if option:
        path = Path(option).expanduser()
        if path.is_absolute():
            return [path]
        bases = [config.invocation_params.dir, config.rootpath]
        return list(dict.fromkeys((base / path).resolve() for base in bases))
    return [(_ini_base(config) / str(config.getini("remote_graph_config"))).resolve()]


def config_path(config: pytest.Config) -> Path:
    """The ``langgraph.json`` to serve: the first of ``config_candidates`` that exists.

    Raises:
        pytest.UsageError: If none does, naming where it was looked for.
    """
    candidates = config_candidates(config)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    option = config.getoption("--remote-graph-config")
    given = (
        f"--remote-graph-config={option}"
        if option
        else f"ini remote_graph_config={config.getini('remote_graph_config')}"
    )
    where = f"{candidates[0]} does not exist"
    if len(candidates) > 1:
        where = "neither " + " nor ".join(str(c) for c in candidates) + " exists"
    raise pytest.UsageError(f"{given}: the langgraph.json to serve is not found: {where}")


def server_python(config: pytest.Config) -> str | None:
    """The embedded server's interpreter if one is named (else LangGraphDevServer's default)."""
    option = config.getoption("--remote-graph-python")
    if option:
        return str(option)
    ini = str(config.getini("remote_graph_python") or "")
    if ini:
        return str(_ini_base(config) / ini)
    return None


def base_image(config: pytest.Config) -> str:
    from remote_graph._dockerimage import DEFAULT_BASE_IMAGE  # noqa: PLC0415

    return (
        config.getoption("--remote-graph-base-image")
        or str(config.getini("remote_graph_base_image") or "")
        or os.environ.get(ENV_BASE_IMAGE)
        or DEFAULT_BASE_IMAGE
    )


def _ini_number(config: pytest.Config, name: str, kind: type[float] | type[int]) -> Any:
    value = str(config.getini(name))
    try:
        number = kind(value)
    except ValueError:
        raise pytest.UsageError(f"ini {name}: expected a number, got {value!r}") from None
    if number <= 0:
        raise pytest.UsageError(f"ini {name}: expected a positive number, got {value!r}")
    return number


def _start_timeout(config: pytest.Config) -> float:
    """The most the session's server may take to start (the Docker image builds first)."""
    timeout = float(_ini_number(config, "remote_graph_startup_timeout", float))
    return timeout + (_DOCKER_BUILD_TIMEOUT if server_choice(config) == "docker" else 0.0)


def _new_server(config: pytest.Config) -> Server:
    """The session's server, not started yet, as the options describe it."""
    from remote_graph.testing import DockerServer, LangGraphDevServer  # noqa: PLC0415

    timeout = float(_ini_number(config, "remote_graph_startup_timeout", float))
    jobs = int(_ini_number(config, "remote_graph_n_jobs_per_worker", int))
    if server_choice(config) == "aegra":
        from remote_graph.testing import AegraServer  # noqa: PLC0415

        return AegraServer(
            config_path(config), python=config.getoption("--remote-graph-aegra-python"), startup_timeout=timeout
        )
    if server_choice(config) == "replicas":
        from remote_graph.testing import ReplicaServer  # noqa: PLC0415

        return ReplicaServer(
            config_path(config),
            replicas=int(config.getoption("--remote-graph-replicas")),
            python=config.getoption("--remote-graph-replicas-python"),
            bg_job_heartbeat=float(config.getoption("--remote-graph-bg-job-heartbeat")),
            startup_timeout=timeout,
            n_jobs_per_worker=jobs,
        )
    if server_choice(config) == "docker":
        return DockerServer(
            config_path(config),
            base_image=base_image(config),
            keep_image=bool(config.getoption("--remote-graph-keep-image")),
            build_timeout=_DOCKER_BUILD_TIMEOUT,
            startup_timeout=timeout,
            n_jobs_per_worker=jobs,
        )
    return LangGraphDevServer(
        config_path(config), startup_timeout=timeout, python=server_python(config), n_jobs_per_worker=jobs
    )


def _start(config: pytest.Config) -> Server:
    """Start the session's server, noting how long it took in the summary."""
    from remote_graph.testing import DockerServer  # noqa: PLC0415

    state = config.stash[_SESSION]
    choice = server_choice(config)
    started = time.monotonic()
    server = _new_server(config).start()
    detail = f" (image {server.image} on {server.base_image})" if isinstance(server, DockerServer) else ""
    state.summary.append(f"{choice} server at {server.url} ready in {time.monotonic() - started:.1f}s{detail}")
    return server


def _stop(config: pytest.Config, server: Server) -> None:
    stopping = time.monotonic()
    server.stop()
    config.stash[_SESSION].summary.append(
        f"{server_choice(config)} server stopped in {time.monotonic() - stopping:.1f}s"
    )


def pytest_configure(config: pytest.Config) -> None:
    server_choice(config)  # a bad value is a usage error before anything runs
    for name, kind in (("remote_graph_startup_timeout", float), ("remote_graph_n_jobs_per_worker", int)):
        _ini_number(config, name, kind)
    config.stash[_SESSION] = _Session()


def pytest_report_header(config: pytest.Config) -> str:
    choice = server_choice(config)
    try:
        served = str(config_path(config))
    except pytest.UsageError:  # said once the tests are known to need it
        served = "no langgraph.json (not found: " + ", ".join(str(c) for c in config_candidates(config)) + ")"
    if choice == "docker":
        return f"remote_graph server: docker, base image {base_image(config)}, serving {served}"
    if choice == "aegra":
        return f"remote_graph server: aegra, serving {served}"
    if choice == "replicas":
        replicas = config.getoption("--remote-graph-replicas")
        python = config.getoption("--remote-graph-replicas-python") or os.environ.get(ENV_REPLICAS_PYTHON)
        return (
            f"remote_graph server: {replicas} langhost replicas (Postgres + Redis), run by {python}, serving {served}"
        )
    if choice == "embedded":
        python = server_python(config) or os.environ.get(ENV_SERVER_PYTHON)
        detail = f", run by {python}" if python else ""
        return f"remote_graph server: embedded langgraph dev{detail}, serving {served}"
    return f"remote_graph server: {choice}"


def pytest_collection_finish(session: pytest.Session) -> None:
    # A config that cannot be found fails the run once, before any test, and only
    # when a collected test needs the server. (An xdist worker cannot stop the run:
    # there, each test that needs the server fails with the same message.)
    config = session.config
    if hasattr(config, "workerinput") or server_choice(config) not in MODES:
        return
    if any(FIXTURE in getattr(item, "fixturenames", ()) for item in session.items):
        config_path(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: tell a starting worker where the session's server is asked for."""
    config: pytest.Config = node.config
    if server_choice(config) not in MODES:
        return  # a URL: each worker uses it as it is
    state = config.stash[_SESSION]
    if state.broker is None:
        from remote_graph._serverbroker import ServerBroker  # noqa: PLC0415

        state.broker = ServerBroker(lambda: _start(config), start_timeout=_start_timeout(config))
    node.workerinput[_BROKER_KEY] = state.broker.address


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    # xdist controller: after xdist has ended the workers, stop the server they shared.
    state = session.config.stash.get(_SESSION, None)
    if state is not None and state.broker is not None:
        broker, state.broker = state.broker, None
        server = broker.close()
        if server is not None:
            _stop(session.config, server)


@pytest.fixture(scope="session")
def remote_graph_server(pytestconfig: pytest.Config) -> Iterator[str]:
    """Base URL of the session's LangGraph server (see ``--remote-graph-server``)."""
    from remote_graph._serverbase import LogFile  # noqa: PLC0415

    state = pytestconfig.stash[_SESSION]
    choice = server_choice(pytestconfig)
    if choice not in MODES:
        state.log_command = pytestconfig.getoption("--remote-graph-log-command")
        yield choice
        return
    broker = getattr(pytestconfig, "workerinput", {}).get(_BROKER_KEY)
    if broker is not None:  # an xdist worker: the controller's server
        from remote_graph._serverbroker import request_server  # noqa: PLC0415

        config_path(pytestconfig)  # the usage error itself, not the controller's report of it
        url, log_path = request_server(broker, timeout=_start_timeout(pytestconfig) + 30)
        state.log = LogFile(log_path)
        if state.current is not None:  # the test being set up: its part starts now, not at the server's start
            state.marks[state.current] = state.log.mark()
        yield url
        return
    server = _start(pytestconfig)
    state.server, state.log = server, LogFile(server.log_path)
    try:
        yield server.url
    finally:
        state.server, state.log = None, None
        _stop(pytestconfig, server)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash[_SESSION]
    state.current = item.nodeid
    if state.log is not None:
        state.marks[item.nodeid] = state.log.mark()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    state = item.config.stash.get(_SESSION, None)
    if state is None:
        return
    if report.failed and FIXTURE in getattr(item, "fixturenames", ()):
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
