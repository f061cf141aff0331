"""Recognising a stream's ids without comparing them."""

from __future__ import annotations

from remote_graph._core import event_ids
from remote_graph._core.event_ids import IdAge, SeenIds


def test_an_id_is_new_newest_or_older_by_delivery_not_by_sorting() -> None:
    ids = SeenIds()
    assert [ids.age(i) for i in ("run_event_9", "run_event_10", "run_event_10", "run_event_9")] == [
        IdAge.NEW,
        IdAge.NEW,
        IdAge.NEWEST,
        IdAge.OLDER,
    ]
    assert ids.newest == "run_event_10"


def test_a_connection_starts_from_the_newest_alone() -> None:
    ids = SeenIds()
    for i in ("a", "b", "c"):
        ids.age(i)
    ids.reconnected()
    # Only the newest can come again from before the connection: the replay starts with it.
    assert ids.age("c") is IdAge.NEWEST
    assert ids.age("d") is IdAge.NEW
    assert ids.age("c") is IdAge.OLDER
    ids.forget_older()
    assert ids.age("d") is IdAge.NEWEST
    assert ids.age("c") is IdAge.NEW


def test_one_connection_keeps_a_bounded_number_of_ids() -> None:
    ids = SeenIds()
    kept = event_ids._KEPT
    for n in range(kept + 2):
        ids.age(str(n))
    assert ids.age(str(kept + 1)) is IdAge.NEWEST
    assert ids.age("2") is IdAge.OLDER
    # The oldest two were forgotten.
    assert ids.age("0") is IdAge.NEW


def test_a_join_takes_every_id_before_the_other_callers_newest_as_older() -> None:
    # A replay from the run's start brings ids this caller never saw, all before the newest.
    ids = SeenIds()
    ids.join("run_event_12")
    ids.reconnected()
    assert [ids.age(i) for i in ("run_event_3", "run_event_11", "run_event_12", "run_event_13")] == [
        IdAge.OLDER,
        IdAge.OLDER,
        IdAge.NEWEST,
        IdAge.NEW,
    ]
