"""The resume cursor against a simulated per-run stream, cut at every position.

The cursor only says where a lost stream resumes; the driver drops the frames
a replay repeats by their protocol ``seq``. The simulated server follows the
real one's replay rule: on a new connection it sends the stored frames after
the last one carrying the ``Last-Event-ID`` (every stored frame for ``FROM_START``),
then goes on live. "After" is the server's own order: the ids are opaque to the
client, and each id shape below (the in-memory runtime's, a Redis-backed
server's, aegra's, random tokens) is followed the same way. Frames without an id cannot be addressed by a
``Last-Event-ID``, so they are never stored nor replayed (like the deleted
run's ``404`` error frame); only a connection open when one is produced
receives it.

The harness delivers a frame when its ``seq`` (here its index in the run) is
newer than the last one delivered, as the driver does, so what these tests
pin is the cursor's part: the resume point never skips a frame, and the
replay repeats no more than the frames that share the newest id.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from remote_graph._core.cursor import FROM_START, ResumeCursor, id_after, stream_order

Stored = Sequence[tuple[str | None, str]]  # (frame id, payload) in production order

A, B, C = "1796018881846-0", "1796018881854-0", "1796018881861-0"
# The in-memory server: every frame of one millisecond gets the same id.
SAME_MS: Stored = [(A, "a1"), (A, "a2"), (B, "b1"), (B, "b2"), (B, "b3"), (C, "c1")]
# A Redis-backed server: every id is unique.
UNIQUE: Stored = [(f"179601888184{ms}-{seq}", f"f{ms}{seq}") for ms in range(3) for seq in range(3)]
# aegra: unique ids that do not sort as strings (``event_10`` before ``event_9``).
AEGRA: Stored = [(f"5f1c0a2e-run_event_{n}", f"e{n}") for n in range(12)]
# Opaque tokens, shared by the frames of one millisecond, in no order of their own.
OPAQUE: Stored = [("zq", "o1"), ("zq", "o2"), ("b7", "o3"), ("m", "o4"), ("m", "o5"), ("0", "o6"), ("a", "o7")]
# Frames the server does not tag, before, between and after tagged ones.
WITH_UNTAGGED: Stored = [(None, "n0"), (A, "a1"), (A, "a2"), (None, "n1"), (B, "b1"), (B, "b2"), (None, "n2")]
UNTAGGED_ONLY: Stored = [(None, f"n{i}") for i in range(5)]

Sent = list[tuple[int, str | None, str]]  # (seq, frame id, payload)


def replay(stored: Stored, produced: int, last_event_id: str) -> Sent:
    """What a connection opened with ``last_event_id`` receives once ``produced`` frames exist:
    the stored frames after it, then every frame still to come, live."""
    sent = [(seq, frame_id, payload) for seq, (frame_id, payload) in enumerate(stored)]
    after = position(stored, last_event_id)
    old = [f for f in sent[after : max(after, produced)] if f[1] is not None]
    return old + sent[produced:]


def position(stored: Stored, last_event_id: str) -> int:
    """Where the server's replay after ``last_event_id`` begins: after its last frame with that id."""
    if last_event_id == FROM_START:
        return 0
    return max(i for i, (frame_id, _) in enumerate(stored) if frame_id == last_event_id) + 1


def resume_point(ids: Sequence[str | None]) -> str:
    """The oracle: the newest id before the newest one received, ``FROM_START`` until there are two."""
    distinct = list(dict.fromkeys(i for i in ids if i is not None))
    return distinct[-2] if len(distinct) >= 2 else FROM_START


def follow(stored: Stored, cuts: Sequence[int], *, ahead: bool = False) -> tuple[list[str], list[str]]:
    """Follow the stream through one connection per cut (the cut is how many frames
    that connection delivers before it breaks), then one to the end. With
    ``ahead`` the run finishes while the client is away after each break.

    Checks, for every connection, the Last-Event-ID against the oracle and that
    the replay repeats only frames carrying the newest id delivered.
    Returns the payloads delivered and the Last-Event-ID of every connection.
    """
    cursor = ResumeCursor()
    delivered: list[str] = []
    received_ids: list[str | None] = []
    sent_ids: list[str] = []
    last_seq = -1
    produced = 0
    for cut in [*cuts, None]:
        assert cursor.last_event_id == resume_point(received_ids)
        sent_ids.append(cursor.open())
        newest = next((i for i in reversed(list(dict.fromkeys(received_ids))) if i is not None), None)
        frames = replay(stored, produced, cursor.last_event_id)
        received = frames if cut is None else frames[:cut]
        for seq, frame_id, payload in received:
            cursor.observe(frame_id)
            received_ids.append(frame_id)
            if seq <= last_seq:
                # A repeat costs one frame of the newest millisecond delivered, nothing older.
                assert frame_id is not None and frame_id == newest, f"replayed {payload} from before {newest}"
                continue
            last_seq = seq
            delivered.append(payload)
        # The server has produced at least every frame it sent.
        produced = max(produced, len(stored) - len(frames) + len(received))
        if ahead:
            produced = len(stored)
    return delivered, sent_ids


def all_cuts(stored: Stored, depth: int) -> list[tuple[int, ...]]:
    """Every way to cut ``depth`` successive connections (each may deliver
    anything from nothing to all it replays)."""
    n = len(stored)
    return list(itertools.product(range(n + 1), repeat=depth))


@pytest.mark.parametrize("name", ["SAME_MS", "UNIQUE", "AEGRA", "OPAQUE", "WITH_UNTAGGED", "UNTAGGED_ONLY"])
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_every_cut_delivers_the_stream_exactly_once_in_order(name: str, depth: int) -> None:
    stored = globals()[name]
    expected = [payload for _, payload in stored]
    for cuts in all_cuts(stored, depth):
        delivered, sent_ids = follow(stored, cuts)
        assert delivered == expected, f"{name} cut after {cuts} frames"
        points = [position(stored, i) for i in sent_ids]
        assert points == sorted(points), f"{name} cut after {cuts} frames: the resume point went back"


@pytest.mark.parametrize("name", ["SAME_MS", "UNIQUE", "AEGRA", "OPAQUE"])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_every_cut_of_a_run_that_finished_while_away_delivers_it_once(name: str, depth: int) -> None:
    # Untagged frames produced while no connection is open are lost by the
    # server's design (they are never stored), so only tagged streams here.
    stored = globals()[name]
    expected = [payload for _, payload in stored]
    for cuts in all_cuts(stored, depth):
        delivered, _ = follow(stored, cuts, ahead=True)
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
        cursor.observe(frame_id)
    assert cursor.last_event_id == last_event_id
    again = replay(SAME_MS, delivered, last_event_id)
    # The replay holds every frame not delivered yet ...
    assert [payload for seq, _, payload in again if seq >= delivered] == [payload for _, payload in SAME_MS[delivered:]]
    # ... and repeats only the delivered frames of the newest millisecond (all of them before a second id).
    repeated = [frame_id for seq, frame_id, _ in again if seq < delivered]
    newest = SAME_MS[delivered - 1][0] if delivered else None
    if last_event_id == FROM_START:
        assert len(repeated) == delivered
    else:
        assert repeated and set(repeated) == {newest}


def test_unique_ids_cost_one_replayed_frame() -> None:
    cursor = ResumeCursor()
    for frame_id, _ in UNIQUE[:4]:
        cursor.observe(frame_id)
    assert cursor.last_event_id == UNIQUE[2][0]
    again = replay(UNIQUE, 4, cursor.last_event_id)
    assert [payload for _, _, payload in again] == [payload for _, payload in UNIQUE[3:]]  # one repeat: the newest


def test_the_resume_point_stays_at_the_start_until_a_second_id() -> None:
    cursor = ResumeCursor()
    assert cursor.last_event_id == FROM_START
    for _ in range(3):
        cursor.observe(A)
        assert cursor.last_event_id == FROM_START
    cursor.observe(B)
    assert cursor.last_event_id == A


def test_a_repeat_moves_nothing() -> None:
    cursor = ResumeCursor()
    for frame_id in (A, B, C):
        cursor.observe(frame_id)
    assert cursor.last_event_id == B
    # A replay from B repeats C; a stray older id neither moves it back nor forward.
    for frame_id in (C, B, A, C):
        cursor.observe(frame_id)
        assert cursor.last_event_id == B
    cursor.observe("1796018881868-0")
    assert cursor.last_event_id == C


def test_untagged_frames_are_ignored() -> None:
    cursor = ResumeCursor()
    cursor.observe(None)
    assert cursor.last_event_id == FROM_START
    for frame_id in (A, None, B, None):
        cursor.observe(frame_id)
    assert cursor.last_event_id == A
    cursor.observe(None)
    cursor.observe(C)
    assert cursor.last_event_id == B


def test_a_stream_with_no_ids_resumes_from_the_start() -> None:
    cursor = ResumeCursor()
    for _ in range(3):
        cursor.observe(None)
    assert cursor.last_event_id == FROM_START


def test_ids_are_never_compared_only_recognised() -> None:
    # aegra's ids: "run_event_10" sorts before "run_event_9" as a string, yet it is the newer one.
    cursor = ResumeCursor()
    cursor.open()
    for n in range(8, 12):
        cursor.observe(f"run_event_{n}")
    assert cursor.last_event_id == "run_event_10"
    # A replay from there repeats event_11; an id delivered before moves nothing.
    assert cursor.open() == "run_event_10"
    for n in (11, 11):
        cursor.observe(f"run_event_{n}")
    assert cursor.last_event_id == "run_event_10"
    cursor.observe("run_event_12")
    assert cursor.last_event_id == "run_event_11"


def test_a_repeat_from_earlier_on_the_same_connection_moves_nothing() -> None:
    # A live part that rewinds repeats frames its own replay sent.
    cursor = ResumeCursor()
    cursor.open()
    for frame_id in ("x", "y"):
        cursor.observe(frame_id)
    assert cursor.open() == "x"
    for frame_id in ("y", "q", "r", "q", "r", "s"):
        cursor.observe(frame_id)
    assert cursor.last_event_id == "r"


def test_a_connection_that_breaks_again_while_replaying_keeps_the_resume_point() -> None:
    cursor = ResumeCursor()
    for frame_id, _ in SAME_MS[:4]:  # a1 a2 b1 b2
        cursor.observe(frame_id)
    assert cursor.last_event_id == A
    cursor.observe(B)  # b1 again, then the connection breaks
    assert cursor.last_event_id == A
    for frame_id in (B, B, B, C):  # b1 b2 b3 again and new, then c1
        cursor.observe(frame_id)
    assert cursor.last_event_id == B


# --- the order a join's first frame is checked by ---------------------------------------------


def test_redis_stream_ids_sort_by_their_numbers_and_after_the_start() -> None:
    # As strings "-10" would sort before "-9"; Redis compares the numbers.
    assert id_after("1796018881840-10", "1796018881840-9") and not id_after("1796018881840-9", "1796018881840-10")
    assert id_after("1796018881841-0", "1796018881840-99")
    assert id_after("1796018881840-0", FROM_START) and not id_after(FROM_START, FROM_START)


def test_in_memory_ids_keep_their_order_and_every_id_sorts_after_the_start() -> None:
    # The in-memory runtime compares ids as strings; its ids (13-digit ms, "-0") sort the same by number.
    ids = [f"17960188818{n:02d}-0" for n in range(0, 100, 7)]
    assert sorted(ids) == sorted(ids, key=stream_order)
    for frame_id in ids:
        assert id_after(frame_id, FROM_START) and frame_id > FROM_START


def test_aegra_ids_sort_by_their_number_where_text_would_not() -> None:
    # aegra's ids are ``<run_id>_event_<n>``, not zero-padded: as text ``event_10`` sorts before ``event_9``.
    run = "6a4e00e4-f58d-4c25-bf47-fdfb238b7511"
    assert id_after(f"{run}_event_11", f"{run}_event_9") and not id_after(f"{run}_event_9", f"{run}_event_11")
    assert not id_after(f"{run}_event_9", f"{run}_event_9")
    assert id_after(f"{run}_event_1", FROM_START)


def test_other_ids_sort_as_text_between_their_numbers() -> None:
    assert id_after("b", "a") and not id_after("a", "b") and not id_after("a", "a")
    assert id_after("frame-b2", "frame-a10") and id_after("frame-a10", "frame-a9")
