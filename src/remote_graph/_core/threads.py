"""A thread's state, read and written through the server's threads API, as sans-I/O conversations.

Each function is a generator: it yields ``Request``s, is sent the shell's
``Response`` (or ``Broken``) for each, and returns what the method returns, as
a local graph returns it (``snapshot.py``). The shells run them
(``_sync.SyncRequests.run``, ``_aio.AsyncRequests.run``), so the sync and the
async method share all but the I/O.

Where a local graph and the server differ on a thread that does not exist
(the server answers 404), the conversation does what the local graph does:
reads are empty, and a write creates the thread (for the deployed graph) and
writes to it, as a local write starts a thread's first checkpoint.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.classic import ChunkReader
from remote_graph._core.failure import answer_error, json_body, reply_or_raise
from remote_graph._core.schema import GraphSchemas, learn_schemas
from remote_graph._core.snapshot import checkpoint_config, empty_snapshot, is_empty, snapshot
from remote_graph.errors import RemoteProtocolError

__all__ = [
    "HISTORY_PAGE",
    "Talk",
    "bulk_update",
    "history_page",
    "read_state",
    "update_state",
]

T = TypeVar("T")
Talk = Generator[Request, Response | Broken, T]
"""A conversation of requests that ends with a result."""

# The server's history answers in pages; a local history has no limit.
HISTORY_PAGE = 100

# The configurable keys that address a checkpoint.
_COORDINATES = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def _no_thread(reply: Response, doing: str) -> bool:
    """Whether the server says the thread does not exist: its API's 404, a JSON
    object. Any other 404 (a proxy's page, a server that is not LangGraph's)
    raises the error that says what came."""
    if reply.status != 404:
        return False
    if isinstance(reply.body, Mapping):
        return True
    raise answer_error(reply, doing)


def checkpoint_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint coordinates a config names (thread, namespace, id)."""
    configurable = config.get("configurable") or {}
    return {key: configurable[key] for key in _COORDINATES if configurable.get(key) is not None}


def read_state(
    thread_path: str, config: Mapping[str, Any], reader: ChunkReader, *, subgraphs: bool
) -> Talk[StateSnapshot]:
    """``get_state``: the thread's latest state, or the checkpoint the config names."""
    checkpoint = checkpoint_of(config)
    at_checkpoint = bool(set(checkpoint) - {"thread_id"})
    if at_checkpoint:
        request = Request(
            "POST", f"{thread_path}/state/checkpoint", json={"checkpoint": checkpoint, "subgraphs": subgraphs}
        )
    else:
        request = Request("GET", f"{thread_path}/state", params={"subgraphs": "true"} if subgraphs else None)
    doing = "reading the thread's state"
    reply = reply_or_raise((yield request), doing, allow=(404,))
    if _no_thread(reply, doing):
        return empty_snapshot({"configurable": checkpoint})
    state = json_body(reply, doing)
    if is_empty(state) and not isinstance(state.get("checkpoint"), Mapping):
        # A thread that never ran, as langgraph-api 0.11 answers it (0.16: a 404):
        # the snapshot is addressed by what the caller asked for, as the 404's is.
        return empty_snapshot({"configurable": checkpoint})
    found = snapshot(state, reader)
    configurable = found.config.get("configurable") or {}
    if (
        at_checkpoint
        and not is_empty(state)
        and "checkpoint_ns" not in checkpoint
        and configurable.get("checkpoint_ns") == ""
    ):
        # langgraph-api 0.11 adds the root's namespace to a checkpoint's config;
        # 0.16 and a local graph give the checkpoint as it was asked for.
        configurable = {key: value for key, value in configurable.items() if key != "checkpoint_ns"}
        found = found._replace(config={**found.config, "configurable": configurable})
    return found


def history_page(
    thread_path: str,
    config: Mapping[str, Any],
    reader: ChunkReader,
    *,
    limit: int,
    before: Mapping[str, Any] | None,
    filter: Mapping[str, Any] | None,
) -> Talk[list[StateSnapshot]]:
    """One page of ``get_state_history``, newest first (``[]`` for a thread the server does not have).

    A server that filters no history by metadata (aegra answers 500) is asked
    for whole pages, filtered here as a local checkpointer filters: every key
    of ``filter`` equal in the checkpoint's metadata, ``limit`` counting the
    checkpoints that match.
    """
    body: dict[str, Any] = {"limit": limit}
    checkpoint = checkpoint_of(config)
    if set(checkpoint) - {"thread_id"}:
        body["checkpoint"] = checkpoint
    if before:
        # The server reads ``before`` as a config (a flat checkpoint fails it with a 500).
        body["before"] = {"configurable": checkpoint_of(before)}
    doing = "reading the thread's history"
    path = f"{thread_path}/history"
    reply = yield Request("POST", path, json={**body, "metadata": dict(filter)} if filter else body)
    if filter and isinstance(reply, Response) and reply.status == 500:
        return (yield from _filtered_here(path, body, filter, reader))
    reply = reply_or_raise(reply, doing, allow=(404,))
    if _no_thread(reply, doing):
        return []
    states = json_body(reply, doing, list)
    return [snapshot(state, reader) for state in states if isinstance(state, Mapping)]


def _filtered_here(
    path: str, body: dict[str, Any], filter: Mapping[str, Any], reader: ChunkReader
) -> Talk[list[StateSnapshot]]:
    """``history_page``'s page, read in whole pages and filtered here."""
    doing = "reading the thread's history"
    limit = body["limit"]
    found: list[StateSnapshot] = []
    while len(found) < limit:
        reply = reply_or_raise((yield Request("POST", path, json={**body, "limit": HISTORY_PAGE})), doing, allow=(404,))
        if _no_thread(reply, doing):
            break
        states = [state for state in json_body(reply, doing, list) if isinstance(state, Mapping)]
        for state in states:
            metadata = state.get("metadata")
            metadata = metadata if isinstance(metadata, Mapping) else {}
            if all(metadata.get(key) == value for key, value in filter.items()):
                found.append(snapshot(state, reader))
        last = states[-1].get("checkpoint") if states else None
        older = checkpoint_of({"configurable": last}) if isinstance(last, Mapping) else {}
        if (
            len(states) < HISTORY_PAGE
            or not older.get("checkpoint_id")
            or {"configurable": older} == body.get("before")
        ):
            # The history's end, or a page that does not lead further back.
            break
        body = {**body, "before": {"configurable": older}}
    return found[:limit]


class HistoryPager:
    """Which pages of a thread's history to ask for, and which snapshots to hand
    out, for ``get_state_history`` with a ``limit`` (``None``: all of them).

    The server answers in pages of at most ``HISTORY_PAGE``; each page after
    the first starts before the last snapshot of the one before. The shells
    ask for ``next_page()`` until it is ``None``, and yield what ``take`` gives.
    """

    def __init__(self, limit: int | None, before: Mapping[str, Any] | None) -> None:
        self._left = limit
        self._before = before
        self._done = limit is not None and limit <= 0
        self.first = True
        """No page was taken yet (the first one also learns the graph's schemas)."""

    def next_page(self) -> tuple[int, Mapping[str, Any] | None] | None:
        """The next page's size and its ``before``, or ``None`` when the history is done."""
        if self._done:
            return None
        size = HISTORY_PAGE if self._left is None else min(self._left, HISTORY_PAGE)
        return size, self._before

    def take(self, page: list[StateSnapshot], size: int) -> list[StateSnapshot]:
        """The snapshots of the page asked for with ``size`` to hand out."""
        self.first = False
        page = page if self._left is None else page[: self._left]
        if self._left is not None:
            self._left -= len(page)
        # A short page is the history's end; so is the limit.
        self._done = len(page) < size or self._left == 0 or not page
        if page:
            self._before = page[-1].config
        return page


def _create_thread(thread_id: str, schemas: GraphSchemas, assistant_id: str, supersteps: Any = None) -> Talk[Response]:
    """Create the thread for the deployed graph (or, with ``supersteps``, apply them
    to it, creating it when it does not exist)."""
    if not schemas.known:
        yield from learn_schemas(assistant_id, schemas)
    graph_id = schemas.graph_id or assistant_id
    body: dict[str, Any] = {"thread_id": thread_id, "if_exists": "do_nothing", "metadata": {"graph_id": graph_id}}
    if supersteps is not None:
        body["supersteps"] = supersteps
    reply = yield Request("POST", "/threads", json=body)
    return reply_or_raise(reply, "creating the thread" if supersteps is None else "updating the thread's state in bulk")


def update_state(
    thread_path: str,
    thread_id: str,
    config: Mapping[str, Any],
    values: Any,
    as_node: str | None,
    *,
    schemas: GraphSchemas,
    assistant_id: str,
) -> Talk[RunnableConfig]:
    """``update_state``: write ``values`` as ``as_node``; the new checkpoint's config."""
    body: dict[str, Any] = {"values": values}
    if as_node is not None:
        body["as_node"] = as_node
    checkpoint = checkpoint_of(config)
    if set(checkpoint) - {"thread_id"}:
        body["checkpoint"] = checkpoint
    doing = "updating the thread's state"
    reply = reply_or_raise((yield Request("POST", f"{thread_path}/state", json=body)), doing, allow=(404,))
    if _no_thread(reply, doing):
        # A local graph writes a thread's first checkpoint; the server needs the thread first.
        yield from _create_thread(thread_id, schemas, assistant_id)
        reply = reply_or_raise(
            (yield Request("POST", f"{thread_path}/state", json=body)), "updating the thread's state"
        )
    answer = json_body(reply, "updating the thread's state")
    written = checkpoint_config(answer.get("checkpoint"))
    if written is None:
        raise RemoteProtocolError(f"the server answered the state update without the checkpoint it wrote: {answer!r}")
    return written


def bulk_update(
    thread_path: str,
    thread_id: str,
    supersteps: Sequence[Sequence[Any]],
    *,
    schemas: GraphSchemas,
    assistant_id: str,
) -> Talk[RunnableConfig]:
    """``bulk_update_state``: apply ``supersteps`` of ``StateUpdate``s; the last checkpoint's config.

    The server applies them through the threads API (``POST /threads`` with
    ``supersteps``), creating the thread when it does not exist, as a local
    graph starts a thread with its first update. A server that ignores them
    (aegra: the thread's checkpoint does not move) gets them one update at a
    time (``update_state``), which is the same where each superstep holds one
    update; a superstep of several cannot be written so, and fails naming why.
    """
    # As a local graph refuses them, before anything is sent.
    if len(supersteps) == 0:
        raise ValueError("No supersteps provided")
    if any(len(superstep) == 0 for superstep in supersteps):
        raise ValueError("No updates provided")
    payload = [{"updates": [_update(update) for update in superstep]} for superstep in supersteps]
    before = yield from _latest_checkpoint(thread_path)
    yield from _create_thread(thread_id, schemas, assistant_id, payload)
    written = yield from _latest_checkpoint(thread_path)
    # The latest checkpoint did not move: the server applied none of them.
    if written is None or written == before:
        if any(len(step["updates"]) > 1 for step in payload):
            raise NotImplementedError(
                "RemoteGraph.bulk_update_state: this server ignored the supersteps (it applies none through its "
                "threads API), and a superstep of several updates cannot be written one update at a time"
            )
        for step in payload:
            for update in step["updates"]:
                written = yield from update_state(
                    thread_path,
                    thread_id,
                    {},
                    update["values"],
                    update.get("as_node"),
                    schemas=schemas,
                    assistant_id=assistant_id,
                )
    if written is None:
        raise RemoteProtocolError("the thread's state after a bulk update names no checkpoint")
    return written


def _latest_checkpoint(thread_path: str) -> Talk[RunnableConfig | None]:
    """The config of the thread's latest checkpoint, ``None`` when it has none (or does not exist)."""
    doing = "reading the thread's state"
    reply = reply_or_raise((yield Request("GET", f"{thread_path}/state")), doing, allow=(404,))
    if _no_thread(reply, doing):
        return None
    config = checkpoint_config(json_body(reply, doing).get("checkpoint"))
    return config if config is not None and "checkpoint_id" in checkpoint_of(config) else None


def _update(update: Any) -> dict[str, Any]:
    values, as_node, task_id = (*update, None)[:3] if isinstance(update, tuple) else (update, None, None)
    if task_id is not None:
        raise NotImplementedError(
            "RemoteGraph.bulk_update_state cannot honour a StateUpdate's task_id: the server's updates take none."
        )
    return {"values": values, **({"as_node": as_node} if as_node is not None else {})}
