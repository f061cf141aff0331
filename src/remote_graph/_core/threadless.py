"""No thread left behind: the server thread of a call made without a thread id.

A call with no ``thread_id`` runs on a thread the client names for it (a
fresh UUID) and that nobody else knows. A local graph with no thread keeps
nothing once the call is over, so the run's cleanup deletes that thread once
the run has ended, whatever the ending (finished, failed, cancelled or
abandoned), after the verdict is read: a cut stream still resumes on the
thread while the run goes on. A run paused by an interrupt keeps its thread,
which its run stream names (``thread_id``) so that it can be resumed.

The server's own ``on_completion="delete"`` belongs to its stateless runs
(``POST /runs/stream``): their thread goes when the run ends, with the run
record the client reads its verdict from, so a stream cut near the end could
no longer learn how the run ended.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from remote_graph._core.actions import Broken, Request, Response

__all__ = ["forget_thread"]

logger = logging.getLogger("remote_graph")


def forget_thread(thread_path: str) -> Generator[Request, Response | Broken, None]:
    """Delete the call's thread (and, with it, its runs and checkpoints).

    A failure is logged, not raised: the call's outcome is already decided.
    """
    reply: Any = yield Request("DELETE", thread_path)
    if isinstance(reply, Broken):
        logger.warning("could not delete the call's thread %s: %s", thread_path, reply.detail)
    elif not (200 <= reply.status < 300 or reply.status == 404):
        logger.warning("could not delete the call's thread %s: the server answered %s", thread_path, reply.status)
