"""The replica stack's parts that need no database: the balancer over plain TCP
servers, and ``ReplicaServer``'s checks of what it needs before it starts anything."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from remote_graph._balancer import Balancer, Served
from remote_graph.testing import ReplicaServer, free_port

CONFIG = Path(__file__).resolve().parents[2] / "app" / "langgraph.json"


@contextmanager
def naming_server(name: bytes) -> Iterator[int]:
    """A TCP server on a free loopback port that answers every connection with ``name`` and closes it."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.recv(64)
                conn.sendall(name)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def ask(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"who?")
        data = b""
        while chunk := sock.recv(64):
            data += chunk
        return data


def test_the_balancer_takes_turns_and_records_who_served_each_connection() -> None:
    with naming_server(b"zero") as zero, naming_server(b"one") as one:
        with Balancer([("127.0.0.1", zero), ("127.0.0.1", one)]) as balancer:
            assert [ask(balancer.port) for _ in range(4)] == [b"zero", b"one", b"zero", b"one"]
            assert balancer.served == [Served(0, 0), Served(1, 1), Served(2, 0), Served(3, 1)]


def test_the_balancer_passes_a_refused_connection_to_the_next_replica() -> None:
    dead = free_port()  # nothing listens there: a replica that was killed
    with naming_server(b"alive") as alive:
        with Balancer([("127.0.0.1", dead), ("127.0.0.1", alive)]) as balancer:
            assert [ask(balancer.port) for _ in range(3)] == [b"alive"] * 3
            assert [s.replica for s in balancer.served] == [1, 1, 1]


def test_a_balancer_with_no_replica_left_closes_the_connection() -> None:
    with Balancer([("127.0.0.1", free_port())]) as balancer:
        assert ask(balancer.port) == b""
        assert balancer.served == [Served(0, None)]


def test_a_stopped_balancer_refuses_connections() -> None:
    with naming_server(b"zero") as zero:
        balancer = Balancer([("127.0.0.1", zero)]).start()
        balancer.stop()
        balancer.stop()
        with pytest.raises(OSError):
            ask(balancer.port)


def test_no_langhost_fails_at_once_naming_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REMOTE_GRAPH_REPLICAS_PYTHON", raising=False)
    with pytest.raises(RuntimeError, match=r"langhost==0\.11\.1\.post1.*REMOTE_GRAPH_REPLICAS_PYTHON"):
        ReplicaServer(CONFIG)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    with pytest.raises(RuntimeError, match=r"no langhost in .*bin.*pip install 'langhost==0\.11\.1\.post1'"):
        ReplicaServer(CONFIG, python=tmp_path)


def fake_langhost(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "langhost"):
        (venv / "bin" / name).touch()
    return venv


def test_missing_postgres_or_redis_fails_at_once_naming_what_to_install(tmp_path: Path) -> None:
    venv = fake_langhost(tmp_path)
    with pytest.raises(RuntimeError, match=r"initdb and postgres are not found .*apt-get install postgresql"):
        ReplicaServer(CONFIG, python=venv, postgres_bin=tmp_path / "nowhere")
    pg = tmp_path / "pg"
    pg.mkdir()
    for name in ("initdb", "postgres"):
        (pg / name).touch()
    with pytest.raises(RuntimeError, match=r"redis-server is not found .*apt-get install redis-server"):
        ReplicaServer(CONFIG, python=venv, postgres_bin=pg, redis_server=tmp_path / "no-redis")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"replicas": 0}, "replicas must be at least 1"),
        ({"n_jobs_per_worker": 0}, "n_jobs_per_worker must be at least 1"),
        ({"bg_job_heartbeat": 0}, "bg_job_heartbeat must be positive"),
    ],
)
def test_bad_counts_fail_naming_them(tmp_path: Path, kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReplicaServer(CONFIG, python=fake_langhost(tmp_path), **kwargs)  # type: ignore[arg-type]


def fake_stores(tmp_path: Path) -> tuple[Path, Path]:
    """Postgres's bin directory and a redis-server, as files: found, never run."""
    pg = tmp_path / "pg"
    pg.mkdir()
    for name in ("initdb", "postgres"):
        (pg / name).touch()
    redis = tmp_path / "redis-server"
    redis.touch()
    return pg, redis


def test_the_replicas_python_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    venv = fake_langhost(tmp_path)
    pg, redis = fake_stores(tmp_path)
    monkeypatch.setenv("REMOTE_GRAPH_REPLICAS_PYTHON", os.fspath(venv))
    server = ReplicaServer(CONFIG, postgres_bin=pg, redis_server=redis)
    assert server.langhost == venv.absolute() / "bin" / "langhost"
    assert server.replica_count == 2 and server.bg_job_heartbeat == 5.0
    server.stop()  # never started: nothing to stop


def test_a_replica_of_a_stack_not_running_cannot_be_restarted(tmp_path: Path) -> None:
    pg, redis = fake_stores(tmp_path)
    server = ReplicaServer(CONFIG, python=fake_langhost(tmp_path), postgres_bin=pg, redis_server=redis)
    with pytest.raises(RuntimeError, match="the replica stack is not running"):
        server.restart_replica(0)
