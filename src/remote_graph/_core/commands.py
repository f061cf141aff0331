"""Turn a ``stream_events`` call (input, config, kwargs) into protocol commands."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from langgraph.types import Command

# Config keys that only make sense inside one process's Pregel loop.
_PROCESS_LOCAL_KEYS = frozenset({"checkpoint_ns", "checkpoint_map", "task_id", "__pregel_strict_resume"})

MULTITASK_STRATEGIES = ("reject", "interrupt", "rollback", "enqueue")

# Keyword arguments local ``stream_events(version="v3")`` forwards to ``stream()``,
# which the v3 protocol's ``run.start`` silently drops. Honouring none of them
# silently is the rule, so each one is refused with the reason.
_UNSUPPORTED: dict[str, str] = {
    "interrupt_before": "the server's v3 run.start ignores interrupt_before",
    "interrupt_after": "the server's v3 run.start ignores interrupt_after",
    "context": "the server's v3 run.start drops context (runtime.context is always None)",
    "durability": "the server's v3 run.start ignores durability",
    "control": "RunControl drains an in-process loop; a remote run can only be cancelled (use run.abort())",
    "output_keys": "the server's v3 run.start has no output_keys",
    "print_mode": "print_mode prints from the in-process loop; there is none on the client",
    "debug": "the server's v3 run.start has no debug flag",
    "checkpoint_during": "the server's v3 run.start ignores checkpointing options",
}


@dataclass(frozen=True)
class RunOptions:
    """Keyword arguments of a remote v3 call that the remote path honours."""

    metadata: dict[str, Any] | None = None
    multitask_strategy: str | None = None
    headers: dict[str, str] | None = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> RunOptions:
        """Validate ``kwargs``; raise for anything that would be dropped."""
        rest = dict(kwargs)
        metadata = rest.pop("metadata", None)
        strategy = rest.pop("multitask_strategy", None)
        headers = rest.pop("headers", None)
        for name, value in rest.items():
            if value is None:
                continue  # an explicit None asks for nothing
            reason = _UNSUPPORTED.get(name, "no remote equivalent exists and it would be silently ignored")
            raise NotImplementedError(f"RemoteGraph.stream_events(version='v3') cannot honour {name}=: {reason}.")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        if strategy is not None and strategy not in MULTITASK_STRATEGIES:
            raise ValueError(f"multitask_strategy must be one of {', '.join(MULTITASK_STRATEGIES)}; got {strategy!r}")
        if headers is not None and not isinstance(headers, Mapping):
            raise TypeError(f"headers must be a mapping, got {type(headers).__name__}")
        return cls(
            metadata=dict(metadata) if metadata is not None else None,
            multitask_strategy=strategy,
            headers=dict(headers) if headers is not None else None,
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


def wire_config(config: Mapping[str, Any] | None) -> tuple[str, dict[str, Any], bool]:
    """Split a RunnableConfig into the thread id, the JSON config to send, and
    whether the caller named the thread (a fresh id is minted otherwise).

    Callbacks, callables and other in-process objects cannot cross the wire
    and are dropped; ``checkpoint_id`` is kept, so a fork or replay reaches
    the server.
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
    if not isinstance(thread_id, (str, UUID)):
        raise TypeError(f"configurable.thread_id must be a str or UUID, got {type(thread_id).__name__}")
    if "/" in str(thread_id):
        raise ValueError(f"configurable.thread_id may not contain '/': {thread_id!r}")
    return str(thread_id), out, True


@dataclass
class StartPlan:
    """What to send to start this run, decided once the thread's state is known."""

    assistant_id: str
    input: Any
    config: dict[str, Any]
    options: RunOptions
    thread_given: bool = True

    def needs_state(self) -> bool:
        """Whether the thread's pending interrupts decide the command.

        A fresh thread (no ``thread_id`` in the config) has none, so the
        round trip is skipped.
        """
        return self.thread_given and self.input is not None

    def command(self, state: Mapping[str, Any] | None) -> dict[str, Any]:
        """The protocol command body; raises for input the server would misread."""
        pending = pending_interrupts(state)
        if isinstance(self.input, Command):
            return {"id": 1, "method": "input.respond", "params": self._respond(self.input, pending)}
        if self.input is not None and pending:
            ids = ", ".join(p["interrupt_id"] for p in pending)
            raise ValueError(
                "The thread is interrupted (pending interrupts: "
                f"{ids}). The server would take this input as the resume value; "
                "resume with Command(resume=...) instead, or start a new thread."
            )
        params: dict[str, Any] = {"assistant_id": self.assistant_id, "input": self.input, "config": self.config}
        if self.options.metadata is not None:
            params["metadata"] = self.options.metadata
        if self.options.multitask_strategy is not None:
            params["multitaskStrategy"] = self.options.multitask_strategy
        return {"id": 1, "method": "run.start", "params": params}

    def _respond(self, command: Command, pending: list[dict[str, Any]]) -> dict[str, Any]:
        if command.resume is None:
            raise NotImplementedError(
                "Command without resume= cannot be sent over the v3 protocol: input.respond needs a "
                "resume value and run.start drops Command. Use update_state() and then run with input=None."
            )
        if not pending:
            raise ValueError("Command(resume=...) was given but the thread has no pending interrupt to resume.")
        by_id = {p["interrupt_id"]: p for p in pending}
        resume = command.resume
        if isinstance(resume, Mapping) and resume and all(key in by_id for key in resume):
            responses = [
                {"interrupt_id": key, "response": value, "namespace": by_id[key]["namespace"]}
                for key, value in resume.items()
            ]
        elif len(pending) == 1:
            only = pending[0]
            responses = [{"interrupt_id": only["interrupt_id"], "response": resume, "namespace": only["namespace"]}]
        else:
            ids = ", ".join(by_id)
            raise ValueError(
                f"The thread has {len(pending)} pending interrupts ({ids}); "
                "resume them with Command(resume={interrupt_id: value, ...})."
            )
        params: dict[str, Any] = {"responses": responses}
        if command.update is not None:
            params["update"] = _update_payload(command.update)
        if command.goto:
            params["goto"] = _goto_payload(command.goto)
        if self.config:
            params["config"] = self.config
        if self.options.metadata is not None:
            params["metadata"] = self.options.metadata
        return params


def _update_payload(update: Any) -> Any:
    if isinstance(update, (list, tuple)):
        return [list(item) for item in update]
    return update


def _goto_payload(goto: Any) -> Any:
    items = goto if isinstance(goto, (list, tuple)) else [goto]
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        else:
            raise NotImplementedError(f"Command(goto=...) with a {type(item).__name__} cannot cross the wire; use node names.")
    return out[0] if len(out) == 1 and not isinstance(goto, (list, tuple)) else out


def pending_interrupts(state: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The interrupts a thread's REST state says are waiting for input."""
    if not state:
        return []
    found: dict[str, dict[str, Any]] = {}
    for task in state.get("tasks") or ():
        for item in task.get("interrupts") or ():
            if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                found.setdefault(item["id"], {"interrupt_id": item["id"], "namespace": []})
    for item in state.get("interrupts") or ():
        if isinstance(item, Mapping) and isinstance(item.get("id"), str):
            found.setdefault(item["id"], {"interrupt_id": item["id"], "namespace": []})
    return list(found.values())
