"""The graphs of ``graphs.py`` and ``classic.py``, served from a module with no ``stream_transformers()`` hook.

Each is served as ``plain_<name>``. Most deployed modules have no hook: the
server then sends a v3 run's built-in channels only (``values``,
``messages``, ``lifecycle``), never ``updates``, ``custom`` or a named channel.
The conformance suites run on these too (``tests/integration/test_plain_module.py``),
against local graphs compiled with no transformers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import classic
import graphs
from langgraph.pregel import Pregel

BUILDERS: dict[str, Callable[[], Any]] = {
    f"plain_{name}": build for module in (graphs, classic) for name, build in module.BUILDERS.items()
}


def _compiled(build: Callable[[], Any]) -> Pregel:
    graph = build()
    return graph if isinstance(graph, Pregel) else graph.compile()


globals().update({name: _compiled(build) for name, build in BUILDERS.items()})
