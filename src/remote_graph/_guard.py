"""One guard around the ``RemoteGraph`` methods that talk to the server through the SDK.

langgraph's ``RemoteGraph`` methods (``invoke``, ``stream``, ``get_state``,
``update_state``, ...) index into ``config`` before checking it and let the
SDK's httpx errors through. ``guard_methods`` wraps each of them once, keeping
its kind (function, coroutine, generator, async generator), so that:

* ``config`` must be a mapping (and its ``configurable`` and ``metadata``
  mappings) or the call fails with a ``TypeError`` naming it;
* the methods that address one thread need ``configurable.thread_id``, and a
  thread id URL normalization would mangle is refused before anything is sent;
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
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx
import orjson
from langchain_core.runnables.config import merge_configs

from remote_graph._core.thread_ids import check_thread_id
from remote_graph._shell_common import translate
from remote_graph.errors import RemoteCommandError, RemoteGraphError, RemoteProtocolError

__all__ = ["GUARDED", "check_config", "guard_methods", "http_error", "translated"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Spec:
    """How one method takes its config.

    Attributes:
        config_at: Position of ``config`` among the positional arguments after ``self``.
        thread: ``"required"`` for methods that address one thread,
            ``"optional"`` for those that may, ``None`` for those that leave
            the thread to code that checks it (``_core.commands.wire_config``)
            or that may run inside a local parent, whose thread is not sent.
        also: Other keyword arguments shaped like a config.
    """

    config_at: int
    thread: Literal["required", "optional"] | None = None
    also: tuple[str, ...] = ()


GUARDED: dict[str, _Spec] = {
    "invoke": _Spec(1),
    "ainvoke": _Spec(1),
    "stream": _Spec(1, "optional"),
    "astream": _Spec(1, "optional"),
    "stream_events": _Spec(1),
    "astream_events": _Spec(1),
    "get_state": _Spec(0, "required"),
    "aget_state": _Spec(0, "required"),
    "get_state_history": _Spec(0, "required", also=("before",)),
    "aget_state_history": _Spec(0, "required", also=("before",)),
    "update_state": _Spec(0, "required"),
    "aupdate_state": _Spec(0, "required"),
    "bulk_update_state": _Spec(0),
    "abulk_update_state": _Spec(0),
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


def http_error(exc: httpx.HTTPError, doing: str) -> RemoteGraphError:
    """The library's error for an httpx (or SDK) error raised while ``doing``."""
    response = getattr(exc, "response", None) if isinstance(exc, httpx.HTTPStatusError) else None
    if not isinstance(response, httpx.Response):
        return translate(exc, doing)
    status = response.status_code
    # The SDK's status errors carry the decoded body and the server's message.
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, Mapping) else None
    code = error if isinstance(error, str) and error else f"http_{status}"
    message = getattr(exc, "message", None) or str(exc)
    return RemoteCommandError(f"{code}: {message}", code=code, status=status)


@contextmanager
def translated(doing: str) -> Iterator[None]:
    """Re-raise httpx errors and undecodable answers raised inside as ``RemoteGraphError``s."""
    try:
        yield
    except httpx.HTTPError as exc:
        raise http_error(exc, doing) from exc
    except orjson.JSONDecodeError as exc:
        raise RemoteProtocolError(f"the server's answer is not JSON while {doing}: {exc}") from exc


def _check_call(graph: Any, name: str, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    config = args[spec.config_at] if len(args) > spec.config_at else kwargs.get("config")
    check_config(config)
    for other in spec.also:
        check_config(kwargs.get(other), other)
    if spec.thread is None:
        return
    merged = merge_configs(graph.config, config)
    thread_id = (merged.get("configurable") or {}).get("thread_id")
    if thread_id is not None:
        check_thread_id(thread_id)
    elif spec.thread == "required":
        raise ValueError(f"{name}() needs the thread: pass config={{'configurable': {{'thread_id': ...}}}}")


def _wrap(name: str, method: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    doing = f"calling {name}"

    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def async_generator(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            _check_call(self, name, spec, args, kwargs)
            async with aclosing(method(self, *args, **kwargs)) as items:
                with translated(doing):
                    async for item in items:
                        yield item

        return async_generator

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            _check_call(self, name, spec, args, kwargs)
            with translated(doing):
                yield from method(self, *args, **kwargs)

        return generator

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def coroutine(self: Any, *args: Any, **kwargs: Any) -> Any:
            _check_call(self, name, spec, args, kwargs)
            with translated(doing):
                return await method(self, *args, **kwargs)

        return coroutine

    @functools.wraps(method)
    def function(self: Any, *args: Any, **kwargs: Any) -> Any:
        _check_call(self, name, spec, args, kwargs)
        with translated(doing):
            return method(self, *args, **kwargs)

    return function


def guard_methods(cls: type[_T]) -> type[_T]:
    """Class decorator: guard each method named in ``GUARDED``, defined on ``cls`` or inherited."""
    for name, spec in GUARDED.items():
        setattr(cls, name, _wrap(name, getattr(cls, name), spec))
    return cls
