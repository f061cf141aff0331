"""A remote graph's handoff to its local parent, rebuilt from the failed run.

A node of a local child that returns ``Command(graph=Command.PARENT, ...)``
makes the child raise langgraph's ``ParentCommand`` with the command, its
``graph`` set to the parent task's checkpoint namespace; the parent's task
runner sees that namespace is its own, applies the update and routes to
``goto``. A deployed graph's handoff ends its run instead, and the server
reports only ``{"error": "ParentCommand", "message": repr(command)}``.

``parent_command`` rebuilds the command from that repr with a strict
parser: Python literals, and calls of an allow-list of langgraph and
langchain types (``Command``, ``Send``, the message classes), never
``eval``. The command is handed to the parent only when its own
``repr`` is exactly the text the server sent; anything else raises
``RemoteHandoffError`` naming what could not be rebuilt, so the parent never
routes on a command rebuilt wrongly. ``Command``'s repr erases dataclasses
(``dataclasses.asdict``): a dataclass in the update arrives as its dict, as a
dataclass in a deployed graph's state does; langgraph reads an erased
``Overwrite`` as an overwrite still. It never does I/O.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from langchain_core import messages
from langgraph.errors import ParentCommand
from langgraph.types import Command, Send

from remote_graph.errors import RemoteHandoffError, RemoteRunError

__all__ = ["ALLOWED_TYPES", "is_handoff", "parent_command", "rebuild_command"]

_MESSAGE_TYPES = (
    "AIMessage",
    "AIMessageChunk",
    "ChatMessage",
    "ChatMessageChunk",
    "FunctionMessage",
    "FunctionMessageChunk",
    "HumanMessage",
    "HumanMessageChunk",
    "RemoveMessage",
    "SystemMessage",
    "SystemMessageChunk",
    "ToolMessage",
    "ToolMessageChunk",
)

ALLOWED_TYPES: dict[str, Any] = {
    "Command": Command,
    "Send": Send,
    **{name: getattr(messages, name) for name in _MESSAGE_TYPES},
}
"""The types a handoff's repr may call, by the name its repr gives them."""

# What a handoff's repr is quoted as in an error: enough to recognise it.
_QUOTE = 200


def is_handoff(error: BaseException) -> bool:
    """Whether ``error`` is a remote run's ``ParentCommand`` (a handoff to the parent)."""
    return isinstance(error, RemoteRunError) and type(error).__name__ == "ParentCommand" and bool(error.args)


def parent_command(error: BaseException, graph: str) -> ParentCommand:
    """The ``ParentCommand`` a local child would raise for the remote run's handoff.

    Args:
        error: The remote run's rebuilt ``ParentCommand`` (see ``is_handoff``).
        graph: The parent task's checkpoint namespace: the ``graph`` a local
            child's command carries when it reaches the parent's task.

    Raises:
        RemoteHandoffError: The command cannot be rebuilt exactly.
    """
    command = rebuild_command(str(error.args[0]))
    if command.graph not in (None, ""):
        # The served graph's root hands off to its own parent (graph "")
        # only: any other target was meant for a graph on the server.
        raise _error(str(error.args[0]), f"it targets graph {command.graph!r}, not the remote graph's parent")
    return ParentCommand(replace(command, graph=graph))


def rebuild_command(text: str) -> Command[Any]:
    """The ``Command`` whose repr is ``text``.

    Raises:
        RemoteHandoffError: ``text`` is not a ``Command``'s repr made of
            literals and allowed types, or the rebuilt command's repr differs.
    """
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise _error(text, f"it does not parse as Python ({type(exc).__name__})") from None
    body = tree.body
    if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "Command"):
        raise _error(text, "it is not a Command(...) call")
    try:
        command = _value(body, text)
    except RecursionError:
        raise _error(text, "it nests too deeply") from None
    if repr(command) != text:
        raise _error(text, "the command rebuilt from it has another repr, so some value did not survive the wire")
    return command  # type: ignore[no-any-return]


def _value(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _value(node.operand, text)
        if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    elif isinstance(node, ast.List):
        return [_value(item, text) for item in node.elts]
    elif isinstance(node, ast.Tuple):
        return tuple(_value(item, text) for item in node.elts)
    elif isinstance(node, ast.Set):
        return {_value(item, text) for item in node.elts}
    elif isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise _error(text, "it unpacks a mapping (**)")
        return {_value(k, text): _value(v, text) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    elif isinstance(node, ast.Call):
        return _call(node, text)
    elif isinstance(node, ast.Name):
        raise _error(text, f"it names {node.id!r}, which is no literal")
    raise _error(text, f"it holds a {type(node).__name__} expression, which is no literal")


def _call(node: ast.Call, text: str) -> Any:
    name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
    cls = ALLOWED_TYPES.get(name)
    if cls is None:
        raise _error(text, f"it holds a {name}, which is not one of the types rebuilt ({', '.join(ALLOWED_TYPES)})")
    if any(isinstance(arg, ast.Starred) for arg in node.args) or any(kw.arg is None for kw in node.keywords):
        raise _error(text, f"its {name} unpacks arguments (* or **)")
    args = [_value(arg, text) for arg in node.args]
    kwargs = {kw.arg: _value(kw.value, text) for kw in node.keywords if kw.arg is not None}
    try:
        return cls(*args, **kwargs)
    except Exception as exc:
        raise _error(text, f"its {name} cannot be rebuilt ({type(exc).__name__}: {exc})") from None


def _error(text: str, why: str) -> RemoteHandoffError:
    shown = text if len(text) <= _QUOTE else f"{text[:_QUOTE]}..."
    return RemoteHandoffError(
        f"the remote graph handed off to its parent (ParentCommand), but the command cannot be rebuilt exactly: "
        f"{why}; the parent does not route on it. The command as the server reported it: {shown}",
        text,
    )
