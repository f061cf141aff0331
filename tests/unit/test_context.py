"""Runtime context on the wire: what ``context=`` becomes in a run's request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from remote_graph import RemoteGraph
from remote_graph._core.commands import RunOptions, StartPlan
from remote_graph._core.context import context_payload, place_configurable


@dataclass
class Settings:
    user: str
    currency: str = "USD"


class SettingsDict(TypedDict, total=False):
    user: str


class SettingsModel(BaseModel):
    user: str
    currency: str = "USD"


def test_each_kind_of_context_is_sent_as_a_json_object() -> None:
    assert context_payload(None) is None
    assert context_payload(SettingsDict(user="ada")) == {"user": "ada"}
    assert context_payload(Settings(user="ada")) == {"user": "ada", "currency": "USD"}
    assert context_payload(SettingsModel(user="ada", currency="EUR")) == {"user": "ada", "currency": "EUR"}
    payload = {"user": "ada"}
    assert context_payload(payload) == payload and context_payload(payload) is not payload


@pytest.mark.parametrize("bad", [object(), "ada", ["ada"], 3, Settings, {1: "ada"}])
def test_a_context_with_no_json_object_form_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="context"):
        context_payload(bad)


def test_the_configurable_travels_in_checkpoint_beside_the_context() -> None:
    body = {"config": {"configurable": {"tier": "gold", "user": "bob"}, "tags": ["t"]}, "checkpoint_id": "c"}
    out = place_configurable(body, {"user": "ada"})
    assert out == {
        "config": {"tags": ["t"]},
        "checkpoint": {"tier": "gold", "user": "bob"},
        "checkpoint_id": "c",
        "context": {"user": "ada"},
    }
    assert body["config"]["configurable"] == {"tier": "gold", "user": "bob"}  # not mutated
    # Without a context nothing is sent in its place: the server would make one of the configurable.
    assert "context" not in place_configurable(body, None)
    assert place_configurable({"config": {}}, None) == {"config": {}}


def test_a_v3_run_sends_its_context_and_marker_where_the_server_keeps_both() -> None:
    options = RunOptions.from_kwargs({"context": Settings(user="ada")})
    plan = StartPlan(assistant_id="g", input={"x": 1}, config={"configurable": {"user": "bob"}}, options=options)
    body = plan.request("/threads/t", None).json
    assert body["context"] == {"user": "ada", "currency": "USD"}
    assert body["checkpoint"] == {"user": "bob", "__event_streaming_v2": True}
    assert "configurable" not in body["config"]


def test_a_classic_run_sends_its_context_and_configurable_without_the_v3_marker() -> None:
    options = RunOptions.from_kwargs({"context": {"user": "ada"}, "headers": {"h": "1"}})
    plan = StartPlan(
        assistant_id="g",
        input={"x": 1},
        config={"configurable": {"tier": "gold", "user": "bob"}},
        options=options,
        stream_mode=("values", "updates"),
    )
    body = plan.request("/threads/t", None).json
    assert body["context"] == {"user": "ada"}
    assert body["checkpoint"] == {"tier": "gold", "user": "bob"}
    assert "configurable" not in body["config"]
    assert body["stream_mode"] == ["values", "updates"] and body["stream_subgraphs"] is False
    # No context: the configurable still travels in checkpoint, and no context is made up.
    plain = StartPlan(
        assistant_id="g",
        input={},
        config={"configurable": {"user": "bob"}},
        options=RunOptions(),
        stream_mode=("values",),
    )
    body = plain.request("/threads/t", None).json
    assert "context" not in body and body["checkpoint"] == {"user": "bob"}


class _Connection:
    """Something a local context may carry that JSON cannot."""


@dataclass
class WithClient:
    user: str
    db: Any


@pytest.mark.parametrize("bad", [WithClient("ada", _Connection()), {"user": "ada", "db": _Connection()}])
def test_a_context_with_a_value_json_cannot_carry_fails_at_the_call_naming_it(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"context.*'db'.*_Connection"):
        context_payload(bad)
    graph = RemoteGraph("agent", url="http://127.0.0.1:9")
    with pytest.raises(TypeError, match=r"context.*'db'"):
        graph.stream_events({}, version="v3", context=bad)
