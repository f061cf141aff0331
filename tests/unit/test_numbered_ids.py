"""``NumberedIds``: every phase change, and what each phase makes of a skipped number."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from remote_graph._core.numbered_ids import NumberedIds, Phase

RUN = "5f1c0a2e-0b6d-4a47-9d3c-2f1b8e2a9c11"


def aegra(n: int) -> str:
    return f"{RUN}_event_{n}"


def fed(numbers: Iterable[int], ids: NumberedIds | None = None) -> NumberedIds:
    """``ids`` (a new one by default) fed aegra's ids with these numbers, none of them a gap."""
    ids = ids or NumberedIds()
    for n in numbers:
        assert ids.gap(aegra(n)) is None, n
    return ids


@pytest.mark.parametrize("filled", [True, False])
def test_a_steady_step_arms_it_and_a_skipped_number_is_checked_once(filled: bool) -> None:
    ids = fed([1, 3, 5, 7])
    assert ids.phase is Phase.LEARNING
    fed([9], ids)
    assert ids.phase is Phase.ARMED
    # Reopened after 9: 13 is not counted, and comes again after 11 or, when
    # the replay has nothing for 11, after 9 (a gap of the server's own).
    assert ids.gap(aegra(13)) == aegra(9)
    replayed = [11, 13] if filled else [13]
    assert [ids.gap(aegra(n)) for n in [*replayed, 15]] == [None] * (len(replayed) + 1)
    assert ids.phase is Phase.ARMED


def test_while_learning_a_skipped_number_is_not_judged() -> None:
    ids = fed([1, 3, 5, 9, 11])
    # The step changed (2, 2, 4, 2): learning starts over from the last one.
    assert ids.phase is Phase.LEARNING
    fed([13, 15, 17], ids)
    assert ids.phase is Phase.ARMED


def test_a_step_of_one_is_learned_as_well() -> None:
    ids = fed(range(1, 6))
    assert ids.phase is Phase.ARMED
    assert ids.gap(aegra(7)) == aegra(5)


def test_three_gaps_no_replay_fills_turn_it_off() -> None:
    ids = fed([1, 3, 5, 7, 9])
    high = 9
    for _ in range(3):
        assert ids.gap(aegra(high + 4)) == aegra(high)
        assert ids.gap(aegra(high + 4)) is None
        high += 4
    assert ids.phase is Phase.OFF
    assert ids.gap(aegra(high + 4)) is None


def test_repeats_and_a_replay_from_before_never_count_as_gaps() -> None:
    ids = fed([1, 3, 5, 7, 9, 11])
    fed([5, 7, 9, 11, 9, 3], ids)
    assert ids.phase is Phase.ARMED
    assert ids.gap(aegra(13)) is None
    assert ids.gap(aegra(17)) == aegra(13)


def test_frames_without_an_id_are_passed_over() -> None:
    ids = fed([1, 3, 5, 7, 9])
    assert ids.gap(None) is None
    assert ids.phase is Phase.ARMED
    assert ids.gap(aegra(11)) is None


@pytest.mark.parametrize(
    "stream",
    [
        # The in-memory runtime: one id per millisecond, then the next millisecond's.
        ["1796018881846-0", "1796018881846-0", "1796018881847-0"],
        # A Redis stream id (both runtimes), even many of one millisecond: not a count of frames.
        [f"1796018881846-{seq}" for seq in range(8)],
        # Opaque tokens.
        ["zq", "b7"],
    ],
)
def test_ids_of_another_shape_turn_it_off_while_learning(stream: list[str]) -> None:
    ids = NumberedIds()
    for frame_id in stream:
        assert ids.gap(frame_id) is None
    assert ids.phase is Phase.OFF


def test_an_id_of_another_shape_turns_it_off_when_armed() -> None:
    ids = fed([1, 3, 5, 7, 9])
    assert ids.gap("another-run_event_15") is None
    assert ids.phase is Phase.OFF
    assert ids.gap(aegra(15)) is None


def test_a_number_far_ahead_is_checked_once_and_the_numbers_below_it_are_not_judged() -> None:
    # aegra's timestamp id, when its Redis cannot count.
    ids = fed([1, 3, 5, 7, 9])
    assert ids.gap(aegra(1796018881846)) == aegra(9)
    assert ids.gap(aegra(1796018881846)) is None
    assert ids.gap(aegra(15)) is None
    assert ids.phase is Phase.ARMED
