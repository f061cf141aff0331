"""An embedded LangGraph server for tests, demos and benchmarks.

``LangGraphDevServer`` runs ``langgraph dev`` (the real langgraph-api server
with its in-memory runtime, from ``langgraph-cli[inmem]``) on a free loopback
port, waits for ``GET /ok``, and stops the process group it started. Nothing
is ever killed by name.

Example:
    ```python
    from remote_graph.testing import LangGraphDevServer

    with LangGraphDevServer("app/langgraph.json") as server:
        graph = RemoteGraph("linear", url=server.url)
    ```
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

__all__ = ["LangGraphDevServer", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LangGraphDevServer:
    """A ``langgraph dev`` server serving the graphs named in a ``langgraph.json``.

    Args:
        config: Path to the ``langgraph.json`` to serve.
        host: Loopback address to bind.
        port: Port to bind; a free one is picked when omitted.
        startup_timeout: Seconds to wait for ``GET /ok``.
        env: Extra environment variables for the server process.
    """

    def __init__(
        self,
        config: str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 90.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.config = Path(config).resolve()
        if not self.config.is_file():
            raise FileNotFoundError(f"langgraph config not found: {self.config}")
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self._env = env or {}
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> LangGraphDevServer:
        """Start the server and wait until it answers ``GET /ok``."""
        if self._process is not None:
            raise RuntimeError("server already started")
        langgraph = Path(sys.executable).with_name("langgraph")
        command = [str(langgraph)] if langgraph.exists() else [sys.executable, "-m", "langgraph_cli.cli"]
        command += [
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--config",
            str(self.config),
        ]
        env = {**os.environ, "LANGGRAPH_NO_BROWSER": "1", "LANGSMITH_TRACING": "false", **self._env}
        self._process = subprocess.Popen(
            command,
            cwd=self.config.parent,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # its own process group, so stop() reaches the workers too
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                self._process = None
                raise RuntimeError(f"langgraph dev exited with code {code}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/ok", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise TimeoutError(f"langgraph dev did not answer {self.url}/ok within {self.startup_timeout}s:\n{self.output()}")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server's process group: SIGTERM, then SIGKILL after ``timeout``."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(timeout=timeout)

    def output(self) -> str:
        """Everything the server has printed so far."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")

    def __enter__(self) -> LangGraphDevServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self._log.close()
