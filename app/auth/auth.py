"""Bearer-token auth for the auth tests' server: two users, each seeing only its own threads.

A token is ``token-<user>`` or ``token-<user>.<tag>`` for the users ``alice``
and ``bob``, sent as ``Authorization: Bearer <token>`` or as ``x-api-key``. The
tag lets a test pick out its own requests: when ``AUTH_TEST_LOG`` names a file,
every request the server authenticates is appended to it as one JSON line
(method, path, user, tag, or ``"refused"``). A token the server does not know
is refused with a 401 whose detail repeats it, as careless servers do, so the
client must keep it out of its errors.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from langgraph_sdk import Auth

auth = Auth()

USERS = ("alice", "bob")
_LOG_LOCK = threading.Lock()


def _record(entry: dict[str, Any]) -> None:
    path = os.environ.get("AUTH_TEST_LOG")
    if not path:
        return
    with _LOG_LOCK, open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def _token(authorization: str | None, headers: dict[bytes, bytes]) -> str | None:
    if authorization and authorization.startswith("Bearer "):
        return authorization[len("Bearer ") :]
    api_key = headers.get(b"x-api-key")
    return api_key.decode("latin-1") if api_key else None


@auth.authenticate
async def authenticate(
    authorization: str | None, headers: dict[bytes, bytes], method: str, path: str
) -> Auth.types.MinimalUserDict:
    token = _token(authorization, headers)
    user, _, tag = (token or "").removeprefix("token-").partition(".")
    if token is None or not token.startswith("token-") or user not in USERS:
        _record({"method": method, "path": path, "user": "refused", "tag": None})
        raise Auth.exceptions.HTTPException(status_code=401, detail=f"unknown token {token!r}")
    _record({"method": method, "path": path, "user": user, "tag": tag or None})
    return {"identity": user}


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Threads (and their runs) are stamped with their owner and filtered by it."""
    owner = {"owner": ctx.user.identity}
    if isinstance(value, dict):
        metadata = value.setdefault("metadata", {})
        if isinstance(metadata, dict):
            metadata.update(owner)
    return owner
