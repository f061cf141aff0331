"""The handoff parser: a ``Command``'s repr rebuilt from literals and allowed types, or refused."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.errors import ParentCommand
from langgraph.types import Command, Overwrite, Send

from remote_graph import RemoteHandoffError
from remote_graph._core.handoff import is_handoff, parent_command, rebuild_command
from remote_graph.errors import RemoteRunError, remote_exception

COMMANDS: list[Command[Any]] = [
    Command(goto="b"),
    Command(update={"entries": ["x"], "n": -3, "f": -1.5, "t": (1, "a"), "s": {2}, "none": None}, goto="b"),
    Command(goto=[Send("worker", {"i": 1}), "c"]),
    Command(
        update={
            "messages": [
                HumanMessage("hi", id="h1"),
                AIMessage("", id="a1", name="bob", tool_calls=[{"name": "t", "args": {"x": 1}, "id": "c1"}]),
                ToolMessage("done", tool_call_id="c1", name="t"),
                RemoveMessage(id="old"),
            ],
            "active_agent": "alice",
        },
        goto="alice",
    ),
    Command(update=[("entries", ["a"]), ("entries", ["b"])], goto="b"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=repr)
def test_a_commands_repr_rebuilds_it(command: Command[Any]) -> None:
    rebuilt = rebuild_command(repr(command))
    assert rebuilt == command
    assert repr(rebuilt) == repr(command)


def test_an_overwrite_arrives_in_the_form_langgraph_reads_as_one() -> None:
    """``Command``'s repr erases dataclasses; langgraph's channels read the erased form as an overwrite."""
    command = Command(update={"messages": Overwrite([HumanMessage("hi", id="1")])}, goto="b")
    rebuilt = rebuild_command(repr(command))
    assert repr(rebuilt) == repr(command)
    assert rebuilt.update == {"messages": {"value": [HumanMessage("hi", id="1")], "type": "__overwrite__"}}


def test_messages_are_rebuilt_as_message_objects() -> None:
    command = COMMANDS[3]
    rebuilt = rebuild_command(repr(command))
    assert isinstance(rebuilt.update, dict)
    assert [type(m) for m in rebuilt.update["messages"]] == [HumanMessage, AIMessage, ToolMessage, RemoveMessage]


def test_the_parent_command_targets_the_parents_task_as_a_local_childs() -> None:
    error = remote_exception("ParentCommand", repr(Command(update={"x": 1}, goto="b")))
    assert is_handoff(error)
    raised = parent_command(error, "child:1234")
    assert isinstance(raised, ParentCommand)
    assert raised.args[0] == Command(graph="child:1234", update={"x": 1}, goto="b")


def test_only_a_remote_parent_command_is_a_handoff() -> None:
    assert not is_handoff(remote_exception("ValueError", "Command(goto='b')"))
    assert not is_handoff(RemoteRunError("ParentCommand"))
    assert not is_handoff(ParentCommand(Command(goto="b")))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Command(update={'at': datetime(2020, 1, 1)}, goto='b')", "it holds a datetime"),
        ("Command(update={'at': datetime.datetime(2020, 1, 1)}, goto='b')", "it holds a datetime.datetime"),
        ("Command(update={'x': inf}, goto='b')", "it names 'inf'"),
        ("Command(update={'x': Secret(1)}, goto='b')", "it holds a Secret"),
        ("Command(update={'x': 1 + 1}, goto='b')", "BinOp"),
        ("Command(update={**other}, goto='b')", "unpacks a mapping"),
        ("Command(*args)", "unpacks arguments"),
        ("Command(update=HumanMessage(bogus_field=1), goto='b')", "its HumanMessage cannot be rebuilt"),
        ("Command(graph='outer', update={'x': 1}, goto='b')", "it targets graph 'outer'"),
        ("Command(goto='b', update={'x': 1})", "another repr"),
        ("Command(update={'x': 1.0e0}, goto='b')", "another repr"),
        ("__import__('os').system('x')", "not a Command"),
        ("Send('b', {})", "not a Command"),
        ("Command(goto='b'", "does not parse"),
        ("Command(update=" + "[" * 5000 + "]" * 5000 + ")", "Command("),
    ],
)
def test_a_command_that_does_not_rebuild_exactly_is_refused_naming_why(text: str, why: str) -> None:
    with pytest.raises(RemoteHandoffError, match="cannot be rebuilt exactly") as caught:
        parent_command(remote_exception("ParentCommand", text), "child:1")
    assert why in str(caught.value)
    assert caught.value.command == text
    assert "does not route on it" in str(caught.value)


def test_the_refusal_quotes_a_long_command_shortened_and_pickles() -> None:
    text = "Command(update={'x': Secret(1)}, goto='" + "b" * 1000 + "')"
    with pytest.raises(RemoteHandoffError) as caught:
        rebuild_command(text)
    assert len(str(caught.value)) < 700
    assert caught.value.command == text
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is RemoteHandoffError
    assert str(again) == str(caught.value)
    assert again.command == text
