"""LangGraph servers for tests, demos and benchmarks.

The servers share one contract, ``Server``: ``start()`` (wait until ``GET /ok``
answers), ``stop()``, a context manager, ``url``, and the server's output as a
log file (``log_path``) read with ``logs()``, ``log_mark()`` and ``logs_since()``.

``LangGraphDevServer`` runs ``langgraph dev`` (the real langgraph-api server
with its in-memory runtime, from ``langgraph-cli[inmem]``) on a free loopback
port, and stops the process group it started. Nothing is ever killed by name.
Each server keeps its threads, runs and store in a data directory of its own,
which ``stop()`` removes unless ``keep_data=True``: a server never sees what an
earlier one stored.

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

``ReplicaServer`` is a production deployment's shape on loopback: a Postgres and
a Redis of its own, several API replicas on them (``langhost serve``, the Postgres
+ Redis runtime of ``langgraph-runtime-pg``, run from a Python 3.12 virtualenv
named by ``python=`` or ``$REMOTE_GRAPH_REPLICAS_PYTHON``) and a round-robin
balancer in front, whose ``url`` it serves. A test can signal one replica by its
PID (``signal_replica``, ``stop_replica``) and read which replica served which
connection (``served``).

Example:
    ```python
    from remote_graph.testing import ReplicaServer

    with ReplicaServer("app/langgraph.json", python="venv-langhost", replicas=2) as server:
        graph = RemoteGraph("linear", url=server.url)
    ```

``AegraServer`` serves it from aegra (``aegra-cli``, an Agent Protocol server
on Postgres that does not speak the v3 run protocol): it starts a Postgres
cluster, a Redis and ``aegra serve`` on free loopback ports, as its own
processes, waits for ``GET /health``, and stops each by its PID. aegra needs
Python 3.12+: ``python=`` (or ``$REMOTE_GRAPH_AEGRA_PYTHON``) names the
interpreter or virtualenv that has ``aegra-cli``; Postgres's server programs
and ``redis-server`` must be installed.

Example:
    ```python
    from remote_graph.testing import AegraServer

    with AegraServer("app/langgraph.json", python=".venv-aegra") as server:
        graph = RemoteGraph("linear", url=server.url)
    ```
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from remote_graph._aegraserver import AegraServer
from remote_graph._devserver import LangGraphDevServer
from remote_graph._dockerserver import DockerServer
from remote_graph._replicaserver import ReplicaServer
from remote_graph._serverbase import free_port

__all__ = ["AegraServer", "DockerServer", "LangGraphDevServer", "ReplicaServer", "Server", "free_port"]


class Server(Protocol):
    """What the embedded and the Docker server have in common (and the pytest plugin uses).

    A server is started once: ``start()`` returns when it answers (``GET /ok``; aegra's ``/health``) (or
    raises, with what it printed); ``stop()`` ends it and removes what it made, and
    may be called more than once. Its output goes to ``log_path`` while it runs;
    ``logs()`` and ``logs_since()`` still answer after ``stop()``.
    """

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        ...

    @property
    def log_path(self) -> Path:
        """The file the server's output is written to while it runs."""
        ...

    def start(self) -> Server:
        """Start the server and wait until it answers ``GET /ok``."""
        ...

    def stop(self) -> None:
        """Stop the server and remove what it made."""
        ...

    def logs(self) -> str:
        """Everything the server has printed."""
        ...

    def log_mark(self) -> int:
        """A position in the server's output, for ``logs_since``."""
        ...

    def logs_since(self, mark: int) -> str:
        """What the server printed after ``mark`` (from ``log_mark()``)."""
        ...

    def __enter__(self) -> Server: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


if TYPE_CHECKING:
    # mypy holds both servers to the protocol.
    def _both_are_servers(embedded: LangGraphDevServer, docker: DockerServer) -> tuple[Server, Server]:
        return embedded, docker

    def _replicas_are_a_server(replicas: ReplicaServer) -> Server:
        return replicas

    def _aegra_is_a_server(aegra: AegraServer) -> Server:
        return aegra
