"""``BackingStores``: a Postgres cluster and a Redis of their own, for a server stack.

The replica stack and aegra both keep their runs in Postgres and pass their
streams through Redis. Here both are made from nothing in a data directory the
caller owns: ``initdb`` makes a cluster that trusts loopback, Redis keeps
nothing on disk, and each runs in a process group of its own, stopped by its
PID. Nothing is installed: a missing server program fails at once, naming what
to install.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from remote_graph._serverbase import exit_reason, free_port, spawn_logged, stop_process_group, tail

# Debian and Ubuntu keep Postgres's server programs off PATH, one directory per major version.
POSTGRES_LIBDIRS = Path("/usr/lib/postgresql")
POSTGRES_USER = "postgres"  # initdb and postgres refuse to run as root: they run as this user
DATABASE = "postgres"  # the cluster's own database: the stack is the cluster's only user
_START_TIMEOUT = 30.0  # seconds for each to accept connections; both start in well under one
_POLL = 0.1


def find_postgres_bin(given: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding ``initdb`` and ``postgres``: ``given``, else ``PATH``'s,
    else the newest ``/usr/lib/postgresql/<version>/bin``.

    Raises:
        RuntimeError: If they are not found, naming what to install.
    """
    if given is not None:
        candidates = [Path(given).expanduser()]
    else:
        on_path = shutil.which("initdb")
        versioned = sorted(POSTGRES_LIBDIRS.glob("*/bin"), key=lambda p: _version_key(p.parent.name), reverse=True)
        candidates = ([Path(on_path).parent] if on_path else []) + versioned
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "postgres").is_file():
            return candidate
    where = str(candidates[0]) if given is not None else f"PATH or {POSTGRES_LIBDIRS}/<version>/bin"
    raise RuntimeError(
        f"Postgres's initdb and postgres are not found in {where}: install PostgreSQL "
        "(Debian: apt-get install postgresql) or name its bin directory (postgres_bin=...)"
    )


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def find_redis_server(given: str | os.PathLike[str] | None = None) -> Path:
    """The ``redis-server`` executable: ``given``, else ``PATH``'s.

    Raises:
        RuntimeError: If it is not found, naming what to install.
    """
    found = Path(given).expanduser() if given is not None else shutil.which("redis-server")
    if found is None or not Path(found).is_file():
        raise RuntimeError(
            f"redis-server is not found{' at ' + str(given) if given is not None else ' on PATH'}: "
            "install Redis (Debian: apt-get install redis-server) or name it (redis_server=...)"
        )
    return Path(found)


def _postgres_user() -> tuple[int, int] | None:
    """The uid and gid to run Postgres's programs as: the ``postgres`` user's when this
    is root (``None``: as this user)."""
    if os.geteuid() != 0:
        return None
    import pwd  # noqa: PLC0415 - POSIX only, and only needed as root

    try:
        user = pwd.getpwnam(POSTGRES_USER)
    except KeyError:
        raise RuntimeError(
            f"running as root, Postgres needs a {POSTGRES_USER!r} user to run as (Debian's postgresql package "
            "makes one)"
        ) from None
    return user.pw_uid, user.pw_gid


def _answers(host: str, port: int, probe: bytes = b"", expect: bytes = b"") -> bool:
    """Whether ``host:port`` accepts a connection (and answers ``probe`` with ``expect``)."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as sock:
            if probe:
                sock.sendall(probe)
                return sock.recv(64).startswith(expect)
            return True
    except OSError:
        return False


class BackingStores:
    """A Postgres cluster and a Redis, started in a data directory and stopped by PID.

    Args:
        host: Loopback address both bind.
        postgres_bin: The directory holding ``initdb`` and ``postgres``; found
            when omitted (see ``find_postgres_bin``).
        redis_server: The ``redis-server`` executable; found on ``PATH`` when omitted.
        max_connections: Postgres's connection limit (each API worker holds a pool).

    Raises:
        RuntimeError: If Postgres's or Redis's server programs are not found.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        postgres_bin: str | os.PathLike[str] | None = None,
        redis_server: str | os.PathLike[str] | None = None,
        max_connections: int = 500,
    ) -> None:
        self.host = host
        self.postgres_bin = find_postgres_bin(postgres_bin)
        self.redis_server = find_redis_server(redis_server)
        self.max_connections = max_connections
        self.postgres_port = 0
        self.redis_port = 0
        self._postgres: subprocess.Popen[bytes] | None = None
        self._redis: subprocess.Popen[bytes] | None = None
        self._data_dir: Path | None = None
        # ``Popen``'s user and group for Postgres's programs (run as root: the postgres user's).
        self._as_user: dict[str, Any] = {}

    @property
    def database_uri(self) -> str:
        """The cluster's database, as a server's ``DATABASE_URI`` names it."""
        return f"postgresql://{POSTGRES_USER}@{self.host}:{self.postgres_port}/{DATABASE}"

    @property
    def redis_uri(self) -> str:
        """Redis's first database, as a server's ``REDIS_URI`` names it."""
        return f"redis://{self.host}:{self.redis_port}/0"

    @property
    def pids(self) -> list[int]:
        """The PIDs of the processes running now: Postgres's, then Redis's."""
        return [p.pid for p in (self._postgres, self._redis) if p is not None]

    def start(self, data_dir: Path) -> None:
        """Make and start the cluster, then Redis, under ``data_dir`` (logs: ``postgres.log``,
        ``redis.log``), and wait until each accepts connections.

        Raises:
            RuntimeError: If ``initdb`` fails or a server exits first, with its log's tail.
            TimeoutError: If a server does not accept connections in time.
        """
        self._data_dir = data_dir
        self._initdb()
        self.postgres_port = free_port(self.host)
        self._run_postgres()
        self.redis_port = free_port(self.host)
        self._run_redis()

    def restart_redis(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Stop Redis with ``sig`` (by default as a crash: it keeps nothing, ``--save ''``)
        and start it again on its port, as a restarted or failed-over Redis comes back.

        Raises:
            RuntimeError: If the stores are not running, or Redis exits before it answers.
            TimeoutError: If it does not accept connections in time.
        """
        if self._redis is None or self._data_dir is None:
            raise RuntimeError("Redis is not running")
        stop_process_group(self._redis, sig, _START_TIMEOUT)
        self._run_redis()

    def restart_postgres(self, down: float = 0.0) -> None:
        """Stop Postgres (its fast shutdown: connections are closed), leave it down for
        ``down`` seconds, and start it again on its port with the same data.

        Raises:
            RuntimeError: If the stores are not running, or Postgres exits before it answers.
            TimeoutError: If it does not accept connections in time.
        """
        if self._postgres is None or self._data_dir is None:
            raise RuntimeError("Postgres is not running")
        stop_process_group(self._postgres, signal.SIGINT, _START_TIMEOUT)
        time.sleep(down)
        self._run_postgres()

    def _run_redis(self) -> None:
        assert self._data_dir is not None
        log = self._data_dir / "redis.log"
        command = [str(self.redis_server), "--bind", self.host, "--port", str(self.redis_port), "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self._data_dir)]
        self._redis = spawn_logged(command, log)
        self._wait(self._redis, "redis-server", log, self.redis_port, b"PING\r\n", b"+PONG")

    def _initdb(self) -> None:
        data_dir = self._data_dir
        assert data_dir is not None
        cluster, sockets, log = data_dir / "postgres", data_dir / "pg-sockets", data_dir / "postgres.log"
        cluster.mkdir()
        sockets.mkdir()
        log.touch()
        owner = _postgres_user()
        if owner is not None:
            data_dir.chmod(0o755)  # the postgres user reaches its directories and its log through it
            for path in (cluster, sockets, log):
                os.chown(path, *owner)
            self._as_user = {"user": owner[0], "group": owner[1], "extra_groups": []}
        with log.open("ab") as out:
            initdb = [str(self.postgres_bin / "initdb"), "-D", str(cluster), "--auth=trust", "-U", POSTGRES_USER]
            done = subprocess.run(
                initdb,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=_START_TIMEOUT * 4,
                check=False,
                **self._as_user,
            )
        if done.returncode != 0:
            raise RuntimeError(f"initdb exited with code {done.returncode}:\n{tail(log.read_text(errors='replace'))}")

    def _run_postgres(self) -> None:
        assert self._data_dir is not None
        cluster, sockets, log = (self._data_dir / name for name in ("postgres", "pg-sockets", "postgres.log"))
        command = [str(self.postgres_bin / "postgres"), "-D", str(cluster), "-p", str(self.postgres_port)]
        command += ["-c", f"listen_addresses={self.host}", "-c", f"unix_socket_directories={sockets}"]
        command += ["-c", f"max_connections={self.max_connections}", "-c", "fsync=off"]
        self._postgres = spawn_logged(command, log, **self._as_user)
        self._wait(self._postgres, "postgres", log, self.postgres_port)

    def _wait(
        self, process: subprocess.Popen[bytes], what: str, log: Path, port: int, probe: bytes = b"", expect: bytes = b""
    ) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            reason = exit_reason(process)
            if reason is not None:
                raise RuntimeError(f"{what} {reason}:\n{tail(log.read_text(errors='replace'))}")
            if _answers(self.host, port, probe, expect):
                return
            time.sleep(_POLL)
        raise TimeoutError(f"{what} did not accept connections on port {port} within {_START_TIMEOUT}s")

    def exited(self) -> str | None:
        """Why Postgres or Redis is gone (``"postgres exited with code 1"``), or ``None``."""
        for what, process in (("postgres", self._postgres), ("redis-server", self._redis)):
            reason = exit_reason(process)
            if reason is not None:
                return f"{what} {reason}"
        return None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop Redis, then Postgres (its fast shutdown, SIGINT), each by its PID. Safe to
        call more than once."""
        redis, self._redis = self._redis, None
        if redis is not None:
            stop_process_group(redis, signal.SIGTERM, timeout)
        postgres, self._postgres = self._postgres, None
        if postgres is not None:
            stop_process_group(postgres, signal.SIGINT, timeout)
