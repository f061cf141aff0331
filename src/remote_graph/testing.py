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

``langgraph dev``'s in-memory server needs Python 3.11 or newer. From Python
3.10 (or an environment without ``langgraph-cli[inmem]``), give it another
interpreter: ``python=`` (or ``$REMOTE_GRAPH_SERVER_PYTHON``) names a Python
executable or a virtualenv that has ``langgraph-cli[inmem]`` and the graphs'
dependencies; the server runs there, the tests stay in their own interpreter.

``DockerServer`` serves the same ``langgraph.json`` from a container: it builds
an image (``langgraph dev`` in a virtualenv on ``base_image``), publishes it on a
free loopback port, waits for ``GET /ok``, and removes everything it created on
exit. It needs the ``docker`` package (``pip install 'remote_graph[docker]'``)
and a Docker engine.

Example:
    ```python
    from remote_graph.testing import DockerServer

    with DockerServer("app/langgraph.json") as server:
        graph = RemoteGraph("linear", url=server.url)
    ```
"""

from __future__ import annotations

import datetime
import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from remote_graph._dockerimage import CONTAINER_PORT, DEFAULT_BASE_IMAGE, DEFAULT_EXCLUDES, render_dockerfile

__all__ = ["DockerServer", "LangGraphDevServer", "free_port"]

ENV_SERVER_PYTHON = "REMOTE_GRAPH_SERVER_PYTHON"

_DOCKERFILE_NAME = ".remote-graph.Dockerfile"


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


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


class LangGraphDevServer:
    """A ``langgraph dev`` server serving the graphs named in a ``langgraph.json``.

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

    Raises:
        FileNotFoundError: If ``config`` or ``python`` does not exist.
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
    ) -> None:
        self.config = Path(config).resolve()
        if not self.config.is_file():
            raise FileNotFoundError(f"langgraph config not found: {self.config}")
        self.python = _server_python(python)
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout = startup_timeout
        self._env = env or {}
        if n_jobs_per_worker is not None and n_jobs_per_worker < 1:
            raise ValueError(f"n_jobs_per_worker must be at least 1, got {n_jobs_per_worker}")
        self.n_jobs_per_worker = n_jobs_per_worker
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
        langgraph = self.python.with_name("langgraph")
        command = [str(langgraph)] if langgraph.exists() else [str(self.python), "-m", "langgraph_cli.cli"]
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
        if self.n_jobs_per_worker is not None:
            command += ["--n-jobs-per-worker", str(self.n_jobs_per_worker)]
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
        return self.logs_since(0)

    def logs(self) -> str:
        """Everything the server has printed so far (the same as ``output()``)."""
        return self.output()

    def log_mark(self) -> int:
        """A position in the server's output, for ``logs_since``."""
        try:
            return os.fstat(self._log.fileno()).st_size
        except (OSError, ValueError):
            return 0

    def logs_since(self, mark: int) -> str:
        """What the server printed after ``mark`` (from ``log_mark()``).

        Read with ``pread``: the server writes through the same open file, so moving
        its offset while it writes would make it overwrite its own log.
        """
        try:
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            return os.pread(fd, max(0, size - mark), mark).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""

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


class DockerServer:
    """A LangGraph server in a Docker container, serving the graphs of a ``langgraph.json``.

    The image runs ``langgraph dev`` (the real langgraph-api server with its in-memory
    runtime, no licence) in a virtualenv on ``base_image``; its Dockerfile is generated
    (see ``remote_graph._dockerimage``) and the build context is the directory holding
    the ``langgraph.json``, less ``.dockerignore`` entries and caches. Dependencies the
    ``langgraph.json`` lists are installed as ``langgraph build`` installs them.

    ``start()`` builds the image (tagged by a hash of its Dockerfile, base and context;
    an image of that tag that already exists is reused), starts a container published on
    a loopback port, and waits for ``GET /ok``. ``stop()`` (also on ``__exit__``, and when
    ``start()`` fails) stops and removes the container and, unless ``keep_image``, the
    image this object built. Every wait is bounded.

    Args:
        config: Path to the ``langgraph.json`` to serve.
        base_image: The image to build on: any Debian-like image with ``python3`` (venv)
            and pip. The official ``python:3.12-slim`` by default.
        requirements: Extra pip requirements installed next to the server.
        host: Loopback address the container's port is published on.
        port: Host port; one the engine picks when omitted.
        keep_image: Keep the built image (a build cache for the next run).
        build_timeout: Seconds the image build may take.
        startup_timeout: Seconds to wait for ``GET /ok`` once the container runs.
        stop_timeout: Seconds the server gets to exit on SIGTERM before SIGKILL.
        env: Extra environment variables for the server.
        docker_client: A ``docker.DockerClient`` to use; one from the environment
            (``DOCKER_HOST`` etc.) when omitted.
    """

    LABEL = "remote_graph.testing"

    def __init__(
        self,
        config: str | os.PathLike[str],
        *,
        base_image: str = DEFAULT_BASE_IMAGE,
        requirements: Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int | None = None,
        keep_image: bool = False,
        build_timeout: float = 900.0,
        startup_timeout: float = 120.0,
        stop_timeout: float = 10.0,
        env: dict[str, str] | None = None,
        docker_client: Any = None,
    ) -> None:
        self.config = Path(config).resolve()
        if not self.config.is_file():
            raise FileNotFoundError(f"langgraph config not found: {self.config}")
        self.base_image = base_image
        self.host = host
        self.port = port
        self.keep_image = keep_image
        self.build_timeout = build_timeout
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._env = env or {}
        self.dockerfile = render_dockerfile(self.config, requirements=requirements, base_image=base_image)
        self.image: str | None = None
        self._client = docker_client
        self._own_client = docker_client is None
        self._container: Any = None
        self._built: str | None = None
        self._build_log: list[str] = []
        self._last_logs = ""

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        if self.port is None or self._container is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self.port}"

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> DockerServer:
        """Build the image, start the container, and wait until it answers ``GET /ok``."""
        if self._container is not None:
            raise RuntimeError("server already started")
        try:
            import docker  # noqa: F401, PLC0415
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("DockerServer needs the docker package: pip install 'remote_graph[docker]'") from exc
        try:
            if self._client is None:
                self._client = docker.from_env(timeout=60)
            self._client.ping()
            self._build_image()
            self._run_container()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop and remove the container, and the image this object built (unless
        ``keep_image``). Safe to call more than once, and after a failed start."""
        container, self._container = self._container, None
        errors: list[str] = []
        if container is not None:
            try:
                container.stop(timeout=int(self.stop_timeout))
            except Exception as exc:  # the container may be gone already
                errors.append(f"stop: {exc}")
            self._last_logs = self._read_logs(container) or self._last_logs
            try:
                container.remove(force=True, v=True)
            except Exception as exc:
                errors.append(f"remove container: {exc}")
        built, self._built = self._built, None
        if built is not None and not self.keep_image and self._client is not None:
            from docker.errors import ImageNotFound  # noqa: PLC0415

            try:
                self._client.images.remove(built, noprune=False)
            except ImageNotFound:
                pass  # a build that failed tagged nothing
            except Exception as exc:
                errors.append(f"remove image {built}: {exc}")
        if self._own_client and self._client is not None:
            try:
                self._client.close()
            except Exception:
                pass
            self._client = None
        if errors:
            warnings.warn("DockerServer cleanup: " + "; ".join(errors), RuntimeWarning, stacklevel=2)

    def __enter__(self) -> DockerServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- output ----------------------------------------------------------------------

    def logs(self) -> str:
        """Everything the container has printed (kept after the container is removed)."""
        if self._container is None:
            return self._last_logs
        return self._read_logs(self._container)

    def build_log(self) -> str:
        """The image build's output (empty when an existing image was reused)."""
        return "".join(self._build_log)

    def log_mark(self) -> float:
        """A point in the container's output, for ``logs_since``."""
        return time.time()

    def logs_since(self, mark: float) -> str:
        """What the container printed since ``mark`` (from ``log_mark()``), by the
        engine's timestamps of its lines."""
        if self._container is None:
            return ""
        try:
            raw = self._container.logs(stdout=True, stderr=True, timestamps=True, since=max(0, int(mark) - 1))
        except Exception:
            return ""
        lines = []
        for line in bytes(raw).decode("utf-8", errors="replace").splitlines(keepends=True):
            stamp, _, text = line.partition(" ")
            when = _rfc3339_seconds(stamp)
            if when is None or when >= mark:
                lines.append(text if when is not None else line)
        return "".join(lines)

    # --- steps -----------------------------------------------------------------------

    def _context(self) -> Any:
        from docker.utils.build import tar  # noqa: PLC0415

        root = self.config.parent
        excludes = list(DEFAULT_EXCLUDES)
        ignore = root / ".dockerignore"
        if ignore.is_file():
            for line in ignore.read_text().splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    excludes.append(line)
        return tar(str(root), exclude=excludes, dockerfile=(_DOCKERFILE_NAME, self.dockerfile))

    def _build_image(self) -> None:
        from docker.errors import ImageNotFound  # noqa: PLC0415

        assert self._client is not None
        context = self._context()
        try:
            digest = hashlib.sha256()
            digest.update(self.base_image.encode())
            for chunk in iter(lambda: context.read(1 << 20), b""):
                digest.update(chunk)
            context.seek(0)
            self.image = f"remote-graph-server:{digest.hexdigest()[:16]}"
            try:
                self._client.images.get(self.image)
                return  # built before, same Dockerfile, base and context
            except ImageNotFound:
                pass
            deadline = time.monotonic() + self.build_timeout
            stream = self._client.api.build(
                fileobj=context,
                custom_context=True,
                dockerfile=_DOCKERFILE_NAME,
                tag=self.image,
                buildargs={"BASE_IMAGE": self.base_image},
                labels={self.LABEL: "DockerServer"},
                rm=True,
                forcerm=True,
                decode=True,
                timeout=self.build_timeout,
            )
            self._built = self.image  # from here on, stop() removes whatever got tagged
            error = None
            for item in stream:
                if "stream" in item:
                    self._build_log.append(str(item["stream"]))
                if "error" in item:
                    error = str(item["error"])
                    self._build_log.append(error + "\n")
                if time.monotonic() > deadline:
                    stream.close()
                    raise TimeoutError(
                        f"building {self.image} took longer than {self.build_timeout}s:\n{self._tail(self.build_log())}"
                    )
            if error is not None:
                raise RuntimeError(f"building {self.image} on {self.base_image} failed: {error}\n{self._tail(self.build_log())}")
        finally:
            context.close()

    def _run_container(self) -> None:
        assert self._client is not None and self.image is not None
        self._container = self._client.containers.run(
            self.image,
            detach=True,
            name=f"remote-graph-{uuid.uuid4().hex[:12]}",
            ports={f"{CONTAINER_PORT}/tcp": (self.host, self.port)},
            environment=self._env,
            labels={self.LABEL: "DockerServer"},
        )
        deadline = time.monotonic() + 30
        while self.port is None:
            self._container.reload()
            bindings = (self._container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{CONTAINER_PORT}/tcp")
            if bindings:
                self.port = int(bindings[0]["HostPort"])
            elif self._container.status not in ("created", "running"):
                raise RuntimeError(f"container exited before publishing its port:\n{self.logs()}")
            elif time.monotonic() > deadline:
                raise TimeoutError("the engine published no port for the container within 30s")
            else:
                time.sleep(0.1)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            self._container.reload()
            if self._container.status not in ("created", "running"):
                code = self._container.attrs["State"].get("ExitCode")
                raise RuntimeError(f"the server's container exited with code {code}:\n{self.logs()}")
            try:
                if httpx.get(f"{self.url}/ok", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise TimeoutError(f"the container did not answer {self.url}/ok within {self.startup_timeout}s:\n{self.logs()}")

    @staticmethod
    def _read_logs(container: Any, since: float | None = None) -> str:
        try:
            kwargs = {"since": since} if since is not None else {}
            return bytes(container.logs(stdout=True, stderr=True, **kwargs)).decode("utf-8", errors="replace")
        except Exception:
            return ""

    @staticmethod
    def _tail(text: str, limit: int = 8000) -> str:
        return text if len(text) <= limit else "...\n" + text[-limit:]


def _rfc3339_seconds(stamp: str) -> float | None:
    """``2024-01-02T03:04:05.123456789Z`` (the engine's log timestamps) as epoch seconds."""
    if len(stamp) < 20 or not stamp.endswith("Z"):
        return None
    try:
        whole = datetime.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        fraction = float("0" + stamp[19:-1]) if stamp[19:20] == "." else 0.0
    except ValueError:
        return None
    return whole.timestamp() + fraction
