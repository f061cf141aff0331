"""Telling a resumed stream's repeats from news without a protocol seq.

A ``Store`` plays the server's per-run stream as the in-memory runtime serves
it: frames stored in publish order with millisecond ids (several frames share
one), a connection after ``Last-Event-ID`` replays the stored frames after the
last one with that id (the server's own order: ids are opaque to the client,
and the same runs are played with aegra's ids and with random tokens) and
then serves, live, everything published since it subscribed, which it did
before reading the replay (so the live part may begin with frames the replay
already sent).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

import pytest

from remote_graph._core.cursor import FROM_START, ResumeCursor
from remote_graph._core.replay import RepeatFilter


@dataclass(frozen=True)
class F:
    id: str
    body: str


def frames(spec: list[int], start: int = 1000) -> list[F]:
    """Frames with distinct bodies: ``spec[i]`` frames in millisecond ``start + i``."""
    out = []
    for ms, count in enumerate(spec):
        for _ in range(count):
            out.append(F(f"{start + ms}-0", f"f{len(out)}"))
    return out


class Client:
    """A RepeatFilter fed the way the driver feeds it, with the driver's cursor."""

    def __init__(self) -> None:
        self.filter: RepeatFilter[str] = RepeatFilter()
        self.cursor = ResumeCursor()
        self.got: list[str] = []

    def connect(self) -> str:
        self.got += self.filter.reconnected()
        return self.cursor.open()

    def feed(self, frame: F) -> None:
        self.cursor.observe(frame.id)
        self.got += self.filter.feed(frame.id, frame.body, frame.body)

    def finish(self) -> list[str]:
        self.got += self.filter.finish()
        return self.got


def relabel(run: list[F], shape: str) -> list[F]:
    """The same frames under another server's ids: ``ms`` as made, ``aegra`` one
    ``<run_id>_event_<n>`` per frame (not zero-padded), ``opaque`` a token per
    millisecond that sorts in no particular order."""
    if shape == "ms":
        return run
    if shape == "aegra":
        return [F(f"0c3e-run_event_{n}", f.body) for n, f in enumerate(run)]
    tokens: dict[str, str] = {}
    for f in run:
        tokens.setdefault(f.id, random.Random(f.id).choice("zyx") + str(len(tokens) * 7919 % 1000))
    return [F(tokens[f.id], f.body) for f in run]


SHAPES = ["ms", "aegra", "opaque"]


def replay(store: list[F], last_event_id: str) -> list[F]:
    if last_event_id == FROM_START:
        return list(store)
    at = [i for i, f in enumerate(store) if f.id == last_event_id]
    return store[at[-1] + 1 :] if at else list(store)


def connection(store: list[F], last_event_id: str, subscribed_at: int) -> list[F]:
    """What one connection serves: the replay, then live from where it subscribed."""
    return replay(store, last_event_id) + store[subscribed_at:]


def settle(client: Client, store: list[F]) -> list[str]:
    """End the stream as the driver ends a finished run: reconnect until a
    connection brings nothing new, then finish."""
    for _ in range(len(store) + 2):
        last = client.connect()
        # What the connect released was the last connection's, not news of this one.
        before = len(client.got)
        for f in replay(store, last):
            client.feed(f)
        if len(client.got) == before:
            return client.finish()
    raise AssertionError("every confirming connection brought news")


# --- the cases, one by one ---------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_a_fresh_stream_delivers_everything_once(shape: str) -> None:
    run = relabel(frames([3, 1, 4]), shape)
    client = Client()
    client.connect()
    for f in run:
        client.feed(f)
    assert client.finish() == [f.body for f in run]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cut", range(1, 8))
def test_the_prefix_a_reconnect_replays_is_skipped_by_position(cut: int, shape: str) -> None:
    run = relabel(frames([3, 1, 4]), shape)
    client = Client()
    client.connect()
    for f in run[:cut]:
        client.feed(f)
    # The run has ended meanwhile: the replay after the cursor, nothing live.
    for f in connection(run, client.connect(), subscribed_at=len(run)):
        client.feed(f)
    assert client.finish() == [f.body for f in run]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("delivered", range(1, 8))
@pytest.mark.parametrize("extra", range(0, 4))
def test_a_live_part_that_rewinds_repeats_nothing(delivered: int, extra: int, shape: str) -> None:
    # ``delivered`` frames arrived, the connection broke; the run published
    # ``extra`` more before the new connection subscribed, and some after it;
    # the replay read up to the store's end, then the live part began at the
    # subscription point: every subscription point between what was delivered
    # and the store's end is tried.
    run = relabel(frames([2, 3, 1, 3, 2]), shape)
    published = min(len(run), delivered + extra)
    for subscribed_at in range(delivered, published + 1):
        client = Client()
        client.connect()
        for f in run[:delivered]:
            client.feed(f)
        last = client.connect()
        for f in replay(run[:published], last) + run[subscribed_at:]:
            client.feed(f)
        assert client.finish() == [f.body for f in run], (delivered, subscribed_at, published)


def test_a_rewind_inside_one_millisecond_is_told_by_content() -> None:
    run = frames([2, 6])  # the last six frames share a millisecond
    for delivered in range(1, 9):
        for published in range(delivered, 9):
            for subscribed_at in range(delivered, published + 1):
                client = Client()
                client.connect()
                for f in run[:delivered]:
                    client.feed(f)
                last = client.connect()
                for f in replay(run[:published], last) + run[subscribed_at:]:
                    client.feed(f)
                assert client.finish() == [f.body for f in run], (delivered, published, subscribed_at)


@pytest.mark.parametrize("seed", range(20))
def test_unique_ids_as_a_redis_backed_server_gives_them(seed: int) -> None:
    run = [F(f"1000-{i:04d}", f"f{i}") for i in range(25)]
    assert simulate(run, random.Random(seed)) == [f.body for f in run]


def test_frames_without_an_id_are_always_new() -> None:
    repeats: RepeatFilter[str] = RepeatFilter()
    repeats.reconnected()
    assert repeats.feed(None, "a", "a") == ["a"]
    assert repeats.feed(None, "a", "a") == ["a"]
    assert repeats.finish() == []


def test_a_second_connection_may_rewind_though_the_first_delivered_nothing() -> None:
    # The run's first connection broke before any frame came (only the
    # server's metadata, which is not fed here). The second replays the run
    # from its start, and its live part may begin with the replay's end again.
    repeats: RepeatFilter[str] = RepeatFilter()
    assert repeats.reconnected() == []
    assert repeats.reconnected() == []
    assert repeats.feed("1-0", "a", "a") == ["a"]
    assert repeats.feed("1-0", "b", "b") == ["b"]
    assert repeats.feed("1-0", "b", "b") == []
    assert repeats.feed("2-0", "c", "c") == ["c"]
    assert repeats.finish() == []


def test_only_the_first_connection_cannot_rewind() -> None:
    repeats: RepeatFilter[str] = RepeatFilter()
    repeats.reconnected()
    assert [repeats.feed("1-0", "b", f"b{i}") for i in range(2)] == [["b0"], ["b1"]]


def resumed(*bodies: str, frame_id: str = "1-0") -> RepeatFilter[str]:
    """A filter that delivered ``bodies`` in one millisecond, then resumed on a new connection
    whose replay repeated them (the prefix)."""
    repeats: RepeatFilter[str] = RepeatFilter()
    repeats.reconnected()
    for body in bodies:
        assert repeats.feed(frame_id, body, body) == [body]
    assert repeats.reconnected() == []
    for body in bodies:
        assert repeats.feed(frame_id, body, body) == []
    return repeats


def test_identical_frames_on_a_first_connection_are_all_new() -> None:
    # A model streaming the same token twice in one millisecond: no rewind can
    # happen on a connection with no replay, so nothing is taken for a repeat.
    repeats: RepeatFilter[str] = RepeatFilter()
    repeats.reconnected()
    assert [repeats.feed("1-0", "t", f"t{i}") for i in range(4)] == [["t0"], ["t1"], ["t2"], ["t3"]]
    assert repeats.feed("2-0", "t", "t4") == ["t4"]
    assert repeats.finish() == []


def fresh(repeats: RepeatFilter[str], *bodies: str, frame_id: str = "1-0") -> None:
    """Frames new on the resumed connection (after its prefix), each delivered at once."""
    for body in bodies:
        assert repeats.feed(frame_id, body, body) == [body]


def test_held_frames_are_released_when_the_stream_moves_on() -> None:
    repeats = resumed("a")
    fresh(repeats, "b", "c")
    # Same content as a frame this connection delivered: held until it is clear.
    assert repeats.feed("1-0", "b", "b2") == []
    # The next one does not continue a repeat of "b c": the held frame was new.
    assert repeats.feed("1-0", "d", "d") == ["b2", "d"]
    # A newer millisecond settles what is held, too.
    assert repeats.feed("1-0", "c", "c2") == []
    assert repeats.feed("2-0", "e", "e") == ["c2", "e"]


def test_a_rewind_is_taken_once_per_connection() -> None:
    repeats = resumed("a")
    fresh(repeats, "b", "c", "d")
    assert repeats.feed("1-0", "c", "c") == []  # the live part rewinds to "c"...
    assert repeats.feed("1-0", "d", "d") == []  # ...and runs to the block's end
    assert repeats.feed("1-0", "e", "e") == ["e"]
    # The connection is live now: the same content again is new.
    assert repeats.feed("1-0", "e", "e2") == ["e2"]
    assert repeats.feed("1-0", "b", "b2") == ["b2"]


def test_a_rewind_from_an_older_millisecond_is_dropped_by_id_then_by_position() -> None:
    repeats = resumed("a")
    fresh(repeats, "b")
    fresh(repeats, "c", "d", frame_id="2-0")
    # The live part rewinds to "b": older than the newest id, a repeat; it
    # enters the newest millisecond at its first frame, told by position.
    assert repeats.feed("1-0", "b", "b") == []
    assert repeats.feed("2-0", "c", "c") == []
    assert repeats.feed("2-0", "d", "d") == []
    assert repeats.feed("2-0", "c", "c2") == ["c2"]  # past the block's end: new
    # That was the connection's one rewind: equal content is new from here.
    assert repeats.feed("2-0", "d", "d2") == ["d2"]
    assert repeats.finish() == []


def test_an_older_id_settles_frames_held_as_a_rewind_as_new() -> None:
    repeats = resumed("a")
    fresh(repeats, "b", frame_id="2-0")
    fresh(repeats, "c", frame_id="2-0")
    assert repeats.feed("2-0", "b", "b2") == []
    # A rewind from an older millisecond: the held frame was no rewind, so new.
    assert repeats.feed("1-0", "a", "a") == ["b2"]
    assert repeats.feed("2-0", "b", "b") == []
    assert repeats.feed("2-0", "c", "c") == []
    assert repeats.feed("2-0", "b", "b2") == []  # the held frame, delivered above
    assert repeats.feed("2-0", "x", "x") == ["x"]


def test_a_prefix_that_stops_short_is_judged_frame_by_frame() -> None:
    # The replay repeated only part of the newest millisecond (a server that
    # did not keep it all): what follows the mismatch is new or a repeat on its own.
    repeats = resumed("a", "b")
    repeats.reconnected()
    assert repeats.feed("1-0", "a", "a") == []
    assert repeats.feed("1-0", "x", "x") == ["x"]
    assert repeats.feed("2-0", "y", "y") == ["y"]


def test_the_prefix_is_told_by_position_even_where_contents_repeat() -> None:
    repeats = resumed("t", "t", "u", "t")
    # The whole block came again, in order: the frames after it are new.
    fresh(repeats, "t", "u")
    assert repeats.finish() == []


def test_a_connection_that_ends_mid_rewind_drops_the_repeats_it_held(caplog: pytest.LogCaptureFixture) -> None:
    repeats = resumed("a")
    fresh(repeats, "b", "c")
    assert repeats.feed("1-0", "b", "b") == []  # a rewind to "b", cut before "c" came again
    with caplog.at_level(logging.WARNING, logger="remote_graph"):
        assert repeats.reconnected() == []
    assert caplog.records == []  # one place fits: not ambiguous


def test_a_repeat_only_one_place_fits_is_taken_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    repeats = resumed("a")
    fresh(repeats, "t", "u")
    assert repeats.feed("1-0", "t", "t2") == []
    with caplog.at_level(logging.WARNING, logger="remote_graph"):
        assert repeats.feed("1-0", "t", "t3") == ["t2"]
        # "t3" matches both "t"s; only a rewind to "t2" (the block's end) fits.
        assert repeats.feed("2-0", "z", "z") == ["z"]
    assert caplog.records == []


def test_identical_frames_after_a_resume_take_the_longest_repeat_and_log(caplog: pytest.LogCaptureFixture) -> None:
    # Content cannot tell "the same frames again" from "new, identical ones" in
    # the same millisecond; on a resumed connection the repeat is taken, and said.
    repeats = resumed("a")
    fresh(repeats, "t", "u")
    assert repeats.feed("1-0", "t", "t2") == []  # "t u" again?
    assert repeats.feed("1-0", "t", "t3") == ["t2"]  # no: "t2" was new
    with caplog.at_level(logging.WARNING, logger="remote_graph"):
        # "t u t" repeats the block from its first "t", and "t" alone from "t2":
        # both run to the block's end. The longest repeat is taken.
        assert repeats.feed("1-0", "u", "u2") == []
        assert repeats.feed("1-0", "t", "t4") == []
        assert repeats.feed("2-0", "z", "z") == ["z"]
    assert any("more than one place" in r.getMessage() for r in caplog.records)


def test_a_frame_like_one_delivered_before_the_reconnect_is_new() -> None:
    # A cut between two equal frames of one millisecond (a writer emitting the
    # same event twice): the new connection's live part can only rewind to
    # frames its own replay sent, so the second one, after the replayed
    # prefix, is news.
    repeats = resumed("a", "t")
    assert repeats.feed("1-0", "t", "t2") == ["t2"]
    assert repeats.feed("2-0", "u", "u") == ["u"]
    assert repeats.finish() == []


@pytest.mark.parametrize("pattern", ["tt", "abab", "aba", "abcabc", "aab", "abcab"])
def test_equal_frames_split_by_a_cut_are_each_delivered_once(pattern: str) -> None:
    # One millisecond of frames whose contents repeat; a cut after every
    # count of them, the run done by the reconnect (no live part to rewind).
    # (A cut before the first leaves equal frames together on one resumed
    # connection, where nothing tells the second from a rewind; see below.)
    run = [F("1000-0", body) for body in pattern] + [F("1001-0", "end")]
    for cut in range(1, len(run) + 1):
        client = Client()
        client.connect()
        for f in run[:cut]:
            client.feed(f)
        assert settle(client, run) == [f.body for f in run], cut


# --- many runs, cut at random ------------------------------------------------------


def simulate(run: list[F], rng: random.Random) -> list[str]:
    """Deliver ``run`` over connections cut at random, the run publishing meanwhile."""
    client = Client()
    published = rng.randint(0, len(run))
    last = client.connect()
    subscribed_at = published
    for _ in range(500):
        served = replay(run[:published], last) + run[subscribed_at:]
        take = rng.randint(0, len(served)) if rng.random() < 0.8 else len(served)
        for f in served[:take]:
            client.feed(f)
        if take == len(served):
            break
        # Cut: the run goes on a little; the client reconnects, and its new
        # connection subscribes somewhere between what it has and the store's end.
        delivered = len(client.got) + (len(client.filter._pending.items))
        published = min(len(run), max(published, delivered) + rng.randint(0, 4))
        subscribed_at = rng.randint(min(delivered, published), published)
        last = client.connect()
    # The end: a confirming connection replays what is stored after the cursor.
    for f in replay(run, client.connect()):
        client.feed(f)
    return client.finish()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(60))
def test_random_cuts_and_rewinds_lose_and_repeat_nothing(seed: int, shape: str) -> None:
    rng = random.Random(seed)
    run = relabel(frames([rng.choice([1, 1, 2, 3, 5]) for _ in range(rng.randint(5, 30))]), shape)
    assert simulate(run, rng) == [f.body for f in run], seed


def test_aegra_ids_past_event_9_are_news() -> None:
    # As strings, "event_10" sorts before "event_9": a 25-event stream came out as its first ten.
    run = relabel(frames([1] * 25), "aegra")
    client = Client()
    client.connect()
    for f in run:
        client.feed(f)
    assert client.finish() == [f.body for f in run]
