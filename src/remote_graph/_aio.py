"""The async I/O shell: carries out the protocol's actions with an ``httpx.AsyncClient``.

It does work only while a consumer awaits the next part (the run stream's
single-flight pump); there is no background task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, AsyncIterator
from typing import Any

import anyio
import httpx

from remote_graph._core.actions import Done, Emit, Fail, OpenStream, Receive, Request, Response, Sleep
from remote_graph._core.protocol import RunProtocol
from remote_graph._shell_common import decode, request_args, stream_request, translate

logger = logging.getLogger("remote_graph")


class AsyncRunSource(AsyncIterator[dict[str, Any]]):
    """Async iterator of stream parts for one remote run (the local ``graph_aiter``)."""

    def __init__(self, http: httpx.AsyncClient, protocol: RunProtocol, headers: dict[str, str] | None = None) -> None:
        self._http = http
        self._protocol = protocol
        self._headers = headers or {}
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._finished = False
        self._perform: dict[type, Callable[[Any], Any]] = {Request: self._request, OpenStream: self._open, Receive: self._receive, Sleep: self._sleep}

    async def __anext__(self) -> dict[str, Any]:
        if self._finished:
            raise StopAsyncIteration
        reply: Any = None
        protocol = self._protocol
        try:
            while True:
                action = protocol.next_action(reply)
                reply = None
                if isinstance(action, Emit):
                    return action.part
                if isinstance(action, Done):
                    raise StopAsyncIteration
                if isinstance(action, Fail):
                    raise action.error
                reply = await self._perform[type(action)](action)
        except BaseException:
            # Abandoning the stream (cancelled, or the connection failed) must not
            # leave the run going on the server.
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop early: cancel the run on the server if it is still going."""
        if self._finished:
            return
        cancel = self._protocol.cancel_request()
        await self._finish()
        if cancel is not None:
            try:
                # Shielded: aclose often runs while the surrounding task is being cancelled.
                with anyio.CancelScope(shield=True):
                    await self._request(cancel)
            except Exception as exc:
                logger.warning("could not cancel remote run %s: %s", self._protocol.run_id, exc)

    # --- actions -------------------------------------------------------------

    async def _request(self, action: Request) -> Response:
        try:
            r = await self._http.request(**request_args(action, self._protocol.timeouts, self._headers))
        except httpx.HTTPError as exc:
            raise translate(exc, f"calling {action.method} {action.path}") from exc
        return Response(r.status_code, decode(r.content))

    async def _open(self, action: OpenStream) -> Response:
        await self._close_stream()
        request = stream_request(self._http, action, self._protocol.timeouts, self._headers)
        try:
            response = await self._http.send(request, stream=True)
            if response.status_code != 200:
                body = decode(await response.aread())
                await response.aclose()
                return Response(response.status_code, body)
        except httpx.HTTPError as exc:
            raise translate(exc, "opening the event stream") from exc
        self._response = response
        self._chunks = response.aiter_raw()
        return Response(200, None)

    async def _receive(self, action: Receive) -> bytes:
        assert self._chunks is not None
        try:
            return await anext(self._chunks, b"")
        except httpx.HTTPError as exc:
            raise translate(exc, "reading the event stream") from exc

    async def _sleep(self, action: Sleep) -> None:
        await anyio.sleep(action.seconds)

    async def _close_stream(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    async def _finish(self) -> None:
        self._finished = True
        await self._close_stream()
