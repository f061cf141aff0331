"""Exceptions raised by remote_graph.

Every failure that reaches a caller is a ``RemoteGraphError``; transport
errors from httpx and the SDK are wrapped, with the original as ``__cause__``.
"""

from __future__ import annotations

import ast
import builtins
import re
import threading
from typing import Any

__all__ = [
    "RemoteGraphError",
    "RemoteConnectionError",
    "RemoteProtocolError",
    "RemoteCommandError",
    "RemoteRunError",
    "RemoteTimeoutError",
    "RunCursorError",
    "RunEventsGoneError",
    "RunMismatchError",
    "RunNotFoundError",
    "exception_from_repr",
    "remote_exception",
]


class RemoteGraphError(Exception):
    """Base class for every error raised by remote_graph.

    Every one of them pickles (``multiprocessing``, ``concurrent.futures``
    and task queues carry exceptions that way), keeping its class, message
    and attributes.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # The subclasses take keyword-only arguments, which the default
        # reduction (``cls(*args)``) would not pass back.
        return (_remake, (type(self), self.args), self.__dict__ or None)


def _remake(cls: type[RemoteGraphError], args: tuple[Any, ...]) -> RemoteGraphError:
    """Unpickle an error of ``cls`` with ``args``; its attributes follow as its state."""
    error = cls.__new__(cls, *args)
    Exception.__init__(error, *args)
    return error


class RemoteConnectionError(RemoteGraphError):
    """The server could not be reached, or the connection broke mid-run."""


class RemoteTimeoutError(RemoteConnectionError, TimeoutError):
    """A wait on the server ran past its timeout."""


class RemoteProtocolError(RemoteGraphError):
    """The server answered with something the protocol does not allow.

    A redirect (never followed, so credentials never leave for another
    address), an answer with no body or one that is not JSON where JSON was
    due, an event stream that is not one, a frame past ``Limits``.

    Attributes:
        status: The HTTP status of the answer, when the fault is in one.
        location: Where a redirect pointed (its ``Location`` header), if it was one.
    """

    def __init__(self, message: str, *, status: int | None = None, location: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.location = location


class RemoteCommandError(RemoteGraphError):
    """The server refused a request (starting a run, reading a thread, ...).

    Attributes:
        code: The server's error code, or ``http_<status>``, e.g. ``http_404``.
        status: The HTTP status of the refusal.
    """

    def __init__(self, message: str, *, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class RunNotFoundError(RemoteGraphError):
    """A run to join or manage is not on the server.

    The run id is unknown on that thread, the run was deleted, or the
    credentials in use may not see it (a server with custom auth shows a
    user only their own runs).

    Attributes:
        run_id: The run asked for.
    """

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunMismatchError(RemoteGraphError):
    """A run cannot be joined as asked: it belongs to another graph, it was
    started as the other kind of run (a v3 run stream, or classic
    ``stream_mode`` chunks), or the cursor given was taken from another run."""


class RunEventsGoneError(RemoteGraphError):
    """The server no longer holds the events a join needs.

    A run's events are kept only as long as the server keeps the run's
    stream (see the README's section on joining runs); a run started
    without a resumable stream has none to replay.
    """


class RunCursorError(RemoteGraphError, ValueError):
    """A cursor passed to ``join(after=...)`` is not one a run stream gave out."""


class RemoteRunError(RemoteGraphError):
    """Base of the exceptions rebuilt from a failed remote run.

    A node that raised ``Boom("x")`` on the server surfaces here as an
    instance of a class named ``Boom`` that derives from ``RemoteRunError``.
    When the remote type is a Python builtin (``ValueError``, ``KeyError``,
    ...) the rebuilt class derives from that builtin too, so ``except
    ValueError`` keeps working across the wire. The same type name gives the
    same class while the registry of rebuilt types has room (see
    ``Limits.max_error_types``); a rebuilt exception pickles, and unpickles as
    the class its type name gives there.

    Attributes:
        remote_type: The exception type name reported by the server.
    """

    remote_type: str = "RemoteRunError"

    def __reduce__(self) -> tuple[Any, ...]:
        if type(self) is RemoteRunError:
            return super().__reduce__()
        return (_rebuild, (self.remote_type, self.args), self.__dict__ or None)


# Rebuilt classes by remote type name. Bounded: a server naming a new type in
# every failure would otherwise grow it for as long as the process lives.
_CLASSES: dict[str, type[RemoteRunError]] = {}
_CLASSES_LOCK = threading.Lock()
DEFAULT_MAX_ERROR_TYPES = 1000
# What a type name may look like: a dotted Python name of sensible length.
_TYPE_NAME = re.compile(r"[A-Za-z_][\w.]{0,199}")
_REPR = re.compile(r"^\s*([A-Za-z_][\w.]*)\((.*)\)\s*$", re.S)


def _builtin_base(short: str) -> type[BaseException] | None:
    """The builtin exception named ``short``, if a class can derive from it
    beside ``RemoteRunError`` and be built from one message."""
    base = getattr(builtins, short, None)
    if not (isinstance(base, type) and issubclass(base, Exception)) or issubclass(base, RemoteRunError):
        return None
    try:
        type("_Probe", (RemoteRunError, base), {})("probe")
    except TypeError:  # an incompatible layout, or more arguments needed (UnicodeDecodeError)
        return None
    return base


def _new_class(type_name: str) -> type[RemoteRunError]:
    short = type_name.rsplit(".", 1)[-1]
    base = _builtin_base(short)
    bases: tuple[type, ...] = (RemoteRunError, base) if base is not None else (RemoteRunError,)
    # ``__module__`` names a module that exists; pickling goes through
    # ``RemoteRunError.__reduce__``, never through a lookup of the class.
    return type(short, bases, {"remote_type": type_name, "__module__": __name__})


def _class_for(type_name: str, limit: int | None = DEFAULT_MAX_ERROR_TYPES) -> type[RemoteRunError]:
    """The class for ``type_name``, made and kept on first use.

    Raises:
        RemoteProtocolError: ``limit`` classes are kept already and this one
            is new. With ``limit=None`` (unpickling) a class is made and not kept.
    """
    with _CLASSES_LOCK:
        cls = _CLASSES.get(type_name)
        if cls is not None:
            return cls
        full = len(_CLASSES) >= (limit if limit is not None else DEFAULT_MAX_ERROR_TYPES)
        if full and limit is not None:
            raise RemoteProtocolError(
                f"the server reported an exception of a type not seen before ({type_name!r:.80}) after "
                f"{len(_CLASSES)} others; Limits.max_error_types ({limit}) bounds how many are kept"
            )
        cls = _new_class(type_name)
        if not full:
            _CLASSES[type_name] = cls
        return cls


def _rebuild(type_name: str, args: tuple[Any, ...]) -> RemoteRunError:
    """Unpickle a rebuilt exception: the class its type name gives here."""
    return _instance(_class_for(type_name, None), args)


def _instance(cls: type[RemoteRunError], args: tuple[Any, ...]) -> RemoteRunError:
    try:
        return cls(*args)
    except Exception:  # arguments the builtin base does not take: keep them as text
        return cls(", ".join(map(repr, args)))


def remote_exception(
    type_name: str | None, message: str, *, limit: int | None = DEFAULT_MAX_ERROR_TYPES
) -> RemoteRunError:
    """Build the exception a remote run failed with, from its type name and message.

    A name that is not a dotted Python name gives a plain ``RemoteRunError``
    whose ``remote_type`` holds it.

    Raises:
        RemoteProtocolError: The type is new and ``limit`` types are kept already.
    """
    if not type_name:
        return RemoteRunError(message)
    if _TYPE_NAME.fullmatch(type_name) is None:
        error = RemoteRunError(message)
        error.remote_type = type_name[:200]
        return error
    return _instance(_class_for(type_name, limit), (message,))


def exception_from_repr(text: str, *, limit: int | None = DEFAULT_MAX_ERROR_TYPES) -> RemoteRunError | None:
    """Parse ``repr(exc)`` as the server stores it (``Boom('kaboom')``).

    Returns ``None`` when ``text`` is not shaped like a repr, so the caller
    can fall back to the message the wire carried.

    Raises:
        RemoteProtocolError: The type is new and ``limit`` types are kept already.
    """
    match = _REPR.match(text)
    if match is None or _TYPE_NAME.fullmatch(match.group(1)) is None:
        return None
    type_name, raw_args = match.groups()
    try:
        args: Any = ast.literal_eval(f"({raw_args},)") if raw_args.strip() else ()
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        args = (raw_args,)
    cls = _class_for(type_name, limit)
    try:
        return cls(*args)
    except Exception:
        return cls(raw_args)
