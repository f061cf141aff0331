"""The compose image serves the same graphs as the embedded server."""

from __future__ import annotations

import json
import re

from tests.conftest import APP

COMPOSE = APP.parent / "compose"


def test_compose_image_serves_every_graph_of_langgraph_json() -> None:
    graphs = json.loads((APP / "langgraph.json").read_text())["graphs"]
    match = re.search(r"ENV LANGSERVE_GRAPHS='([^']*)'", (COMPOSE / "Dockerfile").read_text())
    assert match, "compose/Dockerfile sets no LANGSERVE_GRAPHS"
    served = json.loads(match.group(1))
    assert served == {name: path.replace("./graphs.py", "/deps/app/graphs.py") for name, path in graphs.items()}
