"""Remote-aware stream transformers.

``RemoteMessagesTransformer`` is langgraph's own ``MessagesTransformer`` plus
one rule. The wire's ``messages`` events carry no metadata; the client names a
message's node at its start when the thread's state tells it unambiguously
(``_core/steps.py``), and otherwise, when the node's ``updates`` event (which
carries the finished message and its id) arrives, the handle's ``node`` is
filled in.

``WireChannelsTransformer`` gives the channels of the deployed module's own
transformers (``custom:<name>`` on the wire) their projections,
``run.extensions[name]``, without the client being told they exist.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.stream import StreamChannel
from langgraph.stream.transformers import MessagesTransformer

from remote_graph._private import (
    MuxAwareTransformer,
    ProtocolEvent,
    StreamMux,
    attach_projection,
    message_stream_of_run,
    set_message_node,
)

__all__ = ["RemoteMessagesTransformer", "WireChannelsTransformer"]

_CUSTOM = "custom:"


def _message_ids(update: Any) -> list[str]:
    """Ids of the messages in one node's write: a message, a list, or a state dict's values."""
    if isinstance(update, BaseMessage):
        found: list[Any] = [update]
    elif isinstance(update, dict):
        found = []
        for value in update.values():
            found.extend(value if isinstance(value, list) else [value])
    elif isinstance(update, list):
        found = update
    else:
        return []
    return [m.id for m in found if isinstance(m, BaseMessage) and isinstance(m.id, str)]


class RemoteMessagesTransformer(MessagesTransformer):
    """``MessagesTransformer`` that learns each handle's node from ``updates``.

    The first update at the handle's namespace that holds its message names
    the node that wrote it: the node itself, or the ``@task`` it called (whose
    update comes before its caller's). That answer replaces the one guessed
    at the start, if any.
    """

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        # As a list, like the ``namespace`` of the events it is compared with.
        self._namespace = list(scope)
        self._nodeless: dict[str, Any] = {}

    def process(self, event: ProtocolEvent) -> bool:
        method = event["method"]
        params = event["params"]
        if method == "messages" and params["namespace"] == self._namespace:
            payload = params["data"][0]
            keep = super().process(event)
            if isinstance(payload, dict) and payload.get("event") == "message-start":
                # The handle just pushed is the newest one for this payload's id.
                message_id = payload.get("id")
                stream = message_stream_of_run(self, str(params["data"][1].get("run_id", "")))
                if stream is not None and isinstance(message_id, str):
                    self._nodeless[message_id] = stream
            return keep
        if method == "updates" and params["namespace"] == self._namespace and self._nodeless:
            data = params["data"]
            if isinstance(data, dict):
                for node, update in data.items():
                    for message_id in _message_ids(update):
                        stream = self._nodeless.pop(message_id, None)
                        if stream is not None:
                            set_message_node(stream, node)
            return True
        return super().process(event)

    def finalize(self) -> None:
        self._nodeless.clear()
        super().finalize()

    def fail(self, err: BaseException) -> None:
        self._nodeless.clear()
        super().fail(err)


class WireChannelsTransformer(MuxAwareTransformer):
    """Projections for the named channels the server's transformers send.

    A deployed module's ``stream_transformers()`` hook may register
    transformers whose named ``StreamChannel`` pushes reach the wire as
    ``custom:<name>`` events. The server does not list them anywhere (not in
    the assistant, its schemas, its graph or ``/info``), so a name becomes a
    projection when the caller asks for it or when its first event arrives,
    whichever comes first. A caller that subscribes before the run moves,
    as local code does, gets every item in order; one that subscribes later
    gets the items from then on, exactly as a local channel behaves. The
    event itself stays in the run's main log, where the local mux forwards
    it too.

    A name another registered transformer projects (one passed to
    ``RemoteGraph(stream_transformers=...)`` or ``transformers=``) is left to
    that transformer, which computes it on the client; the wire's copy is
    dropped so the main log does not hold it twice.

    Args:
        scope: The namespace this transformer serves. The server forwards
            named-channel pushes of its root mux only, so below the root
            nothing arrives.
        known: Names learned by earlier runs of the same graph; they are
            projections from the start, and names learned here are added.
    """

    def __init__(self, scope: tuple[str, ...] = (), known: set[str] | None = None) -> None:
        super().__init__(scope)
        self._namespace = list(scope)
        self._known = known if known is not None else set()
        self._channels: dict[str, StreamChannel[Any]] = {}
        self._mux: StreamMux | None = None
        self._ended = False

    def init(self) -> dict[str, Any]:
        # Known names are attached once registered (``registered``): by then
        # the mux shows which of them another transformer projects this run.
        return {}

    def registered(self, mux: StreamMux) -> None:
        """Attach the names earlier runs learned, now that ``mux`` shows which others project."""
        self._mux = mux
        for name in sorted(self._known):
            self.channel(name)

    def channel(self, name: str) -> StreamChannel[Any] | None:
        """The projection for ``name``, added now if the run may still send it;
        ``None`` once the run ended without it, or if another transformer owns it."""
        existing = self._channels.get(name)
        if existing is not None:
            return existing
        mux = self._mux
        if self._ended or mux is None or name in mux.extensions:
            return None
        channel: StreamChannel[Any] = StreamChannel()
        attach_projection(mux, name, channel, self)
        self._channels[name] = channel
        return channel

    def process(self, event: ProtocolEvent) -> bool:
        method = event["method"]
        if not method.startswith(_CUSTOM) or event["params"]["namespace"] != self._namespace:
            return True
        name = method[len(_CUSTOM) :]
        channel: StreamChannel[Any] | None = self._channels.get(name)
        if channel is None:
            owner = self._mux.transformer_by_key(name) if self._mux is not None else None
            if owner is not None and owner is not self:
                return False
            channel = self.channel(name)
            if channel is None:
                return True
        self._known.add(name)
        channel.push(event["params"]["data"])
        return True

    def finalize(self) -> None:
        self._ended = True

    def fail(self, err: BaseException) -> None:
        self._ended = True


class RunExtensions(Mapping[str, Any]):
    """A run's ``extensions``: the mux's projections, and wire channels by name.

    Reading a name no transformer projects asks ``WireChannelsTransformer``
    for it, so a channel the server's module sends is there before its first
    event, as it is on a local graph compiled with that module's
    transformers. Once the run has ended, a name it never sent is a
    ``KeyError``.
    """

    def __init__(self, mux: StreamMux, wire: WireChannelsTransformer | None) -> None:
        self._extensions = mux.extensions
        self._wire = wire

    def __getitem__(self, key: str) -> Any:
        try:
            return self._extensions[key]
        except KeyError:
            channel = self._wire.channel(key) if self._wire is not None and isinstance(key, str) else None
            if channel is None:
                raise
            return channel

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._extensions))

    def __len__(self) -> int:
        return len(self._extensions)

    def __contains__(self, key: object) -> bool:
        return key in self._extensions

    def __repr__(self) -> str:
        return f"RunExtensions({sorted(self._extensions)!r})"
