"""``AegraServer`` fails at once, naming what to install, when a part is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from remote_graph import _aegraserver
from remote_graph.testing import AegraServer


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps({"graphs": {"g": "./g.py:graph"}}))
    return path


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, Path]:
    """Stand-ins for Postgres's bin directory and ``redis-server``: found, never run."""
    pg = tmp_path / "pg"
    pg.mkdir()
    for name in ("initdb", "postgres", "redis-server"):
        (pg / name).touch()
    return {"postgres_bin": pg, "redis_server": pg / "redis-server"}


@pytest.fixture
def aegra_python(tmp_path: Path) -> Path:
    """A virtualenv-like directory whose python has an ``aegra`` beside it."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "aegra").write_text("#!/bin/sh\n")
    return tmp_path / "venv"


def test_no_interpreter_named_says_how_to_make_one(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_aegraserver.ENV_AEGRA_PYTHON, raising=False)
    with pytest.raises(RuntimeError, match=r"aegra-cli.*REMOTE_GRAPH_AEGRA_PYTHON.*--remote-graph-aegra-python"):
        AegraServer(config)


def test_an_interpreter_without_aegra_cli_is_named(config: Path) -> None:
    with pytest.raises(RuntimeError, match=r"has no aegra command: install it there with `pip install aegra-cli`"):
        AegraServer(config, python=sys.executable)


def test_the_environment_names_the_interpreter(
    config: Path, aegra_python: Path, stores: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_aegraserver.ENV_AEGRA_PYTHON, str(aegra_python))
    server = AegraServer(config, **stores)
    assert server._aegra == [str(aegra_python / "bin" / "aegra")]
    assert server.pids == []
    server.stop()  # never started: nothing to stop


def test_missing_postgres_or_redis_is_named(config: Path, aegra_python: Path, stores: dict[str, Path]) -> None:
    with pytest.raises(RuntimeError, match=r"redis-server is not found at .*apt-get install redis-server"):
        AegraServer(
            config, python=aegra_python, postgres_bin=stores["postgres_bin"], redis_server=config.parent / "no-redis"
        )
    with pytest.raises(RuntimeError, match=r"initdb and postgres are not found in .*apt-get install postgresql"):
        AegraServer(config, python=aegra_python, postgres_bin=config.parent / "nowhere")


def test_a_config_that_is_missing_fails_first(tmp_path: Path, aegra_python: Path) -> None:
    with pytest.raises(FileNotFoundError, match="langgraph config not found"):
        AegraServer(tmp_path / "nope.json", python=aegra_python)


def test_jobs_below_one_are_refused(config: Path, aegra_python: Path, stores: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="n_jobs_per_worker must be at least 1, got 0"):
        AegraServer(config, python=aegra_python, n_jobs_per_worker=0, **stores)
