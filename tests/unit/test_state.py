"""The run state machine: every transition, and what each server run status means."""

from __future__ import annotations

import itertools

import pytest

from remote_graph._core.state import TERMINAL, TRANSITIONS, IllegalTransition, RunState, RunStatus, status_from_server

ALL = list(RunStatus)


def state_at(status: RunStatus, error: BaseException | None = None) -> RunState:
    """A RunState brought to ``status`` through legal moves only."""
    state = RunState()
    if status is RunStatus.PENDING:
        return state
    if status is not RunStatus.RUNNING and status in TRANSITIONS[RunStatus.PENDING]:
        state.move(status, error=error)
        return state
    state.move(RunStatus.RUNNING)
    if status is not RunStatus.RUNNING:
        state.move(status, error=error)
    return state


def test_the_table_covers_every_status_and_matches_the_diagram() -> None:
    assert set(TRANSITIONS) == set(RunStatus)
    assert TERMINAL == {RunStatus.COMPLETED, RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.CANCELLED}
    assert TRANSITIONS[RunStatus.PENDING] == {RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED}
    assert TRANSITIONS[RunStatus.RUNNING] == TERMINAL
    for status in TERMINAL:
        assert TRANSITIONS[status] == frozenset()


def test_a_new_run_is_pending_with_no_error() -> None:
    state = RunState()
    assert state.status is RunStatus.PENDING and state.error is None and not state.terminal


@pytest.mark.parametrize(("start", "to"), list(itertools.product(ALL, ALL)), ids=lambda s: str(s))
def test_every_transition(start: RunStatus, to: RunStatus) -> None:
    first_error = ValueError("the first verdict") if start is RunStatus.FAILED else None
    state = state_at(start, first_error)
    assert state.status is start
    assert state.terminal == (start in TERMINAL)
    new_error = RuntimeError("later news")
    if start in TERMINAL:
        # A run that ended never changes again, whatever arrives later.
        assert state.move(to, error=new_error) is False
        assert state.status is start
        assert state.error is first_error
    elif to in TRANSITIONS[start]:
        assert state.move(to, error=new_error) is True
        assert state.status is to
        assert state.error is new_error
        assert state.terminal == (to in TERMINAL)
    else:
        with pytest.raises(IllegalTransition, match=f"from {start} to {to}"):
            state.move(to, error=new_error)
        assert state.status is start
        assert state.error is None


def test_a_move_without_an_error_keeps_no_error() -> None:
    state = RunState()
    assert state.move(RunStatus.RUNNING) and state.move(RunStatus.COMPLETED)
    assert state.error is None


def test_the_status_is_a_string() -> None:
    assert str(RunStatus.INTERRUPTED) == "interrupted"
    assert RunStatus("completed") is RunStatus.COMPLETED


# --- status_from_server --------------------------------------------------------

SERVER_STATUSES = {
    # server status: (without raised interrupts, with raised interrupts)
    "pending": (None, None),
    "running": (None, None),
    "success": (RunStatus.COMPLETED, RunStatus.INTERRUPTED),
    "error": (RunStatus.FAILED, RunStatus.FAILED),
    "timeout": (RunStatus.FAILED, RunStatus.FAILED),
    # langgraph-api's "interrupted" is a run cancelled through the API; aegra's is
    # also a paused one, told by the interrupts the run raised.
    "interrupted": (RunStatus.CANCELLED, RunStatus.INTERRUPTED),
}


@pytest.mark.parametrize("raised", [False, True], ids=["no-interrupts", "interrupts"])
@pytest.mark.parametrize("server_status", list(SERVER_STATUSES))
def test_status_from_server(server_status: str, raised: bool) -> None:
    record = {"run_id": "R", "thread_id": "T", "status": server_status}
    assert status_from_server(record, raised_interrupts=raised) is SERVER_STATUSES[server_status][raised]


@pytest.mark.parametrize("raised", [False, True])
def test_a_deleted_run_was_cancelled(raised: bool) -> None:
    # A rollback deletes the run: GET /runs/{id} answers 404, passed in as None.
    assert status_from_server(None, raised_interrupts=raised) is RunStatus.CANCELLED


@pytest.mark.parametrize("record", [{}, {"status": "exploded"}, {"status": None}, ["success"], "success"])
def test_a_record_that_names_no_known_status_is_a_failure(record: object) -> None:
    assert status_from_server(record, raised_interrupts=False) is RunStatus.FAILED
