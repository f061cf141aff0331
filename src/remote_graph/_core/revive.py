"""Turn JSON from the wire back into the Python objects a local run yields."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import messages_from_dict

_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "chat", "remove"})


def _is_message(value: dict[str, Any]) -> bool:
    return value.get("type") in _MESSAGE_TYPES and "content" in value


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
            try:
                return messages_from_dict([{"type": value["type"], "data": value}])[0]
            except Exception:
                # Not a message after all (a user dict that only looks like one).
                return value
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
