"""The sync I/O shell: carries out a ``RunDriver``'s actions with an ``httpx.Client``.

It runs on the caller's thread and only when the caller pulls (iterating a
projection, reading ``output``); there is no background thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import httpx

from remote_graph._core.actions import Broken, IOAction, OpenStream, Receive, Request, Response, Timeouts
from remote_graph._core.convert import Part
from remote_graph._core.run import RunDriver
from remote_graph._private import gather_chunked_reads
from remote_graph._shell_common import (
    broken,
    closed_client,
    is_event_stream,
    request_args,
    response_of,
    stream_request,
    stream_response,
)

logger = logging.getLogger("remote_graph")

T = TypeVar("T")
Item = TypeVar("Item")
# A conversation that also hands out items: its requests get their answers, its items ``None``.
ItemTalk = Generator[Request | Item, Response | Broken | None, None]


class SyncRequests:
    """Carries out REST ``Request``s with an ``httpx.Client``, bounded by ``timeouts``."""

    # ``_aio.AsyncRequests`` is this class again with ``await``: the conversations
    # they run are written once (``_core``), and what stays twice is what sync and
    # async syntax force.

    def __init__(self, http: httpx.Client, timeouts: Timeouts, headers: dict[str, str] | None = None) -> None:
        self._http = http
        self._timeouts = timeouts
        self._headers = headers or {}

    def request(self, action: Request) -> Response | Broken:
        if (closed := closed_client(self._http)) is not None:
            return closed
        try:
            r = self._http.request(**request_args(action, self._timeouts, self._headers))
        except httpx.HTTPError as exc:
            return broken(exc)
        return response_of(r)

    def run(self, conversation: Generator[Request, Response | Broken, T]) -> T:
        """Run a conversation of requests (``_core.threads``) to its result."""
        try:
            action = next(conversation)
            while True:
                action = conversation.send(self.request(action))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def items(self, conversation: ItemTalk[Item]) -> Iterator[Item]:
        """Run a conversation that also hands out items (``ThreadCalls.history``), yielding them."""
        reply: Response | Broken | None = None
        while True:
            try:
                step = conversation.send(reply)
            except StopIteration:
                return
            if isinstance(step, Request):
                reply = self.request(step)
            else:
                reply = None
                yield step


class SyncRunSource(Iterator[Part]):
    """Iterator of stream parts for one remote run (the local ``graph_iter``)."""

    def __init__(
        self, http: httpx.Client, driver: RunDriver, headers: dict[str, str] | None = None, *, owner: object = None
    ) -> None:
        self._http = http
        # What keeps ``http`` open: the graph's clients close it when collected,
        # and a run stream may outlive the graph that started it.
        self._owner = owner
        self._driver = driver
        self._headers = headers or {}
        self._requests = SyncRequests(http, driver.timeouts, self._headers)
        self._response: httpx.Response | None = None
        self._chunks: Iterator[bytes] | None = None
        self._closed = False

    def __next__(self) -> Part:
        if self._closed:
            raise StopIteration
        try:
            part = self._drive()
        except BaseException:
            # Whatever ended the pull early (the run's error, Ctrl-C, a bug),
            # the driver decides what the server must be told.
            self.close()
            raise
        if part is None:
            self.close()
            raise StopIteration
        return part

    @property
    def closed(self) -> bool:
        """Whether the run is over for this source (ended, failed or abandoned)."""
        return self._closed

    def close(self) -> None:
        """Stop early: the driver cancels the run on the server if it may still be going."""
        if self._closed:
            return
        self._closed = True
        self._close_stream()
        self._driver.abandon()
        self._drive()

    def _drive(self) -> Part | None:
        step = self._driver.step(None)
        while step is not None and not isinstance(step, dict):
            step = self._driver.step(self._perform(step))
        return step

    # --- actions -------------------------------------------------------------

    def _perform(self, action: IOAction) -> Any:
        if isinstance(action, Receive):
            return self._receive()
        if isinstance(action, Request):
            return self._requests.request(action)
        if isinstance(action, OpenStream):
            return self._open(action)
        time.sleep(action.seconds)
        return None

    def _open(self, action: OpenStream) -> Response | Broken:
        self._close_stream()
        if (closed := closed_client(self._http)) is not None:
            return closed
        request = stream_request(self._http, action, self._driver.timeouts, self._headers)
        try:
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            return broken(exc)
        self._response = response
        if is_event_stream(response):
            self._chunks = response.iter_raw()
            return stream_response(response, b"", batched=gather_chunked_reads(response))
        # Not the stream asked for: what it says instead (a body some
        # transports have already read, such as a mock's).
        self._chunks = response.iter_raw() if not response.is_stream_consumed else iter([response.content])
        head = self._receive()
        self._close_stream()
        return head if isinstance(head, Broken) else stream_response(response, head)

    def _receive(self) -> bytes | Broken:
        assert self._chunks is not None
        try:
            return next(self._chunks, b"")
        except httpx.HTTPError as exc:
            self._close_stream()
            return broken(exc)

    def _close_stream(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            response.close()
