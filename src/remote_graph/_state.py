"""The thread-state methods of ``RemoteGraph``: reads and writes of a thread's checkpoints.

``get_state``, ``get_state_history``, ``update_state`` and ``bulk_update_state``
(and their async variants) run the conversations of ``_core.threads`` on the
graph's clients; ``get_subgraphs`` reads the deployed graph's subgraphs. What
comes back is what a local graph returns: ``StateSnapshot``s with revived
values, ``Interrupt``s, nested task states, and an empty snapshot (an empty
history) for a thread the server does not have. The thread ids the caller sent
are mapped and read back by ``_guard``, as for every method.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.types import StateSnapshot

from remote_graph._aio import AsyncRequests
from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.failure import json_body, reply_or_raise
from remote_graph._core.schema import learn_schemas
from remote_graph._core.threads import HistoryPager, bulk_update, history_page, read_state, update_state
from remote_graph._deployment import Deployment
from remote_graph._sync import SyncRequests

__all__ = ["ThreadCalls", "RemoteSubgraph"]

T = TypeVar("T")
Talk = Generator[Request, Response | Broken, T]


class RemoteSubgraph:
    """A subgraph of a deployed graph, as ``get_subgraphs`` yields it.

    The server describes a deployed graph's subgraphs (their schemas), but runs
    only whole deployed graphs: a subgraph has no assistant of its own, so it
    cannot run or hold threads on its own. Its runs and thread methods raise
    ``NotImplementedError`` saying so; its schemas are the server's.

    Attributes:
        namespace: The subgraph's namespace in its parent (``parent|child``).
        schemas: The server's JSON schemas of the subgraph (``input_schema``,
            ``output_schema``, ``state_schema``, ``config_schema``, ...).
    """

    def __init__(self, parent: str, namespace: str, schemas: Mapping[str, Any]) -> None:
        self.parent = parent
        self.namespace = namespace
        self.name = namespace.rsplit("|", 1)[-1]
        self.schemas = dict(schemas)

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        return dict(self.schemas.get("input_schema") or {})

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        return dict(self.schemas.get("output_schema") or {})

    def _refuse(self, method: str) -> NotImplementedError:
        return NotImplementedError(
            f"{method}() on subgraph {self.namespace!r} of the deployed graph {self.parent!r}: the server runs only "
            "deployed graphs (assistants), and a subgraph is not one; run the parent graph instead"
        )

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("invoke")

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("ainvoke")

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("stream")

    def astream(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("astream")

    def get_state(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("get_state")

    async def aget_state(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("aget_state")

    def __repr__(self) -> str:
        return f"RemoteSubgraph({self.parent!r}, {self.namespace!r})"


class ThreadCalls:
    """The thread-state calls on one ``Deployment`` (see the module docstring).

    Each call is a conversation of requests (``_core.threads``); ``sync`` and
    ``async_`` are the shells that run them.
    """

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment

    # --- the pieces every call shares -------------------------------------------

    def _target(self, config: RunnableConfig) -> tuple[RunnableConfig, str, str, ChunkReader]:
        merged = merge_configs(self.deployment.config, config)
        thread_id = str((merged.get("configurable") or {})["thread_id"])
        # The guard reads thread ids back in the caller's terms.
        reader = ChunkReader(CallView(server_thread=thread_id, thread_name=None), self.deployment.schemas)
        return merged, thread_id, f"/threads/{quote(thread_id, safe='')}", reader

    def known(self) -> Talk[None]:
        """Learn the deployed graph's schemas, once: a graph name the server does not
        serve fails here, naming the graphs it serves."""
        deployment = self.deployment
        if not deployment.schemas.known:
            yield from learn_schemas(deployment.assistant_id, deployment.schemas)

    def _with_schemas(self, talk: Talk[T]) -> Talk[T]:
        """``talk``, after the deployed graph's schemas are known (they revive state)."""
        yield from self.known()
        return (yield from talk)

    def sync(self, headers: Mapping[str, str] | None) -> SyncRequests:
        return self.deployment.sync_requests(dict(headers or {}))

    def async_(self, headers: Mapping[str, str] | None) -> AsyncRequests:
        return self.deployment.async_requests(dict(headers or {}))

    # --- the calls -----------------------------------------------------------------

    def state(self, config: RunnableConfig, subgraphs: bool) -> Talk[StateSnapshot]:
        merged, _, path, reader = self._target(config)
        return self._with_schemas(read_state(path, merged, reader, subgraphs=subgraphs))

    def update(
        self, config: RunnableConfig, values: Any, as_node: str | None, task_id: str | None
    ) -> Talk[RunnableConfig]:
        if task_id is not None:
            raise NotImplementedError(
                "RemoteGraph.update_state cannot honour task_id=: the server's state updates take none."
            )
        merged, thread_id, path, _ = self._target(config)
        deployment = self.deployment
        return update_state(
            path, thread_id, merged, values, as_node, schemas=deployment.schemas, assistant_id=deployment.assistant_id
        )

    def bulk(self, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]) -> Talk[RunnableConfig]:
        # Empty supersteps fail in ``bulk_update``, before anything is sent, as locally.
        _, thread_id, path, _ = self._target(config)
        deployment = self.deployment
        return bulk_update(
            path, thread_id, supersteps, schemas=deployment.schemas, assistant_id=deployment.assistant_id
        )

    def history(
        self,
        config: RunnableConfig,
        *,
        filter: Mapping[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Generator[Request | StateSnapshot, Response | Broken | None, None]:
        """``get_state_history``: its requests, page by page as the caller reads, and the
        snapshots of each page, for the shells' ``items`` to run."""
        merged, _, path, reader = self._target(config)
        pager = HistoryPager(limit, before)
        while (ask := pager.next_page()) is not None:
            talk = history_page(path, merged, reader, limit=ask[0], before=ask[1], filter=filter)
            page = yield from (self._with_schemas(talk) if pager.first else talk)
            for state in pager.take(page, ask[0]):
                yield state

    def drawing(self, xray: int | bool, params: Any = None) -> Talk[Mapping[str, Any]]:
        """``get_graph``: the deployed graph's drawing as the server describes it.

        Asked as upstream asks it, by the name the graph was given (langgraph-api
        draws a graph name's default assistant, the one its runs use); a server
        that knows no such assistant (aegra takes no graph name there) is asked
        for the assistant the graph's name was found as.
        """
        deployment = self.deployment
        yield from self.known()
        query: dict[str, Any] = {"xray": xray, **dict(params or {})}
        doing = "reading the graph's drawing"
        reply = yield Request("GET", f"/assistants/{quote(deployment.assistant_id, safe='')}/graph", params=query)
        found = deployment.schemas.assistant_id
        if isinstance(reply, Response) and reply.status == 404 and found and found != deployment.assistant_id:
            reply = yield Request("GET", f"/assistants/{quote(found, safe='')}/graph", params=query)
        drawing: Mapping[str, Any] = json_body(reply_or_raise(reply, doing), doing)
        return drawing

    def subgraphs(self, namespace: str | None, recurse: bool) -> Talk[list[tuple[str, RemoteSubgraph]]]:
        """``get_subgraphs``: the deployed graph's subgraphs, by namespace, as the server describes them."""
        deployment = self.deployment
        yield from self.known()
        assistant = deployment.schemas.assistant_id or deployment.assistant_id
        path = f"/assistants/{quote(assistant, safe='')}/subgraphs"
        doing = "reading the graph's subgraphs"
        params = {"recurse": "true" if recurse else "false"}
        # The one namespace to pick from all the subgraphs, where the server has no path for it.
        picked: str | None = None
        if namespace is None:
            reply = yield Request("GET", path, params=params)
        else:
            reply = yield Request("GET", f"{path}/{quote(namespace, safe='')}", params=params)
            if isinstance(reply, Response) and reply.status == 404:
                # aegra has no namespace path: the subgraph is picked from all of them, as
                # local finds it (a nested namespace, whose segments "|" joins, only with ``recurse``).
                reply = yield Request("GET", path, params={"recurse": "true"})
                picked = namespace if recurse or "|" not in namespace else ""
        found = json_body(reply_or_raise(reply, doing), doing)
        return [
            (ns, RemoteSubgraph(deployment.assistant_id, ns, schemas))
            for ns, schemas in found.items()
            if isinstance(schemas, Mapping) and picked in (None, ns)
        ]
