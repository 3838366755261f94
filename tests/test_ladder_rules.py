"""The ladder's rules for its members, without sockets: earned slots and benches, the dodging rule, who may
register and how often; and the provisional rule of the standings."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from quarto_arena.arena.ladder.rules import (
    BENCH,
    BENCH_MAX,
    LEAVES_FREE,
    NAME_MAX,
    Conduct,
    Registrations,
    charge_leave,
    name_problem,
    stalled,
)
from quarto_arena.arena.ladder.standings import ESTABLISHED_GAMES, PROVISIONAL_GAMES, PROVISIONAL_MARGIN, established
from quarto_arena.arena.records import Termination


def test_slots_are_earned_one_finished_game_at_a_time() -> None:
    c = Conduct()
    assert c.slots(16, 0.0) == 1  # a bot offering sixteen starts with one
    for n in range(2, 17):
        c.finished(16)
        assert c.slots(16, 0.0) == n
    c.finished(16)
    assert c.slots(16, 0.0) == 16 and c.slots(4, 0.0) == 4  # never beyond what it offers


def test_a_stall_benches_for_a_pause_that_doubles_and_a_finished_game_forgives() -> None:
    c = Conduct()
    for _ in range(5):
        c.finished(8)
    pauses = [c.stall(100.0 * k) for k in range(12)]
    assert pauses[:4] == [BENCH, 2 * BENCH, 4 * BENCH, 8 * BENCH] and max(pauses) == BENCH_MAX
    assert c.slots(8, 1100.0 + BENCH_MAX - 1) == 0 and c.slots(8, 1100.0 + BENCH_MAX) == 1
    c.finished(8)
    assert c.stall(0.0) == BENCH  # a game finished since: the first stall again


@given(st.lists(st.sampled_from(["finish", "stall"]), max_size=60), st.integers(1, 64))
def test_a_bot_never_has_more_slots_than_games_finished_since_its_last_stall_plus_one(
    events: list[str], offered: int
) -> None:
    c = Conduct()
    finished = 0
    clock = 0.0
    for e in events:
        clock += 10_000.0  # past any bench
        if e == "finish":
            c.finished(offered)
            finished += 1
        else:
            c.stall(clock)
            finished = 0
        assert 0 <= c.slots(offered, clock + BENCH_MAX) <= min(offered, finished + 1)


def test_what_counts_as_a_stall() -> None:
    assert stalled(Termination.STALL, handshake=True)
    assert stalled(Termination.DISCONNECT, handshake=False)  # gone while its opponent waited for its handshake
    assert not stalled(Termination.DISCONNECT, handshake=True)
    assert not stalled(Termination.TIME_FORFEIT, handshake=True)
    assert not stalled(Termination.NORMAL, handshake=False)


def test_the_dodging_rule() -> None:
    assert charge_leave(dodged=True, leaves_lately=0)  # saw the first result, then dropped its connection
    assert not charge_leave(dodged=False, leaves_lately=LEAVES_FREE - 1)  # said leaving, or dropped during game 1
    assert charge_leave(dodged=False, leaves_lately=LEAVES_FREE)  # ...once too often


def test_registrations_per_address_and_in_all() -> None:
    r = Registrations(per_address=(5, 3600.0), overall=(60, 3600.0))
    allowed = 0
    for i in range(1000):  # a thousand in a minute from one address
        now = i * 0.06
        if r.allows("10.0.0.1", now) is None:
            r.take("10.0.0.1", now)
            allowed += 1
    assert allowed == 5
    assert "10.0.0.1" in (r.allows("10.0.0.1", 60.0) or "")
    # Others still join; the limit in all holds whatever the addresses.
    others = 0
    for i in range(200):
        address = f"10.1.{i // 250}.{i % 250}"
        if r.allows(address, 61.0) is None:
            r.take(address, 61.0)
            others += 1
    assert others == 56  # the 55 left, and the one the minute gave back
    assert (r.allows("10.9.9.9", 61.0) or "").startswith("60 new bots in 60 minutes at most")
    # An hour later the buckets have filled again.
    assert r.allows("10.0.0.1", 3700.0) is None


def test_names_a_bot_may_register() -> None:
    taken = {"alice", "Bob"}
    protected = {"perfect", "greedy", "random"}
    assert name_problem("carol", taken, protected) is None
    assert name_problem("carol-2.1_x", taken, protected) is None
    assert "belongs to another key" in (name_problem("alice", taken, protected) or "")
    assert "too close to 'alice'" in (name_problem("ALICE_", taken, protected) or "")
    assert "too close to 'Bob'" in (name_problem("b.o.b", taken, protected) or "")
    for fake in ("perfect", "Perfect", "perfect2", "perfect-bot", "Greedy_v2", "arena", "Random.1"):
        assert "passes for" in (name_problem(fake, taken, protected) or ""), fake
    for bad in ("", "x" * (NAME_MAX + 1), "-lead", "a b", "a/b", "a..b", "ünï", "a#2", "+key"):
        assert "not a valid name" in (name_problem(bad, taken, protected) or ""), bad


def test_the_provisional_bounds() -> None:
    assert established(PROVISIONAL_GAMES, 5, PROVISIONAL_MARGIN, others=10)
    assert not established(PROVISIONAL_GAMES - 1, 5, 50.0, others=10)
    assert not established(PROVISIONAL_GAMES, 4, 50.0, others=10)
    assert not established(PROVISIONAL_GAMES, 5, PROVISIONAL_MARGIN + 0.1, others=10)
    assert not established(PROVISIONAL_GAMES, 5, None, others=10)
    assert established(100, 2, 60.0, others=2)  # a small ladder: every other bot is enough
    # One that wins nearly every game keeps a wide margin: established after so many games all the same.
    assert not established(ESTABLISHED_GAMES - 1, 5, 150.0, others=10)
    assert established(ESTABLISHED_GAMES, 5, 150.0, others=10)
