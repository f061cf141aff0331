"""Clients that emulate a server without the v3 protocol on one that has it.

aegra and langgraph-api releases before the v3 protocol ignore a v3 run's
marker and stream the classic modes the run asks for. The embedded server does
the same for a run created without the marker: these clients remove it from
each run's creation, and change nothing else. Used by the ``classic-server``
conformance lanes and by ``bench/classic_v3.py``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph import RemoteGraph

__all__ = ["V3_MARKER", "ClientsWithoutV3", "without_v3"]

# The marker a v3 run is created with (``commands._V3_MARKER``), in the body's ``checkpoint``.
V3_MARKER = "__event_streaming_v2"


def without_v3(request: httpx.Request) -> httpx.Request:
    """A run's creation without the v3 marker: the server then streams the classic
    modes the run asks for, as a server without the v3 protocol (aegra) does."""
    if request.method != "POST" or not request.url.path.endswith("/runs/stream"):
        return request
    body = json.loads(request.content)
    if body.get("checkpoint", {}).pop(V3_MARKER, None) is None:
        return request
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    return httpx.Request(request.method, request.url, headers=headers, content=json.dumps(body).encode())


class _WithoutV3(httpx.BaseTransport):
    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(without_v3(request))

    def close(self) -> None:
        self._inner.close()


class _AsyncWithoutV3(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(without_v3(request))

    async def aclose(self) -> None:
        await self._inner.aclose()


class ClientsWithoutV3:
    """HTTP clients whose runs reach the server without the v3 marker: the embedded
    server then answers a v3 run as a server without the v3 protocol does."""

    def __init__(self, server_url: str) -> None:
        self.sync = httpx.Client(base_url=server_url, transport=_WithoutV3(), timeout=30)
        self.async_ = httpx.AsyncClient(base_url=server_url, transport=_AsyncWithoutV3(), timeout=30)

    def graph(self, name: str, **kwargs: Any) -> RemoteGraph:
        return RemoteGraph(
            name, sync_client=SyncLangGraphClient(self.sync), client=LangGraphClient(self.async_), **kwargs
        )
