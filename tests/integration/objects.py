"""What a caller of the classic graph surface gets, made comparable between two runs.

``Objects()(value)`` turns the objects ``invoke``, ``stream``, ``batch``, the state
methods and ``astream_events`` return into plain data that keeps everything a
caller can observe: a message's class (``AIMessage`` is not ``AIMessageChunk``),
content, tool calls and tool-call chunks; an ``Interrupt``'s value; an error's
type name and message; tuples as tuples (a namespace is a tuple, not a list); a
``StateSnapshot`` field by field. It drops only what legitimately differs
between two runs of the same graph, each rule saying why below.

Ids are not dropped but renamed: every UUID (message ids, run ids, thread ids,
checkpoint ids, ``lc_run--<uuid>``) and every 32-hex interrupt id becomes
``#n``, numbered in order of first appearance in one result. Two runs differ in
their ids, never in which things share one: the chunks of one message, a
message and its copy in the state, an event and its parent, a checkpoint and
the next one's ``parent_config``, an interrupt and the state's interrupt.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage, ToolMessageChunk
from langgraph.types import (
    Command,
    GraphOutput,
    Interrupt,
    PregelTask,
    Send,
    StateSnapshot,
)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TASK_SEGMENT = re.compile(r"^([^:|]+):" + UUID.pattern + "$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
ANY_ID = re.compile(UUID.pattern + r"|\b[0-9a-f]{32}\b")

# Set for a server that sends every message of ``messages`` mode as a chunk
# (aegra; ``server_kinds.sends_whole_messages_as_chunks``): a chunk is then
# compared as the whole message it holds, on both sides.
WHOLE_MESSAGES = False

# The keys of checkpoint metadata a caller relies on. The server keeps its own run
# bookkeeping there too (graph_id, assistant_id, run_id, user ids, ...): for
# checkpoint metadata only these and the scenarios' own keys are compared.
CHECKPOINT_METADATA = ("source", "step", "parents")
USER_METADATA = ("tenant",)


class Objects:
    """Normalizes one result; ids are numbered afresh for each instance."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self._message_ids = True

    def __call__(self, value: Any) -> Any:
        return self.norm(value)

    def id(self, raw: str) -> str:
        """``#n`` for the n-th distinct id of this result."""
        return self.ids.setdefault(raw, f"#{len(self.ids)}")

    def text(self, value: str) -> str:
        # A namespace segment ``node:<task id>``: the task id is new on every run.
        if "|" in value or ":" in value:
            segments = value.split("|")
            if all(TASK_SEGMENT.match(s) or ":" not in s for s in segments) and any(
                TASK_SEGMENT.match(s) for s in segments
            ):
                return "|".join(TASK_SEGMENT.sub(r"\1:*", s) for s in segments)
        # A timestamp (``created_at``, debug events): the clock's.
        if TIMESTAMP.match(value):
            return "<timestamp>"
        return ANY_ID.sub(lambda m: self.id(m.group()), value)

    def norm(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, BaseMessage):
            return self.message(value)
        if isinstance(value, Interrupt):
            assert isinstance(value.id, str) and value.id, f"an Interrupt without an id: {value!r}"
            out = {"Interrupt": self.norm(value.value), "id": self.id(value.id)}
            out["response_schema"] = self.norm(getattr(value, "response_schema", None))
            return out
        if isinstance(value, GraphOutput):
            return {"GraphOutput": self.norm(value.value), "interrupts": self.norm(value.interrupts)}
        if isinstance(value, StateSnapshot):
            return self.snapshot(value)
        if isinstance(value, PregelTask):
            return self.task(value)
        if isinstance(value, Send):
            return {"Send": value.node, "arg": self.norm(value.arg)}
        if isinstance(value, Command):
            fields = ("graph", "update", "resume", "goto")
            return {"Command": {f: self.norm(getattr(value, f)) for f in fields}}
        if isinstance(value, BaseException):
            return {"error": type(value).__name__, "message": self.text(str(value))}
        if isinstance(value, dict):
            return self.mapping(value)
        if isinstance(value, tuple):
            return tuple(self.norm(v) for v in value)
        if isinstance(value, list):
            return [self.norm(v) for v in value]
        return value

    def mapping(self, value: dict[Any, Any]) -> dict[Any, Any]:
        keys = list(value)
        if all(k in keys for k in CHECKPOINT_METADATA):
            keys = [k for k in keys if k in CHECKPOINT_METADATA or k in USER_METADATA]
        # Ids are numbered in key order, whatever order the dict was built in.
        out = {}
        for key in sorted(keys, key=str):
            if key == "lc_versions" and isinstance(value[key], dict):
                out[key] = versions_masked(value[key])
                continue
            out[self.norm(key)] = self.norm(value[key])
        return {k: out[k] for k in sorted(out, key=str)}

    def message(self, m: BaseMessage) -> dict[str, Any]:
        whole = WHOLE_MESSAGES and isinstance(m, (AIMessageChunk, ToolMessageChunk))
        out: dict[str, Any] = {
            "class": type(m).__name__.removesuffix("Chunk") if whole else type(m).__name__,
            "content": self.norm(m.content),
            "id": self.norm(m.id) if self._message_ids else "<not compared>",
            "name": m.name,
            "additional_kwargs": self.norm(m.additional_kwargs),
            "response_metadata": self.norm(m.response_metadata),
        }
        if isinstance(m, AIMessage):
            out["tool_calls"] = [(c["name"], c["args"], c["id"]) for c in m.tool_calls]
            out["invalid_tool_calls"] = [(c["name"], c["args"], c["id"]) for c in m.invalid_tool_calls]
            out["usage_metadata"] = self.norm(m.usage_metadata)
        if isinstance(m, AIMessageChunk) and not whole:
            out["tool_call_chunks"] = [(c["name"], c["args"], c["id"], c["index"]) for c in m.tool_call_chunks]
            out["chunk_position"] = m.chunk_position
        if isinstance(m, ToolMessage):
            out["tool_call_id"] = m.tool_call_id
            out["status"] = m.status
            out["artifact"] = self.norm(m.artifact)
        return out

    def task(self, task: PregelTask) -> dict[str, Any]:
        # The task's id is new on every run; its path is the scheduler's bookkeeping.
        # Whether a message in its saved result already has the id its channel's
        # reducer gives it depends on whether the write was saved before the
        # reducer ran: locally a sync run saves it without, an async run with.
        self._message_ids = False
        try:
            result = self.norm(task.result)
        finally:
            self._message_ids = True
        return {
            "name": task.name,
            "interrupts": self.norm(task.interrupts),
            "error": self.norm(task.error),
            "result": result,
            "state": self.norm(task.state),
        }

    def snapshot(self, state: StateSnapshot) -> dict[str, Any]:
        return {
            "StateSnapshot": True,
            "values": self.norm(state.values),
            "next": self.norm(state.next),
            "tasks": self.norm(state.tasks),
            "interrupts": self.norm(state.interrupts),
            "config": self.norm(state.config),
            "parent_config": self.norm(state.parent_config),
            "metadata": self.norm(state.metadata),
            # When a checkpoint was written is the clock's; whether it has a time is not.
            "created_at": None if state.created_at is None else "<timestamp>",
        }


def versions_masked(lc_versions: dict[str, Any]) -> dict[str, str]:
    """A model's ``lc_versions`` with the releases masked, and only the package every process has.

    A model's chunks and events name the langchain packages of the process the
    model ran in: the server's, which may hold another release of langchain-core
    than the caller's, and ``langchain`` only where it is installed there (the
    caller's test extra pulls it in; a container's or a replica's server has none).
    See the divergence table, docs/divergences.md.
    """
    return {name: "<version>" for name in lc_versions if name == "langchain-core"}


def objects(value: Any) -> Any:
    """``value`` normalized, ids numbered from ``#0``."""
    return Objects()(value)


def printed(text: str) -> str:
    """Printed output (``debug=True``, ``print_mode``) with its ids and times masked."""
    text = ANY_ID.sub("*", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*(\+00:00|Z)?", "<timestamp>", text)


def in_task_order(items: list[Any], key: Callable[[Any], Any]) -> list[Any]:
    """``items`` with each run of consecutive items from side-by-side tasks put in task order.

    langgraph promises no order among what the tasks of one step stream (their
    chunks and events come as each task gets to them, and vary from run to run
    locally too); it does promise the order within one task, and where the step's
    output falls among the steps. ``key(item)`` names the task an item comes from
    (``None`` for an item of no such task); a run of keyed items is sorted by
    key, stably, so each task's own order is kept.
    """
    out: list[Any] = []
    run: list[tuple[Any, Any]] = []
    for item in items:
        task = key(item)
        if task is None:
            out.extend(x for _, x in sorted(run, key=lambda pair: pair[0]))
            run = []
            out.append(item)
        else:
            run.append((task, item))
    out.extend(x for _, x in sorted(run, key=lambda pair: pair[0]))
    return out


def tool_of_event(event: dict[str, Any], tools: tuple[str, ...]) -> str | None:
    """Which tool an ``astream_events`` event of a prebuilt agent's tools step belongs to.

    Each tool call is a task of its own (one ``Send`` per call): the tool's own
    events, its ``tools`` task's events (their input names the call) and the
    parent's stream of that task's update (it holds the tool's message).
    """
    if event["name"] in tools:
        return str(event["name"])
    data = event.get("data") or {}
    if isinstance(data.get("input"), dict) and isinstance(data["input"].get("tool_call"), dict):
        return str(data["input"]["tool_call"]["name"])
    for key in ("chunk", "output"):
        payload = data.get(key)
        if isinstance(payload, dict) and isinstance(payload.get("tools"), dict):
            payload = payload["tools"]
        if isinstance(payload, dict):
            messages = payload.get("messages") or []
            if messages and isinstance(messages[0], ToolMessage):
                return str(messages[0].name)
    return None


def tool_message_ids_where_both_have_one(remote: Any, local: Any) -> tuple[Any, Any]:
    """``remote`` and ``local`` with the id of each ``ToolMessage`` that has an
    id on one side only left out on both sides.

    A node that returns a message without an id (a tool's ``ToolMessage``) gets
    it named by the state's reducer, after the events that carry it were
    emitted. Locally a v2 event holds the very object the reducer then names
    (and langchain's v1 stream a copy taken before). The server's copy is taken
    when it serializes the event, which races with the reducer: usually after
    it, under load sometimes before
    (``test_classic_events.py::test_probe_events_show_a_tool_message_id_only_once_the_state_gave_it``).
    Where both sides have an id, it is compared.
    """
    if isinstance(remote, ToolMessage) and isinstance(local, ToolMessage) and (remote.id is None) != (local.id is None):
        return remote.model_copy(update={"id": None}), local.model_copy(update={"id": None})
    if isinstance(remote, dict) and isinstance(local, dict):
        pairs = {k: tool_message_ids_where_both_have_one(v, local[k]) for k, v in remote.items() if k in local}
        return (
            {k: pairs[k][0] if k in pairs else v for k, v in remote.items()},
            {k: pairs[k][1] if k in pairs else v for k, v in local.items()},
        )
    if isinstance(remote, (list, tuple)) and isinstance(local, (list, tuple)) and not hasattr(remote, "_fields"):
        pairs_ = [tool_message_ids_where_both_have_one(r, lo) for r, lo in zip(remote, local)]
        return (
            type(remote)([*(r for r, _ in pairs_), *remote[len(pairs_) :]]),
            type(local)([*(lo for _, lo in pairs_), *local[len(pairs_) :]]),
        )
    return remote, local
