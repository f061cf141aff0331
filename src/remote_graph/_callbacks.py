"""The caller's callback handlers, driven by a remote run as a local run drives them.

``CallbackTap.of(config, ...)`` reads the handlers a local graph run would call
(the config's ``callbacks``, the ambient config's inside a runnable, and the
tracers the environment configures, as ``CallbackManager.configure`` finds
them). With none, it returns ``None`` and the run costs nothing more. With
some, the run also streams the server's ``events`` mode, and the tap:

* starts the caller's run for the graph, as a local graph does (``on_chain_start``
  named as the graph, below the caller's run, with the config's tags and
  metadata and ``ls_integration: langgraph``);
* relays each remote event to the handlers as the handler call it came from
  (``_core.callbacks.CallbackRelay``), below that run;
* ends it with the remote root's output, or, for a failed, paused or
  abandoned run, ends every run left open with its error, then the graph's run.

The calls are ``CallbackCall``s; ``deliver`` hands them to langchain's
``handle_event``, ``adeliver`` to ``ahandle_event``: the two shells differ
only there.

Handlers that stand for a local parent's streams are left out of the relay:
a parent's ``messages`` handler (the child's tokens reach the parent's stream
as chunks already) and a parent's ``astream_events`` handler (it takes the
child's events whole, ``_private.send_event``). They still see the graph's
own run start and end, as a local child's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.callbacks.manager import ahandle_event, handle_event
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_callback_manager_for_config
from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt

from remote_graph._core.callbacks import CallbackCall, CallbackRelay
from remote_graph._private import relayed_elsewhere

__all__ = ["CallbackTap"]

_ROOT_OUTPUT: Any = object()


@dataclass(eq=False)
class CallbackTap:
    """One remote run's callbacks; see the module docstring.

    Args:
        handlers: The handlers of the graph's own run (its start and end).
        children: The handlers its inner runs reach (the inheritable ones),
            less those a parent's streams stand for.
        input: The input the caller passed, for the graph's start.
        name: The graph's run name.
        run_id: The id of the caller's run for the graph.
        parent_run_id: The caller's run around it, if any.
        tags: The graph run's tags.
        metadata: The graph run's metadata.
    """

    handlers: list[BaseCallbackHandler]
    children: list[BaseCallbackHandler]
    input: Any
    name: str
    run_id: UUID
    parent_run_id: UUID | None
    tags: list[str]
    metadata: dict[str, Any]
    relay: CallbackRelay = field(init=False)
    _started: bool = field(default=False, init=False)
    _ended: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.relay = CallbackRelay(self.run_id)

    @classmethod
    def of(cls, config: RunnableConfig, input: Any, name: str, *, always: bool = False) -> CallbackTap | None:
        """The tap for a run with this (merged) config, or ``None`` when no handler
        would see its inner runs (and ``always`` is false).

        Args:
            config: The call's config, merged with the ambient one.
            input: The input the caller passed.
            name: The graph's name (``run_name`` in the config wins, as locally).
            always: Build it even when only the graph's own run has handlers
                (inside a parent's ``astream_events``).
        """
        # Built every time: besides the config's callbacks, the environment's tracer, a
        # context's handler (get_usage_metadata_callback, collect_runs) and debug mode
        # add handlers, as CallbackManager.configure finds them.
        manager = get_callback_manager_for_config(config)
        children = [h for h in manager.inheritable_handlers if not relayed_elsewhere(h)]
        if not children and not always:
            return None
        metadata = dict(manager.metadata)
        metadata.setdefault("ls_integration", "langgraph")
        run_id = config.get("run_id")
        return cls(
            handlers=list(manager.handlers),
            children=children,
            input=input,
            name=str(config.get("run_name") or name),
            run_id=run_id if isinstance(run_id, UUID) else uuid4(),
            parent_run_id=manager.parent_run_id,
            tags=list(manager.tags),
            metadata=metadata,
        )

    @property
    def relays(self) -> bool:
        """Whether inner runs have handlers (so the run must stream ``events``)."""
        return bool(self.children)

    # --- what to call -------------------------------------------------------------

    def start(self) -> list[tuple[list[BaseCallbackHandler], CallbackCall]]:
        """The graph's own ``on_chain_start``."""
        self._started = True
        kwargs = {
            "run_id": self.run_id,
            "parent_run_id": self.parent_run_id,
            "tags": self.tags,
            "metadata": self.metadata,
            "name": self.name,
        }
        return [(self.handlers, CallbackCall("on_chain_start", "ignore_chain", (None, self.input), kwargs))]

    def event(self, event: Mapping[str, Any] | None) -> list[tuple[list[BaseCallbackHandler], CallbackCall]]:
        """The handler calls a revived remote event stands for."""
        if event is None or not self.children or self._ended:
            return []
        return [(self.children, call) for call in self.relay.feed(event)]

    def end(
        self,
        error: BaseException | None = None,
        *,
        interrupts: tuple[Interrupt, ...] = (),
        output: Any = _ROOT_OUTPUT,
    ) -> list[tuple[list[BaseCallbackHandler], CallbackCall]]:
        """The run is over: ``error`` when it failed or was abandoned, ``interrupts``
        when it paused (the interrupted runs end with a ``GraphInterrupt``, the
        graph's with its state, as locally). The graph's run ends with ``output``,
        by default the remote root's own."""
        if not self._started or self._ended:
            return []
        self._ended = True
        base = {"run_id": self.run_id, "parent_run_id": self.parent_run_id, "tags": self.tags}
        if error is not None:
            closing = self.relay.close(error)
            last = CallbackCall("on_chain_error", "ignore_chain", (error,), base)
        else:
            # The nodes that raised the interrupts never ended; after a run that
            # completed, what is open failed and was handled.
            closing = self.relay.close(GraphInterrupt(interrupts) if interrupts else None)
            ended = self.relay.root_output if output is _ROOT_OUTPUT else output
            last = CallbackCall("on_chain_end", "ignore_chain", (ended,), base)
        return [*((self.children, call) for call in closing), (self.handlers, last)]

    # --- the shells ------------------------------------------------------------------

    @staticmethod
    def deliver(calls: list[tuple[list[BaseCallbackHandler], CallbackCall]]) -> None:
        """Make the calls, on the caller's thread."""
        for handlers, call in calls:
            if handlers:
                handle_event(handlers, call.method, call.ignore, *call.args, **call.kwargs)

    @staticmethod
    async def adeliver(calls: list[tuple[list[BaseCallbackHandler], CallbackCall]]) -> None:
        """Async variant of ``deliver``."""
        for handlers, call in calls:
            if not handlers:
                continue
            args, kwargs = call.args, call.kwargs
            if call.method == "on_llm_new_token":
                # langchain's async run manager passes the token by position, the sync one by keyword.
                kwargs = dict(kwargs)
                args = (kwargs.pop("token"), *args)
            await ahandle_event(handlers, call.method, call.ignore, *args, **kwargs)
