from __future__ import annotations

import pytest

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
