"""The errors a refused command or a failed run turns into."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from remote_graph.errors import RemoteCommandError, RemoteRunError, exception_from_repr, remote_exception

_STATUS_PREFIX = re.compile(r"^(\d{3}): ")


def command_error(body: Any, http_status: int) -> RemoteCommandError:
    """The error for a request the server refused (a non-2xx answer)."""
    if isinstance(body, Mapping):
        message = str(body.get("message") or body.get("detail") or body)
        code = str(body.get("error") or f"http_{http_status}")
    else:
        message, code = str(body), f"http_{http_status}"
    match = _STATUS_PREFIX.match(message)
    status = int(match.group(1)) if match else (http_status if http_status >= 400 else None)
    return RemoteCommandError(f"{code}: {message}", code=code, status=status)


def failure_from_state(state: Any, wire_error: Mapping[str, Any] | None) -> RemoteRunError:
    """The exception a failed run raised.

    The thread's REST state records it as ``Type('message')`` on the failed
    task; the stream's ``error`` event only names the type (the server hides
    the message), so it is the fallback.
    """
    tasks = state.get("tasks") if isinstance(state, Mapping) else None
    for task in tasks or ():
        error = task.get("error") if isinstance(task, Mapping) else None
        if isinstance(error, str) and error:
            rebuilt = exception_from_repr(error)
            return rebuilt if rebuilt is not None else remote_exception(None, error)
        if isinstance(error, Mapping):
            return remote_exception(error.get("error"), str(error.get("message", "")))
    if wire_error:
        return remote_exception(_str_or_none(wire_error.get("error")), str(wire_error.get("message") or "remote run failed"))
    return remote_exception(None, "remote run failed")


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
