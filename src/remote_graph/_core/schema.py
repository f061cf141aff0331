"""Learning a deployed graph's output keys, once per ``RemoteGraph``."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any
from urllib.parse import quote
from uuid import UUID

from remote_graph._core.actions import Broken, Request, Response
from remote_graph._core.nested import OutputSchema


def learn_output_schema(assistant_id: str, schema: OutputSchema) -> Generator[Request, Response | Broken, None]:
    """Ask the server for the assistant's schemas and record its output keys.

    The schemas endpoint takes an assistant id; a graph name names its
    default assistant, found by search. When the server cannot say, the keys
    stay unknown and the whole state is returned, as before.
    """
    if not _is_uuid(assistant_id):
        reply = yield Request("POST", "/assistants/search", json={"graph_id": assistant_id, "limit": 1})
        found = reply.body if isinstance(reply, Response) and reply.status == 200 and isinstance(reply.body, list) else []
        if not found or not isinstance(found[0], dict):
            schema.learn(None)
            return
        assistant_id = str(found[0].get("assistant_id"))
    reply = yield Request("GET", f"/assistants/{quote(assistant_id, safe='')}/schemas")
    schema.learn(reply.body if isinstance(reply, Response) and reply.status == 200 else None)


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except ValueError:
        return False
    return True
