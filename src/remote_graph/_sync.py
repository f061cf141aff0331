"""The sync I/O shell: carries out the protocol's actions with an ``httpx.Client``.

It runs on the caller's thread and only when the caller pulls (iterating a
projection, reading ``output``); there is no background thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from remote_graph._core.actions import Done, Emit, Fail, OpenStream, Receive, Request, Response, Sleep
from remote_graph._core.protocol import RunProtocol
from remote_graph._shell_common import decode, request_args, stream_request, translate

logger = logging.getLogger("remote_graph")


class SyncRunSource(Iterator[dict[str, Any]]):
    """Iterator of stream parts for one remote run (the local ``graph_iter``)."""

    def __init__(self, http: httpx.Client, protocol: RunProtocol, headers: dict[str, str] | None = None) -> None:
        self._http = http
        self._protocol = protocol
        self._headers = headers or {}
        self._response: httpx.Response | None = None
        self._chunks: Iterator[bytes] | None = None
        self._finished = False
        self._perform: dict[type, Callable[[Any], Any]] = {Request: self._request, OpenStream: self._open, Receive: self._receive, Sleep: self._sleep}

    def __next__(self) -> dict[str, Any]:
        if self._finished:
            raise StopIteration
        reply: Any = None
        protocol = self._protocol
        try:
            while True:
                action = protocol.next_action(reply)
                reply = None
                if isinstance(action, Emit):
                    return action.part
                if isinstance(action, Done):
                    raise StopIteration
                if isinstance(action, Fail):
                    raise action.error
                reply = self._perform[type(action)](action)
        except BaseException:
            # Abandoning the stream (interrupted, or the connection failed) must not
            # leave the run going on the server.
            self.close()
            raise

    def close(self) -> None:
        """Stop early: cancel the run on the server if it is still going."""
        if self._finished:
            return
        cancel = self._protocol.cancel_request()
        self._finish()
        if cancel is not None:
            try:
                self._request(cancel)
            except Exception as exc:  # the stream is already closed; report, don't mask the caller's exit
                logger.warning("could not cancel remote run %s: %s", self._protocol.run_id, exc)

    # --- actions -------------------------------------------------------------

    def _request(self, action: Request) -> Response:
        try:
            r = self._http.request(**request_args(action, self._protocol.timeouts, self._headers))
        except httpx.HTTPError as exc:
            raise translate(exc, f"calling {action.method} {action.path}") from exc
        return Response(r.status_code, decode(r.content))

    def _open(self, action: OpenStream) -> Response:
        self._close_stream()
        request = stream_request(self._http, action, self._protocol.timeouts, self._headers)
        try:
            response = self._http.send(request, stream=True)
            if response.status_code != 200:
                body = decode(response.read())
                response.close()
                return Response(response.status_code, body)
        except httpx.HTTPError as exc:
            raise translate(exc, "opening the event stream") from exc
        self._response = response
        self._chunks = response.iter_raw()
        return Response(200, None)

    def _receive(self, action: Receive) -> bytes:
        assert self._chunks is not None
        try:
            return next(self._chunks, b"")
        except httpx.HTTPError as exc:
            raise translate(exc, "reading the event stream") from exc

    def _sleep(self, action: Sleep) -> None:
        time.sleep(action.seconds)

    def _close_stream(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            response.close()

    def _finish(self) -> None:
        self._finished = True
        self._close_stream()
