"""``Shaper``: a classic run's parts as the caller's ``stream()`` yields them, compared with local.

For each way of calling ``stream()`` (one mode or a list, ``subgraphs``,
``version="v2"``, ``output_keys``, ``print_mode``), the probe graph is run
locally twice: once as the server runs it (the modes the client asks the
server for, ``server_modes``), whose chunks become the frames the client
reads, and once as the caller calls it, which is what the client must yield.
The two runs' ids differ, so they are numbered by first appearance.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from langchain_core.messages import HumanMessage

from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.shape import CLASSIC_MODES, OutputKeys, Shaper, server_modes
from tests.unit.classic_server import LOCAL_THREAD, PROBE_SCHEMAS, SERVER_THREAD, classic_frames, probe_graph
from tests.unit.fake_run import THREAD, FakeServer, run

Mode = str | list[str]


def ask() -> dict[str, Any]:
    return {"messages": [HumanMessage("hello", id="h1")]}


CONFIG = {"configurable": {"thread_id": LOCAL_THREAD}}


def canon(value: Any) -> str:
    """``value``'s repr with its ids numbered by first appearance, and no debug timestamps."""
    seen: dict[str, str] = {}
    ids = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}"
    text = re.sub(r"'timestamp': '[^']*'", "'timestamp': ...", repr(value))
    return re.sub(ids, lambda m: seen.setdefault(m.group(0), f"<id{len(seen)}>"), text)


def wire_modes(stream_mode: Mode, print_mode: Mode = ()) -> list[str]:
    """The modes the server runs the graph with for this call (``messages-tuple`` is ``messages`` there)."""
    wanted = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    wanted += [print_mode] if isinstance(print_mode, str) else list(print_mode)
    return ["messages" if mode == "messages-tuple" else mode for mode in server_modes(wanted)]


def remote(stream_mode: Mode, *, subgraphs: bool = False, shaper: Shaper | None = None, **run_kwargs: Any) -> list[Any]:
    """What the client yields for a classic run the server ran as a local ``stream()``."""
    print_mode = shaper.print_mode if shaper is not None else ()
    modes = wire_modes(stream_mode, print_mode)
    served = probe_graph().stream(ask(), CONFIG, stream_mode=modes, subgraphs=True, **run_kwargs)
    # Without subgraphs=True the server streams the root's chunks only.
    chunks = [(ns, mode, payload) for ns, mode, payload in served if subgraphs or not ns]
    learned = GraphSchemas()
    learned.learn(PROBE_SCHEMAS)
    view = CallView(server_thread=SERVER_THREAD, thread_name=LOCAL_THREAD)
    _, out = run(FakeServer(classic_frames(chunks)), wire=ClassicWire(ChunkReader(view, learned), THREAD))
    assert out.error is None
    shaper = shaper or Shaper(stream_mode, subgraphs=subgraphs)
    return [shaped for part in out.parts for shaped in shaper.shape(part)]


def local(stream_mode: Mode, **kwargs: Any) -> list[Any]:
    return list(probe_graph().stream(ask(), CONFIG, stream_mode=stream_mode, **kwargs))


STREAM_MODES: list[Mode] = [
    "values",
    "updates",
    "messages",
    "custom",
    "tasks",
    "checkpoints",
    "debug",
    ["values"],
    ["values", "updates"],
    ["messages", "custom"],
    ["updates", "tasks", "checkpoints"],
]


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("subgraphs", [False, True], ids=["root", "subgraphs"])
@pytest.mark.parametrize("stream_mode", STREAM_MODES, ids=str)
def test_every_way_of_streaming_yields_what_local_yields(
    stream_mode: Mode, subgraphs: bool, version: Literal["v1", "v2"]
) -> None:
    shaper = Shaper(stream_mode, subgraphs=subgraphs, version=version)
    expected = local(stream_mode, subgraphs=subgraphs, version=version)
    assert expected, "the local run yields nothing"
    assert canon(remote(stream_mode, subgraphs=subgraphs, shaper=shaper)) == canon(expected)


@pytest.mark.parametrize("output_keys", ["count", ["note"], ["messages", "count"]], ids=str)
@pytest.mark.parametrize("stream_mode", ["values", "updates", ["values", "updates"]], ids=str)
def test_output_keys_as_local_applies_them(stream_mode: Mode, output_keys: str | list[str]) -> None:
    # The input writes "messages": a key the first values chunk counts as written.
    # (Not one key holding a dict: at an interrupt langgraph writes the
    # interrupt into the state's own dict, and so into chunks it yielded before.)
    shaper = Shaper(stream_mode, output_keys=OutputKeys(output_keys, ["messages"]))
    expected = local(stream_mode, output_keys=output_keys)
    assert canon(remote(stream_mode, shaper=shaper)) == canon(expected)


@pytest.mark.parametrize(
    ("stream_mode", "print_mode"), [("values", "updates"), (["updates"], ["values", "custom"]), ("custom", "custom")]
)
def test_print_mode_prints_as_local_prints(
    stream_mode: Mode, print_mode: Mode, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = local(stream_mode, print_mode=print_mode)
    printed = capsys.readouterr().out
    got = remote(stream_mode, shaper=Shaper(stream_mode, print_mode))
    assert canon(got) == canon(expected)
    assert printed and canon(capsys.readouterr().out) == canon(printed)


def test_the_modes_the_server_is_asked_for() -> None:
    # messages is messages-tuple on the server; updates always come (interrupts ride on them).
    assert server_modes(["values"]) == ("values", "updates")
    assert server_modes(["messages", "custom"]) == ("messages-tuple", "custom", "updates")
    assert server_modes(["updates", "updates", "debug"]) == ("updates", "debug")
    assert CLASSIC_MODES == {"values", "updates", "messages", "custom", "debug", "tasks", "checkpoints"}


def test_what_the_caller_did_not_ask_for_yields_nothing() -> None:
    shaper = Shaper("values")
    assert shaper.shape({"type": "updates", "ns": (), "data": {"n": {"x": 1}}}) == []
    assert shaper.shape({"type": "values", "ns": (), "data": {"x": 1}}) == [{"x": 1}]
    assert Shaper(["values"]).shape({"type": "values", "ns": (), "data": {"x": 1}}) == [("values", {"x": 1})]
    assert Shaper("values", "updates").modes() == ["values", "updates"]


def test_v2_parts_are_stream_part_dicts_with_their_interrupts() -> None:
    part = {"type": "values", "ns": ("sub:1",), "data": {"x": 1}}
    (shaped,) = Shaper("values", subgraphs=True, version="v2").shape(part)
    assert shaped == {"type": "values", "ns": ("sub:1",), "data": {"x": 1}, "interrupts": ()}


class TestOutputKeys:
    """``OutputKeys`` on its own: what a step wrote decides whether its values stream."""

    @staticmethod
    def step(keys: OutputKeys, writes: dict[str, Any], values: dict[str, Any]) -> tuple[bool, Any]:
        keys.saw({"type": "updates", "ns": (), "data": writes})
        return keys.values(values)

    def test_a_values_chunk_streams_after_a_step_that_wrote_an_output_key(self) -> None:
        keys = OutputKeys(["a"], written=["b"])
        assert keys.values({"a": 1, "b": 2}) == (False, None)  # the input wrote only "b"
        assert self.step(keys, {"n": {"a": 5}}, {"a": 5, "b": 2}) == (True, {"a": 5})
        assert self.step(keys, {"n": {"b": 3}}, {"a": 5, "b": 3}) == (False, None)
        # Several Sends of one node: one write each.
        assert self.step(keys, {"n": [{"b": 1}, {"a": 6}]}, {"a": 6, "b": 1}) == (True, {"a": 6})

    def test_one_key_streams_its_value_alone_and_interrupts_always_stream(self) -> None:
        keys = OutputKeys("a", written=["a"])
        assert keys.values({"a": 1, "b": 2}) == (True, 1)
        interrupt = {"__interrupt__": ("i",)}
        assert keys.values({"a": 1, **interrupt}) == (True, interrupt)
        assert OutputKeys(["a"]).values({"a": 1, **interrupt}) == (True, {"a": 1, **interrupt})

    def test_updates_keep_only_the_output_keys_each_node_wrote(self) -> None:
        keys = OutputKeys(["a"])
        update = {"n": {"a": 1, "b": 2}, "m": {"b": 3}, "t": "returned", "__interrupt__": ()}
        assert keys.updates(update) == {"n": {"a": 1}, "m": None, "t": "returned", "__interrupt__": ()}
        assert OutputKeys("a").updates({"n": {"a": 1}, "s": [{"a": 2}, {"b": 3}]}) == {"n": 1, "s": [2, None]}
        assert keys.updates("odd") == "odd"
