"""The phases of following a run's stream: every (phase, signal) pair."""

from __future__ import annotations

import itertools

import pytest

from remote_graph._core.state import FOLLOW, Follow, IllegalTransition, Phase, Signal

PAIRS = list(itertools.product(Phase, Signal))


def follow_at(phase: Phase) -> Follow:
    follow = Follow()
    follow.phase = phase
    return follow


def test_the_table_names_every_phase_and_only_known_targets() -> None:
    assert set(FOLLOW) == set(Phase)
    assert Follow().phase is Phase.OPENING
    assert Follow(Phase.LOOKING_UP).phase is Phase.LOOKING_UP
    for moves in FOLLOW.values():
        assert set(moves.values()) <= set(Phase)
    # Every phase but DONE leads somewhere, and every phase is reachable from where a
    # started run (OPENING) or a joined one (LOOKING_UP) begins; nothing leads back to LOOKING_UP.
    assert [phase for phase, moves in FOLLOW.items() if not moves] == [Phase.DONE]
    assert all(Phase.LOOKING_UP not in moves.values() for moves in FOLLOW.values())
    seen, todo = {Phase.OPENING, Phase.LOOKING_UP}, [Phase.OPENING, Phase.LOOKING_UP]
    while todo:
        for target in FOLLOW[todo.pop()].values():
            if target not in seen:
                seen.add(target)
                todo.append(target)
    assert seen == set(Phase)


def test_the_table_matches_the_documented_transitions() -> None:
    expected = {
        (Phase.LOOKING_UP, Signal.FOUND): Phase.OPENING,
        (Phase.LOOKING_UP, Signal.REFUSED): Phase.DONE,
        (Phase.READING, Signal.DETACHED): Phase.DONE,
        (Phase.OPENING, Signal.OPENED): Phase.READING,
        (Phase.OPENING, Signal.OPENED_AFTER_VERDICT): Phase.CONFIRMING,
        (Phase.OPENING, Signal.LOST): Phase.BACKING_OFF,
        (Phase.OPENING, Signal.REFUSED): Phase.DONE,
        (Phase.READING, Signal.CLOSED): Phase.CHECKING,
        (Phase.READING, Signal.LOST): Phase.BACKING_OFF,
        (Phase.READING, Signal.ERROR_FRAME): Phase.FAILING,
        (Phase.CHECKING, Signal.RUNNING): Phase.OPENING,
        (Phase.CHECKING, Signal.RUNNING_NO_NEWS): Phase.BACKING_OFF,
        (Phase.CHECKING, Signal.OVER): Phase.OPENING,
        (Phase.CHECKING, Signal.LOST): Phase.BACKING_OFF,
        (Phase.CHECKING, Signal.REFUSED): Phase.DONE,
        (Phase.CONFIRMING, Signal.CLOSED_WITH_NEWS): Phase.OPENING,
        (Phase.CONFIRMING, Signal.CLOSED_NO_NEWS): Phase.ENDING,
        (Phase.CONFIRMING, Signal.LOST): Phase.BACKING_OFF,
        (Phase.CONFIRMING, Signal.ERROR_FRAME): Phase.FAILING,
        (Phase.BACKING_OFF, Signal.RETRY): Phase.OPENING,
        (Phase.BACKING_OFF, Signal.GIVE_UP): Phase.DONE,
        (Phase.FAILING, Signal.ENDED): Phase.DONE,
        (Phase.FAILING, Signal.STREAM_FAILED): Phase.BACKING_OFF,
        (Phase.ENDING, Signal.ENDED): Phase.DONE,
    }
    table = {(phase, signal): target for phase, moves in FOLLOW.items() for signal, target in moves.items()}
    assert table == expected


@pytest.mark.parametrize(("phase", "signal"), PAIRS, ids=lambda v: str(v))
def test_every_pair(phase: Phase, signal: Signal) -> None:
    follow = follow_at(phase)
    target = FOLLOW[phase].get(signal)
    if target is None:
        with pytest.raises(IllegalTransition, match=f"cannot take {signal} while {phase}"):
            follow.on(signal)
        assert follow.phase is phase
    else:
        assert follow.on(signal) is target
        assert follow.phase is target
