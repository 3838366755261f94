"""The ladder's matchmaking, without sockets: a pure function of who is online and what has been played, checked
alone (hypothesis) and in a simulated ladder where pairs end at random times and bots come and go; and the tallies
its ratings are fitted from."""

from __future__ import annotations

import itertools
import random
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.arena.ladder.matchmaking import SLACK, Pairing, next_pairs, pair_key

names = st.sampled_from([f"b{i}" for i in range(12)])


@settings(deadline=None)
@given(
    free=st.dictionaries(names, st.integers(0, 4), max_size=12),
    games=st.dictionaries(names, st.integers(0, 50)),
    met=st.dictionaries(st.tuples(names, names).map(lambda t: pair_key(*t)), st.integers(0, 9)),
    limit=st.integers(0, 20),
)
def test_pairs_respect_slots_and_limit_and_never_self(
    free: dict[str, int], games: dict[str, int], met: dict[tuple[str, str], int], limit: int
) -> None:
    pairs = next_pairs(Pairing(free, games, met), limit)
    assert len(pairs) <= limit
    used: dict[str, int] = {}
    for a, b in pairs:
        assert a != b
        for n in (a, b):
            used[n] = used.get(n, 0) + 1
    for n, k in used.items():
        assert k <= free[n], (n, k, free)
    # Nobody who could still play is left idle: when the limit did not bind, two bots left with free slots are kept
    # apart only because they have met SLACK pairs more than one of them met someone who is busy now.
    if len(pairs) < limit:
        after = dict(met)
        for a, b in pairs:
            after[pair_key(a, b)] = after.get(pair_key(a, b), 0) + 1
        left = [n for n, k in free.items() if k - used.get(n, 0) > 0]
        for x, y in itertools.combinations(left, 2):
            for a in (x, y):
                least = min(after.get(pair_key(a, c), 0) for c in free if c != a)
                assert after.get(pair_key(x, y), 0) > least + SLACK, (x, y, pairs)


def test_the_same_state_gives_the_same_pairs() -> None:
    state = Pairing({"a": 2, "b": 1, "c": 1, "d": 2}, {"a": 4, "b": 2}, {("a", "b"): 1})
    assert next_pairs(state, 10) == next_pairs(state, 10)


def test_the_bot_with_fewest_games_meets_the_one_it_met_least() -> None:
    state = Pairing({"a": 1, "b": 1, "c": 1, "d": 1}, {"a": 10, "b": 10, "c": 2, "d": 10}, {("b", "c"): 3})
    pairs = next_pairs(state, 1)
    assert pairs == [("c", "a")]  # c has the fewest games; a and d it never met, a comes first by name


def simulate(
    slots: dict[str, int], steps: int, seed: int, concurrency: int, leave: set[str] = frozenset()
) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """A ladder in miniature: pairs take a random time; ``leave`` go offline halfway. Returns games per bot counted
    (2 per pair) and pairs per two bots."""
    rng = random.Random(seed)
    online = dict(slots)
    games = dict.fromkeys(online, 0)
    met: dict[tuple[str, str], int] = {}
    running: list[tuple[float, str, str]] = []
    clock = 0.0
    for step in range(steps):
        if step == steps // 2:
            for n in leave:
                online.pop(n)
            running = [r for r in running if r[1] in online and r[2] in online]
        busy: dict[str, int] = {}
        for _, a, b in running:
            busy[a] = busy.get(a, 0) + 1
            busy[b] = busy.get(b, 0) + 1
        free = {n: k - busy.get(n, 0) for n, k in online.items()}
        for a, b in next_pairs(Pairing(free, games, met), concurrency - len(running)):
            running.append((clock + rng.uniform(0.5, 1.5), a, b))
            games[a] += 2
            games[b] += 2
            met[pair_key(a, b)] = met.get(pair_key(a, b), 0) + 1
        running.sort()
        clock = running.pop(0)[0]
    return games, met


def test_a_simulated_ladder_is_fair_and_everyone_meets() -> None:
    slots = {f"bot{i:02}": 2 for i in range(20)}
    games, met = simulate(slots, 4000, seed=1, concurrency=20)
    mean = statistics.mean(games.values())
    assert all(abs(g - mean) <= 0.25 * mean for g in games.values()), games
    for a, b in itertools.combinations(sorted(slots), 2):
        assert met.get(pair_key(a, b), 0) >= 1, (a, b)
    # Pairs meet about equally often (here about 21 times each): the slack rule holds them within a few.
    assert max(met.values()) - min(met.values()) <= 2 * SLACK + 2, met


def test_slots_bound_the_games_a_bot_plays_at_once() -> None:
    state = Pairing({"big": 3, "x": 3, "y": 3, "z": 3}, {}, {})
    pairs = next_pairs(state, 10)
    assert len(pairs) == 6  # every slot in use
    assert sum("big" in p for p in pairs) == 3
    assert {frozenset(p) for p in pairs if "big" in p} == {frozenset(("big", o)) for o in "xyz"}


def test_bots_that_stay_keep_their_fair_share_when_others_leave() -> None:
    slots = {f"bot{i:02}": 2 for i in range(10)}
    games, _ = simulate(slots, 3000, seed=2, concurrency=8, leave={"bot00", "bot01", "bot02"})
    stayed = [g for n, g in games.items() if n not in {"bot00", "bot01", "bot02"}]
    mean = statistics.mean(stayed)
    assert all(abs(g - mean) <= 0.25 * mean for g in stayed), games


@settings(max_examples=30, deadline=None)  # a simulation: its time depends on the load
@given(st.integers(2, 9), st.integers(1, 3), st.integers(0, 10_000))
def test_every_pair_online_together_meets(n: int, k: int, seed: int) -> None:
    slots = {f"b{i}": k for i in range(n)}
    _, met = simulate(slots, 40 * n * n, seed=seed, concurrency=n * k)
    assert all(met.get(pair_key(a, b), 0) >= 1 for a, b in itertools.combinations(slots, 2)), met


@settings(deadline=None, max_examples=50)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcd"), st.sampled_from("abcd"), st.sampled_from([0.0, 0.5, 1.0]), st.integers(1, 4)
        ),
        min_size=1,
        max_size=12,
    ).map(lambda rows: [r for r in rows if r[0] != r[1]])
)
def test_a_tally_rates_as_the_games_it_stands_for(rows: list[tuple[str, str, float, int]]) -> None:
    """The ladder rates tallies (ScoredGame.count): the same table as the games one by one."""
    from quarto_arena.arena.stats import ScoredGame, rate

    if not rows:
        return
    one_by_one = rate([ScoredGame(a, b, s) for a, b, s, n in rows for _ in range(n)])
    tallied = rate([ScoredGame(a, b, s, n) for a, b, s, n in rows])
    assert [(p.name, p.games, p.points, p.draws) for p in tallied.players] == [
        (p.name, p.games, p.points, p.draws) for p in one_by_one.players
    ]
    for p, q in zip(tallied.players, one_by_one.players, strict=True):
        assert (p.rating is None) == (q.rating is None)
        if p.rating is not None and q.rating is not None:
            assert abs(p.rating - q.rating) < 1e-6 and abs((p.margin or 0) - (q.margin or 0)) < 1e-6


def test_nobody_waits_for_a_shy_bot() -> None:
    """a and b have met twice as often as either met c, who is busy: they wait for c (rule 3), unless c stalled
    lately (shy): then they play each other rather than wait while c holds someone for its start-up deadline."""
    met = {("a", "b"): 4, ("a", "c"): 0, ("b", "c"): 0}
    state = Pairing({"a": 1, "b": 1, "c": 0}, {"a": 8, "b": 8, "c": 0}, met)
    assert next_pairs(state, 5) == []
    shy = Pairing({"a": 1, "b": 1, "c": 0}, {"a": 8, "b": 8, "c": 0}, met, frozenset({"c"}))
    assert next_pairs(shy, 5) == [("a", "b")]
