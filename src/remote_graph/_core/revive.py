"""Turn JSON from the wire back into the Python objects a local run yields."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict

__all__ = ["message", "messages_in", "revive", "revive_state", "same_message"]

_MESSAGE_TYPES = frozenset(
    {
        "human",
        "ai",
        "system",
        "tool",
        "function",
        "chat",
        "remove",
        # A chunk keeps its class name as its type.
        "AIMessageChunk",
        "HumanMessageChunk",
        "SystemMessageChunk",
        "ToolMessageChunk",
        "FunctionMessageChunk",
        "ChatMessageChunk",
    }
)


def _is_message(value: dict[str, Any]) -> bool:
    return value.get("type") in _MESSAGE_TYPES and "content" in value


def message(value: Any) -> BaseMessage | None:
    """The message a dict serializes (``model_dump()`` form), or ``None`` if it is not one."""
    if not isinstance(value, dict) or not _is_message(value):
        return None
    try:
        return messages_from_dict([{"type": value["type"], "data": value}])[0]
    except Exception:
        # Not a message after all (a user dict that only looks like one).
        return None


def revive(value: Any) -> Any:
    """Rebuild LangChain messages inside a state or update payload.

    The server serializes ``BaseMessage`` objects as their ``model_dump()``
    dicts; a local run hands out the objects themselves, so the remote side
    revives any dict that has a message ``type`` and ``content``. Everything
    else is returned unchanged (and unshared lists and dicts are left as-is
    when nothing inside them changed).
    """
    if isinstance(value, dict):
        if _is_message(value):
            revived = message(value)
            return value if revived is None else revived
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new = revive(item)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list):
        items = [revive(item) for item in value]
        if any(new is not old for new, old in zip(items, value)):
            return items
        return value
    return value


def revive_state(values: Any, plain_keys: Collection[str] = ()) -> Any:
    """Revive a state dict, leaving the keys whose schema admits no message as they are.

    ``plain_keys`` come from the deployed graph's state schema
    (``schema.GraphSchemas``): a dict there that looks like a message is the
    user's own data. Every other key is revived (``revive``).
    """
    if not plain_keys or not isinstance(values, Mapping):
        return revive(values)
    return {key: (item if key in plain_keys else revive(item)) for key, item in values.items()}


def messages_in(value: Any) -> list[BaseMessage]:
    """Every message inside a payload (a state, an update), in order."""
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, Mapping):
        return [m for item in value.values() for m in messages_in(item)]
    if isinstance(value, (list, tuple)):
        return [m for item in value for m in messages_in(item)]
    return []


def same_message(a: BaseMessage, b: BaseMessage) -> bool:
    """Whether two messages are one message written twice (its id aside)."""
    return (
        type(a) is type(b)
        and a.content == b.content
        and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)
    )
