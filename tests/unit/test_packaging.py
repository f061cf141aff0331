"""What pyproject.toml claims about Python versions, held to one story."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli below 3.11
    import tomli as tomllib

PROJECT = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]  # what CI tests: unit tests on each, integration on the ends


def test_requires_python_and_the_classifiers_agree() -> None:
    assert PROJECT["requires-python"] == f">={SUPPORTED[0]}"
    classified = [
        m.group(1)
        for c in PROJECT["classifiers"]
        if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))
    ]
    assert classified == SUPPORTED


def test_the_embedded_server_is_a_test_dependency_only_where_it_installs() -> None:
    # langgraph-api needs Python 3.11+; on 3.10 the suite runs against a server elsewhere.
    (cli,) = [d for d in PROJECT["optional-dependencies"]["test"] if d.startswith("langgraph-cli")]
    assert cli.endswith("; python_version >= '3.11'")
