"""The async shell's pull that needs only the read pause and reads (``AsyncRunSource.take_after_pause``).

A scripted driver stands in for ``RunDriver``, and an ``httpx.MockTransport``
for the server, so what the shell hands the driver after each action, and
what a close or a cancel during the pause leaves, are seen step by step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from remote_graph._aio import AsyncRunSource
from remote_graph._core.actions import OpenStream, Receive, Request, Response, Sleep, Timeouts

pytestmark = pytest.mark.timeout(10)

PART_A = {"type": "custom", "ns": (), "data": "a"}
PART_B = {"type": "custom", "ns": (), "data": "b"}


class ScriptedDriver:
    """Answers each ``step`` with the next scripted step, and records the reply it was given."""

    timeouts = Timeouts()

    def __init__(self, *script: Any) -> None:
        self._script = list(script)
        self.replies: list[Any] = []
        self.abandoned = False

    def step(self, reply: Any = None) -> Any:
        self.replies.append(reply)
        if self.abandoned or not self._script:
            return None
        return self._script.pop(0)

    def abandon(self) -> None:
        self.abandoned = True


def _client(*chunks: bytes) -> httpx.AsyncClient:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://server")


async def _opened(driver: ScriptedDriver, http: httpx.AsyncClient) -> AsyncRunSource:
    """A source whose stream is open and whose first part (``PART_A``) was pulled."""
    source = AsyncRunSource(http, driver)  # type: ignore[arg-type]
    assert await source.__anext__() == PART_A
    return source


async def test_the_pause_and_the_reads_feed_the_driver_in_order_and_the_part_comes_back() -> None:
    async with _client(b"one", b"two") as http:
        driver = ScriptedDriver(
            OpenStream("/stream"), PART_A, Sleep(0.01), Receive(), Sleep(0.0), Receive(), PART_B, Request("GET", "/x")
        )
        source = await _opened(driver, http)
        started = time.monotonic()
        assert await source.take_after_pause() == PART_B
        assert time.monotonic() - started >= 0.01
        # After the part: the step that went on, then nothing for each pause
        # and the bytes for each read.
        assert driver.replies[2:] == [None, None, b"one", None, b"two"]
        assert isinstance(driver.replies[1], Response)
        # A request is more than a pause and a read: handed back, and held for the next pull.
        assert await source.take_after_pause() is None
        assert driver.replies[-1] is None
        assert await source.take_after_pause() is None  # held still: the driver is not stepped again
        assert len(driver.replies) == 8
        assert not source.closed
        await source.aclose()


async def test_a_close_during_the_pause_drops_what_the_pause_brings_back() -> None:
    async with _client(b"one") as http:
        driver = ScriptedDriver(OpenStream("/stream"), PART_A, Sleep(0.2), Receive(), PART_B)
        source = await _opened(driver, http)
        seen = len(driver.replies)
        pull = asyncio.ensure_future(source.take_after_pause())
        await asyncio.sleep(0.02)
        await source.aclose()
        assert await asyncio.wait_for(pull, 1.0) is None
        assert driver.abandoned
        # The step that gave the pause, then the cleanup's: the pause's own
        # reply, which came after the close, was never handed over.
        assert driver.replies[seen:] == [None, None]
        await asyncio.sleep(0.3)
        assert driver.replies[seen:] == [None, None]


async def test_a_caller_cancelled_during_the_pause_gets_the_cancel_at_once_and_the_close_goes_on() -> None:
    async with _client(b"one") as http:
        driver = ScriptedDriver(OpenStream("/stream"), PART_A, Sleep(5.0), Receive(), PART_B)
        source = await _opened(driver, http)
        pull = asyncio.ensure_future(source.take_after_pause())
        await asyncio.sleep(0.02)
        started = time.monotonic()
        pull.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pull
        assert time.monotonic() - started < 0.5
        assert source.closed
        for _ in range(50):  # the close runs in a task of its own
            if driver.abandoned:
                break
            await asyncio.sleep(0.01)
        assert driver.abandoned
