"""The SDK clients one ``RemoteGraph`` talks through.

An ``httpx.AsyncClient`` keeps its pooled connections bound to the event loop
that opened them, so a client shared by two ``asyncio.run()`` calls fails the
second with ``RuntimeError: Event loop is closed``. Each running event loop
therefore gets its own async client, and the one sync client serves every
thread (``httpx.Client`` is thread-safe).

Clients built here are bounded by the graph's ``Timeouts`` (connect, write
and pool waits by ``request``, each read by ``read``), so the SDK's default
300 s read timeout never applies. Their pool holds up to ``MAX_CONNECTIONS``
connections (httpx's default is 100): a run's event stream holds one for as
long as the run goes, so a pool of 100 made the 101st concurrent run wait for
another to end, and fail once ``request`` had passed.

Credentials are checked before any client is built: a header value or an API
key HTTP cannot carry fails with a ``ValueError`` naming it, not quoting it.
Without an ``api_key``, the key comes from the environment as the SDK's
``get_client`` reads it (``LANGGRAPH_API_KEY``, then ``LANGSMITH_API_KEY``,
then ``LANGCHAIN_API_KEY``). Every client, built here or passed in, gets the
answer check of ``_shell_common.check_answers``: redirects are not followed,
and one the SDK would take for data raises a ``RemoteProtocolError``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from remote_graph._core.actions import Timeouts
from remote_graph._redact import check_api_key, check_headers, credential_forms, guard_logs, redact_url, secrets_of
from remote_graph._shell_common import acheck_answers, check_answers

__all__ = [
    "API_KEY_VARIABLES",
    "MAX_CONNECTIONS",
    "ClientSettings",
    "SdkClients",
    "api_key_from_environment",
    "check_url",
    "http_timeout",
]

logger = logging.getLogger("remote_graph")

_NO_ASYNC = "Async client is not initialized: please provide `url` or `client` when initializing `RemoteGraph`."
_NO_SYNC = "Sync client is not initialized: please provide `url` or `sync_client` when initializing `RemoteGraph`."


def check_url(url: object) -> str:
    """Return ``url`` if it is an absolute ``http(s)`` URL, or raise ``ValueError`` naming it.

    httpx would otherwise accept it and fail each request with
    ``UnsupportedProtocol`` (``"localhost:2024"``, ``"ftp://..."``).
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    shown = redact_url(repr(url))  # a password in the URL's userinfo is a credential
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"url is not a valid URL: {shown} ({redact_url(str(exc))})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"url must be an absolute http:// or https:// URL, got {shown}")
    return url


# Where the SDK's ``get_client`` / ``get_sync_client`` look for an API key, in order.
API_KEY_VARIABLES = ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")


def api_key_from_environment() -> str | None:
    """The API key the SDK's clients would read from the environment, or ``None``.

    The first of ``API_KEY_VARIABLES`` that is set and not empty, stripped of
    whitespace and quotes as the SDK strips it.

    Raises:
        ValueError: The key found cannot be sent as a header; the message
            names the variable, not the key.
    """
    for name in API_KEY_VARIABLES:
        value = os.environ.get(name)
        if value:
            key = value.strip().strip('"').strip("'")
            try:
                check_api_key(key)
            except ValueError as exc:
                raise ValueError(f"${name}: {exc}") from None
            return key or None
    return None


# Connections one built client opens at most: every run in flight holds one for its
# stream, and a start or a REST call takes another for a moment. Past this, a request
# waits for one to come free, for up to ``Timeouts.request``.
MAX_CONNECTIONS = 1000
# Idle connections kept for reuse; the rest are closed once their stream ends.
MAX_KEEPALIVE = 100
_POOL = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE)
# The SDK's own transports retry a failed connect this many times.
_CONNECT_RETRIES = 5


def http_timeout(timeouts: Timeouts) -> tuple[float, float, float, float]:
    """The client-wide timeout as ``(connect, read, write, pool)``.

    ``request`` bounds connecting, writing and waiting for a pooled
    connection; ``read`` bounds each read, which waits either for a REST
    answer or between two chunks of an event stream (heartbeats come every
    5 s), so it is the one bound that covers both.
    """
    return (timeouts.request, timeouts.read, timeouts.request, timeouts.request)


async def _close_with_loop(client: LangGraphClient, loop: asyncio.AbstractEventLoop) -> AsyncGenerator[None, None]:
    """Wait, suspended, for ``loop`` to shut down; then close ``client`` on it."""
    # Weak, so a closer never keeps its loop (the key of its entry) alive.
    own_loop = weakref.ref(loop)
    del loop
    try:
        yield
    finally:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        # Finished off its loop (the loop closed without shutting down its async
        # generators), nothing can be awaited: dropping the client lets its
        # transports close their sockets when collected.
        if running is not None and running is own_loop():
            try:
                await client.aclose()
            except Exception as exc:  # best effort; the loop is going away
                logger.debug("closing an async SDK client failed: %r", exc)


def _start(closer: AsyncGenerator[None, None]) -> None:
    # Starting an async generator on the loop's thread hands it to the running
    # loop's first-iteration hook; asyncio.run() and Runner.close() then aclose()
    # it (shutdown_asyncgens) before closing the loop, and a collected one is
    # aclosed on its loop too. It only yields, so one send reaches the yield.
    step = closer.asend(None)
    try:
        step.send(None)
    except StopIteration:
        return
    raise RuntimeError("the client closer did not suspend at its first step")


def _finish(closer: AsyncGenerator[None, None]) -> None:
    """Run ``closer`` to its end without a loop (its loop is closed)."""
    try:
        closer.aclose().send(None)
    except StopIteration:
        pass
    except RuntimeError:  # already finished, or running
        pass


@dataclass
class _LoopClient:
    client: LangGraphClient
    # Set for the clients built here; a caller's own client is never closed.
    closer: AsyncGenerator[None, None] | None


def _finish_closed(loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient]) -> None:
    """Finish the closers of closed loops, so none is finalized on a closed loop."""
    for loop, entry in list(loops.items()):
        if loop.is_closed() and entry.closer is not None:
            _finish(entry.closer)


@dataclass(frozen=True)
class ClientSettings:
    """What ``SdkClients`` builds its clients from (``RemoteGraph``'s constructor arguments).

    Attributes:
        url: The server's URL.
        api_key: API key for the clients built from ``url``; ``None`` reads
            it from the environment (``api_key_from_environment``), ``""``
            sends none.
        headers: Extra headers for the clients built from ``url``.
        client: The caller's async client.
        sync_client: The caller's sync client.
        timeouts: Bounds for the clients built here.

    Credentials are left out of the repr.
    """

    url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    client: LangGraphClient | None = None
    sync_client: SyncLangGraphClient | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)


class SdkClients:
    """The sync and async SDK clients of one ``RemoteGraph``.

    The sync client is the caller's ``sync_client``, or one built from
    ``url``. Each running event loop gets its own async client: the caller's
    ``client`` on the first loop that asks; on every other loop, a client
    built from ``url`` or, without a ``url``, from the caller's client's
    ``base_url`` and ``headers``. Built clients are bounded by
    ``settings.timeouts``; the caller's keep their own settings.

    A built async client is closed on its loop when the loop shuts down its
    async generators (``asyncio.run()`` and ``asyncio.Runner`` do). The
    caller's own clients are never closed here.
    """

    def __init__(self, settings: ClientSettings | None = None) -> None:
        self.settings = settings = settings if settings is not None else ClientSettings()
        if settings.url is not None:
            check_url(settings.url)
        # Checked before any client exists: httpx and h11 would quote a bad value in their errors.
        check_headers(settings.headers)
        check_api_key(settings.api_key)
        for given, name in ((settings.client, "client"), (settings.sync_client, "sync_client")):
            if given is not None:
                check_headers(dict(given.http.client.headers.items()), f"{name}'s headers")
        self._api_key = settings.api_key if settings.api_key is not None else api_key_from_environment()
        guard_logs(self._credentials())
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = weakref.WeakKeyDictionary()
        # A client no loop has used yet: the caller's, or one built outside any loop.
        self._spare: LangGraphClient | None = settings.client
        self._spare_owned = False
        self._sync = settings.sync_client
        self._headers: httpx.Headers | None = None  # the built clients' headers
        if settings.url is not None:
            # Built now, so bad headers fail at construction, as upstream's do. The SDK
            # makes the headers (the API key, its user agent); its transport is replaced,
            # for one whose pool has room for every run in flight.
            template = get_sync_client(url=settings.url, api_key=self._api_key or None, headers=settings.headers)
            self._headers = template.http.client.headers
            template.http.client.close()
        if self._sync is None and settings.url is not None:
            self._sync = SyncLangGraphClient(
                httpx.Client(
                    base_url=settings.url,
                    headers=self._headers,
                    timeout=httpx.Timeout(http_timeout(settings.timeouts)),
                    transport=httpx.HTTPTransport(retries=_CONNECT_RETRIES, limits=_POOL),
                )
            )
        if self._sync is not None:
            check_answers(self._sync.http.client)
        if settings.client is not None:
            acheck_answers(settings.client.http.client)
        weakref.finalize(self, _finish_closed, self._loops)
        if settings.sync_client is None and self._sync is not None:
            # Built here, so closed here: its pooled sockets would otherwise stay
            # open until the collector finds them (a ResourceWarning each).
            weakref.finalize(self, self._sync.http.client.close)

    def _credentials(self) -> set[str]:
        """Every credential these clients send, in the forms a message may quote."""
        settings = self.settings
        found = set(secrets_of(settings.headers))
        if self._api_key:
            found |= credential_forms(self._api_key)
        for given in (settings.client, settings.sync_client):
            if given is not None:
                found |= secrets_of(given.http.client.headers.multi_items())
        password = httpx.URL(settings.url).password if settings.url is not None else None
        if password:
            found |= credential_forms(password)
        return found

    def derive(self, **changes: Any) -> SdkClients:
        """A new set from these settings with ``changes`` applied; no client is shared."""
        return SdkClients(replace(self.settings, **changes))

    @property
    def has_async(self) -> bool:
        """Whether an async client can be had (there is a ``url`` or a ``client``)."""
        return self.settings.url is not None or self.settings.client is not None

    def sync_client(self) -> SyncLangGraphClient:
        """The sync client; raises ``ValueError`` when there is neither ``url`` nor ``sync_client``."""
        if self._sync is None:
            raise ValueError(_NO_SYNC)
        return self._sync

    def async_client(self) -> LangGraphClient:
        """The async client of the running event loop.

        Outside a running loop: the client of the most recent loop still open,
        else the one the next loop will use.

        Raises:
            ValueError: There is neither ``url`` nor ``client``.
        """
        if not self.has_async:
            raise ValueError(_NO_ASYNC)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._current()
        with self._lock:
            entry = self._loops.get(loop)
            if entry is None:
                self._forget_closed_loops()
                entry = self._new_entry(loop)
                self._loops[loop] = entry
            return entry.client

    def _new_entry(self, loop: asyncio.AbstractEventLoop) -> _LoopClient:
        if self._spare is not None:
            client, owned = self._spare, self._spare_owned
            self._spare, self._spare_owned = None, False
        else:
            client, owned = self._build_async(), True
        closer = None
        if owned:
            closer = _close_with_loop(client, loop)
            _start(closer)
        return _LoopClient(client, closer)

    def _current(self) -> LangGraphClient:
        with self._lock:
            for loop, entry in reversed(list(self._loops.items())):
                if not loop.is_closed():
                    return entry.client
            if self._spare is None:
                self._spare, self._spare_owned = self._build_async(), True
            return self._spare

    def _forget_closed_loops(self) -> None:
        for loop in [loop for loop in self._loops if loop.is_closed()]:
            entry = self._loops.pop(loop)
            if entry.closer is not None:
                _finish(entry.closer)

    def _build_async(self) -> LangGraphClient:
        settings = self.settings
        if settings.url is not None:
            base_url: httpx.URL | str = settings.url
            headers = self._headers
        else:
            assert settings.client is not None
            template = settings.client.http.client
            base_url, headers = template.base_url, template.headers
        client = LangGraphClient(
            httpx.AsyncClient(
                base_url=base_url,
                headers=headers,
                timeout=httpx.Timeout(http_timeout(settings.timeouts)),
                transport=httpx.AsyncHTTPTransport(retries=_CONNECT_RETRIES, limits=_POOL),
            )
        )
        acheck_answers(client.http.client)
        return client
