"""Every langgraph / SDK / langchain-core internal the package relies on is still there.

``remote_graph._private`` is the only module that imports private names or
touches private attributes of those packages' objects. Here every name it
imports must resolve, every function it defines works on real objects of the
installed releases (a test failing here names the internal that moved), and no
other module touches a private attribute that is not remote_graph's own.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import inspect
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypedDict
from uuid import uuid4

import pytest
from langchain_core.callbacks import CallbackManager
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.stream import StreamChannel, StreamTransformer
from langgraph.stream.run_stream import AsyncGraphRunStream, GraphRunStream
from langgraph.stream.transformers import MessagesTransformer, UpdatesTransformer, ValuesTransformer
from langgraph.types import Command, interrupt

import remote_graph
from remote_graph import _private

SRC = Path(remote_graph.__file__).parent

# The packages whose internals only ``_private`` may touch (the HTTP stack too).
UPSTREAM = ("langgraph", "langgraph_sdk", "langchain_core", "httpx", "httpcore", "h11", "anyio")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def has_internal(owner: object, path: str, user: str) -> None:
    """Fail, naming the internal, when ``owner`` no longer has attribute ``path`` (dotted)."""
    message = f"{type(owner).__qualname__}.{path} is gone from the installed release (_private.{user} uses it)"
    target = owner
    for part in path.split("."):
        assert hasattr(target, part), message
        target = getattr(target, part)


def parts(*kinds: str) -> Iterator[dict[str, Any]]:
    """v2 stream parts, as a local graph's stream gives a run stream: one per kind, numbered."""
    for i, kind in enumerate(kinds):
        yield {"type": kind, "ns": (), "data": {"i": i}}


async def aparts(*kinds: str) -> AsyncIterator[dict[str, Any]]:
    for part in parts(*kinds):
        yield part


class Projecting(StreamTransformer):
    """Projects two unnamed channels, ``a`` and ``b``, which the tests push to."""

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.a: StreamChannel[Any] = StreamChannel()
        self.b: StreamChannel[Any] = StreamChannel()

    def init(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b}

    def process(self, event: Any) -> bool:
        return True


# --- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", _private.__all__)
def test_each_private_name_resolves(name: str) -> None:
    assert getattr(_private, name) is not None


def _is_private_import(module: str | None, names: list[str]) -> bool:
    return any(_is_private(part) for part in (module or "").split(".")) or any(_is_private(name) for name in names)


def test_no_other_module_imports_private_names() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in UPSTREAM:
                if _is_private_import(node.module, [alias.name for alias in node.names]):
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno} from {node.module} import ...")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in UPSTREAM and _is_private_import(alias.name, []):
                        offenders.append(f"{path.relative_to(SRC)}:{node.lineno} import {alias.name}")
    assert offenders == []


def test_private_module_lists_everything_private_it_imports_and_what_it_defines() -> None:
    tree = ast.parse((SRC / "_private.py").read_text())
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[0] in UPSTREAM
        and _is_private_import(node.module, [a.name for a in node.names])
        for alias in node.names
    }
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    }
    assert imported | defined == set(_private.__all__)


# --- the guard: no other module reaches into langgraph's, the SDK's or langchain-core's objects ---

# A named tuple's documented API (StateSnapshot, PregelTask are named tuples),
# underscored only so that it cannot clash with field names.
NAMEDTUPLE_API = frozenset({"_asdict", "_field_defaults", "_fields", "_make", "_replace"})


def _defined_names(tree: ast.AST, receivers: tuple[str, ...] | None = None) -> set[str]:
    """The private names a source defines: functions, classes, assignments and attribute stores.

    With ``receivers``, of the attribute stores only those on these names (``self``, ``cls``).
    """
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if receivers is None or (isinstance(node.value, ast.Name) and node.value.id in receivers):
                found.add(node.attr)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(target.id for target in targets if isinstance(target, ast.Name))
    return {name for name in found if _is_private(name)}


def _our_modules() -> list[tuple[Path, str]]:
    """Every module of the package but ``_private``, with its dotted name."""
    return [
        (path, ".".join(("remote_graph", *path.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__"))
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "_private.py"
    ]


@functools.cache
def upstream_names() -> frozenset[str]:
    """Every private name the upstream packages define, anywhere in them."""
    names: set[str] = set()
    for package in UPSTREAM:
        for directory in importlib.import_module(package).__path__:
            for path in Path(directory).rglob("*.py"):
                names |= _defined_names(ast.parse(path.read_text(encoding="utf-8")))
    return frozenset(names)


@functools.cache
def own_names() -> frozenset[str]:
    """Every private name remote_graph defines outside ``_private``."""
    names: set[str] = set()
    for path, _ in _our_modules():
        names |= _defined_names(ast.parse(path.read_text(encoding="utf-8")))
    return frozenset(names)


@functools.cache
def _upstream_class_names(cls: type) -> frozenset[str]:
    """The private names an upstream class defines: in its body, or on ``self`` in its methods."""
    names = {name for name in vars(cls) if _is_private(name)}
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # no source: its class dict is all there is
        return frozenset(names)
    return frozenset(names | _defined_names(ast.parse(source), ("self", "cls")))


@functools.cache
def _our_classes() -> tuple[type, ...]:
    found: list[type] = []
    for _, name in [*_our_modules(), (SRC / "_private.py", "remote_graph._private")]:
        module = importlib.import_module(name)
        found.extend(v for v in vars(module).values() if inspect.isclass(v) and v.__module__ == name)
    return tuple(found)


def _inherited(cls: type) -> frozenset[str]:
    """The private names upstream bases give ``cls``, or any of our classes built on it (a mixin's hosts)."""
    names: set[str] = set()
    for host in _our_classes():
        if cls in host.__mro__:
            for base in host.__mro__:
                if base.__module__.split(".")[0] in UPSTREAM:
                    names |= _upstream_class_names(base)
    return frozenset(names)


def _private_getattr(node: ast.AST) -> str | None:
    """The name in ``getattr(x, "_name")`` (or ``hasattr``, ``setattr``, ``delattr``), if private."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
        and _is_private(node.args[1].value)
    ):
        return node.args[1].value
    return None


def _touches(tree: ast.Module, module: object) -> Iterator[tuple[int, str, str, frozenset[str] | None]]:
    """``(line, name, shown, inherited)`` for each private attribute a module defines, reads or writes.

    ``inherited`` is for the names on ``self`` / ``cls`` and a class body's
    own: the names the class's upstream bases define. It is ``None`` for a
    name read off any other object, whose type the source does not tell.
    """
    on_self: set[int] = set()
    for class_node in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        inherited = _inherited(getattr(module, class_node.name))
        for item in class_node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _is_private(item.name):
                    yield item.lineno, item.name, f"def {item.name}", inherited
                static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in item.decorator_list)
                if static or not item.args.args:
                    continue
                me = item.args.args[0].arg
                for node in ast.walk(item):
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == me:
                        on_self.add(id(node))
                        if _is_private(node.attr):
                            yield node.lineno, node.attr, ast.unparse(node), inherited
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                    if isinstance(target, ast.Name) and _is_private(target.id):
                        yield target.lineno, target.id, target.id, inherited
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in on_self and _is_private(node.attr):
            yield node.lineno, node.attr, ast.unparse(node), None
        elif (name := _private_getattr(node)) is not None:
            yield getattr(node, "lineno", 0), name, ast.unparse(node), None


def private_touches() -> list[str]:
    """Where a module other than ``_private`` touches a private attribute that is not remote_graph's own.

    On ``self`` (and in a class body) the class is known: a name one of its
    langgraph / SDK / langchain-core bases defines is theirs, read, written or
    overridden; another is ours if remote_graph defines it. Off any other
    object only the name is known: one the upstream packages define anywhere
    is theirs. So a private name of ours that other objects read must be one
    no upstream package uses.
    """
    upstream, ours = upstream_names(), own_names()
    found: set[tuple[str, int, str]] = set()
    for path, name in _our_modules():
        module = importlib.import_module(name)
        where = str(path.relative_to(SRC))
        for line, attr, shown, inherited in _touches(ast.parse(path.read_text(encoding="utf-8")), module):
            if attr in NAMEDTUPLE_API:
                continue
            if inherited is not None and attr in inherited:
                found.add((where, line, f"{shown} ({attr} is an upstream base class's)"))
            elif inherited is None and attr in upstream:
                found.add((where, line, f"{shown} ({attr} is a name langgraph, the SDK or langchain-core define)"))
            elif attr not in ours:
                found.add((where, line, f"{shown} ({attr} is not defined in remote_graph)"))
    return [f"{where}:{line}: {what}" for where, line, what in sorted(found)]


# It parses every module of the package and of langgraph: slow where lanes share the cores.
@pytest.mark.timeout(360)
def test_no_other_module_touches_an_upstream_private_attribute() -> None:
    touches = private_touches()
    assert touches == [], "touch these through remote_graph._private:\n" + "\n".join(touches)


def test_the_guard_sees_a_touch_on_self_and_off_another_object() -> None:
    source = textwrap.dedent(
        """
        class RemoteMessagesTransformer:
            def process(self, event):
                self._nodeless.clear()  # ours
                stream = self._by_run.get("r")  # MessagesTransformer's
                stream._node = "n"  # ChatModelStream's
                return event._replace()  # a named tuple's API
        """
    )
    from remote_graph import transformers

    touches = [(name, inherited is not None) for _, name, _, inherited in _touches(ast.parse(source), transformers)]
    assert touches == [("_nodeless", True), ("_by_run", True), ("_node", False), ("_replace", False)]
    inherited = _inherited(transformers.RemoteMessagesTransformer)
    assert "_by_run" in inherited and "_nodeless" not in inherited
    assert "_node" in upstream_names() and "_nodeless" in own_names()


# --- the stream mux --------------------------------------------------------------------------------


def test_attach_projection_wires_a_late_channel_like_a_registered_one() -> None:
    class Owner(StreamTransformer):
        def init(self) -> dict[str, object]:
            return {}

        def process(self, event: object) -> bool:
            return True

    owner = Owner()
    mux = _private.StreamMux(factories=[], is_async=False)
    channel: StreamChannel[int] = StreamChannel()
    for internal in ("_bind", "_bind_mux", "_request_more", "_arequest_more"):
        has_internal(channel, internal, "attach_projection")
    for internal in ("_pump_fn", "_apump_fn", "_channels", "_projection_owners", "_transformer_by_key"):
        has_internal(mux, internal, "attach_projection")
    pumped: list[bool] = []

    def pump() -> bool:
        pumped.append(True)
        return False

    mux.bind_pump(pump)
    _private.attach_projection(mux, "late", channel, owner)
    assert mux.extensions["late"] is channel
    assert mux.transformer_by_key("late") is owner
    iterator = iter(channel)
    channel.push(1)
    assert next(iterator) == 1
    mux.push({"type": "event", "method": "values", "params": {"namespace": [], "timestamp": 0, "data": {}}})
    mux.close()
    assert list(iterator) == [] and pumped == []  # closed with the mux, so it asks the run for nothing more
    late: StreamChannel[int] = StreamChannel()
    other = _private.StreamMux(factories=[], is_async=False)
    other.bind_pump(pump)
    _private.attach_projection(other, "late", late, owner)
    assert list(late) == [] and pumped == [True]  # an open channel drives the run's pump


def test_mux_transformers_lists_the_registered_transformers_in_order() -> None:
    mux = _private.StreamMux(factories=[ValuesTransformer, UpdatesTransformer], is_async=False)
    has_internal(mux, "_transformers", "mux_transformers")
    found = _private.mux_transformers(mux)
    assert [type(t) for t in found] == [ValuesTransformer, UpdatesTransformer]
    assert found[0] is mux.transformer_by_key("values") and found[1] is mux.transformer_by_key("updates")


def test_mux_error_is_the_failure_output_raises() -> None:
    mux = _private.StreamMux(factories=[ValuesTransformer], is_async=False)
    has_internal(mux, "_events._error", "mux_error")
    assert _private.mux_error(mux) is None
    error = RuntimeError("boom")
    run = GraphRunStream(iter(()), mux)
    mux.fail(error)
    assert _private.mux_error(mux) is error
    with pytest.raises(RuntimeError) as raised:
        run.output  # noqa: B018
    assert raised.value is error
    closed = _private.StreamMux(factories=[ValuesTransformer], is_async=False)
    closed.close()
    assert _private.mux_error(closed) is None


# --- run streams -----------------------------------------------------------------------------------


def test_pump_of_is_the_pump_the_mux_is_bound_to() -> None:
    mux = _private.StreamMux(factories=[ValuesTransformer], is_async=False)
    run = GraphRunStream(parts("values", "values"), mux)
    has_internal(run, "_pump_next", "pump_of")
    pump = _private.pump_of(run)
    assert pump == mux._pump_fn  # what langgraph's own cursors call
    assert _private.latest_values(run) is None
    assert pump() and _private.latest_values(run) == {"i": 0}
    assert pump() and _private.latest_values(run) == {"i": 1}
    assert not pump() and not pump()
    assert run.output == {"i": 1}


class ThreeWays:
    """An async source of ``values`` parts, each offered one way, as ``ways`` says.

    ``r``: ready without I/O (``take_ready``); ``p``: after the read pause
    (``take_after_pause``, which waits for ``gate`` when one is set); ``t``:
    only through ``__anext__``, which upstream's step calls in a task. Like
    the remote source, a pause that ends after ``aclose()`` gives nothing.
    """

    def __init__(self, ways: str, *, error: Exception | None = None) -> None:
        self.items = list(parts(*["values"] * len(ways)))
        self.ways = list(ways)
        self.error = error
        self.gate: asyncio.Event | None = None
        self.pausing = asyncio.Event()
        self.counts = {"r": 0, "p": 0, "t": 0}
        self.closed = 0

    def _next(self, way: str) -> dict[str, Any] | None:
        if self.closed or not self.items or self.ways[0] != way:
            return None
        self.ways.pop(0)
        self.counts[way] += 1
        return self.items.pop(0)

    def __aiter__(self) -> ThreeWays:
        return self

    async def __anext__(self) -> dict[str, Any]:
        part = self._next("t")
        if part is None:
            raise StopAsyncIteration
        return part

    def take_ready(self) -> dict[str, Any] | None:
        return self._next("r")

    async def take_after_pause(self) -> dict[str, Any] | None:
        if self.closed or not self.ways or self.ways[0] != "p":
            return None
        self.pausing.set()
        await (self.gate.wait() if self.gate is not None else asyncio.sleep(0))
        if self.error is not None:
            raise self.error
        return self._next("p")

    async def aclose(self) -> None:
        self.closed += 1
        if self.gate is not None:
            self.gate.set()


def pumped(source: ThreeWays) -> _private.ReadyPartPump:
    mux = _private.StreamMux(factories=[ValuesTransformer], is_async=True)
    return _private.ReadyPartPump(source, mux)  # type: ignore[arg-type]


async def test_ready_part_pump_pushes_every_part_in_order_with_a_task_only_where_one_is_needed() -> None:
    source = ThreeWays("rptprrpt")
    run = pumped(source)
    for name in (
        "_graph_aiter",
        "_pumping",
        "_exhausted",
        "_pump_cond",
        "_anext_task",
        "_observe_event",
        "_mux.apush",
        "_mux.afail",
    ):
        has_internal(run, name, "ReadyPartPump")
    assert run._mux._apump_fn == run._apump_next  # the override is what cursors call
    started = []
    real = asyncio.ensure_future

    def counting(coro: Any) -> Any:
        started.append(coro)
        return real(coro)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(asyncio, "ensure_future", counting)
        assert [item["i"] async for item in run.values] == list(range(8))
    assert source.counts == {"r": 3, "p": 3, "t": 2}
    # Upstream's task per pull: the two parts only ``__anext__`` gives, and the end.
    assert len(started) == 3
    assert await run.output() == {"i": 7}


async def test_an_abort_during_the_pause_closes_the_source_and_drops_what_the_pause_brings() -> None:
    source = ThreeWays("rpr")
    source.gate = asyncio.Event()
    run = pumped(source)
    seen: list[int] = []

    async def consume() -> None:
        async for item in run.values:
            seen.append(item["i"])

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(source.pausing.wait(), 5)
    await asyncio.wait_for(run.abort(), 5)  # no task to cancel: the source is closed at once
    await asyncio.wait_for(consumer, 5)
    assert seen == [0] and source.closed == 1 and source.counts["p"] == 0
    assert not run._pumping


async def test_a_caller_cancelled_during_the_pause_gets_the_cancel_and_frees_the_pump() -> None:
    source = ThreeWays("rpp")
    source.gate = asyncio.Event()
    run = pumped(source)
    iterator = run.values.__aiter__()
    assert (await anext(iterator))["i"] == 0
    pulling = asyncio.create_task(anext(iterator))
    await asyncio.wait_for(source.pausing.wait(), 5)
    pulling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pulling
    assert not run._pumping  # abort(), or another projection's pull, is not left waiting for this one
    await asyncio.wait_for(run.abort(), 5)
    assert source.closed == 1 and source.counts["p"] == 0


async def test_a_task_waiting_on_the_pump_is_woken_by_the_step_it_waited_for() -> None:
    source = ThreeWays("rpr")
    source.gate = asyncio.Event()
    run = pumped(source)
    assert _private._has_waiters(run._pump_cond) is False
    iterator = run.values.__aiter__()
    assert (await anext(iterator))["i"] == 0
    pulling = asyncio.create_task(anext(iterator))
    await asyncio.wait_for(source.pausing.wait(), 5)
    # Another consumer asks for progress while the first one pumps: it waits on
    # the pump's condition, and the step that lands wakes it.
    waiting = asyncio.create_task(run._apump_next())
    await asyncio.sleep(0)
    assert _private._has_waiters(run._pump_cond)
    source.gate.set()
    assert (await asyncio.wait_for(pulling, 5))["i"] == 1
    assert await asyncio.wait_for(waiting, 5) is True
    assert not _private._has_waiters(run._pump_cond)


async def test_a_failure_during_the_pause_fails_the_run() -> None:
    run = pumped(ThreeWays("rp", error=ValueError("lost")))
    with pytest.raises(ValueError, match="lost"):
        await run.output()


async def test_ready_part_pump_fails_the_run_when_a_ready_parts_push_raises() -> None:
    class Boom(StreamTransformer):
        def init(self) -> dict[str, Any]:
            return {}

        def process(self, event: Any) -> bool:
            if event["params"]["data"] == {"i": 1}:
                raise ValueError("boom")
            return True

    mux = _private.StreamMux(factories=[ValuesTransformer, Boom], is_async=True)
    run = _private.ReadyPartPump(ThreeWays("trt"), mux)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="boom"):
        await run.output()


async def test_apump_of_is_the_pump_the_async_mux_is_bound_to() -> None:
    mux = _private.StreamMux(factories=[ValuesTransformer], is_async=True)
    run = AsyncGraphRunStream(aparts("values", "updates"), mux)
    has_internal(run, "_apump_next", "apump_of")
    has_internal(run, "_latest", "latest_values")
    pump = _private.apump_of(run)
    assert pump == mux._apump_fn
    assert await pump() and _private.latest_values(run) == {"i": 0}
    assert await pump() and _private.latest_values(run) == {"i": 0}  # not a values event
    assert not await pump()
    assert await run.output() == {"i": 0}


# --- stream channels -------------------------------------------------------------------------------


def test_a_claimed_channel_buffers_items_and_takes_no_other_subscriber() -> None:
    projecting = Projecting()
    _private.StreamMux(transformers=[projecting], is_async=False)
    a = projecting.a
    has_internal(a, "_subscribed", "claim_channel, release_channel")
    assert _private.claim_channel(a) and not _private.claim_channel(a)
    with pytest.raises(RuntimeError, match="already has a subscriber"):
        iter(a)
    a.push(1)
    _private.release_channel(a)
    cursor = iter(a)  # free again for a cursor, which finds what was pushed while claimed
    assert next(cursor) == 1


def test_take_earliest_takes_items_in_push_order_across_channels() -> None:
    projecting = Projecting()
    mux = _private.StreamMux(transformers=[projecting], is_async=False)
    channels = {"a": projecting.a, "b": projecting.b}
    for internal in ("_items", "_closed", "_error"):
        has_internal(projecting.a, internal, "take_earliest, mark_drained")
    projecting.a.push("dropped")  # no subscriber yet: not buffered, as langgraph's channels do
    assert _private.claim_channel(projecting.a) and _private.claim_channel(projecting.b)
    done: set[str] = set()
    assert _private.take_earliest(channels, done) is None
    for name, item in [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2")]:
        channels[name].push(item)
    taken = [_private.take_earliest(channels, done) for _ in range(5)]
    assert taken == [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2"), None] and done == set()
    projecting.b.push("b3")
    mux.close()
    assert _private.take_earliest(channels, done) == ("b", "b3")  # closed, its buffer still read
    assert done == {"a"}
    assert _private.take_earliest(channels, done) is None and done == {"a", "b"}


def test_a_failed_channel_raises_once_its_buffer_is_read() -> None:
    projecting = Projecting()
    mux = _private.StreamMux(transformers=[projecting], is_async=False)
    channels = {"a": projecting.a, "b": projecting.b}
    for channel in channels.values():
        assert _private.claim_channel(channel)
    projecting.a.push("last")
    error = ValueError("failed")
    mux.fail(error)
    done: set[str] = set()
    assert _private.take_earliest({"a": projecting.a}, done) == ("a", "last")
    with pytest.raises(ValueError) as raised:
        _private.take_earliest(channels, done)
    assert raised.value is error
    with pytest.raises(ValueError):
        _private.mark_drained(channels, done)


def test_mark_drained_ends_the_empty_channels_when_the_run_is_over() -> None:
    projecting = Projecting()
    _private.StreamMux(transformers=[projecting], is_async=False)
    channels = {"a": projecting.a, "b": projecting.b}
    for channel in channels.values():
        assert _private.claim_channel(channel)
    projecting.b.push("pending")
    done: set[str] = set()
    _private.mark_drained(channels, done)  # not closed: a pump that found no event ends them too
    assert done == {"a"}
    assert _private.take_earliest(channels, done) == ("b", "pending")
    _private.mark_drained(channels, done)
    assert done == {"a", "b"}


# --- transformers ----------------------------------------------------------------------------------


def test_a_mux_aware_transformer_hears_its_mux_when_registered() -> None:
    heard: list[Any] = []

    class Listening(_private.MuxAwareTransformer):
        def init(self) -> dict[str, Any]:
            return {}

        def registered(self, mux: _private.StreamMux) -> None:
            heard.append(mux)

    assert hasattr(StreamTransformer, "_on_register"), (
        "StreamTransformer._on_register is gone; remote_graph._private.MuxAwareTransformer overrides it"
    )
    mux = _private.StreamMux(factories=[Listening], is_async=False)
    assert heard == [mux], "StreamMux no longer calls StreamTransformer._on_register after registering"


def messages_event(payload: dict[str, Any], run_id: str) -> Any:
    return {
        "type": "event",
        "method": "messages",
        "params": {"namespace": [], "timestamp": 0, "data": (payload, {"run_id": run_id, "langgraph_node": "first"})},
    }


def test_message_stream_of_run_is_the_handle_the_messages_projection_got() -> None:
    mux = _private.StreamMux(factories=[MessagesTransformer], is_async=False)
    transformer = mux.transformer_by_key("messages")
    assert isinstance(transformer, MessagesTransformer)
    has_internal(transformer, "_by_run", "message_stream_of_run")
    handles = iter(mux.extensions["messages"])
    mux.push(messages_event({"event": "message-start", "role": "ai", "message_id": "m1"}, "run-1"))
    stream = _private.message_stream_of_run(transformer, "run-1")
    assert stream is not None and stream is next(handles)
    assert _private.message_stream_of_run(transformer, "run-2") is None
    has_internal(stream, "_node", "set_message_node")
    assert stream.node == "first"
    _private.set_message_node(stream, "second")
    assert stream.node == "second"
    mux.push(messages_event({"event": "message-finish"}, "run-1"))
    assert _private.message_stream_of_run(transformer, "run-1") is None  # closed with its message


# --- a parent task's scratchpad and messages handlers -----------------------------------------------


class Counted(TypedDict, total=False):
    seen: list[Any]


def test_subgraph_count_and_null_resume_on_a_real_tasks_scratchpad() -> None:
    record: list[tuple[Any, ...]] = []

    def node(state: Counted, config: RunnableConfig) -> Counted:
        scratchpad = config["configurable"][_private.CONFIG_KEY_SCRATCHPAD]
        assert isinstance(scratchpad, _private.PregelScratchpad)
        for internal in ("subgraph_counter", "get_null_resume"):
            has_internal(scratchpad, internal, "subgraph_count / null_resume")
        counts = (_private.subgraph_count(scratchpad), _private.subgraph_count(scratchpad))
        peeked = _private.null_resume(scratchpad, False)
        if peeked is None:
            interrupt("resume me")
        taken = _private.null_resume(scratchpad, True)
        record.append((counts, peeked, taken, _private.null_resume(scratchpad, True)))
        return {}

    builder = StateGraph(Counted)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config)
    assert record == []
    graph.invoke(Command(resume="yes"), config)
    # Numbers from 0 in each task; the resume value can be taken once.
    assert record == [((0, 1), "yes", "yes", None)]


@pytest.mark.parametrize("subgraphs", [False, True])
@pytest.mark.parametrize("checkpoint_ns", ["", "child:1", "child:1|grandchild:2", "other:3"])
def test_messages_handler_emits_as_the_handler_decides(subgraphs: bool, checkpoint_ns: str) -> None:
    from langgraph.pregel._messages import graph_namespace

    handler = _private.StreamMessagesHandler(lambda chunk: None, subgraphs, parent_ns=("child:1",))
    has_internal(handler, "subgraphs", "messages_handler_emits")
    has_internal(handler, "parent_ns", "messages_handler_emits")
    metadata = {"langgraph_checkpoint_ns": f"{checkpoint_ns}|model:9" if checkpoint_ns else "model:9"}
    run_id = uuid4()
    handler.on_chat_model_start({}, [[]], run_id=run_id, metadata=dict(metadata))
    emits = run_id in handler.metadata  # the handler took the model's run: it will emit its tokens
    assert _private.messages_handler_emits(handler, graph_namespace(metadata)) is emits


def test_a_message_marked_seen_is_not_emitted_again_by_the_handler() -> None:
    emitted: list[Any] = []
    handler = _private.StreamMessagesHandler(emitted.append, True)
    has_internal(handler, "seen", "messages_handler_seen")
    run_id = uuid4()
    metadata = {"langgraph_node": "node", "langgraph_checkpoint_ns": "node:1"}
    handler.on_chain_start({}, {}, run_id=run_id, metadata=metadata, name="node")
    _private.messages_handler_seen(handler).add("streamed")
    handler.on_chain_end({"messages": [AIMessage("a", id="streamed"), AIMessage("b", id="new")]}, run_id=run_id)
    assert [chunk[2][0].id for chunk in emitted] == ["new"]
    assert {"streamed", "new"} <= _private.messages_handler_seen(handler)


# --- a parent's astream_events ---------------------------------------------------------------------


async def test_events_handler_finds_the_handler_among_callbacks() -> None:
    handler = _private.AstreamEventsHandler()
    assert _private.events_handler([handler]) is handler
    assert _private.events_handler(CallbackManager(handlers=[handler])) is handler
    assert _private.events_handler(None) is None and _private.events_handler([]) is None


def test_relayed_elsewhere_names_the_handlers_that_stand_for_a_parents_streams() -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    assert _private.relayed_elsewhere(_private.StreamMessagesHandler(lambda _: None, False))
    assert _private.relayed_elsewhere(_private.AstreamEventsHandler())
    assert _private.relayed_elsewhere(_private.StreamToolCallHandler(lambda _: None, False))
    assert not _private.relayed_elsewhere(BaseCallbackHandler())


async def test_send_event_files_an_event_under_the_parent_run() -> None:
    handler = _private.AstreamEventsHandler(exclude_names=["hidden"])
    for internal in ("_get_parent_ids", "_send"):
        has_internal(handler, internal, "send_event")
    root, parent = uuid4(), uuid4()
    await handler.on_chain_start({}, {}, run_id=root, name="root")
    await handler.on_chain_start({}, {}, run_id=parent, parent_run_id=root, name="node")
    event: dict[str, Any] = {
        "event": "on_chain_stream",
        "name": "remote",
        "run_id": "r",
        "parent_ids": ["remote-root"],
        "tags": [],
        "metadata": {},
        "data": {},
    }
    _private.send_event(handler, event, "chain", parent)
    _private.send_event(handler, {**event, "name": "hidden", "parent_ids": []}, "chain", parent)
    await handler.send_stream.aclose()
    sent = [e async for e in handler.receive_stream]
    assert [e["name"] for e in sent] == ["root", "node", "remote"]
    assert sent[-1]["parent_ids"] == [str(root), str(parent), "remote-root"]


def test_drawable_graph_is_what_upstreams_get_graph_makes_of_the_same_answer() -> None:
    from types import SimpleNamespace

    from langgraph.pregel.remote import RemoteGraph as UpstreamRemoteGraph

    has_internal(UpstreamRemoteGraph, "_get_drawable_nodes", "drawable_graph")
    answer = {
        "nodes": [
            {"id": "__start__", "type": "schema", "data": "__start__"},
            {"id": "agent", "type": "runnable", "data": {"id": ["x"], "name": "agent"}, "metadata": {"m": 1}},
            {"id": "__end__", "type": "schema", "data": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": "agent"},
            {"source": "agent", "target": "__end__", "conditional": True},
        ],
    }
    client = SimpleNamespace(assistants=SimpleNamespace(get_graph=lambda **_: answer))
    upstream = UpstreamRemoteGraph("g", sync_client=client)  # type: ignore[arg-type]
    theirs = upstream.get_graph()
    ours = _private.drawable_graph(upstream, answer)
    assert ours.nodes == theirs.nodes and ours.edges == theirs.edges
