"""Named channels the server's own transformers send, found by name with nothing configured."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.stream import StreamChannel, StreamTransformer

from remote_graph._private import StreamMux
from remote_graph.transformers import RunExtensions, WireChannelsTransformer


def custom(name: str, data: Any, ns: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "event",
        "method": f"custom:{name}",
        "params": {"namespace": list(ns), "timestamp": 1, "data": data},
    }


class Counter(StreamTransformer):
    """A client-side transformer projecting a name the server also sends."""

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.channel: StreamChannel[Any] = StreamChannel("counts")

    def init(self) -> dict[str, Any]:
        return {"counts": self.channel}

    def process(self, event: Any) -> bool:
        return True


def build(known: set[str] | None = None, *extra: Any) -> tuple[StreamMux, WireChannelsTransformer, RunExtensions]:
    wires: list[WireChannelsTransformer] = []

    def factory(scope: tuple[str, ...]) -> WireChannelsTransformer:
        wires.append(WireChannelsTransformer(scope, known))
        return wires[-1]

    mux = StreamMux(factories=[*extra, factory], scope=(), is_async=False)
    return mux, wires[0], RunExtensions(mux, wires[0])


def test_a_channel_asked_for_before_its_first_event_gets_every_item_in_order() -> None:
    mux, _, ext = build()
    cursor = iter(ext["trail"])
    assert "trail" in ext
    for i in range(3):
        mux.push(custom("trail", {"i": i}))
    mux.close()
    assert list(cursor) == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_a_channel_subscribed_after_its_first_items_gets_the_later_ones_as_locally() -> None:
    known: set[str] = set()
    mux, _, ext = build(known)
    mux.push(custom("trail", 1))
    mux.push(custom("other", "x", ("sub:1",)))  # below the root: not this scope's
    cursor = iter(ext["trail"])
    mux.push(custom("trail", 2))
    mux.close()
    assert list(cursor) == [2]
    assert known == {"trail"}
    # Once the run has ended, a name it never sent is not a projection.
    with pytest.raises(KeyError):
        ext["other"]


def test_names_learned_by_earlier_runs_are_projections_from_the_start() -> None:
    _, _, ext = build({"trail"})
    assert list(ext) == ["trail"] and len(ext) == 1


def test_a_name_another_transformer_projects_is_left_to_it() -> None:
    mux, _, ext = build(None, Counter)
    mux._events._subscribed = True  # keep the main log's events to look at
    mux.push(custom("counts", 99))
    assert ext["counts"] is mux.extensions["counts"]
    assert [e for _, e in mux._events._items] == []  # the wire's copy is dropped


def test_the_wire_event_stays_in_the_main_log() -> None:
    mux, _, _ = build()
    mux._events._subscribed = True
    mux.push(custom("trail", 1))
    assert [e["method"] for _, e in mux._events._items] == ["custom:trail"]


def test_a_name_learned_earlier_that_another_transformer_now_projects_is_left_to_it() -> None:
    # An earlier run learned "counts" from the wire; this run computes it on the client.
    mux, _, ext = build({"counts"}, Counter)
    assert ext["counts"] is mux.extensions["counts"]
    assert mux.transformer_by_key("counts").__class__ is Counter
