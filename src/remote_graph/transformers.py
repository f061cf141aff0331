"""Remote-aware stream transformers.

The wire's ``messages`` events carry no metadata, so a message handle cannot
know its node when it starts. ``RemoteMessagesTransformer`` is langgraph's own
``MessagesTransformer`` plus one rule: when the node's ``updates`` event
(which carries the finished message and its id) arrives, the handle's
``node`` is filled in.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.stream.transformers import MessagesTransformer

from remote_graph._private import ProtocolEvent

__all__ = ["RemoteMessagesTransformer"]


def _message_ids(update: Any) -> list[str]:
    if not isinstance(update, dict):
        return []
    messages = update.get("messages")
    if isinstance(messages, BaseMessage):
        messages = [messages]
    if not isinstance(messages, list):
        return []
    return [m.id for m in messages if isinstance(m, BaseMessage) and isinstance(m.id, str)]


class RemoteMessagesTransformer(MessagesTransformer):
    """``MessagesTransformer`` that learns each handle's node from ``updates``."""

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._nodeless: dict[str, Any] = {}


    def process(self, event: ProtocolEvent) -> bool:
        method = event["method"]
        params = event["params"]
        if method == "messages" and params["namespace"] == self._scope_list:
            payload = params["data"][0]
            keep = super().process(event)
            if isinstance(payload, dict) and payload.get("event") == "message-start":
                # The handle just pushed is the newest one for this payload's id.
                message_id = payload.get("id")
                stream = self._by_run.get(str(params["data"][1].get("run_id", "")))
                if stream is not None and isinstance(message_id, str) and stream.node is None:
                    self._nodeless[message_id] = stream
            return keep
        if method == "updates" and params["namespace"] == self._scope_list and self._nodeless:
            data = params["data"]
            if isinstance(data, dict):
                for node, update in data.items():
                    for message_id in _message_ids(update):
                        stream = self._nodeless.pop(message_id, None)
                        if stream is not None:
                            stream._node = node
            return True
        return super().process(event)

    def finalize(self) -> None:
        self._nodeless.clear()
        super().finalize()

    def fail(self, err: BaseException) -> None:
        self._nodeless.clear()
        super().fail(err)
