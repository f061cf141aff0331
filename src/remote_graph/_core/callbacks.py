"""The callbacks a local run makes, from a remote run's ``events`` frames.

A local graph run with callback handlers (``config={"callbacks": [...]}``, or a
tracer the environment configures) calls them for every run inside it: each
node's chain, each chat model (its tokens too, where it streams), tool and
retriever, each custom event. A remote run makes those calls on the server, in
another process, so the caller's handlers see none of them. Asked for the
``events`` stream mode, the server sends each of them as an
``astream_events(version="v2")`` event; ``CallbackRelay`` turns each event
back into the handler call it came from, with the same run ids, parent run ids,
names, tags and metadata, below the caller's own run for the graph.

It does no I/O and calls no handler: it returns ``CallbackCall``s, which the
sync and async shells hand to langchain's ``handle_event`` / ``ahandle_event``
(which skip a handler's ``ignore_*`` kinds, fall back from
``on_chat_model_start`` to ``on_llm_start`` as locally, and run async handlers
from sync code).

What the events cannot carry is built as close to local as the wire allows:

* a run that fails sends no event (``astream_events`` has none for a chain's
  or a model's error): the runs a failure, an interrupt or an abandon left open
  get their ``on_*_error`` at the end (``close``), innermost first, as the
  exception unwound them locally; a run that failed and was handled (a
  fallback, a retried node) ends with an ``UnendedRunError`` once the run
  around it ends, or the whole run completes;
* ``serialized`` holds only the run's name (``{"name": ..., "id": [...]}``);
  locally it is the model's or tool's ``dumpd``, which never leaves the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.documents import Document
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, Generation, GenerationChunk, LLMResult

from remote_graph.errors import RemoteRunError, remote_exception

__all__ = ["CallbackCall", "CallbackRelay", "UnendedRunError"]

_UNENDED = (
    "this run ended without an end event: it failed and the failure was handled (the server's "
    "event stream sends no error event for it, so its error is not known)"
)


class UnendedRunError(RemoteRunError):
    """The error a relayed run ends with when the server sent no end for it."""


@dataclass(frozen=True)
class CallbackCall:
    """One handler call: ``handle_event(handlers, method, ignore, *args, **kwargs)``."""

    method: str
    ignore: str | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


# An event's run type: the handler methods of its start, end and error, and the
# handler flag that skips it (CallbackManager's own choice of flag per method).
_KINDS: dict[str, tuple[str, str, str, str]] = {
    "chain": ("on_chain_start", "on_chain_end", "on_chain_error", "ignore_chain"),
    "chat_model": ("on_chat_model_start", "on_llm_end", "on_llm_error", "ignore_chat_model"),
    "llm": ("on_llm_start", "on_llm_end", "on_llm_error", "ignore_llm"),
    "tool": ("on_tool_start", "on_tool_end", "on_tool_error", "ignore_agent"),
    "retriever": ("on_retriever_start", "on_retriever_end", "on_retriever_error", "ignore_retriever"),
}
# Runnables langchain's event stream names by what they are; their callbacks are a chain's.
_CHAINS = frozenset({"chain", "prompt", "parser"})


def _kind(run_type: str) -> str | None:
    return "chain" if run_type in _CHAINS else run_type if run_type in _KINDS else None


@dataclass
class _Open:
    kind: str
    parent_run_id: UUID
    tags: list[str]


@dataclass(eq=False)
class CallbackRelay:
    """Turns one remote run's events into its handler calls; see the module docstring.

    Args:
        root_run_id: The caller's run for the graph, started by the shell on
            the caller's callback manager (as a local graph starts its own):
            it stands for the remote run's root, whose own events are not relayed.
    """

    root_run_id: UUID
    _open: dict[UUID, _Open] = field(default_factory=dict, init=False)
    root_output: Any = field(default=None, init=False)
    """The remote root run's output, from its end event (``None`` until then)."""

    def feed(self, event: Mapping[str, Any]) -> list[CallbackCall]:
        """The handler calls one revived ``astream_events`` v2 event stands for."""
        name = event.get("event")
        run_id = _uuid(event.get("run_id"))
        if not isinstance(name, str) or not name.startswith("on_") or run_id is None:
            return []
        parents = event.get("parent_ids") or []
        data = event.get("data") if isinstance(event.get("data"), Mapping) else {}
        assert isinstance(data, Mapping)
        if not parents:
            # The remote root: the caller's own run stands for it.
            if name.endswith("_end"):
                self.root_output = data.get("output")
            return []
        if name == "on_custom_event":
            return [_custom(event, run_id, data)]
        run_type, _, phase = name[len("on_") :].rpartition("_")
        kind = _kind(run_type)
        if kind is None:
            return []
        tags = list(event.get("tags") or [])
        parent = self.root_run_id if len(parents) == 1 else _uuid(parents[-1]) or self.root_run_id
        base = {"run_id": run_id, "parent_run_id": parent, "tags": tags}
        start, end, error, ignore = _KINDS[kind]
        run_name = event.get("name") if isinstance(event.get("name"), str) else ""
        assert isinstance(run_name, str)
        if phase == "start":
            self._open[run_id] = _Open(kind, parent, tags)
            metadata = dict(event.get("metadata") or {})
            kwargs = {**base, "metadata": metadata, "name": run_name, **_start_kwargs(kind, data)}
            return [CallbackCall(start, ignore, _start_args(kind, run_name, data), kwargs)]
        if phase == "stream":
            if kind in ("chat_model", "llm"):
                return [_token(data.get("chunk"), base)]
            return []
        # A model's end and error skip handlers that ignore LLMs, as locally.
        ends = _end_ignore(kind, ignore)
        if phase == "end":
            # A run inside it that never ended failed and was handled (a fallback, a
            # retried node): locally it got its error before this end.
            unended = self._close(UnendedRunError(_UNENDED), within=run_id)
            self._open.pop(run_id, None)
            output = _end_output(kind, data.get("output"))
            return [*unended, CallbackCall(end, ends, (output,), _end_kwargs(kind, run_name, base))]
        if phase == "error":
            self._open.pop(run_id, None)
            return [CallbackCall(error, ends, (_error(data.get("error")),), base)]
        return []

    def close(self, error: BaseException | None) -> list[CallbackCall]:
        """``on_*_error`` for every run still open, innermost first: the run
        failed, paused (``error`` is then a ``GraphInterrupt``) or was abandoned;
        ``None`` when it completed (what is open then failed and was handled)."""
        return self._close(UnendedRunError(_UNENDED) if error is None else error)

    def _close(self, error: BaseException, within: UUID | None = None) -> list[CallbackCall]:
        calls = []
        for run_id, run in reversed(list(self._open.items())):
            if within is not None and not self._inside(run_id, within):
                continue
            del self._open[run_id]
            _, _, method, ignore = _KINDS[run.kind]
            calls.append(
                CallbackCall(
                    method,
                    _end_ignore(run.kind, ignore),
                    (error,),
                    {"run_id": run_id, "parent_run_id": run.parent_run_id, "tags": run.tags},
                )
            )
        return calls

    def _inside(self, run_id: UUID, ancestor: UUID) -> bool:
        parent = self._open[run_id].parent_run_id
        while parent != ancestor:
            above = self._open.get(parent)
            if above is None:
                return False
            parent = above.parent_run_id
        return True


def _end_ignore(kind: str, ignore: str) -> str:
    return "ignore_llm" if kind in ("chat_model", "llm") else ignore


def _uuid(value: Any) -> UUID | None:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        return None


def _serialized(name: str) -> dict[str, Any]:
    return {"name": name, "id": [name]}


def _start_args(kind: str, name: str, data: Mapping[str, Any]) -> tuple[Any, ...]:
    given = data.get("input")
    if kind == "chain":
        return (None, given)
    inputs = given if isinstance(given, Mapping) else {}
    if kind == "chat_model":
        messages = inputs.get("messages") or []
        return (_serialized(name), [list(batch) for batch in messages if isinstance(batch, Sequence)])
    if kind == "llm":
        prompts = inputs.get("prompts") or []
        return (_serialized(name), [str(prompt) for prompt in prompts])
    if kind == "tool":
        # As a local tool: the input as text (a string stays itself).
        return (_serialized(name), given if isinstance(given, str) else str(given))
    query = inputs.get("query", given)
    return (_serialized(name), query if isinstance(query, str) else str(query))


def _start_kwargs(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    if kind == "tool" and isinstance(data.get("input"), Mapping):
        return {"inputs": dict(data["input"])}
    return {}


def _end_kwargs(kind: str, name: str, base: dict[str, Any]) -> dict[str, Any]:
    # A local tool names itself at its end, too.
    return {**base, "name": name} if kind == "tool" else base


def _end_output(kind: str, output: Any) -> Any:
    if kind == "chat_model":
        if isinstance(output, BaseMessage):
            return LLMResult(generations=[[ChatGeneration(message=output)]])
        return _llm_result(output)
    if kind == "llm":
        return _llm_result(output)
    if kind == "retriever" and isinstance(output, list):
        return [_document(item) for item in output]
    return output


def _llm_result(output: Any) -> LLMResult:
    if isinstance(output, LLMResult):
        return output
    if isinstance(output, Mapping) and "generations" in output:
        try:
            return LLMResult.model_validate(dict(output))
        except ValueError:
            pass
    return LLMResult(generations=[[Generation(text="" if output is None else str(output))]])


def _document(value: Any) -> Any:
    if isinstance(value, Mapping) and isinstance(value.get("page_content"), str):
        return Document(
            page_content=value["page_content"], metadata=dict(value.get("metadata") or {}), id=value.get("id")
        )
    return value


def _token(chunk: Any, base: dict[str, Any]) -> CallbackCall:
    """``on_llm_new_token``: the chunk's content as the token, as a local model passes it."""
    if isinstance(chunk, BaseMessage):
        message = chunk if isinstance(chunk, AIMessageChunk) else AIMessageChunk(content=chunk.content)
        generation: Any = ChatGenerationChunk(message=message)
        token: Any = message.content
    elif isinstance(chunk, Mapping) and isinstance(chunk.get("text"), str):
        generation = GenerationChunk(text=chunk["text"])
        token = chunk["text"]
    else:
        token = "" if chunk is None else str(chunk)
        generation = GenerationChunk(text=token)
    # A local model's run manager passes the token by keyword.
    return CallbackCall("on_llm_new_token", "ignore_llm", (), {"token": token, **base, "chunk": generation})


def _error(value: Any) -> BaseException:
    """A tool's error as the server writes it (``{"error": type, "message": ...}``), rebuilt."""
    if isinstance(value, BaseException):
        return value
    if isinstance(value, Mapping):
        type_name = value.get("error")
        return remote_exception(type_name if isinstance(type_name, str) else None, str(value.get("message", "")))
    return remote_exception(None, "" if value is None else str(value))


def _custom(event: Mapping[str, Any], run_id: UUID, data: Any) -> CallbackCall:
    return CallbackCall(
        "on_custom_event",
        "ignore_custom_event",
        (event.get("name"), data),
        {"run_id": run_id, "tags": list(event.get("tags") or []), "metadata": dict(event.get("metadata") or {})},
    )
