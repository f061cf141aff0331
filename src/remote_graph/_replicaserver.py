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
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from remote_graph._balancer import Balancer, Served
from remote_graph._devserver import LOG_NAME, _read_config, _stage_project
from remote_graph._serverbase import LogFile, ServerBase, free_port, stop_process_group, tail

ENV_REPLICAS_PYTHON = "REMOTE_GRAPH_REPLICAS_PYTHON"
LANGHOST_REQUIREMENT = "langhost==0.11.1.post1"
_INSTALL_LANGHOST = (
    f"make a Python 3.12 virtualenv with {LANGHOST_REQUIREMENT} (python3.12 -m venv VENV && "
    f"VENV/bin/pip install '{LANGHOST_REQUIREMENT}') and name it: python=VENV, ${ENV_REPLICAS_PYTHON} "
    "or --remote-graph-replicas-python"
)
_POSTGRES_BIN_GLOB = "/usr/lib/postgresql/*/bin"
_POSTGRES_USER = "postgres"  # initdb and postgres refuse to run as root
_DATABASE = "postgres"  # the cluster's own database: the stack is the only user of the cluster
_BACKING_TIMEOUT = 30.0  # seconds for Postgres and Redis to accept connections
_POLL = 0.2


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


def _postgres_bin(given: str | os.PathLike[str] | None) -> Path:
    """The directory holding ``initdb`` and ``postgres``.

    Raises:
        RuntimeError: If they are not found, naming what to install.
    """
    if given is not None:
        candidates = [Path(given).expanduser()]
    else:
        on_path = shutil.which("initdb")
        found = sorted(Path("/").glob(_POSTGRES_BIN_GLOB.lstrip("/")), key=lambda p: _version_key(p.parent.name))
        candidates = ([Path(on_path).parent] if on_path else []) + found[::-1]
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "postgres").is_file():
            return candidate
    where = str(candidates[0]) if given is not None else f"PATH or {_POSTGRES_BIN_GLOB}"
    raise RuntimeError(
        f"Postgres's initdb and postgres are not found in {where}: install PostgreSQL "
        "(Debian: apt-get install postgresql) or name its bin directory (postgres_bin=...)"
    )


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _redis_server(given: str | os.PathLike[str] | None) -> Path:
    """The ``redis-server`` executable.

    Raises:
        RuntimeError: If it is not found, naming what to install.
    """
    found = Path(given).expanduser() if given is not None else shutil.which("redis-server")
    if found is None or not Path(found).is_file():
        raise RuntimeError(
            f"redis-server is not found{' at ' + str(given) if given is not None else ' on PATH'}: "
            "install Redis (Debian: apt-get install redis-server) or name it (redis_server=...)"
        )
    return Path(found)


def _answers(host: str, port: int, probe: bytes = b"", expect: bytes = b"") -> bool:
    """Whether ``host:port`` accepts a connection (and answers ``probe`` with ``expect``)."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as sock:
            if probe:
                sock.sendall(probe)
                return sock.recv(64).startswith(expect)
            return True
    except OSError:
        return False


class ReplicaServer(ServerBase):
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
        if n_jobs_per_worker is not None and n_jobs_per_worker < 1:
            raise ValueError(f"n_jobs_per_worker must be at least 1, got {n_jobs_per_worker}")
        if bg_job_heartbeat <= 0:
            raise ValueError(f"bg_job_heartbeat must be positive, got {bg_job_heartbeat}")
        self.config = Path(config).resolve()
        self._parsed = _read_config(self.config)
        self.langhost = _langhost(python)
        self.postgres_bin = _postgres_bin(postgres_bin)
        self.redis_server = _redis_server(redis_server)
        self.replica_count = replicas
        self.bg_job_heartbeat = bg_job_heartbeat
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self._env = env or {}
        self.n_jobs_per_worker = n_jobs_per_worker
        self.keep_data = keep_data
        self.data_dir: Path | None = None
        """The stack's data directory, from ``start()`` on; gone after ``stop()`` unless ``keep_data``."""
        self.replica_ports: list[int] = []
        self.balancer: Balancer | None = None
        """The balancer in front of the replicas, while the stack runs."""
        self._replicas: list[subprocess.Popen[bytes] | None] = []
        self._postgres: subprocess.Popen[bytes] | None = None
        self._redis: subprocess.Popen[bytes] | None = None
        self._pg_port = 0
        self._redis_port = 0

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
    def database_uri(self) -> str:
        """The replicas' ``DATABASE_URI``."""
        return f"postgresql://{_POSTGRES_USER}@{self.host}:{self._pg_port}/{_DATABASE}"

    @property
    def redis_uri(self) -> str:
        """The replicas' ``REDIS_URI``."""
        return f"redis://{self.host}:{self._redis_port}/0"

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
        if self.data_dir is not None:
            raise RuntimeError("server already started")
        self.data_dir = Path(tempfile.mkdtemp(prefix="remote-graph-replicas-"))
        self._log = LogFile(self.data_dir / LOG_NAME)
        try:
            self._start_postgres(self.data_dir)
            self._start_redis(self.data_dir)
            project = self.data_dir / self.config.parent.name
            config = _stage_project(self.config, self._parsed, project)
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

    def _as_postgres(self) -> tuple[int, int] | None:
        """The uid and gid to run Postgres's binaries as: the ``postgres`` user's when
        this is root (``None``: as this user)."""
        if os.geteuid() != 0:
            return None
        try:
            user = pwd.getpwnam(_POSTGRES_USER)
        except KeyError:
            raise RuntimeError(
                f"running as root, Postgres needs a {_POSTGRES_USER!r} user to run as (Debian's postgresql package "
                "makes one)"
            ) from None
        return user.pw_uid, user.pw_gid

    def _start_postgres(self, data_dir: Path) -> None:
        pg_dir, sockets = data_dir / "postgres", data_dir / "pg-sockets"
        pg_dir.mkdir()
        sockets.mkdir()
        as_postgres = self._as_postgres()
        if as_postgres:
            data_dir.chmod(0o755)  # the postgres user reaches its directories and the log through it
            for path in (pg_dir, sockets):
                os.chown(path, *as_postgres)
        log = data_dir / "postgres.log"
        with log.open("ab") as out:
            if as_postgres:
                os.chown(log, *as_postgres)
            initdb = [str(self.postgres_bin / "initdb"), "-D", str(pg_dir), "--auth=trust", "-U", _POSTGRES_USER]
            done = subprocess.run(
                initdb,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=120,
                check=False,
                user=as_postgres[0] if as_postgres else None,
                group=as_postgres[1] if as_postgres else None,
                extra_groups=[] if as_postgres else None,
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"initdb exited with code {done.returncode}:\n{tail(log.read_text(errors='replace'))}"
                )
            self._pg_port = free_port(self.host)
            command = [str(self.postgres_bin / "postgres"), "-D", str(pg_dir), "-p", str(self._pg_port)]
            command += ["-c", f"listen_addresses={self.host}", "-c", f"unix_socket_directories={sockets}"]
            command += ["-c", "max_connections=500", "-c", "fsync=off"]
            self._postgres = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                user=as_postgres[0] if as_postgres else None,
                group=as_postgres[1] if as_postgres else None,
                extra_groups=[] if as_postgres else None,
            )
        self._wait_backing(self._postgres, "postgres", log, self._pg_port)

    def _start_redis(self, data_dir: Path) -> None:
        self._redis_port = free_port(self.host)
        log = data_dir / "redis.log"
        command = [str(self.redis_server), "--bind", self.host, "--port", str(self._redis_port), "--save", ""]
        command += ["--appendonly", "no", "--dir", str(data_dir)]
        with log.open("ab") as out:
            self._redis = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self._wait_backing(self._redis, "redis-server", log, self._redis_port, b"PING\r\n", b"+PONG")

    def _wait_backing(
        self,
        process: subprocess.Popen[bytes],
        what: str,
        log: Path,
        port: int,
        probe: bytes = b"",
        expect: bytes = b"",
    ) -> None:
        deadline = time.monotonic() + _BACKING_TIMEOUT
        while time.monotonic() < deadline:
            code = process.poll()
            if code is not None:
                raise RuntimeError(f"{what} exited with code {code}:\n{tail(log.read_text(errors='replace'))}")
            if _answers(self.host, port, probe, expect):
                return
            time.sleep(_POLL)
        raise TimeoutError(f"{what} did not accept connections on port {port} within {_BACKING_TIMEOUT}s")

    def _start_replica(self, index: int, project: Path, config: Path) -> subprocess.Popen[bytes]:
        assert self._log is not None
        command = [str(self.langhost), "serve", "--host", self.host, "--port", str(self.replica_ports[index])]
        command += ["-c", str(config), "--no-browser"]
        if self.n_jobs_per_worker is not None:
            command += ["--n-jobs-per-worker", str(self.n_jobs_per_worker)]
        env = {
            **os.environ,
            "DATABASE_URI": self.database_uri,
            "REDIS_URI": self.redis_uri,
            "LG_BG_JOB_HEARTBEAT": f"{self.bg_job_heartbeat:g}",
            # Plain log lines: they are read as text (a failing test's report shows them).
            "LANGSMITH_TRACING": "false",
            "LOG_COLOR": "false",
            **self._env,
        }
        with self._log.path.open("ab") as out:
            return subprocess.Popen(
                command,
                cwd=project,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # its own process group, so a stop reaches its workers too
            )

    def _wait_replica(self, index: int) -> None:
        url = self.replica_urls[index]

        def exited() -> str | None:
            process = self._replicas[index]
            code = None if process is None else process.poll()
            return None if code is None else f"exited with code {code}"

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

    def stop_replica(self, index: int, sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> None:
        """Stop replica ``index`` (``sig``, then SIGKILL after ``timeout``) and wait until it exits."""
        process, self._replicas[index] = self._replicas[index], None
        if process is not None:
            stop_process_group(process, sig, timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the balancer, the replicas, Redis and Postgres (each by its PID), and remove
        the data directory unless ``keep_data``. Safe to call more than once."""
        balancer, self.balancer = self.balancer, None
        if balancer is not None:
            balancer.stop()
        for index in range(len(self._replicas)):
            self.stop_replica(index, signal.SIGTERM, timeout)
        redis, self._redis = self._redis, None
        if redis is not None:
            stop_process_group(redis, signal.SIGTERM, timeout)
        postgres, self._postgres = self._postgres, None
        if postgres is not None:
            stop_process_group(postgres, signal.SIGINT, timeout)  # Postgres's fast shutdown
        if self._log is not None:
            self._log.keep()
        data_dir = self.data_dir
        if data_dir is not None and not self.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
