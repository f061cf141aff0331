"""Turn a ``stream_events`` call (input, config, kwargs) into the request that starts the run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from langgraph.errors import GraphInterrupt
from langgraph.types import Command, Interrupt, Send

from remote_graph._core.actions import OpenStream
from remote_graph._core.context import context_payload, place_configurable
from remote_graph._core.nested import ParentResume
from remote_graph._core.revive import revive
from remote_graph._core.thread_ids import server_thread_id

# Config keys that only make sense inside one process's Pregel loop.
_PROCESS_LOCAL_KEYS = frozenset({"checkpoint_ns", "checkpoint_map", "task_id", "__pregel_strict_resume"})

MULTITASK_STRATEGIES = ("reject", "interrupt", "rollback", "enqueue")

# Keyword arguments local ``stream_events(version="v3")`` forwards to ``stream()``
# that a remote run cannot honour. Honouring none of them silently is the rule,
# so each one is refused with the reason.
_UNSUPPORTED: dict[str, str] = {
    "control": "RunControl drains an in-process loop; a remote run can only be cancelled (use run.abort())",
    "output_keys": "the server's runs have no output_keys",
    "print_mode": "print_mode prints from the in-process loop; there is none on the client",
    "debug": "the server's runs have no debug flag",
    "checkpoint_during": "it is deprecated; pass durability= instead",
}

DURABILITIES = ("sync", "async", "exit")

# What the server's own run.start asks of a v3-streamed run. A run created
# through the runs API with these settings streams the same events.
_V3_MARKER = "__event_streaming_v2"
# ``messages-tuple`` is for a server without the v3 protocol, which ignores the
# marker and streams these modes as they are (``v3_formats.py``): its tokens then
# come with their metadata, which names their node. A v3 server's mux decides
# what a v3 run streams, and this list only which stored events a replay holds.
_V3_STREAM_MODES = ("values", "updates", "messages", "messages-tuple", "custom", "tasks", "checkpoints")


def _node_names(name: str, value: Any) -> list[str] | str | None:
    if value is None:
        return None
    if value == "*":
        return "*"
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name} must be '*' or a list of node names, got {value!r}")
    return list(value)


@dataclass(frozen=True)
class RunOptions:
    """Keyword arguments of a remote v3 call that the remote path honours."""

    metadata: dict[str, Any] | None = None
    multitask_strategy: str | None = None
    headers: dict[str, str] | None = None
    interrupt_before: list[str] | str | None = None
    interrupt_after: list[str] | str | None = None
    durability: str | None = None
    # The run's runtime context, as the JSON object the server takes.
    context: dict[str, Any] | None = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any], method: str = "stream_events(version='v3')") -> RunOptions:
        """Validate ``kwargs``; raise for anything that would be dropped (naming ``method``)."""
        rest = dict(kwargs)
        metadata = rest.pop("metadata", None)
        strategy = rest.pop("multitask_strategy", None)
        headers = rest.pop("headers", None)
        before = _node_names("interrupt_before", rest.pop("interrupt_before", None))
        after = _node_names("interrupt_after", rest.pop("interrupt_after", None))
        durability = rest.pop("durability", None)
        context = context_payload(rest.pop("context", None))
        for name, value in rest.items():
            if value is None:
                continue  # an explicit None asks for nothing
            reason = _UNSUPPORTED.get(name, "no remote equivalent exists and it would be silently ignored")
            raise NotImplementedError(f"RemoteGraph.{method} cannot honour {name}=: {reason}.")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        if strategy is not None and strategy not in MULTITASK_STRATEGIES:
            raise ValueError(f"multitask_strategy must be one of {', '.join(MULTITASK_STRATEGIES)}; got {strategy!r}")
        if headers is not None and not isinstance(headers, Mapping):
            raise TypeError(f"headers must be a mapping, got {type(headers).__name__}")
        if durability is not None and durability not in DURABILITIES:
            raise ValueError(f"durability must be one of {', '.join(DURABILITIES)}; got {durability!r}")
        return cls(
            metadata=dict(metadata) if metadata is not None else None,
            multitask_strategy=strategy,
            headers=dict(headers) if headers is not None else None,
            interrupt_before=before,
            interrupt_after=after,
            durability=durability,
            context=context,
        )


def _primitive(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if isinstance(key, str):
                clean = _primitive(item)
                if clean is not None:
                    out[key] = clean
        return out
    if isinstance(value, (list, tuple)):
        return [clean for item in value if (clean := _primitive(item)) is not None]
    return None


def wire_config(
    config: Mapping[str, Any] | None, to_server: Callable[[object], str] = server_thread_id
) -> tuple[str, dict[str, Any], bool]:
    """Split a RunnableConfig into the server thread id, the JSON config to send,
    and whether the caller named the thread (a fresh id is minted otherwise).

    The caller's ``configurable.thread_id`` becomes the server's through
    ``to_server`` (``_core.thread_ids.server_thread_id`` by default: a UUID
    stays itself, any other id is mapped to one). Callbacks, callables and
    other in-process objects cannot cross the wire and are dropped;
    ``checkpoint_id`` is kept, so a fork or replay reaches the server.
    """
    config = dict(config or {})
    configurable = dict(config.get("configurable") or {})
    thread_id = configurable.pop("thread_id", None)
    for key in list(configurable):
        if key in _PROCESS_LOCAL_KEYS or key.startswith("__"):
            del configurable[key]
    out: dict[str, Any] = {}
    for key in ("tags", "recursion_limit", "run_name", "max_concurrency"):
        if config.get(key) is not None:
            out[key] = _primitive(config[key])
    if config.get("metadata"):
        out["metadata"] = _primitive(config["metadata"])
    clean = _primitive(configurable)
    if clean:
        out["configurable"] = clean
    if thread_id is None:
        return str(uuid4()), out, False
    return to_server(thread_id), out, True


@dataclass
class StartPlan:
    """What to send to start this run, decided once the thread's state is known.

    A run starts through the runs API, marked the way the server's own
    ``run.start`` marks it, so it streams the same v3 events while keeping
    what ``run.start`` drops: ``Command(update=..., goto=...)``,
    ``interrupt_before`` / ``interrupt_after``, ``durability``, and new input
    on an interrupted thread (a new pass over the input, as locally, where
    ``run.start`` would take it as the resume value). It also never meets
    ``run.start``'s 5 s wait on a busy thread. A resume is a runs API
    ``Command(resume={interrupt_id: value})``. The run is created with its
    stream (``POST /threads/{id}/runs/stream``): the stream subscribes before
    the run exists, so its first connection holds everything the run
    publishes, once; the run is ``stream_resumable``, so a lost connection
    resumes on the run's own stream.
    """

    assistant_id: str
    input: Any
    config: dict[str, Any]
    options: RunOptions
    thread_given: bool = True
    # Set when a local parent task that called this remote graph is being resumed.
    parent_resume: ParentResume | None = None
    # Whether the request answered an interrupt with the parent's plain resume value.
    used_parent_value: bool = False
    # A classic run: the server's stream modes (``None``: a v3 run, with the
    # marker and modes the server's own ``run.start`` sets).
    stream_mode: tuple[str, ...] | None = None
    stream_subgraphs: bool = False

    @property
    def carries_metadata(self) -> bool:
        """Whether the run has metadata of the caller's (its config's, or ``metadata=``)."""
        return bool(self.config.get("metadata") or self.options.metadata)

    @property
    def resumes(self) -> bool:
        return isinstance(self.input, Command) and self.input.resume is not None

    def needs_state(self) -> bool:
        """Whether the thread's pending interrupts decide the request.

        Only a resume needs them. A fresh thread (no ``thread_id`` in the
        config) has none, so the round trip is skipped.
        """
        return self.thread_given and (self.resumes or self.parent_resume is not None)

    def request(self, thread_path: str, state: Mapping[str, Any] | None) -> OpenStream:
        """The request that creates the run and opens its stream; raises for
        input that cannot be sent as given."""
        command = self.input if isinstance(self.input, Command) else None
        run_input = self.input
        pending = pending_interrupts(state)
        if self.parent_resume is not None and command is None:
            command, run_input = self._continue_for_parent(self.parent_resume, state, pending)
        if command is not None and command.graph is not None:
            raise ValueError("Command(graph=...) only makes sense when returned from a node, not as a run's input.")
        if command is not None and command.resume is not None and not pending and not has_checkpoint(state):
            command, run_input = start_over(command)
        elif command is not None and command.resume is not None:
            # Answer the interrupts by id, as the server's input.respond does:
            # a plain value must name the one interrupt it answers.
            command = Command(update=command.update, goto=command.goto, resume=self._resume(command.resume, pending))
        return OpenStream(f"{thread_path}/runs/stream", method="POST", json=self._run_body(command, run_input))

    def _continue_for_parent(
        self, resume: ParentResume, state: Mapping[str, Any] | None, pending: list[dict[str, Any]]
    ) -> tuple[Command[Any] | None, Any]:
        """What a resumed parent task sends: as a local child, continue from the
        child's checkpoint instead of starting over from the input.

        Pending interrupts are answered from the parent's resume; unanswered
        ones are raised again as they are (same ids and payloads), as a local
        child's ``interrupt()`` would. A child that already ran in this task
        (it completed, or failed and is retried) continues with no input.
        """
        answers, used_value = resume.responses([p["interrupt_id"] for p in pending])
        if answers is not None:
            self.used_parent_value = used_value
            return Command(resume=answers), None
        if pending:
            raise GraphInterrupt(tuple(Interrupt(value=revive(p["value"]), id=p["interrupt_id"]) for p in pending))
        has_checkpoint = isinstance(state, Mapping) and bool(state.get("checkpoint"))
        return None, (None if has_checkpoint else self.input)

    def _run_body(self, command: Command[Any] | None, run_input: Any) -> dict[str, Any]:
        config = dict(self.config)
        configurable = dict(config.get("configurable") or {})
        if self.stream_mode is None:
            configurable[_V3_MARKER] = True
        config["configurable"] = configurable
        body: dict[str, Any] = {
            "assistant_id": self.assistant_id,
            "input": None if command is not None else run_input,
            "config": config,
            "stream_mode": list(_V3_STREAM_MODES if self.stream_mode is None else self.stream_mode),
            "stream_subgraphs": True if self.stream_mode is None else self.stream_subgraphs,
            "stream_resumable": True,
            # A lost connection must not cancel the run: the client resumes it.
            "on_disconnect": "continue",
            "if_not_exists": "create",
        }
        if command is not None:
            body["command"] = _command_payload(command)
        checkpoint_id = configurable.get("checkpoint_id")
        if checkpoint_id is not None:
            # The runs API reads a fork target from the top-level field, as run.start does.
            body["checkpoint_id"] = checkpoint_id
        elif command is None and run_input is None:
            # Go on from the thread's latest checkpoint. aegra refuses a run with no
            # input, command or checkpoint (422); an empty one means the latest on every server.
            body["checkpoint"] = {}
        o = self.options
        for key, value in (
            ("metadata", o.metadata),
            ("multitask_strategy", o.multitask_strategy),
            ("interrupt_before", o.interrupt_before),
            ("interrupt_after", o.interrupt_after),
            ("durability", o.durability),
        ):
            if value is not None:
                body[key] = value
        return place_configurable(body, o.context)

    def _resume(self, resume: Any, pending: list[dict[str, Any]]) -> Any:
        """The resume map, ``{interrupt_id: value}``, for the interrupts answered.

        With nothing pending the value is sent as it is: the graph, as a local
        one, has nothing to resume and returns the thread's state.
        """
        if not pending:
            return resume
        by_id = {p["interrupt_id"]: p for p in pending}
        if isinstance(resume, Mapping) and resume and all(key in by_id for key in resume):
            return dict(resume)
        if len(pending) == 1:
            return {pending[0]["interrupt_id"]: resume}
        ids = ", ".join(by_id)
        # langgraph's own error (type and words) for the same resume of a local run.
        raise RuntimeError(
            "When there are multiple pending interrupts, you must specify the interrupt id when resuming: "
            f"the thread has {len(pending)} pending interrupts ({ids}); "
            "resume them with Command(resume={interrupt_id: value, ...})."
        )


def _command_payload(command: Command[Any]) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if command.resume is not None:
        payload["resume"] = command.resume
    if command.update is not None:
        payload["update"] = _update_payload(command.update)
    if command.goto:
        payload["goto"] = _goto_payload(command.goto)
    return payload


def _update_payload(update: Any) -> Any:
    if isinstance(update, (list, tuple)):
        return [list(item) for item in update]
    return update


def _goto_payload(goto: Any) -> Any:
    items = goto if isinstance(goto, (list, tuple)) else [goto]
    out: list[Any] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Send):
            out.append({"node": item.node, "input": item.arg})
        else:
            raise TypeError(f"Command(goto=...) takes node names or Send objects, got {type(item).__name__}")
    return out[0] if len(out) == 1 and not isinstance(goto, (list, tuple)) else out


def has_checkpoint(state: Mapping[str, Any] | None) -> bool:
    """Whether a thread's REST state comes from a checkpoint (a thread that never ran has none)."""
    return isinstance(state, Mapping) and bool(state.get("checkpoint"))


def start_over(command: Command[Any]) -> tuple[Command[Any] | None, Any]:
    """The ``(command, input)`` of a resume on a thread with no checkpoint: none
    on the server, or one the caller may not see (the server answers both 404).

    As locally, the graph runs from the start: the resume value has nothing to
    answer, an update or goto still applies, and with neither the run's input
    is empty. A thread of another user is refused by the server when the run
    starts, so it is never written to.
    """
    if command.update is not None or command.goto:
        return Command(update=command.update, goto=command.goto), None
    return None, {}


def pending_interrupts(state: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The interrupts a thread's REST state says are waiting for input."""
    if not state:
        return []
    found: dict[str, dict[str, Any]] = {}
    items = [item for task in state.get("tasks") or () for item in task.get("interrupts") or ()]
    for item in [*items, *(state.get("interrupts") or ())]:
        if isinstance(item, Mapping) and isinstance(item.get("id"), str):
            found.setdefault(item["id"], {"interrupt_id": item["id"], "namespace": [], "value": item.get("value")})
    return list(found.values())
