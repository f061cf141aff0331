"""``ReplicaServer``: LangGraph server replicas on one Postgres and one Redis, behind a balancer.

The shape of a production deployment, on loopback: a Postgres cluster and a Redis
of their own, ``replicas`` API servers (``langhost serve``, the Postgres + Redis
runtime of ``langgraph-runtime-pg``) sharing them, and a round-robin TCP balancer
(``remote_graph._balancer``) in front. Every process is started here and stopped
by its PID; the data directory holding the database, the logs and the staged
project is removed on ``stop()``.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from remote_graph._backing import BackingStores
from remote_graph._balancer import Balancer, Served
from remote_graph._project import ProjectServer
from remote_graph._serverbase import exit_reason, free_port, spawn_logged, stop_process_group

ENV_REPLICAS_PYTHON = "REMOTE_GRAPH_REPLICAS_PYTHON"
LANGHOST_REQUIREMENT = "langhost==0.11.1.post1"
_INSTALL_LANGHOST = (
    f"make a Python 3.12 virtualenv with {LANGHOST_REQUIREMENT} (python3.12 -m venv VENV && "
    f"VENV/bin/pip install '{LANGHOST_REQUIREMENT}') and name it: python=VENV, ${ENV_REPLICAS_PYTHON} "
    "or --remote-graph-replicas-python"
)


def _langhost(python: str | os.PathLike[str] | None) -> Path:
    """The ``langhost`` command of the named interpreter or virtualenv.

    Raises:
        RuntimeError: If none is named, or it has no ``langhost``, naming what to install.
    """
    given = python if python is not None else os.environ.get(ENV_REPLICAS_PYTHON) or None
    if given is None:
        raise RuntimeError(f"the replica server runs langhost from a virtualenv of its own: {_INSTALL_LANGHOST}")
    path = Path(given).expanduser().absolute()
    bindir = path / "bin" if path.is_dir() else path.parent
    langhost = bindir / "langhost"
    if not langhost.is_file():
        raise RuntimeError(f"no langhost in {bindir} (from {str(given)!r}): {_INSTALL_LANGHOST}")
    return langhost


class ReplicaServer(ProjectServer):
    """LangGraph server replicas on one Postgres and one Redis, behind a round-robin balancer.

    ``start()`` makes a data directory (under the system's temporary directory) and
    starts, each as its own process on a free loopback port: a Postgres cluster
    (``initdb --auth=trust``, its own socket directory), a Redis (``--save ''``),
    the first replica (``langhost serve``, which runs the migrations) until it
    answers ``GET /ok``, then the other replicas on the same database and Redis,
    and the balancer (``url``). ``stop()`` stops each process by its PID, replicas
    first, and removes the data directory unless ``keep_data``.

    The replicas' output goes to one log (``log_path``), each line as its process
    wrote it; Postgres's and Redis's go to files beside it in ``data_dir``.

    Nothing is installed here. ``langhost`` (``langhost==0.11.1.post1``, Python 3.12)
    runs from the interpreter or virtualenv named by ``python``; Postgres's and
    Redis's binaries come from the system. When one is missing, the constructor
    fails at once, naming what to install.

    Args:
        config: Path to the ``langgraph.json`` to serve.
        replicas: How many API replicas to run (at least 1).
        python: The Python executable or virtualenv that has ``langhost`` and the
            graphs' dependencies. Defaults to ``$REMOTE_GRAPH_REPLICAS_PYTHON``.
        bg_job_heartbeat: The replicas' ``LG_BG_JOB_HEARTBEAT``: seconds after which a
            run whose executing replica stopped beating is seen as stale and retried
            (the server's own default is minutes).
        host: Loopback address every process binds.
        port: The balancer's port; a free one is picked when omitted.
        startup_timeout: Seconds to wait for each replica's ``GET /ok``.
        env: Extra environment variables for the replicas.
        n_jobs_per_worker: Runs each replica executes at once.
        postgres_bin: The directory holding ``initdb`` and ``postgres``; found on
            ``PATH`` or in ``/usr/lib/postgresql/*/bin`` when omitted.
        redis_server: The ``redis-server`` executable; found on ``PATH`` when omitted.
        keep_data: Leave the data directory in place on ``stop()``.

    Raises:
        FileNotFoundError: If ``config`` does not exist.
        ValueError: If ``config`` is not a JSON object, or a count is below 1.
        RuntimeError: If ``langhost``, Postgres or Redis is not found.
    """

    def __init__(
        self,
        config: str | os.PathLike[str],
        *,
        replicas: int = 2,
        python: str | os.PathLike[str] | None = None,
        bg_job_heartbeat: float = 5.0,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 120.0,
        env: dict[str, str] | None = None,
        n_jobs_per_worker: int | None = 32,
        postgres_bin: str | os.PathLike[str] | None = None,
        redis_server: str | os.PathLike[str] | None = None,
        keep_data: bool = False,
    ) -> None:
        if replicas < 1:
            raise ValueError(f"replicas must be at least 1, got {replicas}")
        if bg_job_heartbeat <= 0:
            raise ValueError(f"bg_job_heartbeat must be positive, got {bg_job_heartbeat}")
        super().__init__(config, host, port, startup_timeout, env, n_jobs_per_worker, keep_data)
        self.langhost = _langhost(python)
        self.stores = BackingStores(host=host, postgres_bin=postgres_bin, redis_server=redis_server)
        """The replicas' Postgres and Redis."""
        self.replica_count = replicas
        self.bg_job_heartbeat = bg_job_heartbeat
        self.replica_ports: list[int] = []
        self.balancer: Balancer | None = None
        """The balancer in front of the replicas, while the stack runs."""
        self._replicas: list[subprocess.Popen[bytes] | None] = []
        # The staged project and its langgraph.json, kept for a replica's restart.
        self._staged: tuple[Path, Path] | None = None

    @property
    def url(self) -> str:
        """Base URL of the balancer in front of the replicas."""
        return f"http://{self.host}:{self.port}"

    @property
    def replica_urls(self) -> list[str]:
        """Base URL of each replica, past the balancer."""
        return [f"http://{self.host}:{port}" for port in self.replica_ports]

    @property
    def replica_pids(self) -> list[int | None]:
        """The PID of each replica's process, ``None`` for one that was stopped here."""
        return [None if process is None else process.pid for process in self._replicas]

    @property
    def served(self) -> list[Served]:
        """Which replica served each connection through the balancer so far."""
        return [] if self.balancer is None else list(self.balancer.served)

    def start(self) -> ReplicaServer:
        """Start Postgres, Redis, the replicas one after another, and the balancer.

        Raises:
            RuntimeError: If the stack is running already, or a process exits before it answers.
            TimeoutError: If a process does not answer in time.
        """
        try:
            project, config = self._staged = self._stage("remote-graph-replicas-")
            assert self.data_dir is not None
            self.stores.start(self.data_dir)
            self.replica_ports, self._replicas = [], []
            # The first replica alone: replicas migrating a fresh database together collide.
            for index in range(self.replica_count):
                self.replica_ports.append(free_port(self.host))
                self._replicas.append(self._start_replica(index, project, config))
                self._wait_replica(index)
            self.balancer = Balancer([(self.host, port) for port in self.replica_ports], host=self.host, port=self.port)
            self.balancer.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_replica(self, index: int, project: Path, config: Path) -> subprocess.Popen[bytes]:
        command = [str(self.langhost), "serve", "--host", self.host, "--port", str(self.replica_ports[index])]
        command += ["-c", str(config), "--no-browser"]
        if self.n_jobs_per_worker is not None:
            command += ["--n-jobs-per-worker", str(self.n_jobs_per_worker)]
        env = {
            **os.environ,
            "DATABASE_URI": self.stores.database_uri,
            "REDIS_URI": self.stores.redis_uri,
            "LG_BG_JOB_HEARTBEAT": f"{self.bg_job_heartbeat:g}",
            # Plain log lines: they are read as text (a failing test's report shows them).
            "LANGSMITH_TRACING": "false",
            "LOG_COLOR": "false",
            **self._env,
        }
        return spawn_logged(command, self.log_path, cwd=project, env=env)

    def _wait_replica(self, index: int) -> None:
        url = self.replica_urls[index]

        def exited() -> str | None:
            return exit_reason(self._replicas[index])

        self._wait_ready(self.startup_timeout, exited, f"replica {index} (langhost serve)", url)

    def signal_replica(self, index: int, sig: signal.Signals = signal.SIGKILL) -> int:
        """Send ``sig`` to replica ``index``'s process group, as a crash or a deploy would.

        The replica is not restarted; the balancer passes its connections to the others
        once it refuses them. ``stop()`` still reaps it.

        Returns:
            The PID signalled.

        Raises:
            IndexError: If there is no such replica.
            RuntimeError: If it was already stopped with ``stop_replica``.
        """
        process = self._replicas[index]
        if process is None:
            raise RuntimeError(f"replica {index} was stopped")
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        return process.pid

    def restart_replica(self, index: int) -> int:
        """Start replica ``index`` again on its port, after a ``signal_replica`` or
        ``stop_replica``, and wait until it answers ``GET /ok``.

        What is left of the old process group is killed first. The balancer sends it
        connections again once it accepts them.

        Returns:
            The new process's PID.

        Raises:
            IndexError: If there is no such replica.
            RuntimeError: If the stack is not running, or the replica exits before it answers.
            TimeoutError: If it does not answer within ``startup_timeout``.
        """
        if self._staged is None or self.balancer is None:
            raise RuntimeError("the replica stack is not running")
        self.stop_replica(index, signal.SIGKILL)
        process = self._replicas[index] = self._start_replica(index, *self._staged)
        self._wait_replica(index)
        return process.pid

    def stop_replica(self, index: int, sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> None:
        """Stop replica ``index`` (``sig``, then SIGKILL after ``timeout``) and wait until it exits."""
        process, self._replicas[index] = self._replicas[index], None
        if process is not None:
            stop_process_group(process, sig, timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the balancer, the replicas, Redis and Postgres (each by its PID), and remove
        the data directory unless ``keep_data``. Safe to call more than once."""
        balancer, self.balancer = self.balancer, None
        self._staged = None
        if balancer is not None:
            balancer.stop()
        for index in range(len(self._replicas)):
            self.stop_replica(index, signal.SIGTERM, timeout)
        self.stores.stop(timeout)
        self._remove_data()
