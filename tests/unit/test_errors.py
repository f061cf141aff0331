from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest

from remote_graph import Limits, RemoteGraph, RemoteProtocolError, errors
from remote_graph._core.failure import failure_from_state
from remote_graph.errors import RemoteRunError, exception_from_repr, remote_exception


def test_custom_exception_keeps_its_name_and_message() -> None:
    err = exception_from_repr("Boom('kaboom from node')")
    assert err is not None
    assert type(err).__name__ == "Boom" and str(err) == "kaboom from node"
    assert isinstance(err, RemoteRunError)


def test_builtin_exception_is_catchable_as_the_builtin() -> None:
    err = exception_from_repr("KeyError('x')")
    assert isinstance(err, KeyError) and isinstance(err, RemoteRunError)
    assert str(err) == str(KeyError("x"))
    with pytest.raises(ValueError):
        raise remote_exception("ValueError", "bad")


def test_same_type_name_gives_the_same_class() -> None:
    assert type(exception_from_repr("Boom('a')")) is type(exception_from_repr("Boom('b')"))


def test_text_that_is_not_a_repr() -> None:
    assert exception_from_repr("An internal error occurred") is None
    odd = exception_from_repr("Weird(<object at 0x1>)")
    assert odd is not None and "object at" in str(odd)


# --- pickling ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "builtin"),
    [
        ("Boom('kaboom')", "Boom", None),
        ("ValueError('bad')", "ValueError", ValueError),
        ("KeyError('k')", "KeyError", KeyError),
        ("mypkg.errors.Oops('deep', 3)", "Oops", None),
        ("TimeoutError('slow')", "TimeoutError", TimeoutError),
    ],
)
def test_a_rebuilt_exception_pickles_keeping_its_name_message_and_type(
    text: str, name: str, builtin: type | None
) -> None:
    err = exception_from_repr(text)
    assert err is not None
    back = pickle.loads(pickle.dumps(err))
    assert type(back).__name__ == name and str(back) == str(err) and back.args == err.args
    assert back.remote_type == err.remote_type and isinstance(back, RemoteRunError)
    if builtin is not None:
        assert isinstance(back, builtin)
    # The class's module exists: what tools that print or import it by name find.
    assert importlib.import_module(type(err).__module__) is errors


def test_a_rebuilt_exception_unpickles_in_a_process_that_never_saw_its_type() -> None:
    data = pickle.dumps([remote_exception("ValueError", "bad value"), remote_exception("app.Boom", "kaboom")])
    code = (
        "import pickle, sys\n"
        "items = pickle.loads(sys.stdin.buffer.read())\n"
        "print([(type(e).__name__, e.remote_type, str(e), isinstance(e, ValueError)) for e in items])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60, check=True)
    assert (
        done.stdout.decode().strip()
        == "[('ValueError', 'ValueError', 'bad value', True), ('Boom', 'app.Boom', 'kaboom', False)]"
    )


def test_odd_type_names_give_a_plain_remote_run_error() -> None:
    # Not a Python name: no class is made for it, the name is kept.
    err = remote_exception("not a type <name>", "odd")
    assert type(err) is RemoteRunError and err.remote_type == "not a type <name>"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is RemoteRunError and back.remote_type == "not a type <name>" and str(back) == "odd"
    # A builtin that cannot be built from one message keeps its name, not its base.
    decode = remote_exception("UnicodeDecodeError", "bad byte")
    assert type(decode).__name__ == "UnicodeDecodeError" and str(decode) == "bad byte"
    assert not isinstance(decode, UnicodeDecodeError)


# --- the registry of rebuilt types is bounded ---------------------------------------------------


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, type]:
    registry: dict[str, type] = {}
    monkeypatch.setattr(errors, "_CLASSES", registry)
    return registry


def test_past_the_limit_a_new_type_fails_the_run_with_a_protocol_error(fresh_registry: dict[str, type]) -> None:
    def failed(type_name: str) -> BaseException:
        state = {"tasks": [{"error": f"{type_name}('m')"}]}
        return failure_from_state(state, None, max_error_types=2)

    first, second = failed("One"), failed("Two")
    assert (type(first).__name__, type(second).__name__) == ("One", "Two")
    third = failed("Three")
    assert (
        isinstance(third, RemoteProtocolError) and "Limits.max_error_types (2)" in str(third) and "Three" in str(third)
    )
    assert len(fresh_registry) == 2
    # Names already kept still give their class.
    assert type(failed("One")) is type(first)
    # A server naming a new type in every failure grows nothing past the limit.
    for i in range(200):
        assert isinstance(failed(f"Made{i}"), RemoteProtocolError)
    assert len(fresh_registry) == 2


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_frame_chars"):
        Limits(max_frame_chars=0)
    with pytest.raises(ValueError, match="max_error_types"):
        Limits(max_error_types=True)
    with pytest.raises(TypeError, match="limits must be a remote_graph.Limits"):
        RemoteGraph("g", url="http://127.0.0.1:1", limits={"max_frame_chars": 1})  # type: ignore[arg-type]
