"""The errors a refused or unexpected answer, or a failed run, turns into."""

from __future__ import annotations

import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from remote_graph import errors
from remote_graph._core.actions import Broken, Response
from remote_graph._redact import quoted, redact_url
from remote_graph.errors import DEFAULT_MAX_ERROR_TYPES, exception_from_repr, remote_exception

_STATUS_PREFIX = re.compile(r"^(\d{3}): ")


def status_line(status: int) -> str:
    """``"307 Temporary Redirect"``; the number alone for a status HTTP does not name."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def command_error(body: Any, http_status: int, doing: str | None = None) -> errors.RemoteCommandError:
    """The error for a request the server refused (an answer of 400 or more).

    Args:
        body: The answer's body: its JSON, its text, or ``None`` when empty.
        http_status: The answer's status.
        doing: What the request was for ("starting the run"), for the message.
    """
    if isinstance(body, Mapping):
        message = str(body.get("message") or body.get("detail") or body)
        error = body.get("error")
        code = error if isinstance(error, str) and error else f"http_{http_status}"
    elif body is None or body == "":
        message, code = f"{status_line(http_status)}, with an empty body", f"http_{http_status}"
    else:
        message, code = f"{status_line(http_status)}: {quoted(str(body))}", f"http_{http_status}"
    match = _STATUS_PREFIX.match(message)
    status = int(match.group(1)) if match else http_status
    where = f" (the server's answer to {doing}: {status_line(http_status)})" if doing else ""
    return errors.RemoteCommandError(f"{code}: {message}{where}", code=code, status=status)


def answer_error(reply: Response, doing: str, expected: str = "JSON") -> errors.RemoteGraphError:
    """The error for an answer a run cannot go on from.

    A refusal (400 or more) is a ``errors.RemoteCommandError`` with its status. A
    redirect is a ``errors.RemoteProtocolError`` naming its status and ``Location``:
    redirects are never followed, so the credentials a request carries never
    leave for another address. Any other answer (a success with an empty
    body, or with something other than ``expected``) is a
    ``errors.RemoteProtocolError`` saying what came instead.

    Args:
        reply: The answer.
        doing: What the request was for ("starting the run").
        expected: What a good answer holds ("JSON", "an event stream").
    """
    status = reply.status
    if status >= 400:
        return command_error(reply.body, status, doing)
    if 300 <= status < 400:
        location = redact_url(reply.location) if reply.location else None
        target = f"a redirect to {location!r}" if location else "a redirect with no Location"
        return errors.RemoteProtocolError(
            f"{doing}: the server answered {status_line(status)}, {target}; redirects are not followed, so "
            "credentials never leave for another address: give RemoteGraph the url the server redirects to",
            status=status,
            location=location,
        )
    if reply.body is None or reply.body == "":
        came = "an empty body"
    else:
        kind = f"content type {reply.content_type!r}" if reply.content_type else "no content type"
        came = f"{kind}, beginning {quoted(str(reply.body))}"
    return errors.RemoteProtocolError(
        f"{doing}: the server answered {status_line(status)} with {came}, where {expected} was due", status=status
    )


def reply_or_raise(reply: Response | Broken, doing: str, *, allow: tuple[int, ...] = ()) -> Response:
    """The answer, or the ``errors.RemoteGraphError`` it means: a transport failure, or
    a status other than 2xx (and ``allow``).

    Args:
        reply: What the shell got for the request.
        doing: What the request was for ("reading the thread's state").
        allow: Statuses besides 2xx the caller handles itself.
    """
    if isinstance(reply, Broken):
        error_type = errors.RemoteTimeoutError if reply.timed_out else errors.RemoteConnectionError
        what = "timed out" if reply.timed_out else "could not send the request" if reply.local else "connection failed"
        error = error_type(f"{what} while {doing}: {reply.detail}")
        error.__cause__ = reply.error
        raise error
    if 200 <= reply.status < 300 or reply.status in allow:
        return reply
    raise answer_error(reply, doing)


def json_body(reply: Response, doing: str, shape: type[Mapping[str, Any]] | type[list[Any]] = Mapping) -> Any:
    """The answer's JSON, when it has the shape ``doing`` needs (an object or a
    list); otherwise the ``errors.RemoteProtocolError`` that says what came instead."""
    if isinstance(reply.body, shape):
        return reply.body
    raise answer_error(reply, doing, "a JSON list" if shape is list else "a JSON object")


def failure_from_state(
    state: Any, wire_error: Mapping[str, Any] | None, *, max_error_types: int = DEFAULT_MAX_ERROR_TYPES
) -> errors.RemoteRunError | errors.RemoteProtocolError:
    """The exception a failed run raised.

    The thread's REST state records it as ``Type('message')`` on the failed
    task; the stream's ``error`` event only names the type (the server hides
    the message), so it is the fallback. Past ``max_error_types`` distinct
    type names, a new one gives the ``errors.RemoteProtocolError`` that says so
    (see ``Limits.max_error_types``).
    """
    try:
        return _failure(state, wire_error, max_error_types)
    except errors.RemoteProtocolError as exc:
        return exc


def names_its_failure(state: Any) -> bool:
    """Whether a thread's REST state records the error of one of its tasks."""
    return _task_error(state) is not None


def _task_error(state: Any) -> str | Mapping[str, Any] | None:
    """The first error a task of a thread's REST state records: ``Type('message')`` or a mapping."""
    tasks = state.get("tasks") if isinstance(state, Mapping) else None
    for task in tasks if isinstance(tasks, list) else ():
        error = task.get("error") if isinstance(task, Mapping) else None
        if isinstance(error, str) and error or isinstance(error, Mapping):
            return error
    return None


def _failure(state: Any, wire_error: Mapping[str, Any] | None, limit: int) -> errors.RemoteRunError:
    error = _task_error(state)
    if isinstance(error, str):
        rebuilt = exception_from_repr(error, limit=limit)
        return rebuilt if rebuilt is not None else remote_exception(None, error)
    if isinstance(error, Mapping):
        return remote_exception(_str_or_none(error.get("error")), str(error.get("message", "")), limit=limit)
    if wire_error:
        message = str(wire_error.get("message") or "remote run failed")
        return remote_exception(_str_or_none(wire_error.get("error")), message, limit=limit)
    return remote_exception(None, "remote run failed")


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
