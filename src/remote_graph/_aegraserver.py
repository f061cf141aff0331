"""``AegraServer``: aegra (an Agent Protocol server) on a Postgres and a Redis of its own.

Three processes, each in a process group of its own and stopped by its PID: a
Postgres cluster made with ``initdb`` in the server's data directory, a Redis
that keeps nothing on disk, and ``aegra serve`` (which starts uvicorn as its
child, so its whole group is stopped). Nothing is installed: aegra runs from
the interpreter the caller names, and a missing piece fails at once, naming
what to install.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remote_graph._devserver import _read_config, _server_python, _stage_project
from remote_graph._serverbase import LogFile, ServerBase, exit_reason, free_port, spawn_logged, tail

ENV_AEGRA_PYTHON = "REMOTE_GRAPH_AEGRA_PYTHON"
LOG_NAME = "server.log"
# Debian and Ubuntu keep Postgres's server programs off PATH, one directory per major version.
_PG_LIBDIRS = Path("/usr/lib/postgresql")
# Postgres and Redis start in well under a second; a bound for a loaded machine.
_PART_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 10.0


def _aegra_command(python: str | os.PathLike[str] | None) -> list[str]:
    """The ``aegra`` command of the named interpreter.

    Raises:
        RuntimeError: If no interpreter is named, or it has no ``aegra-cli``.
    """
    given = python if python is not None else os.environ.get(ENV_AEGRA_PYTHON) or None
    if given is None:
        raise RuntimeError(
            "aegra runs from an interpreter of its own (Python 3.12+ with aegra-cli): name it with python=..., "
            f"${ENV_AEGRA_PYTHON} or --remote-graph-aegra-python, e.g. after "
            "`python3.12 -m venv .venv-aegra && .venv-aegra/bin/pip install aegra-cli`"
        )
    interpreter = _server_python(given)
    aegra = interpreter.with_name("aegra")
    if not aegra.exists():
        raise RuntimeError(f"{interpreter} has no aegra command: install it there with `pip install aegra-cli`")
    return [str(aegra)]


def _postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``postgres``.

    Raises:
        RuntimeError: If Postgres's server programs are not installed.
    """
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).parent
    versions = sorted(
        (d for d in _PG_LIBDIRS.glob("*/bin") if (d / "initdb").exists() and d.parent.name.isdigit()),
        key=lambda d: int(d.parent.name),
    )
    if versions:
        return versions[-1]
    raise RuntimeError(
        "aegra needs Postgres: initdb and postgres were found neither on PATH nor under "
        f"{_PG_LIBDIRS}/<version>/bin (install Postgres's server, e.g. the postgresql package)"
    )


def _redis_server() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError("aegra's broker needs Redis: redis-server is not on PATH (install redis-server)")
    return found


def _postgres_user() -> dict[str, Any]:
    """How to run Postgres's programs: as the ``postgres`` user when this is root (they refuse root)."""
    if os.geteuid() != 0:
        return {}
    try:
        import pwd  # noqa: PLC0415 - POSIX only, like the rest of this module

        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError(
            "Postgres refuses to run as root and there is no postgres user to run it as "
            "(the postgresql package makes one)"
        ) from None
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _accepts(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


class AegraServer(ServerBase):
    """An aegra server serving the graphs named in a ``langgraph.json``.

    aegra (``aegra-cli``, Apache-2.0) is an Agent Protocol server on Postgres
    that serves a ``langgraph.json`` as it is. This starts, on free loopback
    ports, a Postgres cluster (``initdb --auth=trust`` in the data directory),
    a Redis (``--save ''``) and ``aegra serve``, and waits for ``GET /health``.
    ``stop()`` stops the three by PID and removes the data directory unless
    ``keep_data``.

    Args:
        config: Path to the ``langgraph.json`` to serve.
        python: The interpreter (a Python executable or a virtualenv directory)
            with ``aegra-cli`` installed (Python 3.12+). Defaults to
            ``$REMOTE_GRAPH_AEGRA_PYTHON``.
        host: Loopback address to bind.
        port: Port to bind; a free one is picked when omitted.
        startup_timeout: Seconds to wait for ``GET /health`` (aegra runs its
            migrations first).
        env: Extra environment variables for ``aegra serve``.
        n_jobs_per_worker: Runs the server executes at once.
        keep_data: Leave the data directory (database, log) in place on ``stop()``.

    Raises:
        FileNotFoundError: If ``config`` or ``python`` does not exist.
        ValueError: If ``config`` is not a JSON object, or ``n_jobs_per_worker`` is below 1.
        RuntimeError: If no interpreter with ``aegra-cli`` is named, or Postgres's
            or Redis's server programs are not installed.
    """

    def __init__(
        self,
        config: str | os.PathLike[str],
        *,
        python: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 120.0,
        env: dict[str, str] | None = None,
        n_jobs_per_worker: int = 32,
        keep_data: bool = False,
    ) -> None:
        self.config = Path(config).resolve()
        self._parsed = _read_config(self.config)
        self._aegra = _aegra_command(python)
        self._pg_bin = _postgres_bin()
        self._redis = _redis_server()
        if n_jobs_per_worker < 1:
            raise ValueError(f"n_jobs_per_worker must be at least 1, got {n_jobs_per_worker}")
        self.n_jobs_per_worker = n_jobs_per_worker
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self._env = env or {}
        self.keep_data = keep_data
        self.data_dir: Path | None = None
        """The server's data directory, from ``start()`` on; gone after ``stop()`` unless ``keep_data``."""
        # Started processes, in start order (stopped in reverse), by name.
        self._processes: list[tuple[str, subprocess.Popen[bytes], signal.Signals]] = []

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> AegraServer:
        """Start Postgres, Redis and aegra, and wait until aegra answers ``GET /health``.

        Raises:
            RuntimeError: If the server is running already, or a part fails to start.
            TimeoutError: If a part does not answer in time.
        """
        if self._processes:
            raise RuntimeError("server already started")
        self.data_dir = Path(tempfile.mkdtemp(prefix="remote-graph-aegra-"))
        self._log = LogFile(self.data_dir / LOG_NAME)
        try:
            pg_port = self._start_postgres(self.data_dir)
            redis_port = self._start_redis(self.data_dir)
            project = self.data_dir / self.config.parent.name
            config = _stage_project(self.config, self._parsed, project)
            env = {
                **os.environ,
                "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{pg_port}/postgres",
                "REDIS_BROKER_ENABLED": "true",
                "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
                "AUTH_TYPE": "noop",
                "N_JOBS_PER_WORKER": str(self.n_jobs_per_worker),
                "LANGSMITH_TRACING": "false",
                "NO_COLOR": "1",
                **self._env,
            }
            command = [*self._aegra, "serve", "--host", self.host, "--port", str(self.port), "-c", str(config)]
            self._spawn("aegra", command, env=env, cwd=project, stop_with=signal.SIGTERM)
            self._wait_ready(self.startup_timeout, self._exited, "aegra", path="/health")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_postgres(self, data_dir: Path) -> int:
        cluster, sockets = data_dir / "pg", data_dir / "pg-socket"
        sockets.mkdir()
        as_user = _postgres_user()
        if as_user:
            # The cluster's user must reach its directories (mkdtemp makes the parent 0700).
            for path in (data_dir, sockets):
                os.chown(path, as_user["user"], as_user["group"])
        assert self._log is not None
        with self._log.path.open("ab") as out:
            made = subprocess.run(
                **as_user,
                cwd=data_dir,
                args=[str(self._pg_bin / "initdb"), "-D", str(cluster), "--auth=trust", "-U", "postgres", "-E", "UTF8"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=_PART_START_TIMEOUT * 2,
                check=False,
            )
        if made.returncode != 0:
            raise RuntimeError(f"initdb exited with code {made.returncode}:\n{tail(self.logs())}")
        port = free_port()
        settings = ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"]
        command = [str(self._pg_bin / "postgres"), "-D", str(cluster), "-p", str(port), "-k", str(sockets), *settings]
        # SIGINT is Postgres's fast shutdown: clients are disconnected, nothing is waited for.
        self._spawn("postgres", command, env=dict(os.environ), cwd=data_dir, stop_with=signal.SIGINT, **as_user)
        isready = self._pg_bin / "pg_isready"
        self._wait_part(
            "postgres",
            lambda: (
                subprocess.run(
                    [str(isready), "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"],
                    timeout=5,
                    check=False,
                ).returncode
                == 0
                if isready.exists()
                else _accepts(port)
            ),
        )
        return port

    def _start_redis(self, data_dir: Path) -> int:
        port = free_port()
        command = [self._redis, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
        command += ["--dir", str(data_dir)]
        self._spawn("redis", command, env=dict(os.environ), cwd=data_dir, stop_with=signal.SIGTERM)
        self._wait_part("redis", lambda: _accepts(port))
        return port

    def _spawn(
        self,
        name: str,
        command: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        stop_with: signal.Signals,
        **as_user: Any,
    ) -> None:
        assert self._log is not None
        process = spawn_logged(command, self._log.path, cwd=cwd, env=env, **as_user)
        self._processes.append((name, process, stop_with))

    def _wait_part(self, name: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + _PART_START_TIMEOUT
        while time.monotonic() < deadline:
            reason = self._exited()
            if reason is not None:
                raise RuntimeError(f"aegra's {reason}:\n{tail(self.logs())}")
            if ready():
                return
            time.sleep(0.1)
        raise TimeoutError(f"aegra's {name} did not start within {_PART_START_TIMEOUT}s:\n{tail(self.logs())}")

    def _exited(self) -> str | None:
        for name, process, _ in self._processes:
            reason = exit_reason(process)
            if reason is not None:
                return f"{name} {reason}"
        return None

    def stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Stop aegra, Redis and Postgres (each process group by its PID: the
        polite signal, then SIGKILL after ``timeout``) and remove the data
        directory unless ``keep_data``. Safe to call more than once."""
        processes, self._processes = self._processes, []
        for _, process, polite in reversed(processes):
            _stop_group(process, polite, timeout)
        if self._log is not None:
            self._log.keep()
        if self.data_dir is not None and not self.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def _stop_group(process: subprocess.Popen[bytes], polite: signal.Signals, timeout: float) -> None:
    """Signal the process group led by ``process`` and wait until the whole group is gone
    (``aegra serve`` exits before its uvicorn child does); SIGKILL it if it lingers."""
    for sig in (polite, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            continue
        while time.monotonic() < deadline:
            if not _group_alive(process.pid):
                return
            time.sleep(0.05)
    process.wait(timeout=timeout)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member is another user's (Postgres's), and alive
        return True
    return True
