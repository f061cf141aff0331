"""Messages a node returns without streaming them, rebuilt from the wire.

Locally, langgraph's messages handler emits every message a node returns that
was neither streamed nor part of the node's input (``on_chain_end``): an
``AIMessage`` with ``tool_calls`` built in a node shows up in ``run.messages``
just before that node's ``updates`` event. The server's v3 stream drops those
whole-message events (only content-block events reach the wire), but the
messages themselves are in the node's ``updates`` event, and in the next
``values`` event. ``ReturnedMessages`` turns them back into the whole-message
parts a local run has, in the same place.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

Part = dict[str, Any]
Namespace = tuple[str, ...]


def _raw_ids(value: Any) -> Iterator[str]:
    """The ids of the messages but tool results in a payload as sent (their dicts), at any depth."""
    if isinstance(value, Mapping):
        if "content" in value and "type" in value and isinstance(value.get("id"), str):
            if value["type"] != "tool":  # a tool result is no message handle: its node is not asked for
                yield value["id"]
            return
        for item in value.values():
            yield from _raw_ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _raw_ids(item)


def _messages_in(value: Any) -> Iterator[BaseMessage]:
    """Messages of one write, found as langgraph's handler finds them: the
    write itself, a list's items, or a state dict's values and their lists.
    Tool results are left out, as the v3 handler leaves them out."""
    if isinstance(value, BaseMessage):
        candidates: list[Any] = [value]
    elif isinstance(value, Mapping):
        candidates = []
        for item in value.values():
            if isinstance(item, (list, tuple)):
                candidates.extend(item)
            else:
                candidates.append(item)
    elif isinstance(value, (list, tuple)):
        candidates = list(value)
    else:
        return
    for item in candidates:
        if isinstance(item, BaseMessage) and not isinstance(item, ToolMessage):
            yield item


class ReturnedMessages:
    """Finds the messages nodes returned that no message stream announced.

        A message counts as seen once it was streamed (its ``message-start``), was
        in a state the run reported (a ``values`` event: a node's input), or was
        emitted here. The rest, found in a node's update, become whole-message
        parts placed before that update, with the node in their metadata. A server
        that sends no ``updates`` (its module registers no ``UpdatesTransformer``)
        leaves only ``values``: then new messages in a later state are emitted
        before it; a state does not say who wrote them, so the thread's recent
    states name their nodes first (``unnamed``, ``name``).
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._states: set[Namespace] = set()
        self._updates = False
        self._count = 0
        # Nodes the thread's recent states named for messages a state brings (``name``).
        self._nodes: dict[str, str | None] = {}

    def unnamed(self, ns: Namespace, values: Any) -> list[str]:
        """The ids of the messages ``from_values`` would emit without a node for
        this state (as sent): a server sending no updates names none of them."""
        if self._updates or ns not in self._states:
            return []
        return [i for i in dict.fromkeys(_raw_ids(values)) if i not in self._seen and i not in self._nodes]

    def name(self, nodes: Mapping[str, str | None]) -> None:
        """The nodes that wrote messages a state brings (``None``: not known)."""
        self._nodes.update(nodes)

    def streamed(self, message_id: Any) -> None:
        """A message stream started for ``message_id``; its final message is not emitted again."""
        if isinstance(message_id, str):
            self._seen.add(message_id)

    def from_update(self, ns: Namespace, update: Any) -> list[Part]:
        """Parts for the messages a node returned, owed before its ``updates`` part."""
        self._updates = True
        if not isinstance(update, Mapping):
            return []
        parts: list[Part] = []
        for node, writes in update.items():
            batches = writes if isinstance(writes, list) and all(isinstance(w, Mapping) for w in writes) else [writes]
            for write in batches:
                for message in _messages_in(write):
                    if self._new(message):
                        parts.append(self._part(ns, node if isinstance(node, str) else None, message))
        return parts

    def from_values(self, ns: Namespace, values: Any) -> list[Part]:
        """Parts owed before a ``values`` part: none when updates carry the
        messages, or for the first state at ``ns`` (the input)."""
        emit = not self._updates and ns in self._states
        self._states.add(ns)
        parts: list[Part] = []
        for message in _messages_in(values):
            # An id-less message in a state cannot be told from its repeats in later states.
            if message.id is not None and self._new(message) and emit:
                parts.append(self._part(ns, self._nodes.pop(message.id, None), message))
        return parts

    def _new(self, message: BaseMessage) -> bool:
        if message.id is None:
            return True
        if message.id in self._seen:
            return False
        self._seen.add(message.id)
        return True

    def _part(self, ns: Namespace, node: str | None, message: BaseMessage) -> Part:
        self._count += 1
        metadata = {
            "langgraph_node": node,
            "langgraph_checkpoint_ns": "|".join(ns),
            "run_id": f"returned#{self._count}",
        }
        return {"type": "messages", "ns": ns, "data": (message, metadata)}
