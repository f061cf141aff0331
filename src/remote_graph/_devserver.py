"""``LangGraphDevServer``: ``langgraph dev`` in a subprocess, in a data directory of its own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from remote_graph._serverbase import LogFile, ServerBase, free_port, stop_process_group

ENV_SERVER_PYTHON = "REMOTE_GRAPH_SERVER_PYTHON"
# Where langgraph dev's in-memory runtime keeps its data, relative to its working directory.
DATA_STORE = ".langgraph_api"
LOG_NAME = "server.log"


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
    # Not resolved: a virtualenv's python is a symlink, and its scripts sit beside it.
    path = Path(given).expanduser().absolute()
    if path.is_dir():
        candidates = [path / "bin" / "python", path / "Scripts" / "python.exe"]
        path = next((c for c in candidates if c.exists()), candidates[0])
    if not path.is_file():
        raise FileNotFoundError(f"server python not found: {path} (from {given!r})")
    return path


def _outside_paths_absolute(value: Any, base: Path) -> Any:
    """``value`` (a parsed ``langgraph.json``) with each ``../`` path made absolute."""
    if isinstance(value, dict):
        return {key: _outside_paths_absolute(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [_outside_paths_absolute(item, base) for item in value]
    if isinstance(value, str) and (value == ".." or value.startswith("../")):
        # normpath keeps a graph spec's ":variable" as it is.
        return os.path.normpath(os.path.join(base, value))
    return value


def _read_config(config: Path) -> dict[str, Any]:
    """The parsed ``langgraph.json``.

    Raises:
        FileNotFoundError: If it does not exist.
        ValueError: If it is not a JSON object.
    """
    if not config.is_file():
        raise FileNotFoundError(f"langgraph config not found: {config}")
    try:
        parsed = json.loads(config.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"langgraph config {config} is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"langgraph config {config} is not a JSON object")
    return parsed


def _stage_project(config: Path, parsed: dict[str, Any], into: Path) -> Path:
    """Lay out ``config``'s directory in ``into`` for ``langgraph dev`` to run in.

    ``langgraph dev`` resolves the config's relative paths (graphs, dependencies,
    ``env``) against its working directory and keeps its data in
    ``.langgraph_api`` there. So it runs in ``into``, which holds a link to each
    entry of the config's directory except ``.langgraph_api``, and a copy of the
    config (``parsed``) whose paths outside that directory are absolute. Module
    names and ``./`` paths stay what they are in the project.

    Returns:
        The staged config, to pass to ``langgraph dev``.
    """
    into.mkdir()
    for entry in config.parent.iterdir():
        if entry.name not in (DATA_STORE, config.name):
            (into / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    staged = into / config.name
    staged.write_text(json.dumps(_outside_paths_absolute(parsed, config.parent), indent=2), encoding="utf-8")
    return staged


class LangGraphDevServer(ServerBase):
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
        self.config = Path(config).resolve()
        self._parsed = _read_config(self.config)
        self.python = _server_python(python)
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self._env = env or {}
        if n_jobs_per_worker is not None and n_jobs_per_worker < 1:
            raise ValueError(f"n_jobs_per_worker must be at least 1, got {n_jobs_per_worker}")
        self.n_jobs_per_worker = n_jobs_per_worker
        self.keep_data = keep_data
        self.data_dir: Path | None = None
        """The server's data directory, from ``start()`` on; gone after ``stop()`` unless ``keep_data``."""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> LangGraphDevServer:
        """Start the server in a new data directory and wait until it answers ``GET /ok``.

        Raises:
            RuntimeError: If the server is running already, or exits before it answers.
            TimeoutError: If it does not answer within ``startup_timeout``.
        """
        if self._process is not None:
            raise RuntimeError("server already started")
        self.data_dir = Path(tempfile.mkdtemp(prefix="remote-graph-server-"))
        self._log = LogFile(self.data_dir / LOG_NAME)
        try:
            project = self.data_dir / self.config.parent.name
            config = _stage_project(self.config, self._parsed, project)
            langgraph = self.python.with_name("langgraph")
            command = [str(langgraph)] if langgraph.exists() else [str(self.python), "-m", "langgraph_cli.cli"]
            command += ["dev", "--no-browser", "--no-reload", "--host", self.host, "--port", str(self.port)]
            command += ["--config", str(config)]
            if self.n_jobs_per_worker is not None:
                command += ["--n-jobs-per-worker", str(self.n_jobs_per_worker)]
            # Plain log lines: they are read as text (a failing test's report shows them).
            quiet = {"LANGGRAPH_NO_BROWSER": "1", "LANGSMITH_TRACING": "false", "LOG_COLOR": "false"}
            env = {**os.environ, **quiet, **self._env}
            with self._log.path.open("ab") as out:
                self._process = subprocess.Popen(
                    command,
                    cwd=project,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,  # its own process group, so stop() reaches the workers too
                )
            self._wait_ready(self.startup_timeout, self._exited, "langgraph dev")
        except BaseException:
            self.stop()
            raise
        return self

    def _exited(self) -> str | None:
        code = None if self._process is None else self._process.poll()
        return None if code is None else f"exited with code {code}"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server's process group (SIGTERM, then SIGKILL after ``timeout``)
        and remove its data directory unless ``keep_data``. Safe to call more than once."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, signal.SIGTERM, timeout)
        if self._log is not None:
            self._log.keep()
        if self.data_dir is not None and not self.keep_data:
            # Links into the project are removed, never followed.
            shutil.rmtree(self.data_dir, ignore_errors=True)
