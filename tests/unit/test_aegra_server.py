"""``AegraServer`` fails at once, naming what to install, when a part is missing."""

from __future__ import annotations

import json
import shutil
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
    config: Path, aegra_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_aegraserver.ENV_AEGRA_PYTHON, str(aegra_python))
    monkeypatch.setattr(_aegraserver, "_postgres_bin", lambda: Path("/pg/bin"))
    monkeypatch.setattr(_aegraserver, "_redis_server", lambda: "/redis-server")
    server = AegraServer(config)
    assert server._aegra == [str(aegra_python / "bin" / "aegra")]


def test_missing_redis_is_named(config: Path, aegra_python: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_aegraserver, "_postgres_bin", lambda: Path("/pg/bin"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"redis-server is not on PATH \(install redis-server\)"):
        AegraServer(config, python=aegra_python)


def test_missing_postgres_is_named(config: Path, aegra_python: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(_aegraserver, "_PG_LIBDIRS", config.parent / "nowhere")
    with pytest.raises(RuntimeError, match=r"aegra needs Postgres: initdb and postgres were found neither on PATH"):
        AegraServer(config, python=aegra_python)


def test_postgres_is_found_in_the_newest_versioned_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for version in ("9", "15", "13"):
        (tmp_path / version / "bin").mkdir(parents=True)
        (tmp_path / version / "bin" / "initdb").write_text("")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(_aegraserver, "_PG_LIBDIRS", tmp_path)
    assert _aegraserver._postgres_bin() == tmp_path / "15" / "bin"


def test_a_config_that_is_missing_fails_first(tmp_path: Path, aegra_python: Path) -> None:
    with pytest.raises(FileNotFoundError, match="langgraph config not found"):
        AegraServer(tmp_path / "nope.json", python=aegra_python)


def test_jobs_below_one_are_refused(config: Path, aegra_python: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_aegraserver, "_postgres_bin", lambda: Path("/pg/bin"))
    monkeypatch.setattr(_aegraserver, "_redis_server", lambda: "/redis-server")
    with pytest.raises(ValueError, match="n_jobs_per_worker must be at least 1, got 0"):
        AegraServer(config, python=aegra_python, n_jobs_per_worker=0)
