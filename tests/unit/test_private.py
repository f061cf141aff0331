"""Every private langgraph / SDK name the package relies on still imports.

``remote_graph._private`` is the only module that imports private names; if a
langgraph or SDK release moves one, this fails here, naming it.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import remote_graph
from remote_graph import _private

SRC = Path(remote_graph.__file__).parent


@pytest.mark.parametrize("name", _private.__all__)
def test_each_private_name_resolves(name: str) -> None:
    assert getattr(_private, name) is not None


def test_no_other_module_imports_private_names() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.split(".")[0] in ("langgraph", "langgraph_sdk")
            ):
                private_module = any(part.startswith("_") for part in node.module.split("."))
                private_name = any(alias.name.startswith("_") for alias in node.names)
                if private_module or private_name:
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno} from {node.module} import ...")
    assert offenders == []


def test_private_module_lists_everything_it_imports() -> None:
    module = importlib.import_module("remote_graph._private")
    tree = ast.parse(Path(module.__file__ or "").read_text())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module not in ("__future__", "typing")
        for alias in node.names
    }
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert imported | defined == set(_private.__all__)


def test_attach_projection_wires_a_late_channel_like_a_registered_one() -> None:
    from langgraph.stream import StreamChannel, StreamTransformer

    class Owner(StreamTransformer):
        def init(self) -> dict[str, object]:
            return {}

        def process(self, event: object) -> bool:
            return True

    owner = Owner()
    mux = _private.StreamMux(factories=[], is_async=False)
    channel: StreamChannel[int] = StreamChannel()
    _private.attach_projection(mux, "late", channel, owner)
    assert mux.extensions["late"] is channel
    assert mux.transformer_by_key("late") is owner
    iterator = iter(channel)
    channel.push(1)
    mux.close()
    assert list(iterator) == [1]
