"""Postgres's and Redis's server programs are found where Debian puts them, or named
with what to install."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from remote_graph import _backing
from remote_graph._backing import BackingStores, find_postgres_bin, find_redis_server


def programs(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).touch()
    return directory


def test_postgres_is_found_in_the_newest_versioned_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for version in ("9", "15", "13"):
        programs(tmp_path / version / "bin", "initdb", "postgres")
    programs(tmp_path / "16" / "bin", "initdb")  # no server program: not a Postgres install
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(_backing, "POSTGRES_LIBDIRS", tmp_path)
    assert find_postgres_bin() == tmp_path / "15" / "bin"


def test_postgres_on_path_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = programs(tmp_path / "local", "initdb", "postgres")
    programs(tmp_path / "lib" / "15" / "bin", "initdb", "postgres")
    monkeypatch.setattr(shutil, "which", lambda name: str(on_path / name))
    monkeypatch.setattr(_backing, "POSTGRES_LIBDIRS", tmp_path / "lib")
    assert find_postgres_bin() == on_path


def test_missing_programs_are_named_with_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(_backing, "POSTGRES_LIBDIRS", tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match=r"not found in PATH or .*nowhere/<version>/bin: install PostgreSQL"):
        find_postgres_bin()
    with pytest.raises(RuntimeError, match=r"redis-server is not found on PATH: install Redis"):
        find_redis_server()
    with pytest.raises(RuntimeError, match=r"redis-server is not found at .*no-redis"):
        BackingStores(postgres_bin=programs(tmp_path / "pg", "initdb", "postgres"), redis_server=tmp_path / "no-redis")


def test_stores_that_never_started_have_nothing_to_stop(tmp_path: Path) -> None:
    pg = programs(tmp_path / "pg", "initdb", "postgres", "redis-server")
    stores = BackingStores(postgres_bin=pg, redis_server=pg / "redis-server")
    assert stores.pids == [] and stores.exited() is None
    assert stores.database_uri == "postgresql://postgres@127.0.0.1:0/postgres"
    stores.stop()


def test_stores_that_never_started_cannot_be_restarted(tmp_path: Path) -> None:
    pg = programs(tmp_path / "pg", "initdb", "postgres", "redis-server")
    stores = BackingStores(postgres_bin=pg, redis_server=pg / "redis-server")
    with pytest.raises(RuntimeError, match="Redis is not running"):
        stores.restart_redis()
    with pytest.raises(RuntimeError, match="Postgres is not running"):
        stores.restart_postgres()
