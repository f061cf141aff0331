"""One guard around every ``RemoteGraph`` method that takes a config.

The methods run on the library's own data path (the runs, the thread
methods) or, for ``get_graph`` / ``aget_graph``, through the SDK's client.
``guard_methods`` wraps each of them once, keeping its kind (function,
coroutine, generator, async generator), so that, whichever path it takes:

* ``config`` must be a mapping (and its ``configurable`` and ``metadata``
  mappings) or the call fails with a ``TypeError`` naming it;
* the methods that address one thread need ``configurable.thread_id``; every
  thread id they send is the server thread's UUID (``_core.thread_ids``: a
  UUID stays itself, any other id, ``"user-42"`` say, is mapped through the
  graph's ``map_thread_id``), and what they return (state snapshots, the
  config ``update_state`` returns, stream parts) carries the caller's thread
  id again, as a local graph's results do;
* transport and HTTP errors surface as ``RemoteGraphError``s, the original
  as ``__cause__``: timeouts as ``RemoteTimeoutError``, other transport errors
  as ``RemoteConnectionError``, HTTP error statuses as ``RemoteCommandError``
  with ``status``, an answer that is not JSON as ``RemoteProtocolError``. For
  the generators this holds during iteration, where those errors surface.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing, closing, contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx
import orjson
from langchain_core.runnables.config import CONFIG_KEYS, merge_configs

from remote_graph._core.thread_ids import default_map_thread_id, rename_thread, server_thread_id, thread_name
from remote_graph._redact import check_headers, redact
from remote_graph._shell_common import request_secrets, sanitize, translate
from remote_graph.errors import RemoteCommandError, RemoteGraphError, RemoteProtocolError

__all__ = ["GUARDED", "check_config", "guard_methods", "http_error", "translated"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Spec:
    """How one method takes its config.

    Attributes:
        config_at: Position of ``config`` among the positional arguments after ``self``.
        thread: ``"required"`` for methods that address one thread,
            ``"optional"`` for those that may, ``None`` for those that start
            runs (the run's driver maps the thread, ``_core.commands.wire_config``,
            and reads it back) or may run inside a local parent, whose thread
            is not sent.
        also: Other keyword arguments shaped like a config (their thread ids
            are mapped too).
    """

    config_at: int
    thread: Literal["required", "optional"] | None = None
    also: tuple[str, ...] = ()


GUARDED: dict[str, _Spec] = {
    "invoke": _Spec(1),
    "ainvoke": _Spec(1),
    "stream": _Spec(1),
    "astream": _Spec(1),
    "stream_events": _Spec(1),
    "astream_events": _Spec(1),
    "get_state": _Spec(0, "required"),
    "aget_state": _Spec(0, "required"),
    "get_state_history": _Spec(0, "required", also=("before",)),
    "aget_state_history": _Spec(0, "required", also=("before",)),
    "update_state": _Spec(0, "required"),
    "aupdate_state": _Spec(0, "required"),
    "bulk_update_state": _Spec(0, "optional"),
    "abulk_update_state": _Spec(0, "optional"),
    "get_graph": _Spec(0),
    "aget_graph": _Spec(0),
    "with_config": _Spec(0),
}
"""The guarded methods and where each takes its config."""


def check_config(value: object, name: str = "config") -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` is ``None`` or a config-shaped mapping."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping (a RunnableConfig), got {type(value).__name__}: {value!r:.80}")
    for key in ("configurable", "metadata"):
        inner = value.get(key)
        if inner is not None and not isinstance(inner, Mapping):
            raise TypeError(f"{name}[{key!r}] must be a mapping, got {type(inner).__name__}: {inner!r:.80}")


@dataclass(frozen=True)
class _Thread:
    """A call's thread, as the server knows it and as the caller named it."""

    server_id: str
    thread_id: str

    def read(self, result: Any) -> Any:
        """``result`` (a snapshot, a config, a stream part) with the caller's thread id."""
        return rename_thread(result, self.server_id, self.thread_id)

    def explain(self, message: str) -> str:
        """A server message that names the server thread, naming the caller's thread id too."""
        return message.replace(self.server_id, f"{self.server_id} (thread_id {self.thread_id!r})")


def http_error(exc: httpx.HTTPError, doing: str, thread: _Thread | None = None) -> RemoteGraphError:
    """The library's error for an httpx (or SDK) error raised while ``doing``.

    With ``thread``, a server message naming the server thread names the caller's thread id too.
    """
    response = getattr(exc, "response", None) if isinstance(exc, httpx.HTTPStatusError) else None
    if not isinstance(response, httpx.Response):
        return translate(exc, doing)
    status = response.status_code
    # The SDK's status errors carry the decoded body and the server's message.
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, Mapping) else None
    code = error if isinstance(error, str) and error else f"http_{status}"
    # A server may repeat in its refusal the credential it refused.
    message = redact(getattr(exc, "message", None) or str(exc), request_secrets(response.request))
    if thread is not None:
        message = thread.explain(message)
    return RemoteCommandError(f"{code}: {message}", code=code, status=status)


@contextmanager
def translated(doing: str, thread: _Thread | None = None) -> Iterator[None]:
    """Re-raise httpx errors and undecodable answers raised inside as ``RemoteGraphError``s."""
    try:
        yield
    except RemoteCommandError as exc:
        if thread is not None:
            # The server's message names the server thread: name the caller's too.
            exc.args = (thread.explain(str(exc)), *exc.args[1:])
        raise
    except httpx.HTTPError as exc:
        raise http_error(exc, doing, thread) from sanitize(exc)
    except orjson.JSONDecodeError as exc:
        raise RemoteProtocolError(f"the server's answer is not JSON while {doing}: {exc}") from exc


def lift_configurable(config: Any) -> Any:
    """``config`` as langchain's ``ensure_config`` reads it: a top-level key that is
    no config key (``{"thread_id": ...}``) belongs to ``configurable``, and wins there."""
    if not isinstance(config, Mapping):
        return config
    extra = {key: value for key, value in config.items() if key not in CONFIG_KEYS and value is not None}
    if not extra:
        return config
    lifted: dict[str, Any] = {key: value for key, value in config.items() if key in CONFIG_KEYS}
    lifted["configurable"] = {**(config.get("configurable") or {}), **extra}
    return lifted


def _with_thread(config: Mapping[str, Any] | None, thread_id: str) -> dict[str, Any]:
    """``config`` with ``configurable.thread_id`` set: it wins over the graph's own when merged."""
    config = dict(lift_configurable(config) or {})
    config["configurable"] = {**(config.get("configurable") or {}), "thread_id": thread_id}
    return config


def _prepare_call(
    graph: Any, name: str, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], _Thread | None]:
    """Check a call's configs; return its arguments with server thread ids, and,
    when the caller names its thread otherwise, that thread (to read results back)."""
    positional = len(args) > spec.config_at
    config = args[spec.config_at] if positional else kwargs.get("config")
    check_config(config)
    if (lifted := lift_configurable(config)) is not config:
        config = lifted
        if positional:
            args = (*args[: spec.config_at], config, *args[spec.config_at + 1 :])
        else:
            kwargs = {**kwargs, "config": config}
    for other in spec.also:
        check_config(kwargs.get(other), other)
    check_headers(kwargs.get("headers"))
    if spec.thread is None:
        return args, kwargs, None
    merged = merge_configs(graph.config, config)
    thread_id = (merged.get("configurable") or {}).get("thread_id")
    if thread_id is None:
        if spec.thread == "required":
            raise ValueError(f"{name}() needs the thread: pass config={{'configurable': {{'thread_id': ...}}}}")
        return args, kwargs, None
    map_thread_id = getattr(graph, "map_thread_id", default_map_thread_id)
    server_id = server_thread_id(thread_id, map_thread_id)
    kwargs = dict(kwargs)
    for other in spec.also:
        value = kwargs.get(other)
        other_thread = ((value or {}).get("configurable") or {}).get("thread_id")
        if other_thread is not None:
            kwargs[other] = _with_thread(
                value, server_thread_id(other_thread, map_thread_id, f"{other}.configurable.thread_id")
            )
    if server_id != thread_id:
        config = _with_thread(config, server_id)
        if positional:
            args = (*args[: spec.config_at], config, *args[spec.config_at + 1 :])
        else:
            kwargs["config"] = config
    named = thread_name(thread_id)
    return args, kwargs, (_Thread(server_id, named) if named != server_id else None)


def _read(thread: _Thread | None, result: Any) -> Any:
    return result if thread is None else thread.read(result)


def _wrap(name: str, method: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    doing = f"calling {name}"

    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def async_generator(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            args, kwargs, thread = _prepare_call(self, name, spec, args, kwargs)
            async with aclosing(method(self, *args, **kwargs)) as items:
                with translated(doing, thread):
                    async for item in items:
                        yield _read(thread, item)

        return async_generator

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            args, kwargs, thread = _prepare_call(self, name, spec, args, kwargs)
            items = method(self, *args, **kwargs)
            with translated(doing, thread), closing(items):
                for item in items:
                    yield _read(thread, item)

        return generator

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def coroutine(self: Any, *args: Any, **kwargs: Any) -> Any:
            args, kwargs, thread = _prepare_call(self, name, spec, args, kwargs)
            with translated(doing, thread):
                return _read(thread, await method(self, *args, **kwargs))

        return coroutine

    @functools.wraps(method)
    def function(self: Any, *args: Any, **kwargs: Any) -> Any:
        args, kwargs, thread = _prepare_call(self, name, spec, args, kwargs)
        with translated(doing, thread):
            return _read(thread, method(self, *args, **kwargs))

    return function


def guard_methods(cls: type[_T]) -> type[_T]:
    """Class decorator: guard each method named in ``GUARDED``, defined on ``cls`` or inherited."""
    for name, spec in GUARDED.items():
        setattr(cls, name, _wrap(name, getattr(cls, name), spec))
    return cls
