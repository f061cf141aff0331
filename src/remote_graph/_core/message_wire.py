"""A message as a request body carries it: in the form the server rebuilds exactly.

The server turns a message dict of an input (or an update) back into a
message with langchain's ``convert_to_messages``, which knows a message's
type, content, name, ids, tool calls and metadata, and puts every other key
into ``additional_kwargs``. A full dump (``model_dump()``, the SDK's default)
carries ``invalid_tool_calls=[]`` and ``usage_metadata=None`` of every
``AIMessage``: the deployed graph would see them in ``additional_kwargs``, and
hand them back in its state or a handoff, where a local graph's message has
none. So a message goes out without the fields that hold their defaults.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

__all__ = ["message_payload"]


def message_payload(message: BaseMessage) -> dict[str, Any]:
    """``message`` as a JSON object, its fields at their defaults left out (its type and content kept)."""
    payload = message.model_dump(exclude_defaults=True)
    payload["type"] = message.type
    payload["content"] = message.content
    return payload
