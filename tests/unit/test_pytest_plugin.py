"""The package's pytest plugin, run in a pytest of its own (no server is started here)."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest

INNER = """
def test_url(remote_graph_server):
    print("URL=" + remote_graph_server)

def test_fails(remote_graph_server):
    assert False, "planned failure"
"""


def run_inner(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    environ = {k: v for k, v in os.environ.items() if k != "REMOTE_GRAPH_URL"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-rA", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
        stdin=subprocess.DEVNULL,
    )


def test_a_url_is_used_as_it_is(tmp_path: Path) -> None:
    done = run_inner(tmp_path, "--remote-graph-server=http://127.0.0.1:9/", "-k", "test_url")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "URL=http://127.0.0.1:9\n" in done.stdout
    assert "remote_graph server: http://127.0.0.1:9" in done.stdout  # the header says which server


def test_remote_graph_url_is_honoured_and_the_option_wins(tmp_path: Path) -> None:
    done = run_inner(tmp_path, "-k", "test_url", env={"REMOTE_GRAPH_URL": "http://127.0.0.1:7"})
    assert "URL=http://127.0.0.1:7\n" in done.stdout, done.stdout + done.stderr
    done = run_inner(
        tmp_path, "--remote-graph-server=http://127.0.0.1:8", "-k", "test_url", env={"REMOTE_GRAPH_URL": "http://127.0.0.1:7"}
    )
    assert "URL=http://127.0.0.1:8\n" in done.stdout, done.stdout + done.stderr


def test_the_default_is_the_embedded_server(tmp_path: Path) -> None:
    done = run_inner(tmp_path, "--co")
    assert "remote_graph server: embedded langgraph dev" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("value", ["dockr", "127.0.0.1:8123"])
def test_a_bad_value_is_a_usage_error(tmp_path: Path, value: str) -> None:
    done = run_inner(tmp_path, f"--remote-graph-server={value}")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "expected embedded, docker or an http(s) URL" in done.stderr


def test_a_failing_test_shows_the_server_log(tmp_path: Path) -> None:
    done = run_inner(
        tmp_path,
        "--remote-graph-server=http://127.0.0.1:9",
        "--remote-graph-log-command=echo the-server-said-this",
    )
    assert done.returncode == 1
    assert "remote_graph server log (call)" in done.stdout
    assert "the-server-said-this" in done.stdout
    # Only the failing test gets the section.
    assert done.stdout.count("remote_graph server log") == 1


def test_the_embedded_server_can_run_in_another_interpreter(tmp_path: Path) -> None:
    venv = tmp_path / "server-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    done = run_inner(tmp_path, "--co", f"--remote-graph-python={venv}")
    assert f"remote_graph server: embedded langgraph dev, run by {venv}" in done.stdout, done.stdout + done.stderr
    done = run_inner(tmp_path, "--co", env={"REMOTE_GRAPH_SERVER_PYTHON": str(venv)})
    assert f"run by {venv}" in done.stdout, done.stdout + done.stderr


def test_the_server_python_is_a_virtualenv_or_an_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remote_graph.testing import LangGraphDevServer  # noqa: PLC0415

    config = tmp_path / "langgraph.json"
    config.write_text("{}")
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.symlink_to(sys.executable)  # as in a virtualenv: not resolved, its scripts sit beside it
    assert LangGraphDevServer(config, python=tmp_path / "venv").python == python
    assert LangGraphDevServer(config, python=str(python)).python == python
    monkeypatch.setenv("REMOTE_GRAPH_SERVER_PYTHON", str(tmp_path / "venv"))
    assert LangGraphDevServer(config).python == python
    with pytest.raises(FileNotFoundError, match="server python not found"):
        LangGraphDevServer(config, python=tmp_path / "nowhere")


def test_below_python_3_11_the_server_needs_another_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remote_graph.testing import LangGraphDevServer  # noqa: PLC0415

    config = tmp_path / "langgraph.json"
    config.write_text("{}")
    monkeypatch.delenv("REMOTE_GRAPH_SERVER_PYTHON", raising=False)
    version = collections.namedtuple("version", "major minor micro releaselevel serial")
    monkeypatch.setattr(sys, "version_info", version(3, 10, 13, "final", 0))
    with pytest.raises(RuntimeError, match="needs Python 3.11 or newer; this is 3.10.*--remote-graph-python"):
        LangGraphDevServer(config)
    assert LangGraphDevServer(config, python=sys.executable).python == Path(sys.executable)
