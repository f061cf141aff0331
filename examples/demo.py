"""Stream one graph locally and remotely, side by side, with the same code.

Starts the embedded LangGraph server (``langgraph dev``) on a free port, then
runs the ``chat`` and ``gate`` graphs from ``app/graphs.py`` twice each: as a
local compiled graph and as a ``RemoteGraph`` deployed on that server. The
functions that use the graph do not know which one they were handed: a v3 run
stream, then the methods most code calls (``stream`` in ``messages`` mode,
``invoke``, ``get_state``), whose results are the same objects either way.

Run from the repo root:  python examples/demo.py
"""

from __future__ import annotations

import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))

import graphs  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

from remote_graph import RemoteGraph  # noqa: E402
from remote_graph.testing import LangGraphDevServer  # noqa: E402

warnings.filterwarnings("ignore", message="The v3 streaming protocol on Pregel is experimental.")


def chat_turn(graph: Any, label: str) -> list[str]:
    """Stream one chat turn token by token; works for any v3-capable graph."""
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    tokens: list[str] = []
    with graph.stream_events({"messages": [HumanMessage("hi")]}, config, version="v3") as run:
        for message in run.messages:
            for delta in message.text:
                tokens.append(delta)
        print(f"  {label:<7} tokens={tokens}")
        print(f"  {label:<7} last message: {run.output['messages'][-1].text!r}")
    return tokens


def approval(graph: Any, label: str) -> Any:
    """Pause at an interrupt, answer it, and read the final state."""
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    run = graph.stream_events({"x": 1, "answer": ""}, config, version="v3")
    question = run.interrupts[0].value
    print(f"  {label:<7} interrupted={run.interrupted} question={question}")
    resumed = graph.stream_events(Command(resume="yes"), config, version="v3")
    print(f"  {label:<7} values={list(resumed.values)}")
    return resumed.output


def classic(graph: Any, label: str) -> Any:
    """The methods most code calls: stream tokens, invoke, then read the thread's state."""
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    tokens = [
        chunk.text for chunk, _ in graph.stream({"messages": [HumanMessage("hi")]}, config, stream_mode="messages")
    ]
    answer = graph.invoke({"messages": [HumanMessage("again")]}, config)["messages"][-1]
    state = graph.get_state(config)
    kinds = [type(m).__name__ for m in state.values["messages"]]
    print(f"  {label:<7} stream tokens={tokens}")
    print(f"  {label:<7} invoke -> {type(answer).__name__}({answer.text!r}); get_state messages={kinds}")
    return tokens, answer.text, kinds


def main() -> int:
    with LangGraphDevServer(ROOT / "app" / "langgraph.json") as server:
        print(f"embedded LangGraph server at {server.url}\n")
        pairs = {
            name: (
                graphs.BUILDERS[name]().compile(checkpointer=InMemorySaver(), transformers=graphs.TRANSFORMERS),
                # Nothing but the name: the server's module says which projections exist.
                RemoteGraph(name, url=server.url),
            )
            for name in ("chat", "gate")
        }
        print("chat: token streaming through run.messages")
        local_tokens = chat_turn(pairs["chat"][0], "local")
        remote_tokens = chat_turn(pairs["chat"][1], "remote")
        print("\ngate: interrupt, then Command(resume=...)")
        local_out = approval(pairs["gate"][0], "local")
        remote_out = approval(pairs["gate"][1], "remote")
        print("\nchat: stream(stream_mode='messages'), invoke, get_state")
        local_classic = classic(pairs["chat"][0], "local")
        remote_classic = classic(pairs["chat"][1], "remote")
        same = local_tokens == remote_tokens and local_out == remote_out and local_classic == remote_classic
        print(f"\nlocal and remote agree: {same}")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
