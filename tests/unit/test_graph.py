"""RemoteGraph checks that fail before any I/O (no server needed)."""

from __future__ import annotations

import pytest
from langgraph.stream.transformers import UpdatesTransformer

from remote_graph import RemoteGraph, Timeouts

URL = "http://127.0.0.1:9"  # never contacted by these tests


def test_with_config_keeps_transformers_and_timeouts() -> None:
    timeouts = Timeouts(request=3.0)
    graph = RemoteGraph("g", url=URL, stream_transformers=[UpdatesTransformer], timeouts=timeouts)
    copy = graph.with_config({"configurable": {"user": "u"}})
    assert isinstance(copy, RemoteGraph)
    assert copy.stream_transformers == (UpdatesTransformer,) and copy.timeouts is timeouts
    assert copy.config == {"configurable": {"user": "u"}}


def test_bad_construction_fails_early() -> None:
    with pytest.raises(TypeError, match="pre-built instance"):
        RemoteGraph("g", url=URL, stream_transformers=[UpdatesTransformer()])
    with pytest.raises(ValueError, match="assistant_id"):
        RemoteGraph("", url=URL)


def test_call_time_checks_happen_before_any_request() -> None:
    graph = RemoteGraph("g", url=URL)
    with pytest.raises(TypeError, match="stream_mode"):
        graph.stream_events({}, version="v3", stream_mode="values")
    with pytest.raises(TypeError, match="context must be a mapping"):
        graph.stream_events({}, version="v3", context="user")
    with pytest.raises(NotImplementedError, match="control"):
        graph.stream_events({}, version="v3", control=object())
    with pytest.raises(TypeError, match="subgraphs"):
        graph.astream_events({}, version="v3", subgraphs=True)
    # Nothing is sent until the first pull, exactly like a local run stream.
    run = graph.stream_events({}, version="v3")
    assert run.snapshot().status == "pending" and run.run_id is None
    with run:
        pass
    # Abandoned before its start: nothing was sent, and the run can never start.
    assert run.snapshot().status == "cancelled" and run.run_id is None


def test_projections_match_local_registration() -> None:
    run = RemoteGraph("g", url=URL, stream_transformers=[UpdatesTransformer]).stream_events({}, version="v3")
    assert sorted(run.extensions) == ["lifecycle", "messages", "subgraphs", "updates", "values"]
    with pytest.raises(AttributeError, match="registered projections: lifecycle, messages, subgraphs, updates, values"):
        run.custom  # noqa: B018
