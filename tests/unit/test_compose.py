"""The compose stack and the Docker test server serve the graphs of app/langgraph.json.

compose/Dockerfile is what the Docker test server generates for app/langgraph.json,
built with app/ as its context: the image reads app/langgraph.json itself, so it
serves exactly the graphs the embedded server serves. The replicas profile
(compose/Dockerfile.replicas) serves the same file from two langhost replicas on
one Postgres and one Redis behind a balancer, every image built from the base.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from remote_graph._dockerimage import (
    CONTAINER_PORT,
    DEFAULT_BASE_IMAGE,
    SERVER_REQUIREMENTS,
    dependency_steps,
    render_dockerfile,
)
from remote_graph._replicaserver import LANGHOST_REQUIREMENT
from tests.conftest import APP

ROOT = APP.parent
COMPOSE = ROOT / "compose"
REGENERATE = (
    'python -c "from remote_graph._dockerimage import render_dockerfile; '
    "print(render_dockerfile('app/langgraph.json'), end='')\" > compose/Dockerfile"
)


def compose_file() -> dict:
    return yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())


def test_compose_dockerfile_is_the_docker_servers_dockerfile_for_app() -> None:
    assert (COMPOSE / "Dockerfile").read_text() == render_dockerfile(APP / "langgraph.json"), (
        f"compose/Dockerfile is stale; regenerate it with: {REGENERATE}"
    )


def test_image_serves_app_langgraph_json_itself() -> None:
    """The default service builds from app/ and the server reads langgraph.json there,
    whose graphs all live in files of app/."""
    service = compose_file()["services"]["langgraph"]
    assert "profiles" not in service
    context = (COMPOSE / service["build"]["context"]).resolve()
    assert context == APP
    assert (context / service["build"]["dockerfile"]).resolve() == COMPOSE / "Dockerfile"

    dockerfile = (COMPOSE / "Dockerfile").read_text()
    assert re.search(r"^COPY --chown=\S+ \. (\S+)$", dockerfile, re.M)
    cmd = json.loads(re.search(r"^CMD (.*)$", dockerfile, re.M).group(1))
    assert cmd[:2] == ["langgraph", "dev"] and "--no-reload" in cmd
    config = cmd[cmd.index("--config") + 1]
    assert (context / config).resolve() == APP / "langgraph.json"
    for name, spec in json.loads((APP / "langgraph.json").read_text())["graphs"].items():
        module = spec.split(":")[0]
        assert (APP / module).is_file(), f"graph {name}: {module} is not in app/"


def test_default_service_needs_no_account_and_listens_on_loopback() -> None:
    service = compose_file()["services"]["langgraph"]
    assert service["build"]["args"]["BASE_IMAGE"] == f"${{BASE_IMAGE:-{DEFAULT_BASE_IMAGE}}}"
    assert service["ports"] == [f"127.0.0.1:${{REMOTE_GRAPH_PORT:-8123}}:{CONTAINER_PORT}"]
    assert "environment" not in service  # no key, no licence
    test = service["healthcheck"]["test"]
    assert test[:2] == ["CMD", "python"] and "/ok" in test[-1] and "urllib" in test[-1]
    dockerfile = (COMPOSE / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.12-slim$", dockerfile, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", dockerfile, re.M)
    assert "python3 -m venv" in dockerfile  # `python` need not exist in the base


def test_server_requirements_match_the_package_ranges() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    for requirement in SERVER_REQUIREMENTS:
        # As written in pyproject.toml, perhaps with an environment marker.
        assert re.search(rf'"{re.escape(requirement)}(; [^"]*)?"', pyproject), requirement


def test_licensed_profile_keeps_postgres_redis_and_langgraph_api() -> None:
    services = compose_file()["services"]
    for name in ("langgraph-postgres", "langgraph-redis", "langgraph-licensed"):
        assert services[name]["profiles"] == ["licensed"], name
    licensed = services["langgraph-licensed"]
    assert (COMPOSE / licensed["build"]["context"]).resolve() == APP
    assert set(licensed["depends_on"]) == {"langgraph-postgres", "langgraph-redis"}
    dockerfile = (COMPOSE / "Dockerfile.licensed").read_text()
    assert "FROM langchain/langgraph-api" in dockerfile
    match = re.search(r"ENV LANGSERVE_GRAPHS='([^']*)'", dockerfile)
    assert match, "compose/Dockerfile.licensed sets no LANGSERVE_GRAPHS"
    graphs = json.loads((APP / "langgraph.json").read_text())["graphs"]
    served = json.loads(match.group(1))
    assert served == {name: path.replace("./", "/deps/app/", 1) for name, path in graphs.items()}


def test_local_base_script_parses() -> None:
    subprocess.run(["bash", "-n", str(COMPOSE / "local-base.sh")], check=True)


# --- the replicas profile -------------------------------------------------------------

REPLICAS = ("replicas-api-1", "replicas-api-2")
BALANCER = "replicas-balancer"
REPLICAS_PROFILE = {"replicas-postgres", "replicas-redis", *REPLICAS, BALANCER}
HEALTHY = {"condition": "service_healthy"}


def replicas_services() -> dict[str, dict]:
    services = compose_file()["services"]
    return {name: service for name, service in services.items() if "replicas" in service.get("profiles", [])}


def replicas_stages() -> dict[str, tuple[str, str]]:
    """Each stage of compose/Dockerfile.replicas: its name -> (what it is FROM, its text)."""
    dockerfile = (COMPOSE / "Dockerfile.replicas").read_text()
    parts = re.split(r"^FROM ", dockerfile, flags=re.M)[1:]
    stages = {}
    for part in parts:
        match = re.match(r"(\S+) AS (\S+)\n", part)
        assert match, f"a stage of compose/Dockerfile.replicas has no name: FROM {part.splitlines()[0]}"
        stages[match.group(2)] = (match.group(1), part)
    return stages


def seconds(duration: str) -> float:
    """An HAProxy duration (``10m``, ``5s``, ``500ms``, a bare number of milliseconds) in seconds."""
    match = re.fullmatch(r"(\d+)(us|ms|s|m|h|d)?", duration)
    assert match, duration
    unit = {"us": 1e-6, "ms": 1e-3, None: 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return int(match.group(1)) * unit


def test_replicas_profile_is_postgres_redis_two_replicas_and_a_balancer() -> None:
    services = compose_file()["services"]
    assert set(replicas_services()) == REPLICAS_PROFILE
    for name in REPLICAS_PROFILE:
        assert services[name]["profiles"] == ["replicas"], name
    # `docker-compose up` without a profile still starts the default service alone.
    assert {name for name, service in services.items() if "profiles" not in service} == {"langgraph"}


def test_replicas_profile_builds_every_image_from_the_base() -> None:
    """Nothing in the profile is pulled from a registry: every service builds a stage
    of compose/Dockerfile.replicas, and every stage is FROM ${BASE_IMAGE} or an earlier stage."""
    stages = replicas_stages()
    for name, service in replicas_services().items():
        assert "image" not in service, name
        build = service["build"]
        assert (COMPOSE / build["context"]).resolve() == ROOT, name
        assert (ROOT / build["dockerfile"]).resolve() == COMPOSE / "Dockerfile.replicas", name
        assert build["args"]["BASE_IMAGE"] == f"${{BASE_IMAGE:-{DEFAULT_BASE_IMAGE}}}", name
        assert build["target"] in stages, name
    seen: set[str] = set()
    for stage, (source, _) in stages.items():
        assert source == "${BASE_IMAGE}" or source in seen, f"stage {stage} is FROM {source}"
        seen.add(stage)
    dockerfile = (COMPOSE / "Dockerfile.replicas").read_text()
    assert re.search(rf"^ARG BASE_IMAGE={re.escape(DEFAULT_BASE_IMAGE)}$", dockerfile, re.M)
    assert "apt-get install -y --no-install-recommends postgresql redis-server haproxy" in dockerfile


def test_replicas_build_context_holds_what_the_stages_copy() -> None:
    """The context is the repository root, narrowed by .dockerignore to app/ and compose/replicas/."""
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") :][:3] == ["*", "!app/", "!compose/replicas/"]
    for stage, (_, text) in replicas_stages().items():
        for source in re.findall(r"^COPY (?:--\S+ )*(\S+) \S+$", text, re.M):
            assert source == "app" or source.startswith("compose/replicas/"), (stage, source)
            assert (ROOT / source).exists(), (stage, source)
    subprocess.run(["sh", "-n", str(COMPOSE / "replicas" / "postgres.sh")], check=True)


def test_second_replica_starts_once_the_first_is_healthy() -> None:
    """Two replicas migrating a fresh database at once collide: the first runs the
    migrations alone, on a healthy Postgres and Redis; the balancer waits for both."""
    services = replicas_services()
    first, second = (services[name] for name in REPLICAS)
    assert first["depends_on"] == {"replicas-postgres": HEALTHY, "replicas-redis": HEALTHY}
    assert second["depends_on"] == {"replicas-api-1": HEALTHY}
    assert services[BALANCER]["depends_on"] == dict.fromkeys(REPLICAS, HEALTHY)
    for name, service in services.items():
        assert service["healthcheck"]["test"][0] == "CMD", name


def test_replicas_run_langhost_on_the_profiles_postgres_and_redis() -> None:
    services = replicas_services()
    for name in REPLICAS:
        service = services[name]
        assert service["build"]["target"] == "replica", name
        env = service["environment"]
        assert urlsplit(env["DATABASE_URI"]).hostname == "replicas-postgres", name
        assert urlsplit(env["REDIS_URI"]).hostname == "replicas-redis", name
        assert env["LG_BG_JOB_HEARTBEAT"] == "5", name
        assert "/ok" in service["healthcheck"]["test"][-1], name
    _, replica = replicas_stages()["replica"]
    assert f"pip install '{LANGHOST_REQUIREMENT}'" in replica
    assert re.search(r"^COPY --chown=\S+ app /srv/app$", replica, re.M)
    assert re.search(r"^WORKDIR /srv/app$", replica, re.M)
    cmd = json.loads(re.search(r"^CMD (.*)$", replica, re.M).group(1))
    serve = "langhost serve --host 0.0.0.0 --port 8000 -c langgraph.json --n-jobs-per-worker 32 --no-browser"
    assert cmd == serve.split()


def test_only_the_balancer_is_published_on_loopback() -> None:
    services = replicas_services()
    for name, service in services.items():
        if name != BALANCER:
            assert "ports" not in service, name
    assert services[BALANCER]["ports"] == ["127.0.0.1:${REMOTE_GRAPH_REPLICAS_PORT:-8125}:8000"]
    assert services[BALANCER]["build"]["target"] == "balancer"


def test_balancer_round_robins_the_replicas_and_outlasts_heartbeats() -> None:
    config = (COMPOSE / "replicas" / "haproxy.cfg").read_text()
    assert re.search(r"^\s+bind :8000$", config, re.M)
    assert re.search(r"^\s+balance roundrobin$", config, re.M)
    assert re.search(r"^\s+option httpchk GET /ok$", config, re.M)
    servers = re.findall(r"^\s+server \S+ (\S+):(\d+)$", config, re.M)
    assert servers == [(name, "8000") for name in REPLICAS]
    # A quiet stream gets a heartbeat every 5 s: an idle limit below that would cut it.
    for side in ("client", "server"):
        match = re.search(rf"^\s+timeout {side} (\S+)$", config, re.M)
        assert match and seconds(match.group(1)) > 5, side


# --- the generated Dockerfile for other projects ------------------------------------


def write_project(tmp_path: Path, dependencies: list[str]) -> Path:
    (tmp_path / "langgraph.json").write_text(json.dumps({"dependencies": dependencies, "graphs": {"g": "./g.py:g"}}))
    (tmp_path / "g.py").write_text("g = None\n")
    return tmp_path / "langgraph.json"


def test_dependencies_are_installed_as_langgraph_build_treats_them(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname='pkg'\n")
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "requirements.txt").write_text("httpx\n")
    (tmp_path / "plain").mkdir()
    config = write_project(tmp_path, [".", "./pkg", "./reqs", "./plain", "langchain-openai>=0.3"])
    steps = dependency_steps(config)
    assert len(steps) == 2
    assert "langchain-openai>=0.3" in steps[0] and "/srv/app/pkg" in steps[0]
    assert steps[1].endswith("-r /srv/app/reqs/requirements.txt")
    assert all("'langgraph>=1.2.22,<1.3'" in step for step in steps)  # never moves the server's langgraph
    dockerfile = render_dockerfile(config, requirements=["extra-package"], base_image="debian-python:local")
    assert "ARG BASE_IMAGE=debian-python:local" in dockerfile
    assert "extra-package" in dockerfile
    # The installs come after the copy of the context and before dropping root.
    assert dockerfile.index("COPY") < dockerfile.index("/srv/app/pkg") < dockerfile.index("USER")


def test_no_install_step_for_a_plain_directory(tmp_path: Path) -> None:
    assert dependency_steps(write_project(tmp_path, ["."])) == []


@pytest.mark.parametrize("dep", ["..", "./missing"])
def test_a_dependency_outside_the_context_or_missing_is_refused(tmp_path: Path, dep: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with pytest.raises(ValueError, match="outside|not a directory"):
        dependency_steps(write_project(project, [dep]))
