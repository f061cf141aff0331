"""``LangGraphDevServer``: ``langgraph dev`` in a subprocess, in a data directory of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from remote_graph._project import ProjectServer, interpreter
from remote_graph._serverbase import exit_reason, spawn_logged, stop_process_group

ENV_SERVER_PYTHON = "REMOTE_GRAPH_SERVER_PYTHON"


def _server_python(python: str | os.PathLike[str] | None) -> Path:
    """The interpreter to run ``langgraph dev`` with (see ``LangGraphDevServer``)."""
    given = python if python is not None else os.environ.get(ENV_SERVER_PYTHON) or None
    if given is None:
        if sys.version_info < (3, 11):
            raise RuntimeError(
                f"langgraph dev's in-memory server needs Python 3.11 or newer; this is "
                f"{sys.version_info.major}.{sys.version_info.minor}. Name a 3.11+ interpreter or "
                f"virtualenv with langgraph-cli[inmem]: python=..., ${ENV_SERVER_PYTHON} or "
                "--remote-graph-python; or use --remote-graph-server=docker or a URL."
            )
        return Path(sys.executable)
    return interpreter(given)


class LangGraphDevServer(ProjectServer):
    """A ``langgraph dev`` server serving the graphs named in a ``langgraph.json``.

    The server runs in a fresh data directory (``data_dir``, under the system's
    temporary directory): its threads, runs and store live there, beside its log
    (``server.log``), and ``stop()`` removes it unless ``keep_data``. The project's
    files are linked into it, so the graphs load as they do from the project.

    Args:
        config: Path to the ``langgraph.json`` to serve.
        host: Loopback address to bind.
        port: Port to bind; a free one is picked when omitted.
        startup_timeout: Seconds to wait for ``GET /ok``.
        env: Extra environment variables for the server process.
        n_jobs_per_worker: Runs the server executes at once. ``langgraph dev``
            runs one unless told otherwise, and it overrides the
            ``N_JOBS_PER_WORKER`` environment variable, so it is passed as
            the command's option.
        python: The interpreter that runs the server: a Python executable or
            a virtualenv directory, with ``langgraph-cli[inmem]`` (Python
            3.11+). Defaults to ``$REMOTE_GRAPH_SERVER_PYTHON``, else this
            interpreter.
        keep_data: Leave the data directory (threads, runs, store and log) in
            place on ``stop()``, to look at afterwards.

    Raises:
        FileNotFoundError: If ``config`` or ``python`` does not exist.
        ValueError: If ``config`` is not a JSON object, or ``n_jobs_per_worker``
            is below 1.
        RuntimeError: If no ``python`` is given and this interpreter is older
            than 3.11, where ``langgraph dev`` cannot run.
    """

    def __init__(
        self,
        config: str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 90.0,
        env: dict[str, str] | None = None,
        n_jobs_per_worker: int | None = None,
        python: str | os.PathLike[str] | None = None,
        keep_data: bool = False,
    ) -> None:
        super().__init__(config, host, port, startup_timeout, env, n_jobs_per_worker, keep_data)
        self.python = _server_python(python)
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> LangGraphDevServer:
        """Start the server in a new data directory and wait until it answers ``GET /ok``.

        Raises:
            RuntimeError: If the server is running already, or exits before it answers.
            TimeoutError: If it does not answer within ``startup_timeout``.
        """
        try:
            project, config = self._stage("remote-graph-server-")
            langgraph = self.python.with_name("langgraph")
            command = [str(langgraph)] if langgraph.exists() else [str(self.python), "-m", "langgraph_cli.cli"]
            command += ["dev", "--no-browser", "--no-reload", "--host", self.host, "--port", str(self.port)]
            command += ["--config", str(config)]
            if self.n_jobs_per_worker is not None:
                command += ["--n-jobs-per-worker", str(self.n_jobs_per_worker)]
            # Plain log lines: they are read as text (a failing test's report shows them).
            quiet = {"LANGGRAPH_NO_BROWSER": "1", "LANGSMITH_TRACING": "false", "LOG_COLOR": "false"}
            env = {**os.environ, **quiet, **self._env}
            self._process = spawn_logged(command, self.log_path, cwd=project, env=env)
            self._wait_ready(self.startup_timeout, self._exited, "langgraph dev")
        except BaseException:
            self.stop()
            raise
        return self

    def _exited(self) -> str | None:
        return exit_reason(self._process)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server's process group (SIGTERM, then SIGKILL after ``timeout``)
        and remove its data directory unless ``keep_data``. Safe to call more than once."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, signal.SIGTERM, timeout)
        self._remove_data()
