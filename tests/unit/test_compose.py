"""The compose stack and the Docker test server serve the graphs of app/langgraph.json.

compose/Dockerfile is what the Docker test server generates for app/langgraph.json,
built with app/ as its context: the image reads app/langgraph.json itself, so it
serves exactly the graphs the embedded server serves.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from remote_graph._dockerimage import (
    CONTAINER_PORT,
    DEFAULT_BASE_IMAGE,
    SERVER_REQUIREMENTS,
    dependency_steps,
    render_dockerfile,
)
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
