"""The async I/O shell: carries out a ``RunDriver``'s actions with an ``httpx.AsyncClient``.

It does work only while a consumer awaits the next part (the run stream's
single-flight pump). The one task it starts is a close that nobody awaits
(``close_soon``): a consumer cancelled mid-read leaves it behind, as
upstream's cancelled pull task would, and so does a dropped run stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Generator
from typing import Any, TypeVar

import anyio
import httpx

from remote_graph._core.actions import Broken, IOAction, OpenStream, Receive, Request, Response, Sleep, Timeouts
from remote_graph._core.ahead import Lookahead
from remote_graph._core.convert import Part
from remote_graph._core.run import RunDriver
from remote_graph._private import gather_chunked_reads, read_held_bytes_first
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


class AsyncRequests:
    """Carries out REST ``Request``s with an ``httpx.AsyncClient``, bounded by ``timeouts``."""

    # ``_sync.SyncRequests`` with ``await``; see there why both stay.

    def __init__(self, http: httpx.AsyncClient, timeouts: Timeouts, headers: dict[str, str] | None = None) -> None:
        self._http = http
        self._timeouts = timeouts
        self._headers = headers or {}

    async def request(self, action: Request) -> Response | Broken:
        if (closed := closed_client(self._http)) is not None:
            return closed
        try:
            r = await self._http.request(**request_args(action, self._timeouts, self._headers))
        except httpx.HTTPError as exc:
            return broken(exc)
        return response_of(r)

    async def run(self, conversation: Generator[Request, Response | Broken, T]) -> T:
        """Run a conversation of requests (``_core.threads``) to its result."""
        try:
            action = next(conversation)
            while True:
                action = conversation.send(await self.request(action))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def items(
        self, conversation: Generator[Request | Item, Response | Broken | None, None]
    ) -> AsyncIterator[Item]:
        """Run a conversation that also hands out items (``ThreadCalls.history``), yielding them."""
        reply: Response | Broken | None = None
        while True:
            try:
                step = conversation.send(reply)
            except StopIteration:
                return
            if isinstance(step, Request):
                reply = await self.request(step)
            else:
                reply = None
                yield step


# Closes started in tasks of their own (``AsyncRunSource.close_soon``), until they end.
_closing: set[asyncio.Task[None]] = set()


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content


class AsyncRunSource(AsyncIterator[Part]):
    """Async iterator of stream parts for one remote run (the local ``graph_aiter``)."""

    def __init__(
        self, http: httpx.AsyncClient, driver: RunDriver, headers: dict[str, str] | None = None, *, owner: object = None
    ) -> None:
        self._http = http
        # What keeps ``http`` open: the graph's clients close it when collected,
        # and a run stream may outlive the graph that started it.
        self._owner = owner
        self._driver = driver
        self._headers = headers or {}
        self._requests = AsyncRequests(http, driver.timeouts, self._headers)
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._closed = False
        self._ahead = Lookahead()

    def take_ready(self) -> Part | None:
        """The run's next part if it needs no I/O (the rest of a read), else ``None``.

        The run stream's pump pushes such a part without starting a task for
        it (``_private.ReadyPartPump``); ``None`` leaves the pull to
        ``take_after_pause`` or ``__anext__``, which start from what the look
        found instead.
        """
        if self._closed:
            return None
        return self._ahead.ready(self._driver)

    async def take_after_pause(self) -> Part | None:
        """The run's next part if all the I/O it needs is the read pause and reads, done in the caller's task.

        Most pulls are only that: the pause after a read (``Timeouts.read_batch``)
        and the next read. The run stream's pump awaits them without starting a
        task (``_private.ReadyPartPump``). Neither can leave anything open if
        ``abort()`` closes this source meanwhile: a reply that comes back
        after that is dropped, not given to the driver, which the close has
        switched to its cleanup.

        Returns:
            The part, or ``None``: the next step needs more (a stream to open,
            a request, or the run's end; it is kept for ``__anext__``, which
            the pump calls in a task), or this source was closed meanwhile.

        Raises:
            BaseException: As ``__anext__``: the run's failure, after this
                source is closed; or the caller's cancellation, at once, with
                the close going on in a task of its own, as it would in the
                cancelled pull task of upstream's step.
        """
        if self._closed:
            return None
        try:
            step = self._ahead.next_step(self._driver)
            # Awaited here rather than through ``_perform``: this loop runs once
            # a read, and every frame between the consumer and the wait is
            # walked again when the wait ends.
            wait = self._read_or_pause(step)
            while wait is not None:
                reply = await wait
                if self._closed:
                    return None
                step = self._driver.step(reply)
                wait = self._read_or_pause(step)
        except asyncio.CancelledError:
            self.close_soon()
            raise
        except BaseException:
            await self.aclose()
            raise
        if isinstance(step, dict):
            return step
        self._ahead.hold(step)
        return None

    async def __anext__(self) -> Part:
        if self._closed:
            raise StopAsyncIteration
        try:
            part = await self._drive()
        except BaseException:
            # Cancelled, or the run failed: the driver decides what the server must be told.
            await self.aclose()
            raise
        if part is None:
            await self.aclose()
            raise StopAsyncIteration
        return part

    @property
    def closed(self) -> bool:
        """Whether the run is over for this source (ended, failed or abandoned)."""
        return self._closed

    async def aclose(self) -> None:
        """Stop early: the driver cancels the run on the server if it may still be going."""
        if self._closed:
            return
        self._closed = True
        await self._finish_close()

    def close_soon(self) -> None:
        """``aclose()`` in a task of its own, on the running loop; this source is closed from now on.

        For a caller cancelled mid-read, and for a run stream dropped unfinished.
        """
        if self._closed:
            return
        self._closed = True
        task = asyncio.ensure_future(self._finish_close())
        _closing.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(_closing.discard)

    async def _finish_close(self) -> None:
        # Shielded: a close often runs while the surrounding task is being cancelled.
        with anyio.CancelScope(shield=True):
            await self._close_stream()
            self._ahead.clear()
            self._driver.abandon()
            await self._drive()

    async def _drive(self) -> Part | None:
        step = self._ahead.next_step(self._driver)
        while step is not None and not isinstance(step, dict):
            step = self._driver.step(await self._perform(step))
        return step

    # --- actions -------------------------------------------------------------

    async def _perform(self, action: IOAction) -> Any:
        wait = self._read_or_pause(action)
        if wait is not None:
            return await wait
        if isinstance(action, Request):
            return await self._requests.request(action)
        assert isinstance(action, OpenStream)
        return await self._open(action)

    def _read_or_pause(self, action: IOAction | Part | None) -> Awaitable[bytes | Broken | None] | None:
        """The wait ``action`` asks for if it is a read or a pause (``Sleep``), else ``None``.

        Not a coroutine: ``take_after_pause`` awaits what it returns, with no
        frame of this method's between its caller and the wait.
        """
        if isinstance(action, Receive):
            return self._receive()
        if isinstance(action, Sleep):
            # asyncio's, not anyio's: the shell runs on asyncio only (its tasks
            # and cancellation are asyncio's), and ``anyio.sleep`` first looks
            # up the running backend and adds a coroutine of its own.
            return asyncio.sleep(action.seconds)
        return None

    async def _open(self, action: OpenStream) -> Response | Broken:
        await self._close_stream()
        if (closed := closed_client(self._http)) is not None:
            return closed
        request = stream_request(self._http, action, self._driver.timeouts, self._headers)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            return broken(exc)
        self._response = response
        if is_event_stream(response):
            read_held_bytes_first(response)
            self._chunks = response.aiter_raw()
            return stream_response(response, b"", batched=gather_chunked_reads(response))
        # Not the stream asked for: what it says instead (a body some
        # transports have already read, such as a mock's).
        self._chunks = response.aiter_raw() if not response.is_stream_consumed else _once(response.content)
        head = await self._receive()
        await self._close_stream()
        return head if isinstance(head, Broken) else stream_response(response, head)

    async def _receive(self) -> bytes | Broken:
        assert self._chunks is not None
        try:
            return await anext(self._chunks, b"")
        except httpx.HTTPError as exc:
            await self._close_stream()
            return broken(exc)

    async def _close_stream(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            with anyio.CancelScope(shield=True):
                await response.aclose()
