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
import signal
import subprocess

from remote_graph._backing import BackingStores
from remote_graph._project import ProjectServer, interpreter
from remote_graph._serverbase import exit_reason, spawn_logged, stop_process_group

ENV_AEGRA_PYTHON = "REMOTE_GRAPH_AEGRA_PYTHON"
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
    python_path = interpreter(given)
    aegra = python_path.with_name("aegra")
    if not aegra.exists():
        raise RuntimeError(f"{python_path} has no aegra command: install it there with `pip install aegra-cli`")
    return [str(aegra)]


class AegraServer(ProjectServer):
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
        postgres_bin: The directory holding ``initdb`` and ``postgres``; found on
            ``PATH`` or in ``/usr/lib/postgresql/<version>/bin`` when omitted.
        redis_server: The ``redis-server`` executable; found on ``PATH`` when omitted.
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
        postgres_bin: str | os.PathLike[str] | None = None,
        redis_server: str | os.PathLike[str] | None = None,
        keep_data: bool = False,
    ) -> None:
        super().__init__(config, host, port, startup_timeout, env, n_jobs_per_worker, keep_data)
        self._aegra = _aegra_command(python)
        self.stores = BackingStores(
            host=host, postgres_bin=postgres_bin, redis_server=redis_server, max_connections=200
        )
        """aegra's Postgres and Redis."""
        self._aegra_process: subprocess.Popen[bytes] | None = None

    @property
    def pids(self) -> list[int]:
        """The PIDs of the processes running now: Postgres's, Redis's, then aegra's."""
        aegra = [] if self._aegra_process is None else [self._aegra_process.pid]
        return self.stores.pids + aegra

    def start(self) -> AegraServer:
        """Start Postgres, Redis and aegra, and wait until aegra answers ``GET /health``.

        Raises:
            RuntimeError: If the server is running already, or a part fails to start.
            TimeoutError: If a part does not answer in time.
        """
        try:
            project, config = self._stage("remote-graph-aegra-")
            assert self.data_dir is not None
            self.stores.start(self.data_dir)
            env = {
                **os.environ,
                "DATABASE_URL": self.stores.database_uri,
                "REDIS_BROKER_ENABLED": "true",
                "REDIS_URL": self.stores.redis_uri,
                "AUTH_TYPE": "noop",
                "N_JOBS_PER_WORKER": str(self.n_jobs_per_worker),
                "LANGSMITH_TRACING": "false",
                "NO_COLOR": "1",
                **self._env,
            }
            command = [*self._aegra, "serve", "--host", self.host, "--port", str(self.port), "-c", str(config)]
            self._aegra_process = spawn_logged(command, self.log_path, cwd=project, env=env)
            self._wait_ready(self.startup_timeout, self._exited, "aegra", path="/health")
        except BaseException:
            self.stop()
            raise
        return self

    def _exited(self) -> str | None:
        reason = exit_reason(self._aegra_process)
        return f"aegra {reason}" if reason is not None else self.stores.exited()

    def stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Stop aegra, Redis and Postgres (each process group by its PID: the
        polite signal, then SIGKILL after ``timeout``) and remove the data
        directory unless ``keep_data``. Safe to call more than once."""
        aegra, self._aegra_process = self._aegra_process, None
        if aegra is not None:
            stop_process_group(aegra, signal.SIGTERM, timeout)
        self.stores.stop(timeout)
        self._remove_data()
