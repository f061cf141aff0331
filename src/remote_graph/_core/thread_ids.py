"""Which thread ids can be sent to the server at all.

A thread id becomes a URL path segment (``/threads/{thread_id}/runs``).
Percent-quoting protects ``?``, ``#`` and spaces, but not ``.`` and ``..``:
URL normalization (httpx's included) removes them as dot segments, so
``/threads/../runs`` reaches the server as ``POST /runs``, which starts a run
on a new thread. The empty string leaves ``/threads//runs``. A ``/`` splits
the id over two segments. Each of these is refused before anything is sent.
Anything else is left to the server to judge.
"""

from __future__ import annotations

from uuid import UUID

__all__ = ["check_thread_id"]

_DOT_SEGMENTS = frozenset({".", ".."})


def check_thread_id(value: object, name: str = "configurable.thread_id") -> str:
    """Return ``value`` as the thread id to send, or raise naming ``name``.

    Raises:
        TypeError: ``value`` is not a ``str`` or a ``UUID``.
        ValueError: ``value`` is empty, ``.`` or ``..``, or contains ``/``.
    """
    if isinstance(value, UUID):
        return str(value)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or UUID, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} may not be empty")
    if value in _DOT_SEGMENTS:
        raise ValueError(f"{name} may not be {value!r}: URL normalization would drop it from the request path")
    if "/" in value:
        raise ValueError(f"{name} may not contain '/': {value!r}")
    return value
