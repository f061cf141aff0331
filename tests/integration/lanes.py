"""Lanes of the conformance suite: one scenario, written once, run four ways.

A scenario is a plain function ``scenario(lane) -> result``. A lane is one of
[local compiled graph, RemoteGraph] x [sync API, async API]; it offers the same
small vocabulary of operations (start a run, read a projection, read
``output``, ...). The sync lane calls the sync API; the async lane runs the
async API on one event loop per test. Results are normalized so that only
what must match (never ids or timestamps) is compared.

The classic surface has its own vocabulary: ``invoke``, ``stream`` (drained),
``stream_until`` (closed after n chunks), ``stream_caught`` (chunks, then the
error), ``batch``, ``events`` (``astream_events`` v1/v2; the sync lanes call
``stream_events``), ``state``, ``history``, ``update_state``,
``bulk_update_state``, ``get_subgraphs``, and ``settle`` (how many runs are still
going on a thread). ``CONFORMANCE_LANES=local`` runs every scenario's local lane
twice instead of local and remote, with no server: it checks that a scenario runs
and that its local result is the same on every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import bare
import classic
import graphs
import httpx
import plain
import toolflow
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from langgraph.types import Interrupt
from langgraph_sdk.client import SyncLangGraphClient

from remote_graph import RemoteGraph
from tests.without_v3 import ClientsWithoutV3

_SEGMENT = re.compile(r"^([^:]+):[0-9a-f-]{8,}$")


def norm(value: Any) -> Any:
    """Strip what legitimately differs between two runs: ids, timestamps, containers."""
    if isinstance(value, BaseMessage):
        out: dict[str, Any] = {"type": value.type, "content": norm(value.content)}
        for key in ("name", "tool_call_id"):
            if getattr(value, key, None):
                out[key] = getattr(value, key)
        calls = getattr(value, "tool_calls", None)
        if calls:
            out["tool_calls"] = [{"name": c["name"], "args": c["args"], "id": c["id"]} for c in calls]
        return out
    if isinstance(value, Interrupt):
        assert isinstance(value.id, str) and value.id
        return {"interrupt": norm(value.value)}
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items() if k not in ("timestamp", "trigger_call_id", "id")}
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    if isinstance(value, str):
        match = _SEGMENT.match(value)
        return f"{match.group(1)}:*" if match else value
    return value


def norm_event(event: dict[str, Any]) -> Any:
    params = event["params"]
    data = params["data"]
    if event["method"] == "messages":
        data = data[0]
    out = {"method": event["method"], "ns": norm(params["namespace"]), "data": norm(data)}
    if "interrupts" in params:
        out["interrupts"] = norm(params["interrupts"])
    return out


def _message_row(m: dict[str, Any], at_start: bool) -> dict[str, Any]:
    row = {"node": m["message"].node, "deltas": m["deltas"], "tool_calls": norm(m["tool_calls"])}
    if at_start:
        row["node_at_start"] = m["start"]
    return row


def parallel_steps(events: list[Any]) -> dict[str, list[Any]]:
    """The promised part of the events of a run whose steps run tasks side by side.

    Each task's update is streamed as that task ends, so langgraph promises no order
    among the updates of one step, nor where an interrupt's ``values`` event falls
    among them (both vary on Python 3.13, locally too, in the async API). What it
    does promise: the sequence of ``values`` events, and every update, once.
    """
    values = [e for e in events if e["method"] == "values"]
    others = sorted(
        (e for e in events if e["method"] != "values"), key=lambda e: json.dumps(e, sort_keys=True, default=str)
    )
    return {"values": values, "others": others}


def error_of(exc: BaseException) -> tuple[str, str]:
    return type(exc).__name__, str(exc)


class Lane:
    """Common part of the four lanes."""

    kind: str  # "local" | "remote"
    flavour: str  # "sync" | "async"

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url

    def graph(self, name: str, **remote_kwargs: Any) -> Any:
        """The local twin compiled exactly as its module is served (with the
        module's ``stream_transformers()`` hook), or the remote graph told
        nothing but its name and the server's url."""
        if self.kind == "local":
            return local_twin(name)
        return RemoteGraph(name, url=self.server_url, **remote_kwargs)

    @staticmethod
    def thread() -> dict[str, Any]:
        return {"configurable": {"thread_id": str(uuid.uuid4())}}

    def close(self) -> None:
        pass

    def settle(self, config: dict[str, Any], bound: float = 10.0) -> int:
        """Wait until nothing runs on the thread any more; return how many runs still
        do after ``bound`` seconds. A local graph runs nothing once its call has
        returned or its stream was closed, so locally this is always 0."""
        if self.kind == "local":
            return 0
        thread_id = config["configurable"]["thread_id"]
        deadline = time.monotonic() + bound
        with httpx.Client(base_url=self.server_url, timeout=10) as http:
            while True:
                response = http.get(f"/threads/{thread_id}/runs")
                active = (
                    [r for r in response.json() if r["status"] in ("pending", "running")]
                    if response.status_code == 200
                    else []
                )
                if not active or time.monotonic() > deadline:
                    return len(active)
                time.sleep(0.05)


# Every module the server serves graphs from.
_MODULES = (graphs, toolflow, bare, classic, plain)


def local_twin(name: str) -> Any:
    """Compile graph ``name`` as the server does, with its own module's transformers."""
    for module in _MODULES:
        builder = module.BUILDERS.get(name)
        if builder is not None:
            hook = getattr(module, "stream_transformers", None)
            transformers = tuple(hook()) if hook is not None else ()
            graph = builder()
            if isinstance(graph, Pregel):  # an entrypoint: compiled already
                return graph.copy(update={"checkpointer": InMemorySaver(), "stream_transformers": transformers})
            return graph.compile(checkpointer=InMemorySaver(), transformers=transformers)
    raise KeyError(f"no served module builds {name!r}")


class SyncLane(Lane):
    flavour = "sync"

    def start(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return graph.stream_events(input, config or self.thread(), version="v3", **kwargs)

    def call(self, fn: Callable[[], Any]) -> Any:
        return fn()

    def collect(self, run: Any, name: str, limit: int | None = None) -> list[Any]:
        source = run if name == "events" else getattr(run, name)
        items = []
        for item in source:
            items.append(item)
            if limit is not None and len(items) >= limit:
                break
        return items

    def output(self, run: Any) -> Any:
        return run.output

    def interrupted(self, run: Any) -> bool:
        return run.interrupted

    def interrupts(self, run: Any) -> list[Any]:
        return run.interrupts

    def messages(self, run: Any, *, at_start: bool = False) -> list[dict[str, Any]]:
        """Each message stream of ``run.messages`` (or of a subgraph handle's):
        its node, deltas and tool calls, and with ``at_start`` its node as the
        stream is handed out."""
        out = []
        for message in run.messages:
            start = message.node
            deltas = list(message.text)
            calls = message.tool_calls.get()
            out.append({"message": message, "deltas": deltas, "tool_calls": calls, "start": start})
        return [_message_row(m, at_start) for m in out]

    def subgraph_messages(self, run: Any) -> list[dict[str, Any]]:
        """Each subgraph handle's path and message streams, nodes read as handed out."""
        return [{"path": norm(list(h.path)), "messages": self.messages(h, at_start=True)} for h in run.subgraphs]

    def drain(self, run: Any, *names: str) -> dict[str, list[Any]]:
        """Subscribe to every named projection (``run.extensions[name]``) first, then read each to its end."""
        cursors = {name: iter(run.extensions[name]) for name in names}
        return {name: list(cursor) for name, cursor in cursors.items()}

    def drain_channel(self, channel: Any) -> list[Any]:
        return list(channel)

    def subgraphs(self, run: Any, depth: int = 2) -> list[dict[str, Any]]:
        return [self._handle(h, depth) for h in run.subgraphs]

    def _handle(self, handle: Any, depth: int) -> dict[str, Any]:
        info: dict[str, Any] = {
            "path": norm(list(handle.path)),
            "graph_name": handle.graph_name,
            "status_seen": handle.status,
        }
        values_iter = iter(handle.values)
        children = [self._handle(c, depth - 1) for c in handle.subgraphs] if depth > 1 else []
        info["values"] = list(values_iter)
        info["children"] = children
        info["output"] = handle.output
        info["status"] = handle.status
        info["error"] = handle.error
        return info

    def interleave(self, run: Any, *names: str) -> list[tuple[str, Any]]:
        return list(run.interleave(*names))

    def state(self, graph: Any, config: Any, **kwargs: Any) -> Any:
        return graph.get_state(config, **kwargs)

    def history(self, graph: Any, config: Any, **kwargs: Any) -> list[Any]:
        return list(graph.get_state_history(config, **kwargs))

    def update_state(self, graph: Any, config: Any, values: Any, as_node: str | None = None, **kwargs: Any) -> Any:
        return graph.update_state(config, values, as_node=as_node, **kwargs)

    # --- the classic surface -------------------------------------------------------

    def invoke(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return graph.invoke(input, config or self.thread(), **kwargs)

    def stream(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> list[Any]:
        return list(graph.stream(input, config or self.thread(), **kwargs))

    def stream_caught(
        self, graph: Any, input: Any, config: Any = None, **kwargs: Any
    ) -> tuple[list[Any], BaseException | None]:
        """Every chunk until the stream ends or raises, and what it raised."""
        chunks: list[Any] = []
        try:
            for chunk in graph.stream(input, config or self.thread(), **kwargs):
                chunks.append(chunk)
        except Exception as exc:
            return chunks, exc
        return chunks, None

    def stream_until(self, graph: Any, input: Any, config: Any, n: int, **kwargs: Any) -> list[Any]:
        """The first ``n`` chunks; then the stream is closed, as a ``break`` leaves it."""
        chunks: list[Any] = []
        with contextlib.closing(graph.stream(input, config, **kwargs)) as stream:
            for chunk in stream:
                chunks.append(chunk)
                if len(chunks) >= n:
                    break
        return chunks

    def batch(self, graph: Any, inputs: Sequence[Any], configs: Sequence[Any], **kwargs: Any) -> list[Any]:
        return list(graph.batch(list(inputs), list(configs), **kwargs))

    def events(self, graph: Any, input: Any, config: Any = None, version: str = "v2", **kwargs: Any) -> list[Any]:
        """``stream_events(version=v1|v2)``: locally langchain-core has no sync v1/v2 events."""
        return list(graph.stream_events(input, config or self.thread(), version=version, **kwargs))

    def bulk_update_state(self, graph: Any, config: Any, supersteps: Any) -> Any:
        return graph.bulk_update_state(config, supersteps)

    def get_subgraphs(self, graph: Any, **kwargs: Any) -> list[tuple[str, Any]]:
        return list(graph.get_subgraphs(**kwargs))

    def abort_after(self, run: Any, name: str, n: int) -> tuple[list[Any], Any]:
        items = []
        with run:
            for item in getattr(run, name):
                items.append(item)
                if len(items) >= n:
                    break
        return items, run.output


class AsyncLane(Lane):
    flavour = "async"

    def __init__(self, server_url: str) -> None:
        super().__init__(server_url)
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        # A failed local run can leave background work (a checkpoint write) on the
        # loop: give it a moment to finish, then cancel what is left, so nothing
        # is destroyed pending.
        pending = asyncio.all_tasks(self.loop)
        if pending:
            _, left = self.loop.run_until_complete(asyncio.wait(pending, timeout=5))
            for task in left:
                task.cancel()
            if left:
                self.loop.run_until_complete(asyncio.wait(left, timeout=5))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 60))

    def start(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self._run(graph.astream_events(input, config or self.thread(), version="v3", **kwargs))

    def call(self, fn: Callable[[], Any]) -> Any:
        return self._run(fn())

    def collect(self, run: Any, name: str, limit: int | None = None) -> list[Any]:
        async def go() -> list[Any]:
            source = run if name == "events" else getattr(run, name)
            items = []
            async for item in source:
                items.append(item)
                if limit is not None and len(items) >= limit:
                    break
            return items

        return self._run(go())

    def output(self, run: Any) -> Any:
        return self._run(run.output())

    def interrupted(self, run: Any) -> bool:
        return self._run(run.interrupted())

    def interrupts(self, run: Any) -> list[Any]:
        return self._run(run.interrupts())

    def messages(self, run: Any, *, at_start: bool = False) -> list[dict[str, Any]]:
        async def go() -> list[dict[str, Any]]:
            out = []
            async for message in run.messages:
                start = message.node
                deltas = [d async for d in message.text]
                calls = await message.tool_calls
                out.append({"message": message, "deltas": deltas, "tool_calls": calls, "start": start})
            return [_message_row(m, at_start) for m in out]

        return self._run(go())

    def subgraph_messages(self, run: Any) -> list[dict[str, Any]]:
        async def messages(h: Any) -> list[dict[str, Any]]:
            out = []
            async for message in h.messages:
                start = message.node
                deltas = [d async for d in message.text]
                out.append(
                    {"message": message, "deltas": deltas, "tool_calls": await message.tool_calls, "start": start}
                )
            return [_message_row(m, True) for m in out]

        async def go() -> list[dict[str, Any]]:
            return [{"path": norm(list(h.path)), "messages": await messages(h)} async for h in run.subgraphs]

        return self._run(go())

    def drain(self, run: Any, *names: str) -> dict[str, list[Any]]:
        async def go() -> dict[str, list[Any]]:
            cursors = {name: run.extensions[name].__aiter__() for name in names}
            # Not a dict comprehension around an async one: Python 3.10 rejects that.
            drained: dict[str, list[Any]] = {}
            for name, cursor in cursors.items():
                drained[name] = [item async for item in cursor]
            return drained

        return self._run(go())

    def drain_channel(self, channel: Any) -> list[Any]:
        async def go() -> list[Any]:
            return [item async for item in channel]

        return self._run(go())

    def subgraphs(self, run: Any, depth: int = 2) -> list[dict[str, Any]]:
        async def handle(h: Any, depth: int) -> dict[str, Any]:
            info: dict[str, Any] = {"path": norm(list(h.path)), "graph_name": h.graph_name, "status_seen": h.status}
            values_iter = h.values.__aiter__()
            children = [await handle(c, depth - 1) async for c in h.subgraphs] if depth > 1 else []
            info["values"] = [v async for v in values_iter]
            info["children"] = children
            info["output"] = await h.output()
            info["status"] = h.status
            info["error"] = h.error
            return info

        async def go() -> list[dict[str, Any]]:
            return [await handle(h, depth) async for h in run.subgraphs]

        return self._run(go())

    def interleave(self, run: Any, *names: str) -> list[tuple[str, Any]]:
        async def go() -> list[tuple[str, Any]]:
            return [pair async for pair in run.interleave(*names)]

        return self._run(go())

    def state(self, graph: Any, config: Any, **kwargs: Any) -> Any:
        return self._run(graph.aget_state(config, **kwargs))

    def history(self, graph: Any, config: Any, **kwargs: Any) -> list[Any]:
        async def go() -> list[Any]:
            return [s async for s in graph.aget_state_history(config, **kwargs)]

        return self._run(go())

    def update_state(self, graph: Any, config: Any, values: Any, as_node: str | None = None, **kwargs: Any) -> Any:
        return self._run(graph.aupdate_state(config, values, as_node=as_node, **kwargs))

    # --- the classic surface -------------------------------------------------------

    def invoke(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self._run(graph.ainvoke(input, config or self.thread(), **kwargs))

    def stream(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> list[Any]:
        async def go() -> list[Any]:
            return [chunk async for chunk in graph.astream(input, config or self.thread(), **kwargs)]

        return self._run(go())

    def stream_caught(
        self, graph: Any, input: Any, config: Any = None, **kwargs: Any
    ) -> tuple[list[Any], BaseException | None]:
        """Every chunk until the stream ends or raises, and what it raised."""

        async def go() -> tuple[list[Any], BaseException | None]:
            chunks: list[Any] = []
            try:
                async for chunk in graph.astream(input, config or self.thread(), **kwargs):
                    chunks.append(chunk)
            except Exception as exc:
                return chunks, exc
            return chunks, None

        return self._run(go())

    def stream_until(self, graph: Any, input: Any, config: Any, n: int, **kwargs: Any) -> list[Any]:
        """The first ``n`` chunks; then the stream is closed (``aclosing``), as a careful caller leaves it."""

        async def go() -> list[Any]:
            chunks: list[Any] = []
            async with contextlib.aclosing(graph.astream(input, config, **kwargs)) as stream:
                async for chunk in stream:
                    chunks.append(chunk)
                    if len(chunks) >= n:
                        break
            return chunks

        return self._run(go())

    def batch(self, graph: Any, inputs: Sequence[Any], configs: Sequence[Any], **kwargs: Any) -> list[Any]:
        return list(self._run(graph.abatch(list(inputs), list(configs), **kwargs)))

    def events(self, graph: Any, input: Any, config: Any = None, version: str = "v2", **kwargs: Any) -> list[Any]:
        async def go() -> list[Any]:
            return [e async for e in graph.astream_events(input, config or self.thread(), version=version, **kwargs)]

        return self._run(go())

    def bulk_update_state(self, graph: Any, config: Any, supersteps: Any) -> Any:
        return self._run(graph.abulk_update_state(config, supersteps))

    def get_subgraphs(self, graph: Any, **kwargs: Any) -> list[tuple[str, Any]]:
        async def go() -> list[tuple[str, Any]]:
            return [pair async for pair in graph.aget_subgraphs(**kwargs)]

        return self._run(go())

    def abort_after(self, run: Any, name: str, n: int) -> tuple[list[Any], Any]:
        async def go() -> tuple[list[Any], Any]:
            items = []
            async with run:
                async for item in getattr(run, name):
                    items.append(item)
                    if len(items) >= n:
                        break
            return items, await run.output()

        return self._run(go())


class LocalSync(SyncLane):
    kind = "local"


class RemoteSync(SyncLane):
    kind = "remote"


class LocalAsync(AsyncLane):
    kind = "local"


class RemoteAsync(AsyncLane):
    kind = "remote"


class _ClassicServer:
    """A remote lane on a server that answers v3 runs with the classic modes."""

    server_url: str
    _clients: ClientsWithoutV3 | None = None

    @property
    def clients(self) -> ClientsWithoutV3:
        if self._clients is None:
            self._clients = ClientsWithoutV3(self.server_url)
        return self._clients

    def graph(self, name: str, **remote_kwargs: Any) -> Any:
        return self.clients.graph(name, **remote_kwargs)


class ClassicServerSync(_ClassicServer, RemoteSync):
    def close(self) -> None:
        self.clients.sync.close()
        super().close()


class ClassicServerAsync(_ClassicServer, RemoteAsync):
    def close(self) -> None:
        self.loop.run_until_complete(self.clients.async_.aclose())
        super().close()


class _PlainModule:
    """A lane on the graphs served from a module without the hook (``app/plain.py``):
    locally compiled with no transformers, remotely told so (``stream_transformers=()``,
    the documented way to match such a module: ``docs/divergences.md``)."""

    kind: str
    server_url: str

    def graph(self, name: str, **remote_kwargs: Any) -> Any:
        if self.kind == "local":
            return local_twin(f"plain_{name}")
        remote_kwargs.setdefault("stream_transformers", ())
        return RemoteGraph(f"plain_{name}", url=self.server_url, **remote_kwargs)


class PlainLocalSync(_PlainModule, LocalSync):
    pass


class PlainRemoteSync(_PlainModule, RemoteSync):
    pass


class PlainLocalAsync(_PlainModule, LocalAsync):
    pass


class PlainRemoteAsync(_PlainModule, RemoteAsync):
    pass


class _NoStateReads(httpx.BaseTransport):
    """Sends every request on to the server, but answers each read of a thread's state with a 503."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.endswith("/state"):
            return httpx.Response(503, json={"detail": "this client reads no thread state"})
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def remote_without_state_reads(name: str, server_url: str) -> RemoteGraph:
    """A ``RemoteGraph`` (sync API only) that cannot read a thread's state: the
    case where a message's node cannot be named at its start."""
    http = httpx.Client(base_url=server_url, transport=_NoStateReads(), timeout=30)
    return RemoteGraph(name, sync_client=SyncLangGraphClient(http))


# Inputs the served graphs take, shared by the scenario modules.
LINEAR = {"x": 1, "log": []}
GATE = {"x": 1, "answer": ""}

Scenario = Callable[["Lane"], Any]


class Scenarios(dict[str, Scenario]):
    """A module's scenarios by name; use an instance as the ``@scenario`` decorator."""

    def __call__(self, fn: Scenario) -> Scenario:
        self[fn.__name__] = fn
        return fn


# ``CONFORMANCE_LANES=local`` runs the local lane twice in place of local and remote,
# with no server: a check that a scenario runs and that its local result is stable.
ONLY_LOCAL = os.environ.get("CONFORMANCE_LANES", "") == "local"


def compare(
    fn: Scenario,
    flavour: str,
    server_url: str,
    *,
    reference_flavour: str | None = None,
    local: str = "local",
    remote: str = "remote",
) -> tuple[Any, Any]:
    """Run a scenario on the ``local`` lane (``reference_flavour``, else ``flavour``) and on
    the ``remote`` ``flavour`` lane (``"classic-server"``: a server without the v3
    protocol; ``"plain-local"`` / ``"plain-remote"``: graphs served from a module
    without the hook); return both results. With ``CONFORMANCE_LANES=local`` the
    second result is a second run of the local ``flavour`` lane."""
    reference = run_lane(local, reference_flavour or flavour, server_url, fn)
    return reference, run_lane(local if ONLY_LOCAL else remote, flavour, server_url, fn)


def lanes_server_url(request: Any) -> str:
    """The server's url, or ``""`` when only local lanes run (no server is started then)."""
    return "" if ONLY_LOCAL else str(request.getfixturevalue("server_url"))


def run_lane(kind: str, flavour: str, server_url: str, fn: Callable[[Lane], Any]) -> Any:
    """Run one scenario on one lane, closing the lane afterwards."""
    lane = LANES[(kind, flavour)](server_url)
    try:
        return fn(lane)
    finally:
        lane.close()


LANES: dict[tuple[str, str], type[Lane]] = {
    ("local", "sync"): LocalSync,
    ("remote", "sync"): RemoteSync,
    ("local", "async"): LocalAsync,
    ("remote", "async"): RemoteAsync,
    ("classic-server", "sync"): ClassicServerSync,
    ("classic-server", "async"): ClassicServerAsync,
    ("plain-local", "sync"): PlainLocalSync,
    ("plain-remote", "sync"): PlainRemoteSync,
    ("plain-local", "async"): PlainLocalAsync,
    ("plain-remote", "async"): PlainRemoteAsync,
}
