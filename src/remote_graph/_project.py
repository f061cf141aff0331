"""``ProjectServer``: what every test server of a ``langgraph.json`` project shares.

A server runs in a data directory of its own, made on ``start()`` and removed on
``stop()`` (unless kept): the project is staged in it (``stage_project``), and the
server's output goes to a log in it. The settings every server takes (where it
binds, how long it may take to start, its environment, its job count) are
checked here once.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from remote_graph._serverbase import LogFile, ServerBase, free_port

# Where langgraph dev's in-memory runtime keeps its data, relative to its working directory.
DATA_STORE = ".langgraph_api"
LOG_NAME = "server.log"


def interpreter(given: str | os.PathLike[str]) -> Path:
    """The Python executable ``given`` names: itself, or a virtualenv directory's.

    Raises:
        FileNotFoundError: If there is no such interpreter.
    """
    # Not resolved: a virtualenv's python is a symlink, and its scripts sit beside it.
    path = Path(given).expanduser().absolute()
    if path.is_dir():
        candidates = [path / "bin" / "python", path / "Scripts" / "python.exe"]
        path = next((c for c in candidates if c.exists()), candidates[0])
    if not path.is_file():
        raise FileNotFoundError(f"server python not found: {path} (from {str(given)!r})")
    return path


def outside_paths_absolute(value: Any, base: Path) -> Any:
    """``value`` (a parsed ``langgraph.json``) with each ``../`` path made absolute."""
    if isinstance(value, dict):
        return {key: outside_paths_absolute(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [outside_paths_absolute(item, base) for item in value]
    if isinstance(value, str) and (value == ".." or value.startswith("../")):
        # normpath keeps a graph spec's ":variable" as it is.
        return os.path.normpath(os.path.join(base, value))
    return value


def read_config(config: Path) -> dict[str, Any]:
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


def stage_project(config: Path, parsed: dict[str, Any], into: Path) -> Path:
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
    staged.write_text(json.dumps(outside_paths_absolute(parsed, config.parent), indent=2), encoding="utf-8")
    return staged


class ProjectServer(ServerBase):
    """A server of the graphs a ``langgraph.json`` names, in a data directory of its own.

    Subclasses start their processes in ``start()`` after ``_stage()``, and stop
    them in ``stop()`` before ``_remove_data()``.

    Raises:
        FileNotFoundError: If ``config`` does not exist.
        ValueError: If ``config`` is not a JSON object, or ``n_jobs_per_worker`` is below 1.
    """

    def __init__(
        self,
        config: str | os.PathLike[str],
        host: str,
        port: int | None,
        startup_timeout: float,
        env: dict[str, str] | None,
        n_jobs_per_worker: int | None,
        keep_data: bool,
    ) -> None:
        self.config = Path(config).resolve()
        self._parsed = read_config(self.config)
        if n_jobs_per_worker is not None and n_jobs_per_worker < 1:
            raise ValueError(f"n_jobs_per_worker must be at least 1, got {n_jobs_per_worker}")
        self.n_jobs_per_worker = n_jobs_per_worker
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self._env = env or {}
        self.keep_data = keep_data
        self.data_dir: Path | None = None
        """The server's data directory, from ``start()`` on; gone after ``stop()`` unless ``keep_data``."""
        self._running = False

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return f"http://{self.host}:{self.port}"

    def _stage(self, prefix: str) -> tuple[Path, Path]:
        """Make the data directory and its log, and stage the project in it.

        Returns:
            The staged project directory (the server's working directory) and its config.

        Raises:
            RuntimeError: If the server is running already.
        """
        if self._running:
            raise RuntimeError("server already started")
        self._running = True
        self.data_dir = Path(tempfile.mkdtemp(prefix=prefix))
        self._log = LogFile(self.data_dir / LOG_NAME)
        project = self.data_dir / self.config.parent.name
        return project, stage_project(self.config, self._parsed, project)

    def _remove_data(self) -> None:
        """Keep the log's text, and remove the data directory unless ``keep_data``."""
        self._running = False
        if self._log is not None:
            self._log.keep()
        if self.data_dir is not None and not self.keep_data:
            # Links into the project are removed, never followed.
            shutil.rmtree(self.data_dir, ignore_errors=True)
