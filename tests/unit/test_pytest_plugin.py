"""The package's pytest plugin, run in a pytest of its own, and the parts of the test
servers that need no server (no server is started here)."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from remote_graph._serverbase import LogFile
from remote_graph._serverbroker import ServerBroker, request_server
from remote_graph.testing import LangGraphDevServer

INNER = """
def test_plain():
    pass

def test_url(remote_graph_server):
    print("URL=" + remote_graph_server)

def test_fails(remote_graph_server):
    assert False, "planned failure"
"""


# A test that starts several inner sessions waits up to run_inner's 110 s for each;
# where CI's lanes share two cores, three inner sessions took over 120 s together.
INNER_SESSIONS_BOUND = 340


def run_inner(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, ini: str = "[pytest]\n"
) -> subprocess.CompletedProcess[str]:
    """A pytest of its own on ``INNER`` in ``tmp_path`` (run from ``cwd``, else there)."""
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text(ini)
    environ = {k: v for k, v in os.environ.items() if k != "REMOTE_GRAPH_URL"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-rA", *args, str(tmp_path)],
        cwd=cwd or tmp_path,
        capture_output=True,
        text=True,
        # Below the suite's 120 s per test, and far above the few seconds an inner
        # pytest takes: CI runs its lanes side by side on two cores.
        timeout=110,
        env=environ,
        stdin=subprocess.DEVNULL,
    )


def test_a_url_is_used_as_it_is(tmp_path: Path) -> None:
    done = run_inner(tmp_path, "--remote-graph-server=http://127.0.0.1:9/", "-k", "test_url")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "URL=http://127.0.0.1:9\n" in done.stdout
    assert "remote_graph server: http://127.0.0.1:9" in done.stdout  # the header says which server


# Several inner sessions, each bounded by run_inner: the test's bound is their sum.
@pytest.mark.timeout(INNER_SESSIONS_BOUND)
def test_remote_graph_url_is_honoured_and_the_option_wins(tmp_path: Path) -> None:
    done = run_inner(tmp_path, "-k", "test_url", env={"REMOTE_GRAPH_URL": "http://127.0.0.1:7"})
    assert "URL=http://127.0.0.1:7\n" in done.stdout, done.stdout + done.stderr
    done = run_inner(
        tmp_path,
        "--remote-graph-server=http://127.0.0.1:8",
        "-k",
        "test_url",
        env={"REMOTE_GRAPH_URL": "http://127.0.0.1:7"},
    )
    assert "URL=http://127.0.0.1:8\n" in done.stdout, done.stdout + done.stderr


def test_the_default_is_the_embedded_server(tmp_path: Path) -> None:
    done = run_inner(tmp_path, "--co")
    assert "remote_graph server: embedded langgraph dev" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("value", ["dockr", "127.0.0.1:8123"])
def test_a_bad_value_is_a_usage_error(tmp_path: Path, value: str) -> None:
    done = run_inner(tmp_path, f"--remote-graph-server={value}")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "expected embedded, docker, replicas, aegra or an http(s) URL" in done.stderr


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


# Several inner sessions, each bounded by run_inner: the test's bound is their sum.
@pytest.mark.timeout(INNER_SESSIONS_BOUND)
def test_the_embedded_server_can_run_in_another_interpreter(tmp_path: Path) -> None:
    venv = tmp_path / "server-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    done = run_inner(tmp_path, "--co", f"--remote-graph-python={venv}")
    assert f"remote_graph server: embedded langgraph dev, run by {venv}" in done.stdout, done.stdout + done.stderr
    done = run_inner(tmp_path, "--co", env={"REMOTE_GRAPH_SERVER_PYTHON": str(venv)})
    assert f"run by {venv}" in done.stdout, done.stdout + done.stderr


def test_the_server_python_is_a_virtualenv_or_an_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_below_python_3_11_the_server_needs_another_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "langgraph.json"
    config.write_text("{}")
    monkeypatch.delenv("REMOTE_GRAPH_SERVER_PYTHON", raising=False)
    version = collections.namedtuple("version", "major minor micro releaselevel serial")
    monkeypatch.setattr(sys, "version_info", version(3, 10, 13, "final", 0))
    with pytest.raises(RuntimeError, match="needs Python 3.11 or newer; this is 3.10.*--remote-graph-python"):
        LangGraphDevServer(config)
    assert LangGraphDevServer(config, python=sys.executable).python == Path(sys.executable)


# --- where the langgraph.json is found ------------------------------------------------


def project_with_config(tmp_path: Path) -> Path:
    """``tmp_path/project``: the inner tests, and ``app/langgraph.json`` beside them."""
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "langgraph.json").write_text("{}")
    return project


# Several inner sessions, each bounded by run_inner: the test's bound is their sum.
@pytest.mark.timeout(INNER_SESSIONS_BOUND)
def test_a_relative_config_option_is_found_from_another_directory(tmp_path: Path) -> None:
    """From the directory pytest runs in, else from the rootdir: also when the option
    sits in the ini's addopts and pytest runs elsewhere."""
    project = project_with_config(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = project / "app" / "langgraph.json"
    done = run_inner(project, "--co", "--remote-graph-config=app/langgraph.json", cwd=elsewhere)
    assert f"serving {config}" in done.stdout, done.stdout + done.stderr
    done = run_inner(
        project, "--co", cwd=elsewhere, ini="[pytest]\naddopts = --remote-graph-config=app/langgraph.json\n"
    )
    assert f"serving {config}" in done.stdout, done.stdout + done.stderr
    # The directory pytest runs in comes first.
    (elsewhere / "app").mkdir()
    (elsewhere / "app" / "langgraph.json").write_text("{}")
    done = run_inner(project, "--co", "--remote-graph-config=app/langgraph.json", cwd=elsewhere)
    assert f"serving {elsewhere / 'app' / 'langgraph.json'}" in done.stdout, done.stdout + done.stderr


# Several inner sessions, each bounded by run_inner: the test's bound is their sum.
@pytest.mark.timeout(INNER_SESSIONS_BOUND)
def test_a_config_that_is_nowhere_fails_the_run_once_naming_where_it_looked(tmp_path: Path) -> None:
    project = project_with_config(tmp_path)
    done = run_inner(project, "--remote-graph-config=nowhere/langgraph.json", cwd=tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    message = "--remote-graph-config=nowhere/langgraph.json: the langgraph.json to serve is not found"
    assert message in done.stderr
    assert (
        f"neither {tmp_path / 'nowhere' / 'langgraph.json'} nor {project / 'nowhere' / 'langgraph.json'}" in done.stderr
    )
    assert "passed" not in done.stdout and "error" not in done.stdout.lower()  # no test ran
    # A session whose tests need no server does not care.
    done = run_inner(project, "--remote-graph-config=nowhere/langgraph.json", "-k", "test_plain", cwd=tmp_path)
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    # An xdist worker cannot stop the run: each test that needs the server fails with it.
    done = run_inner(project, "-n", "2", "--remote-graph-config=nowhere/langgraph.json", cwd=tmp_path)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "1 passed, 2 errors" in done.stdout and done.stdout.count(f"UsageError: {message}") >= 2, done.stdout


@pytest.mark.parametrize("ini", ["remote_graph_startup_timeout = soon", "remote_graph_n_jobs_per_worker = 0"])
def test_a_bad_number_in_the_ini_is_a_usage_error(tmp_path: Path, ini: str) -> None:
    done = run_inner(tmp_path, "--co", ini=f"[pytest]\n{ini}\n")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"ini {ini.split(' = ')[0]}: expected a" in done.stderr


# --- pytest-xdist ----------------------------------------------------------------------


def test_under_xdist_a_url_reaches_every_worker_and_a_failure_gets_its_log(tmp_path: Path) -> None:
    done = run_inner(
        tmp_path,
        "-n",
        "2",
        "--remote-graph-log-command=echo the-server-said-this",
        env={"REMOTE_GRAPH_URL": "http://127.0.0.1:7"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 workers" in done.stdout and "1 failed, 2 passed" in done.stdout
    assert "remote_graph server log (call)" in done.stdout and "the-server-said-this" in done.stdout


# --- the xdist controller's broker -------------------------------------------------------


class FakeServer:
    """Stands for a started server: the broker only reads its URL and log path."""

    url = "http://127.0.0.1:1"
    log_path = Path("/nonexistent/server.log")


def test_the_broker_starts_the_server_once_for_every_worker() -> None:
    started: list[FakeServer] = []

    def start() -> FakeServer:
        started.append(FakeServer())
        return started[-1]

    broker = ServerBroker(start, start_timeout=5)  # type: ignore[arg-type]
    answers: list[tuple[str, Path]] = []
    askers = [
        threading.Thread(target=lambda: answers.append(request_server(broker.address, timeout=5))) for _ in range(5)
    ]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(timeout=10)
    assert answers == [("http://127.0.0.1:1", Path("/nonexistent/server.log"))] * 5
    assert len(started) == 1
    assert broker.close() is started[0]
    assert not Path(broker.address).exists()


def test_a_server_that_did_not_start_is_an_error_in_every_worker() -> None:
    calls = []

    def start() -> FakeServer:
        calls.append(1)
        raise TimeoutError("langgraph dev did not answer within 1s: the log says why")

    broker = ServerBroker(start, start_timeout=5)  # type: ignore[arg-type]
    try:
        for _ in range(2):
            with pytest.raises(
                RuntimeError, match=r"did not start \(in the xdist controller\): TimeoutError: .*the log says why"
            ):
                request_server(broker.address, timeout=5)
        assert calls == [1]
    finally:
        assert broker.close() is None


def test_a_broker_that_is_gone_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="server broker did not answer"):
        request_server(str(tmp_path / "no-socket"), timeout=1)


# --- the log file and the embedded server's data directory ------------------------------


def test_the_log_is_read_by_position_and_kept_after_its_file_is_gone(tmp_path: Path) -> None:
    log = LogFile(tmp_path / "server.log")
    assert (log.mark(), log.since(0)) == (0, "")  # nothing written yet
    log.path.write_bytes(b"one\n")
    mark = log.mark()
    with log.path.open("ab") as out:
        out.write("two \u00e9\n".encode() + b"\xff\n")
    assert log.since(mark) == "two \u00e9\n\ufffd\n"
    assert LogFile(log.path).since(mark) == log.since(mark)  # another process reads it by path
    log.keep()
    log.path.unlink()
    assert log.since(0) == "one\ntwo \u00e9\n\ufffd\n" and log.mark() == len("one\ntwo \u00e9\n".encode()) + 2


def test_a_failing_tests_log_is_read_once_the_server_stopped_writing(tmp_path: Path) -> None:
    log = LogFile(tmp_path / "server.log")
    log.path.write_bytes(b"answered\n")
    mark = log.mark()

    def write_later(lines: int, pause: float) -> None:
        for _ in range(lines):
            time.sleep(pause)
            with log.path.open("ab") as out:
                out.write(b"logged\n")

    # The request's line, written a moment after its answer: read once it is there.
    writer = threading.Thread(target=write_later, args=(1, 0.05))
    writer.start()
    log.settle(quiet=2, limit=10)
    writer.join(timeout=5)
    assert log.since(mark) == "logged\n"
    # A log that never goes still is read after ``limit``.
    writer = threading.Thread(target=write_later, args=(60, 0.05))
    writer.start()
    started = time.monotonic()
    log.settle(quiet=2, limit=1)
    waited = time.monotonic() - started
    writer.join(timeout=10)
    assert 1 <= waited < 2.5, waited
    # A kept log (its server gone) is read at once.
    log.keep()
    started = time.monotonic()
    log.settle(quiet=5, limit=5)
    assert time.monotonic() - started < 1


def test_the_embedded_server_runs_in_a_copy_of_the_project_without_its_data(tmp_path: Path) -> None:
    from remote_graph._project import stage_project  # noqa: PLC0415

    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "graphs.py").write_text("graph = None\n")
    (project / ".langgraph_api").mkdir()  # an earlier server's threads
    (tmp_path / "shared").mkdir()
    config = {"dependencies": [".", "../shared"], "graphs": {"g": "./graphs.py:graph", "h": "../shared/h.py:graph"}}
    (project / "langgraph.json").write_text(json.dumps(config))
    staged = stage_project(project / "langgraph.json", config, tmp_path / "project-staged")
    here = staged.parent
    assert sorted(p.name for p in here.iterdir()) == ["graphs.py", "langgraph.json", "pkg"]
    assert (here / "graphs.py").resolve() == project / "graphs.py" and (here / "pkg").is_dir()
    assert json.loads(staged.read_text()) == {
        "dependencies": [".", str(tmp_path / "shared")],
        "graphs": {"g": "./graphs.py:graph", "h": f"{tmp_path / 'shared' / 'h.py'}:graph"},
    }


@pytest.mark.parametrize(("text", "problem"), [("{", "is not valid JSON"), ("[]", "is not a JSON object")])
def test_a_config_that_is_no_json_object_fails_at_once(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "langgraph.json").write_text(text)
    with pytest.raises(ValueError, match=f"langgraph config .*langgraph.json {problem}"):
        LangGraphDevServer(tmp_path / "langgraph.json", python=sys.executable)


# --- the suite's own locks (tests/conftest.py) ---------------------------------------------

LOCKED = """
import json, os, time
import pytest

def record(name):
    start = time.monotonic()
    time.sleep(0.4)
    with open(os.environ["LOCK_LOG"], "a") as log:
        log.write(json.dumps([name, start, time.monotonic()]) + "\\n")

@pytest.mark.shares_thread("x")
@pytest.mark.parametrize("i", range(3))
def test_on_thread_x(i):
    record(f"x{i}")

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    record(f"free{i}")

@pytest.mark.serial
def test_alone():
    record("alone")
"""


# An inner xdist session of 3 workers: its start-up alone takes long where lanes share the cores.
@pytest.mark.timeout(300)
def test_tests_on_one_thread_never_overlap_and_a_serial_one_runs_alone(tmp_path: Path) -> None:
    from tests.conftest import ROOT  # noqa: PLC0415

    (tmp_path / "test_locked.py").write_text(LOCKED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "LOCK_LOG": str(tmp_path / "log"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest", "-n", "3", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=280, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    spans = {name: (start, end) for name, start, end in map(json.loads, (tmp_path / "log").read_text().splitlines())}
    assert len(spans) == 10

    def overlap(a: str, b: str) -> bool:
        return spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]

    assert not any(overlap(f"x{i}", f"x{j}") for i in range(3) for j in range(i))
    assert not any(overlap("alone", other) for other in spans if other != "alone")
    # The workers did run tests at once, or the above would prove nothing.
    assert any(overlap(a, b) for a in spans for b in spans if a < b)
