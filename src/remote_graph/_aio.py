"""The async I/O shell: carries out a ``RunDriver``'s actions with an ``httpx.AsyncClient``.

It does work only while a consumer awaits the next part (the run stream's
single-flight pump); there is no background task.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from remote_graph._core.actions import Broken, IOAction, OpenStream, Receive, Request, Response
from remote_graph._core.convert import Part
from remote_graph._core.run import RunDriver
from remote_graph._shell_common import broken, is_event_stream, request_args, response_of, stream_request, stream_response

logger = logging.getLogger("remote_graph")


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
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._closed = False

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
        # Shielded: aclose often runs while the surrounding task is being cancelled.
        with anyio.CancelScope(shield=True):
            await self._close_stream()
            self._driver.abandon()
            await self._drive()

    async def _drive(self) -> Part | None:
        step = self._driver.step(None)
        while step is not None and not isinstance(step, dict):
            step = self._driver.step(await self._perform(step))
        return step

    # --- actions -------------------------------------------------------------

    async def _perform(self, action: IOAction) -> Any:
        if isinstance(action, Receive):
            return await self._receive()
        if isinstance(action, Request):
            return await self._request(action)
        if isinstance(action, OpenStream):
            return await self._open(action)
        await anyio.sleep(action.seconds)
        return None

    async def _request(self, action: Request) -> Response | Broken:
        try:
            r = await self._http.request(**request_args(action, self._driver.timeouts, self._headers))
        except httpx.HTTPError as exc:
            return broken(exc)
        return response_of(r)

    async def _open(self, action: OpenStream) -> Response | Broken:
        await self._close_stream()
        request = stream_request(self._http, action, self._driver.timeouts, self._headers)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            return broken(exc)
        self._response = response
        self._chunks = response.aiter_raw()
        if is_event_stream(response):
            return stream_response(response, b"")
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
