"""Managing runs that outlive their caller: read, list, wait for and cancel them, as request conversations.

Each function is a conversation of ``Request``s (the shells' ``SyncRequests.run``
/ ``AsyncRequests.run`` carry it out) returning run records, the bodies of
``GET /threads/{id}/runs/{run_id}``. ``RunRecord`` is what a handle shows of one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from remote_graph._core.actions import Broken, Request, Response, cancel_request
from remote_graph._core.failure import answer_error
from remote_graph._core.join import Kind, run_kind
from remote_graph._core.state import RunStatus, status_from_server
from remote_graph.errors import RemoteConnectionError, RemoteTimeoutError, RunNotFoundError

__all__ = ["RunRecord", "cancel_run", "list_runs", "read_run", "wait_run"]

Requests = Generator[Request, Response | Broken, Any]

# The server's statuses of a run that has not ended.
_ACTIVE = ("pending", "running")


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What the server records of one run.

    Attributes:
        run_id: The run's id.
        server_status: The server's own word: ``pending``, ``running``,
            ``success``, ``error``, ``timeout`` or ``interrupted`` (cancelled).
        kind: ``"v3"`` for a run started for a v3 run stream, ``"classic"`` for
            one started for ``stream_mode`` chunks, ``None`` when the record
            keeps no run arguments (aegra's).
        stream_mode: The stream modes the server streams for it (none known
            when it keeps no run arguments).
        subgraphs: Whether it streams subgraphs' chunks (a classic run).
        created_at: When the server created it (ISO 8601), if it says.
        paused: The run ended paused for input: its last checkpoint has
            interrupts waiting (the server records such a run as a success).
    """

    run_id: str
    server_status: str
    kind: Kind | None
    stream_mode: tuple[str, ...]
    subgraphs: bool
    created_at: str | None
    paused: bool = False

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self.server_status not in _ACTIVE

    @property
    def status(self) -> RunStatus:
        """The status as a ``RunStatus``: ``running`` until it ended, then how:
        a run that paused for input is ``interrupted``, as on a run stream that
        joined it (the server records it as a success)."""
        if not self.done:
            return RunStatus.RUNNING
        status = status_from_server({"status": self.server_status}, raised_interrupts=self.paused)
        assert status is not None
        return status

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> RunRecord:
        kwargs = body.get("kwargs")
        kwargs = kwargs if isinstance(kwargs, Mapping) else {}
        modes = kwargs.get("stream_mode")
        modes = [modes] if isinstance(modes, str) else list(modes or ())
        created = body.get("created_at")
        return cls(
            run_id=str(body.get("run_id")),
            server_status=str(body.get("status")),
            kind=run_kind(body),
            stream_mode=tuple(str(mode) for mode in modes),
            subgraphs=bool(kwargs.get("subgraphs")),
            created_at=created if isinstance(created, str) else None,
        )


def _run_path(thread_id: str, run_id: str) -> str:
    return f"/threads/{quote(thread_id, safe='')}/runs/{quote(run_id, safe='')}"


def _sent(reply: Response | Broken, doing: str) -> Response:
    if isinstance(reply, Broken):
        error_type = RemoteTimeoutError if reply.timed_out else RemoteConnectionError
        error = error_type(f"{'timed out' if reply.timed_out else 'connection failed'} {doing}: {reply.detail}")
        error.__cause__ = reply.error
        raise error
    return reply


def read_run(thread_id: str, run_id: str, *, shown_thread: str | None = None) -> Requests:
    """The run's record.

    Raises:
        RunNotFoundError: The thread has no such run (or these credentials may not see it).
    """
    doing = f"reading the record of run {run_id}"
    reply = _sent((yield Request("GET", _run_path(thread_id, run_id))), f"while {doing}")
    if reply.status == 404:
        raise RunNotFoundError(
            f"run {run_id} is not on thread {shown_thread or thread_id}: the id is unknown there, the run was "
            "deleted, or these credentials may not see it",
            run_id=run_id,
        )
    if reply.status != 200 or not isinstance(reply.body, Mapping):
        raise answer_error(reply, doing)
    return (yield from _pauses(thread_id, [RunRecord.of(reply.body)]))[0]


# The thread's newest checkpoints read for a run's last one where history cannot
# be filtered by run: a paused run is most often the thread's newest.
_UNFILTERED_PAGE = 20


def _pauses(thread_id: str, records: list[RunRecord]) -> Generator[Request, Response | Broken, list[RunRecord]]:
    """``records``, with each success that ended paused for input told apart.

    langgraph-api calls a run that paused ``success``, aegra ``interrupted``
    (as a cancelled one); the run's last checkpoint (its metadata names the
    run) says whether interrupts wait there. aegra filters no history by
    metadata (a 500), so there the run's checkpoint is looked for in the
    thread's newest ones. The read is a hint: a failed one leaves the record as
    the server gave it.
    """
    out = []
    path = f"/threads/{quote(thread_id, safe='')}/history"
    for record in records:
        # langgraph-api's ``interrupted`` is a cancel; a record that keeps no run
        # arguments (``kind`` unknown) is aegra's, whose ``interrupted`` may be a pause.
        if record.server_status == "success" or record.server_status == "interrupted" and record.kind is None:
            reply = yield Request("POST", path, json={"limit": 1, "metadata": {"run_id": record.run_id}})
            checkpoints = _checkpoints(reply)
            if checkpoints is None and isinstance(reply, Response):
                # The server answered but would not filter (aegra: 500).
                reply = yield Request("POST", path, json={"limit": _UNFILTERED_PAGE})
                checkpoints = [c for c in _checkpoints(reply) or () if _run_of(c) == record.run_id]
            if checkpoints and _waits(checkpoints[0]):
                record = replace(record, paused=True)
        out.append(record)
    return out


def _checkpoints(reply: Response | Broken) -> list[Mapping[str, Any]] | None:
    """A history read's checkpoints, newest first, or ``None`` when it failed."""
    if not (isinstance(reply, Response) and reply.status == 200 and isinstance(reply.body, list)):
        return None
    return [checkpoint for checkpoint in reply.body if isinstance(checkpoint, Mapping)]


def _run_of(checkpoint: Mapping[str, Any]) -> object:
    metadata = checkpoint.get("metadata")
    return metadata.get("run_id") if isinstance(metadata, Mapping) else None


def _waits(checkpoint: Mapping[str, Any]) -> bool:
    """Whether interrupts wait at a checkpoint (a REST state: its tasks' or its own)."""
    tasks = checkpoint.get("tasks") or ()
    return bool(checkpoint.get("interrupts")) or any(
        isinstance(task, Mapping) and task.get("interrupts") for task in tasks
    )


def list_runs(thread_id: str, *, limit: int, offset: int, status: str | None) -> Requests:
    """The thread's runs, newest first (an unknown thread has none)."""
    params: dict[str, Any] = {"limit": str(limit), "offset": str(offset)}
    if status is not None:
        params["status"] = status
    reply = _sent(
        (yield Request("GET", f"/threads/{quote(thread_id, safe='')}/runs", params=params)),
        "while listing the thread's runs",
    )
    if reply.status == 404:
        return []
    if reply.status != 200 or not isinstance(reply.body, list):
        raise answer_error(reply, "listing the thread's runs", "a JSON list")
    return (yield from _pauses(thread_id, [RunRecord.of(run) for run in reply.body if isinstance(run, Mapping)]))


def cancel_run(thread_id: str, run_id: str, *, shown_thread: str | None = None) -> Requests:
    """Cancel the run if it has not ended (``action=interrupt``: it stops where it is), and read its record."""
    path = _run_path(thread_id, run_id)
    reply = _sent(
        (yield cancel_request(path)),
        f"while cancelling run {run_id}",
    )
    # 404 or 409: nothing to cancel (the run ended, or never was); the record tells which.
    if reply.status not in (200, 202, 204, 404, 409):
        raise answer_error(reply, f"cancelling run {run_id}")
    return (yield from read_run(thread_id, run_id, shown_thread=shown_thread))


def wait_run(
    thread_id: str,
    run_id: str,
    *,
    timeout: float,
    shown_thread: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Requests:
    """Wait until the run ends, at most ``timeout`` seconds, and return its record.

    Each wait is the server's own (``GET .../join`` answers when the run
    ends), bounded by the time left; a wait cut short is asked again.

    Raises:
        RemoteTimeoutError: The run was still going after ``timeout`` seconds.
    """
    deadline = clock() + timeout
    record = yield from read_run(thread_id, run_id, shown_thread=shown_thread)
    while not record.done:
        left = deadline - clock()
        if left <= 0:
            raise RemoteTimeoutError(f"run {run_id} was still {record.server_status} after {timeout:g}s")
        reply = yield Request("GET", f"{_run_path(thread_id, run_id)}/join", timeout=left)
        if isinstance(reply, Broken) and not reply.timed_out:
            _sent(reply, f"while waiting for run {run_id}")
        if isinstance(reply, Response) and reply.status >= 400 and reply.status not in (404, 408, 502, 503, 504):
            raise answer_error(reply, f"waiting for run {run_id}")
        record = yield from read_run(thread_id, run_id, shown_thread=shown_thread)
    return record
