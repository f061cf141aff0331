"""The resume cursor against a simulated per-run stream, cut at every position.

The simulated server follows the real one's replay rule: on a new connection
it sends the stored frames whose id compares ``>`` the ``Last-Event-ID`` as a
string (every stored frame for ``"-1"``), then goes on live. Frames without an
id cannot be addressed by a ``Last-Event-ID``, so they are never replayed
(like the deleted run's ``404`` error frame, which the server does not store);
only a connection open when one is produced receives it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from remote_graph._core.cursor import FROM_START, ResumeCursor

Stored = Sequence[tuple[str | None, str]]  # (frame id, payload) in production order

A, B, C = "1796018881846-0", "1796018881854-0", "1796018881861-0"
# The in-memory server: every frame of one millisecond gets the same id.
SAME_MS: Stored = [(A, "a1"), (A, "a2"), (B, "b1"), (B, "b2"), (B, "b3"), (C, "c1")]
# A Redis-backed server: every id is unique.
UNIQUE: Stored = [(f"179601888184{ms}-{seq}", f"f{ms}{seq}") for ms in range(3) for seq in range(3)]
# Frames the server does not tag, before, between and after tagged ones.
WITH_UNTAGGED: Stored = [(None, "n0"), (A, "a1"), (A, "a2"), (None, "n1"), (B, "b1"), (B, "b2"), (None, "n2")]
UNTAGGED_ONLY: Stored = [(None, f"n{i}") for i in range(5)]


def replay(stored: Stored, produced: int, last_event_id: str) -> list[tuple[str | None, str]]:
    """What a connection opened with ``last_event_id`` receives once ``produced`` frames exist."""
    if last_event_id == FROM_START:
        old = [f for f in stored[:produced] if f[0] is not None]
    else:
        old = [f for f in stored[:produced] if f[0] is not None and f[0] > last_event_id]
    return old + list(stored[produced:])


def follow(stored: Stored, cuts: Sequence[int]) -> tuple[list[str], list[str]]:
    """Follow the stream through one connection per cut (the cut is how many frames
    that connection delivers before it breaks), then one to the end.

    Returns the payloads admitted and the Last-Event-ID of every connection.
    """
    cursor = ResumeCursor()
    delivered: list[str] = []
    sent_ids: list[str] = []
    produced = 0
    for n, cut in enumerate([*cuts, None]):
        if n:
            cursor.reconnecting()
        sent_ids.append(cursor.last_event_id)
        frames = replay(stored, produced, cursor.last_event_id)
        received = frames if cut is None else frames[:cut]
        for frame_id, payload in received:
            if cursor.admit(frame_id):
                delivered.append(payload)
        # The server has produced at least every frame it sent.
        produced = max(produced, len(stored) - len(frames) + len(received))
    return delivered, sent_ids


def all_cuts(stored: Stored, depth: int) -> list[tuple[int, ...]]:
    """Every way to cut ``depth`` successive connections (each may deliver
    anything from nothing to all it replays)."""
    n = len(stored)
    return list(itertools.product(range(n + 1), repeat=depth))


@pytest.mark.parametrize("name", ["SAME_MS", "UNIQUE", "WITH_UNTAGGED", "UNTAGGED_ONLY"])
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_every_cut_delivers_the_stream_exactly_once_in_order(name: str, depth: int) -> None:
    stored = globals()[name]
    expected = [payload for _, payload in stored]
    for cuts in all_cuts(stored, depth):
        delivered, _ = follow(stored, cuts)
        assert delivered == expected, f"{name} cut after {cuts} frames"


@pytest.mark.parametrize(
    ("delivered", "last_event_id"),
    [
        # Resume from the last id *before* the newest one: frames that share the
        # newest id may still be unsent, and the server compares with ">".
        (0, FROM_START),
        (1, FROM_START),
        (2, FROM_START),
        (3, A),
        (4, A),
        (5, A),
        (6, B),
    ],
)
def test_the_resume_point_with_repeated_ids(delivered: int, last_event_id: str) -> None:
    cursor = ResumeCursor()
    for frame_id, _ in SAME_MS[:delivered]:
        assert cursor.admit(frame_id)
    assert cursor.last_event_id == last_event_id
    # The replay drops exactly the frames after the resume point already delivered.
    cursor.reconnecting()
    again = replay(SAME_MS, delivered, last_event_id)
    admitted = [payload for frame_id, payload in again if cursor.admit(frame_id)]
    assert admitted == [payload for _, payload in SAME_MS[delivered:]]


def test_unique_ids_cost_one_replayed_frame() -> None:
    cursor = ResumeCursor()
    for frame_id, _ in UNIQUE[:4]:
        cursor.admit(frame_id)
    assert cursor.last_event_id == UNIQUE[2][0]
    cursor.reconnecting()
    assert cursor.admit(UNIQUE[3][0]) is False  # the replayed newest frame
    assert cursor.admit(UNIQUE[4][0]) is True


def test_untagged_frames_move_neither_the_resume_point_nor_the_count() -> None:
    cursor = ResumeCursor()
    assert cursor.admit(None) and cursor.last_event_id == FROM_START
    assert cursor.admit(A) and cursor.admit(None) and cursor.admit(B) and cursor.admit(None)
    assert cursor.last_event_id == A
    cursor.reconnecting()
    # Only B follows A in the server's store; it is the one frame to drop.
    assert cursor.admit(B) is False
    assert cursor.admit(C) is True


def test_a_stream_with_no_ids_resumes_from_the_start() -> None:
    cursor = ResumeCursor()
    for _ in range(3):
        assert cursor.admit(None)
    assert cursor.last_event_id == FROM_START
    cursor.reconnecting()
    assert cursor.admit(None)  # nothing counted, nothing dropped


def test_a_connection_that_breaks_again_while_replaying_drops_the_same_frames() -> None:
    cursor = ResumeCursor()
    for frame_id, _ in SAME_MS[:4]:  # a1 a2 b1 b2
        cursor.admit(frame_id)
    cursor.reconnecting()
    assert cursor.admit(B) is False  # b1 again, then the connection breaks
    cursor.reconnecting()
    assert cursor.last_event_id == A
    assert [cursor.admit(B), cursor.admit(B), cursor.admit(B), cursor.admit(C)] == [False, False, True, True]
