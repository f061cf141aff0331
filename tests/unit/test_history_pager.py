"""``HistoryPager``: which pages of a thread's history are asked for, and what is handed out."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import StateSnapshot

from remote_graph._core.threads import HISTORY_PAGE, HistoryPager


def snap(i: int) -> StateSnapshot:
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": f"c{i}"}}
    return StateSnapshot({"i": i}, (), config, None, None, None, (), ())


def history(n: int) -> list[StateSnapshot]:
    """A thread's history of ``n`` checkpoints, newest first."""
    return [snap(i) for i in range(n, 0, -1)]


def walk(n: int, limit: int | None, before: Any = None) -> tuple[list[tuple[int, Any]], list[StateSnapshot]]:
    """Page through a history of ``n`` as the shells do: (the pages asked for, what was handed out)."""
    states = history(n)
    pager = HistoryPager(limit, before)
    asked: list[tuple[int, Any]] = []
    out: list[StateSnapshot] = []
    while (ask := pager.next_page()) is not None:
        size, cursor = ask
        asked.append((size, cursor["configurable"]["checkpoint_id"] if cursor else None))
        start = 0 if cursor is None else next(k + 1 for k, s in enumerate(states) if s.config == cursor)
        out += pager.take(states[start : start + size], size)
        assert len(asked) < 50, "the pager never ended"
    return asked, out


@pytest.mark.parametrize(
    ("n", "limit", "sizes"),
    [
        (0, None, [HISTORY_PAGE]),
        (30, None, [HISTORY_PAGE]),
        (HISTORY_PAGE, None, [HISTORY_PAGE, HISTORY_PAGE]),  # a full page may not be the last
        (2 * HISTORY_PAGE + 30, None, [HISTORY_PAGE] * 3),
        (2 * HISTORY_PAGE + 30, 150, [HISTORY_PAGE, 50]),
        (2 * HISTORY_PAGE + 30, HISTORY_PAGE, [HISTORY_PAGE]),
        (10, 3, [3]),
        (2, 5, [5]),
        (10, 0, []),
    ],
)
def test_pages_cover_the_history_up_to_the_limit_once(n: int, limit: int | None, sizes: list[int]) -> None:
    asked, out = walk(n, limit)
    assert [size for size, _ in asked] == sizes
    expected = history(n) if limit is None else history(n)[:limit]
    assert [s.values["i"] for s in out] == [s.values["i"] for s in expected]  # nothing lost, nothing twice


def test_each_page_starts_before_the_last_snapshot_of_the_one_before() -> None:
    asked, _ = walk(2 * HISTORY_PAGE + 1, None, before=None)
    assert [cursor for _, cursor in asked] == [None, f"c{HISTORY_PAGE + 2}", f"c{2}"]


def test_the_callers_before_starts_the_first_page() -> None:
    before = snap(50).config
    asked, out = walk(80, None, before=before)
    assert asked[0] == (HISTORY_PAGE, "c50") and [s.values["i"] for s in out] == list(range(49, 0, -1))


def test_only_the_first_page_is_first() -> None:
    pager = HistoryPager(None, None)
    assert pager.first
    pager.take(history(HISTORY_PAGE), HISTORY_PAGE)
    assert not pager.first and pager.next_page() is not None
