"""``DockerServer``: ``langgraph dev`` in a Docker container built for a ``langgraph.json``."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from remote_graph._dockerimage import (
    CONTAINER_PORT,
    DEFAULT_BASE_IMAGE,
    DEFAULT_EXCLUDES,
    render_dockerfile,
    server_command,
)
from remote_graph._project import LOG_NAME
from remote_graph._serverbase import LogFile, ServerBase, tail

_DOCKERFILE_NAME = ".remote-graph.Dockerfile"


class DockerServer(ServerBase):
    """A LangGraph server in a Docker container, serving the graphs of a ``langgraph.json``.

    The image runs ``langgraph dev`` (the real langgraph-api server with its in-memory
    runtime, no licence) in a virtualenv on ``base_image``; its Dockerfile is generated
    (see ``remote_graph._dockerimage``) and the build context is the directory holding
    the ``langgraph.json``, less ``.dockerignore`` entries and caches. Dependencies the
    ``langgraph.json`` lists are installed as ``langgraph build`` installs them.

    ``start()`` builds the image (tagged by a hash of its Dockerfile, base and context;
    an image of that tag that already exists is reused), starts a container published on
    a loopback port, copies its output to ``log_path`` as it comes, and waits for
    ``GET /ok``. ``stop()`` (also on ``__exit__``, and when ``start()`` fails) stops and
    removes the container and, unless ``keep_image``, the image this object built; the
    container's output stays readable with ``logs()``. Every wait is bounded.

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
        n_jobs_per_worker: Runs the server executes at once (``langgraph dev``'s
            default is one).
        docker_client: A ``docker.DockerClient`` to use; one from the environment
            (``DOCKER_HOST`` etc.) when omitted.

    Raises:
        FileNotFoundError: If ``config`` does not exist.
        ValueError: If ``n_jobs_per_worker`` is below 1.
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
        n_jobs_per_worker: int | None = None,
        docker_client: Any = None,
    ) -> None:
        self.config = Path(config).resolve()
        if not self.config.is_file():
            raise FileNotFoundError(f"langgraph config not found: {self.config}")
        if n_jobs_per_worker is not None and n_jobs_per_worker < 1:
            raise ValueError(f"n_jobs_per_worker must be at least 1, got {n_jobs_per_worker}")
        self.base_image = base_image
        self.host = host
        self.port = port
        self.keep_image = keep_image
        self.build_timeout = build_timeout
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.n_jobs_per_worker = n_jobs_per_worker
        self._env = env or {}
        self.dockerfile = render_dockerfile(self.config, requirements=requirements, base_image=base_image)
        self.image: str | None = None
        self._client = docker_client
        self._own_client = docker_client is None
        self._container: Any = None
        self._built: str | None = None
        self._build_log: list[str] = []
        self._log_dir: Path | None = None
        self._log_stream: Any = None
        self._log_thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        if self.port is None or self._container is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self.port}"

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> DockerServer:
        """Build the image, start the container, and wait until it answers ``GET /ok``.

        Raises:
            RuntimeError: If the ``docker`` package is missing, the server is running
                already, the build fails, or the container exits before it answers.
            TimeoutError: If the build or the startup takes too long.
        """
        if self._container is not None:
            raise RuntimeError("server already started")
        try:
            import docker  # noqa: PLC0415
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("DockerServer needs the docker package: pip install 'remote_graph[docker]'") from exc
        self._log_dir = Path(tempfile.mkdtemp(prefix="remote-graph-docker-"))
        self._log = LogFile(self._log_dir / LOG_NAME)
        try:
            if self._client is None:
                self._client = docker.from_env(timeout=60)
            self._client.ping()
            self._build_image()
            self._run_container()
            self._wait_ready(self.startup_timeout, self._exited, "the server's container")
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
            self._stop_copying_logs()
            try:
                container.remove(force=True, v=True)
            except Exception as exc:
                errors.append(f"remove container: {exc}")
        if self._log is not None:
            self._log.keep()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
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

    def build_log(self) -> str:
        """The image build's output (empty when an existing image was reused)."""
        return "".join(self._build_log)

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
                        f"building {self.image} took longer than {self.build_timeout}s:\n{tail(self.build_log())}"
                    )
            if error is not None:
                raise RuntimeError(
                    f"building {self.image} on {self.base_image} failed: {error}\n{tail(self.build_log())}"
                )
        finally:
            context.close()

    def _run_container(self) -> None:
        assert self._client is not None and self.image is not None
        self._container = self._client.containers.run(
            self.image,
            # The image's own command, with the runs-at-once option when one is asked for.
            command=server_command(self.config.name, n_jobs_per_worker=self.n_jobs_per_worker),
            detach=True,
            name=f"remote-graph-{uuid.uuid4().hex[:12]}",
            ports={f"{CONTAINER_PORT}/tcp": (self.host, self.port)},
            environment=self._env,
            labels={self.LABEL: "DockerServer"},
        )
        self._copy_logs()
        deadline = time.monotonic() + 30
        while self.port is None:
            self._container.reload()
            bindings = (self._container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{CONTAINER_PORT}/tcp")
            if bindings:
                self.port = int(bindings[0]["HostPort"])
            elif self._container.status not in ("created", "running"):
                raise RuntimeError(f"container exited before publishing its port:\n{tail(self.logs())}")
            elif time.monotonic() > deadline:
                raise TimeoutError("the engine published no port for the container within 30s")
            else:
                time.sleep(0.1)

    def _exited(self) -> str | None:
        self._container.reload()
        if self._container.status in ("created", "running"):
            return None
        # Wait (bounded) for the last lines, so the message shows why it exited.
        self._stop_copying_logs()
        return f"exited with code {self._container.attrs['State'].get('ExitCode')}"

    def _copy_logs(self) -> None:
        """Copy the container's output to the log file as it comes, on a thread of its own
        (``container.logs(follow=True)`` blocks); the stream ends when the container does."""
        assert self._log is not None
        self._log_stream = self._container.logs(stdout=True, stderr=True, stream=True, follow=True)
        self._log_thread = threading.Thread(
            target=_copy_stream, args=(self._log_stream, self._log.path), name="remote-graph-docker-log", daemon=True
        )
        self._log_thread.start()

    def _stop_copying_logs(self) -> None:
        thread, self._log_thread = self._log_thread, None
        if thread is None:
            return
        thread.join(timeout=self.stop_timeout)
        if thread.is_alive():  # the engine still holds the stream open: cut it
            try:
                self._log_stream.close()
            except Exception:
                pass
            thread.join(timeout=5)


def _copy_stream(stream: Any, path: Path) -> None:
    """Append each chunk of ``stream`` (bytes) to ``path`` until the stream ends."""
    with path.open("ab") as out:
        try:
            for chunk in stream:
                out.write(chunk)
                out.flush()
        except Exception as exc:  # the engine went away: say so in the log, end quietly
            out.write(f"\n(the container's log stream broke: {exc})\n".encode())
