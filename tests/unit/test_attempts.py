"""A retried attempt of a run (its worker was lost) delivers only what it adds.

The server's retried attempt starts with a ``metadata`` frame naming it and
sends again, under new ids (and, on a v3 stream, with ``seq`` from 1 again),
what the lost attempt sent since the latest checkpoint: measured on the replica
stack (``tests/integration/test_replica_faults.py``). These tests script that
stream: the caller must see every event of the run once, in order.
"""

from __future__ import annotations

from typing import Any

import pytest

from remote_graph._core.attempts import AttemptFilter, attempt_number
from remote_graph._core.classic import CallView, ChunkReader
from remote_graph._core.classic_wire import ClassicWire
from remote_graph._core.schema import GraphSchemas
from remote_graph._core.state import RunStatus
from remote_graph._core.v3_wire import _fingerprint
from tests.unit.fake_run import EVERYTHING, RID, THREAD, Conn, FakeServer, Wire, drive, run, through
from tests.unit.test_join import joiner, starter, until, whole


def filtered(f: AttemptFilter[str], keys: str) -> str:
    return "".join(key for key in keys if f.feed(key))


# --- the filter ------------------------------------------------------------------------------


def attempts(*keys: str) -> list[str]:
    """What a filter delivers of each attempt in turn, numbered from 1."""
    f: AttemptFilter[str] = AttemptFilter()
    delivered = []
    for number, attempt in enumerate(keys, start=1):
        assert f.begin(number)
        delivered.append(filtered(f, attempt))
    return delivered


@pytest.mark.parametrize(
    ("lost", "retried", "news"),
    [
        # Resumed from the checkpoint after "W": "d", "e" again, then news.
        ("vabcWde", "Wdefg", "fg"),
        # Laid from "aaa"'s first "a", the whole attempt so far fits; from its last, only one.
        ("aaa", "aaab", "b"),
        # A model answering otherwise the second time: "c" fits, "x" fits nowhere;
        # from there on the attempt is news, "d" included.
        ("abcd", "cxd", "xd"),
        # Nothing fits: all news.
        ("abc", "xab", "xab"),
    ],
)
def test_a_retried_attempt_delivers_what_does_not_repeat_the_lost_one(lost: str, retried: str, news: str) -> None:
    assert attempts(lost, retried) == [lost, news]


def test_a_first_attempt_delivers_everything_even_what_repeats() -> None:
    assert attempts("aab") == ["aab"]


def test_a_third_attempt_is_laid_over_what_both_before_it_delivered() -> None:
    assert attempts("abc", "cde", "defg") == ["abc", "de", "fg"]


def test_a_metadata_frame_read_again_is_no_new_attempt() -> None:
    f: AttemptFilter[str] = AttemptFilter()
    assert f.begin(1)
    filtered(f, "ab")
    assert not f.begin(1)
    assert filtered(f, "ab") == "ab"
    f.begin(2)
    filtered(f, "bc")
    # A replay after a cut in attempt 2 brings its metadata frame again.
    assert not f.begin(2)
    assert filtered(f, "c") == "c"


def test_an_attempt_first_seen_later_has_nothing_to_repeat() -> None:
    # A join whose replay begins in attempt 2: nothing of attempt 1 was delivered here.
    f: AttemptFilter[str] = AttemptFilter()
    f.begin(2)
    assert filtered(f, "ab") == "ab"
    f.begin(3)
    assert filtered(f, "bc") == "c"


def test_only_the_last_events_kept_are_laid_over() -> None:
    f: AttemptFilter[int] = AttemptFilter(keep=3)
    f.begin(1)
    assert [k for k in range(10) if f.feed(k)] == list(range(10))
    f.begin(2)
    # 7, 8, 9 are kept (at least ``keep``); older repeats are delivered again.
    assert [k for k in (7, 8, 9, 10) if f.feed(k)] == [10]
    f.begin(3)
    assert [k for k in (0, 1) if f.feed(k)] == [0, 1]


@pytest.mark.parametrize(
    ("metadata", "number"),
    [
        ({"run_id": RID, "attempt": 2}, 2),
        ({"run_id": RID}, None),
        ({"attempt": "2"}, None),
        ({"attempt": True}, None),
        ({"attempt": 0}, None),
        ([2], None),
        (None, None),
    ],
)
def test_the_attempt_a_metadata_frame_names(metadata: Any, number: int | None) -> None:
    assert attempt_number(metadata) == number


# --- through the run driver --------------------------------------------------------------------


def retried_v3() -> list[Any]:
    """A v3 run of two steps whose worker was lost in the second: attempt 2
    resumes from the checkpoint after step one, its seq from 1 again, its
    timestamps new. Local delivers ticks 0 to 6."""
    w = Wire().metadata()

    def event(method: str, data: Any, seq: int, stamp: int, **extra: Any) -> None:
        w.tick()
        w.seq = stamp - 1  # the fake sets timestamp = seq counter
        w.event(method, data, seq=seq, **extra)

    event("values", {"log": []}, 1, 1, interrupts=[])
    for n, i in enumerate(range(3), start=2):
        event("custom", {"tick": i}, n, n)
    event("updates", {"one": {"log": ["one"]}}, 5, 5)
    event("values", {"log": ["one"]}, 6, 6, interrupts=[])
    for n, i in enumerate(range(3, 5), start=7):
        event("custom", {"tick": i}, n, n)
    # Attempt 2, from the checkpoint after "one": its values, ticks 3 and 4 again, then news.
    w.tick().metadata({"run_id": RID, "attempt": 2})
    event("values", {"log": ["one"]}, 1, 101, interrupts=[])
    for n, i in enumerate(range(3, 7), start=2):
        event("custom", {"tick": i}, n, 100 + n)
    event("updates", {"two": {"log": ["two"]}}, 6, 106)
    event("values", {"log": ["one", "two"]}, 7, 107, interrupts=[])
    return w.frames


def ticks(parts: list[dict[str, Any]]) -> list[int]:
    return [p["data"]["tick"] for p in parts if p["type"] == "custom"]


def test_a_retried_v3_attempt_delivers_every_event_once() -> None:
    frames = retried_v3()
    _, out = run(FakeServer(frames))
    assert out.error is None
    assert ticks(out.parts) == list(range(7))
    values = [p["data"] for p in out.parts if p["type"] == "values"]
    assert values == [{"log": []}, {"log": ["one"]}, {"log": ["one", "two"]}]


@pytest.mark.parametrize("after", [3, 10, 12, 14])
def test_a_retried_v3_attempt_cut_anywhere_delivers_every_event_once(after: int) -> None:
    # Cut after ``after`` frames: before attempt 2, at its metadata frame, in its repeats, in its news.
    frames = retried_v3()
    server = FakeServer(frames, [Conn(cut=through(frames, after))])
    driver, out = run(server)
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert ticks(out.parts) == list(range(7))


@pytest.mark.parametrize("k", range(1, 13))
def test_a_v3_join_from_any_cursor_delivers_the_rest_once_but_a_lost_attempt_s_repeats(k: int) -> None:
    frames = retried_v3()
    reference = whole(frames, "v3")
    assert ticks(reference) == list(range(7))
    first, server = starter(frames, "v3")
    seen = until(first, server, k)
    cursor = first.cursor
    assert cursor is not None
    later = FakeServer(frames, record=server.record_extra, produced=EVERYTHING)
    out = drive(joiner(later, cursor), later)
    assert out.error is None
    if k <= 8:
        # The cursor is in attempt 1; nothing of it was delivered to this join to
        # lay attempt 2 over, so attempt 2 comes whole: its values and ticks 3, 4 again.
        assert ticks(seen + out.parts) == [0, 1, 2, 3, 4, 3, 4, 5, 6]
    else:
        assert seen + out.parts == reference


def classic_wire() -> ClassicWire:
    view = CallView(server_thread="st", thread_name="lt")
    return ClassicWire(ChunkReader(view, GraphSchemas()), THREAD)


def test_a_retried_classic_attempt_delivers_every_chunk_once() -> None:
    w = Wire().metadata()
    for i in range(3):
        w.tick().chunk("custom", {"tick": i})
    w.tick().chunk("updates", {"one": {"log": ["one"]}})
    for i in range(3, 5):
        w.tick().chunk("custom", {"tick": i})
    w.tick().metadata({"run_id": RID, "attempt": 2})
    for i in range(3, 7):
        w.tick().chunk("custom", {"tick": i})
    w.tick().chunk("updates", {"two": {"log": ["two"]}})
    driver, out = run(FakeServer(w.frames), wire=classic_wire())
    assert out.error is None and driver.status is RunStatus.COMPLETED
    assert ticks(out.parts) == list(range(7))
    assert [p["data"] for p in out.parts if p["type"] == "updates"] == [
        {"one": {"log": ["one"]}},
        {"two": {"log": ["two"]}},
    ]


def test_a_v3_event_is_keyed_by_its_frame_but_for_its_timestamp_and_seq() -> None:
    def frame(method: str = "custom", ns: str = "[]", stamp: int = 1, data: str = '{"tick":0}', seq: int = 2) -> str:
        # As the server writes it (compact JSON).
        params = f'{{"namespace":{ns},"timestamp":{stamp},"data":{data}}}'
        return f'{{"type":"event","method":"{method}","params":{params},"seq":{seq}}}'

    key = _fingerprint(frame())
    assert _fingerprint(frame(stamp=1796226081906, seq=9)) == key
    assert _fingerprint(frame(method="values")) != key
    assert _fingerprint(frame(ns='["sub:1"]')) != key
    assert _fingerprint(frame(data='{"tick":1}')) != key
    # A frame of another shape is keyed whole: never the same as a different one.
    assert _fingerprint('{"type":"event","method":"custom"}') != _fingerprint('{"type":"event","method":"values"}')
