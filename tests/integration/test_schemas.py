"""Schemas and tools: a ``RemoteGraph``'s schemas are the local graph's, from the server's
published ones, so ``as_tool`` works and a remote graph can be an agent's tool.
Compared on [local, remote] x [sync, async]: the JSON schemas, the models' JSON
schemas, a tool's name, description, args and tool-call schema, its result, and
an agent's messages when it calls the tool.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import classic
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel

from remote_graph import RemoteGraph
from tests.integration.lanes import LINEAR, Lane, Scenarios, compare, local_twin
from tests.integration.objects import objects

pytestmark = pytest.mark.integration

SCENARIOS = Scenarios()
scenario = SCENARIOS

GRAPHS = ("linear", "context", "context_model", "agent", "narrow", "react")


def graph(lane: Lane, name: str) -> Any:
    """Graph ``name`` compiled as served (no checkpointer: a tool runs it with no thread),
    or the deployed one named as a local graph compiled without a name is."""
    if lane.kind == "local":
        built = local_twin(name)
        return built.copy(update={"checkpointer": None})
    return RemoteGraph(name, url=lane.server_url, name="LangGraph")


@scenario
def json_schemas_are_the_local_graphs(lane: Lane) -> Any:
    out = {}
    for name in GRAPHS:
        g = graph(lane, name)
        out[name] = {
            "input": g.get_input_jsonschema(),
            "output": g.get_output_jsonschema(),
            "context": g.get_context_jsonschema(),
            # A prebuilt agent's output model lacks its managed ``remaining_steps``:
            # see test_probe_a_managed_key_is_in_the_output_model.
            "output_model": g.output_schema.model_json_schema() if name != "react" else None,
            "models": [issubclass(g.input_schema, BaseModel), issubclass(g.output_schema, BaseModel)],
        }
    return out


@scenario
def config_schemas_are_the_local_graphs(lane: Lane) -> Any:
    """``config_schema`` / ``get_config_jsonschema`` (deprecated locally, for the context
    schema): ``configurable`` typed by the context schema, with the keys ``include`` names,
    and the same deprecation warnings."""
    out = {}
    for name in GRAPHS:
        g = graph(lane, name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out[name] = {
                "json": g.get_config_jsonschema(include=["tags", "recursion_limit"]),
                "model": g.config_schema().model_json_schema(),
                # A ResourceWarning is an earlier test's garbage collected meanwhile, not the call's.
                "warned": sorted({type(w.message).__name__ for w in caught} - {"ResourceWarning"}),
            }
    return out


def linear_tool(lane: Lane) -> Any:
    return graph(lane, "linear").as_tool(name="linear", description="Runs the linear graph.")


@scenario
def as_tool_describes_the_graph_as_locally(lane: Lane) -> Any:
    tool = linear_tool(lane)
    return {
        "name": tool.name,
        "description": tool.description,
        "args": tool.args,
        "call_schema": tool.tool_call_schema.model_json_schema(),
    }


@scenario
def as_tool_runs_the_graph(lane: Lane) -> Any:
    tool = linear_tool(lane)
    if lane.flavour == "sync":
        return tool.invoke(LINEAR)
    return lane.call(lambda: tool.ainvoke(LINEAR))


def agent_script(messages: Sequence[BaseMessage]) -> AIMessage:
    if any(m.type == "tool" for m in messages):
        return AIMessage(content=f"linear said {messages[-1].content}")
    call = {"id": "call_linear", "name": "linear", "args": {"x": 2, "log": []}, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]


@scenario
def a_remote_graph_is_an_agents_tool(lane: Lane) -> Any:
    agent = create_react_agent(classic.ScriptedChatModel(script=agent_script), [linear_tool(lane)])
    out = lane.invoke(agent, {"messages": [HumanMessage("go")]})
    return objects(out["messages"])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_local_graph_equals_remote_graph(name: str, flavour: str, server_url: str) -> None:
    local, remote = compare(SCENARIOS[name], flavour, server_url)
    assert remote == local


# --- divergences kept on purpose (README: "Divergences from local") ---------------------


def test_probe_the_input_models_json_schema_is_the_input_schema_itself(server_url: str) -> None:
    """A local graph's ``input_schema`` is a root model over its state ``TypedDict``: its
    JSON schema refers to the state's (``$ref``). A remote graph's input model is an
    object model of the published input schema, whose JSON schema is that schema itself,
    because langchain's ``as_tool`` reads a root model's Python type hints, which
    JSON cannot carry. ``get_input_jsonschema()`` is the same on both."""
    local = local_twin("linear")
    remote = RemoteGraph("linear", url=server_url, name="LangGraph")
    wrapped = local.input_schema.model_json_schema()
    assert wrapped["$ref"] == "#/$defs/LinearState"
    assert wrapped["$defs"]["LinearState"] == local.get_input_jsonschema()
    assert remote.input_schema.model_json_schema() == remote.get_input_jsonschema() == local.get_input_jsonschema()


def test_probe_a_managed_key_is_in_the_output_model(server_url: str) -> None:
    """A local graph's output model leaves out managed values (a prebuilt agent's
    ``remaining_steps``); the published output schema lists them, and nothing in it
    tells one apart. Its ``get_output_jsonschema()`` lists it locally too."""
    local = local_twin("react")
    remote = RemoteGraph("react", url=server_url, name="LangGraph")
    assert "remaining_steps" in local.get_output_jsonschema()["properties"]
    assert "remaining_steps" not in local.output_schema.model_json_schema()["properties"]
    assert "remaining_steps" in remote.output_schema.model_json_schema()["properties"]
