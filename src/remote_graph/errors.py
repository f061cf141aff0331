"""Exceptions raised by remote_graph.

Every failure that reaches a caller is a ``RemoteGraphError``; transport
errors from httpx and the SDK are wrapped, with the original as ``__cause__``.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

__all__ = [
    "RemoteGraphError",
    "RemoteConnectionError",
    "RemoteProtocolError",
    "RemoteCommandError",
    "RemoteRunError",
    "RemoteTimeoutError",
    "remote_exception",
]


class RemoteGraphError(Exception):
    """Base class for every error raised by remote_graph."""


class RemoteConnectionError(RemoteGraphError):
    """The server could not be reached, or the connection broke mid-run."""


class RemoteTimeoutError(RemoteConnectionError, TimeoutError):
    """A wait on the server ran past its timeout."""


class RemoteProtocolError(RemoteGraphError):
    """The server answered with something the protocol does not allow."""


class RemoteCommandError(RemoteGraphError):
    """The server refused a protocol command (``run.start``, ``input.respond``, ...).

    Attributes:
        code: The protocol error code, e.g. ``invalid_argument`` or ``no_such_interrupt``.
        status: The HTTP-style status the server folded into the message, if any.
    """

    def __init__(self, message: str, *, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class RemoteRunError(RemoteGraphError):
    """Base of the exceptions rebuilt from a failed remote run.

    A node that raised ``Boom("x")`` on the server surfaces here as an
    instance of a class named ``Boom`` that derives from ``RemoteRunError``.
    When the remote type is a Python builtin (``ValueError``, ``KeyError``,
    ...) the rebuilt class derives from that builtin too, so ``except
    ValueError`` keeps working across the wire.

    Attributes:
        remote_type: The exception type name reported by the server.
    """

    remote_type: str = "RemoteRunError"


_CLASSES: dict[str, type[RemoteRunError]] = {}
_REPR = re.compile(r"^\s*([A-Za-z_][\w.]*)\((.*)\)\s*$", re.S)


def _class_for(type_name: str) -> type[RemoteRunError]:
    cls = _CLASSES.get(type_name)
    if cls is None:
        short = type_name.rsplit(".", 1)[-1]
        base = getattr(builtins, short, None)
        bases: tuple[type, ...] = (RemoteRunError,)
        if isinstance(base, type) and issubclass(base, Exception) and not issubclass(base, RemoteRunError):
            bases = (RemoteRunError, base)
        try:
            cls = type(short, bases, {"remote_type": type_name, "__module__": "remote_graph.remote"})
        except TypeError:  # builtin with an incompatible layout (rare): keep the name only
            cls = type(short, (RemoteRunError,), {"remote_type": type_name, "__module__": "remote_graph.remote"})
        _CLASSES[type_name] = cls
    return cls


def remote_exception(type_name: str | None, message: str) -> RemoteRunError:
    """Build the exception a remote run failed with, from its type name and message."""
    if not type_name:
        return RemoteRunError(message)
    return _class_for(type_name)(message)


def exception_from_repr(text: str) -> RemoteRunError | None:
    """Parse ``repr(exc)`` as the server stores it (``Boom('kaboom')``).

    Returns ``None`` when ``text`` is not shaped like a repr, so the caller
    can fall back to the message the wire carried.
    """
    match = _REPR.match(text)
    if match is None:
        return None
    type_name, raw_args = match.groups()
    try:
        args: Any = ast.literal_eval(f"({raw_args},)") if raw_args.strip() else ()
    except (ValueError, SyntaxError):
        args = (raw_args,)
    cls = _class_for(type_name)
    try:
        return cls(*args)
    except Exception:
        return cls(raw_args)
