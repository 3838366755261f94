"""Schedules: round-robin and gauntlet pairings, colour-swapped pairs sharing an opening, openings files, seeds."""

from __future__ import annotations

import collections
import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.arena.schedule import (
    Format,
    Opening,
    OpeningBook,
    Schedule,
    ScheduleError,
    build_schedule,
    encounter_count,
    encounters,
    load_openings,
    opening_from_text,
    random_opening,
    random_openings,
    schedule_digest,
    seeded_opening,
)
from quarto_arena.protocol.notation import parse_position, parse_turns, parse_variant
from quarto_arena.protocol.rules import Position, Variant

STANDARD = Variant()
STRICT = parse_variant("standard", "all", "strict")


def test_round_robin_meets_every_pair_once_per_round() -> None:
    assert encounters(["a", "b", "c", "d"], Format.ROUND_ROBIN) == [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("b", "c"),
        ("b", "d"),
        ("c", "d"),
    ]


def test_gauntlet_pits_the_first_against_the_rest() -> None:
    assert encounters(["hero", "x", "y"], Format.GAUNTLET) == [("hero", "x"), ("hero", "y")]


@pytest.mark.parametrize(
    ("names", "message"),
    [(["a"], "at least two"), (["a", "b", "a"], "repeated: a")],
)
def test_bad_engine_lists_are_refused(names: list[str], message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        encounters(names, Format.ROUND_ROBIN)


@pytest.mark.parametrize(("rounds", "games"), [(0, 2), (1, 0), (1, -2)])
def test_bad_counts_are_refused(rounds: int, games: int) -> None:
    with pytest.raises(ScheduleError):
        build_schedule(["a", "b"], rounds=rounds, games=games)


def test_an_odd_number_of_games_ends_each_encounter_with_a_single_game() -> None:
    sched = build_schedule(["a", "b", "c"], games=3)
    assert len(sched) == 9
    first = [(g.first, g.second, g.pair) for g in sched][:3]
    assert first == [("a", "b", 0), ("b", "a", 0), ("a", "b", 1)]
    assert sched[3].pair == 2  # the next encounter starts a new pair


def test_schedules_are_lazy_and_random_access_matches_iteration() -> None:
    # A schedule far too large to list costs nothing until a game is asked for.
    huge = Schedule([f"e{i}" for i in range(200)], rounds=10**3, games=10**6, book=OpeningBook(random_turns=2))
    assert huge.total == 10**3 * 10**6 * 200 * 199 // 2
    last = huge.game(huge.total)
    assert (last.round, last.first, last.second) == (10**3, "e199", "e198")
    assert len(huge.digest()) == 16
    with pytest.raises(ScheduleError, match="more than any run can play"):
        Schedule(["a", "b"], games=2**60)
    small = Schedule(["a", "b", "c", "d"], fmt=Format.GAUNTLET, rounds=2, games=4, book=OpeningBook(random_turns=1))
    assert [small.game(k) for k in range(1, len(small) + 1)] == list(small)
    with pytest.raises(IndexError):
        small.game(len(small) + 1)


def test_an_open_ended_two_engine_schedule() -> None:
    sched = Schedule(["new", "base"], games=None, book=OpeningBook(random_turns=2, seed=5))
    assert sched.total is None
    games = list(itertools.islice(sched, 6))
    assert [(g.first, g.pair) for g in games] == [
        ("new", 0),
        ("base", 0),
        ("new", 1),
        ("base", 1),
        ("new", 2),
        ("base", 2),
    ]
    assert games[0].opening == games[1].opening == seeded_opening(2, STANDARD, 5, 0)
    assert sched.game(10**12).pair == (10**12 - 1) // 2
    with pytest.raises(ScheduleError, match="open-ended"):
        Schedule(["a", "b", "c"], games=None)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 6),
    rounds=st.integers(1, 3),
    pairs=st.integers(1, 3),
    gauntlet=st.booleans(),
    n_openings=st.integers(1, 4),
)
def test_schedule_invariants(n: int, rounds: int, pairs: int, gauntlet: bool, n_openings: int) -> None:
    names = [f"e{i}" for i in range(n)]
    fmt = Format.GAUNTLET if gauntlet else Format.ROUND_ROBIN
    openings = [Opening(turns=(f"{i:x}",)) for i in range(n_openings)]
    sched = build_schedule(names, fmt=fmt, rounds=rounds, games=2 * pairs, openings=openings)
    n_enc = n - 1 if gauntlet else n * (n - 1) // 2
    assert len(sched) == rounds * n_enc * 2 * pairs
    assert [g.game_id for g in sched] == list(range(1, len(sched) + 1))
    by_pair = collections.defaultdict(list)
    for g in sched:
        by_pair[g.pair].append(g)
    for games in by_pair.values():
        # Both games of a pair: same opening, same round, colours swapped, adjacent ids.
        first, second = games
        assert first.opening == second.opening
        assert first.round == second.round
        assert (first.first, first.second) == (second.second, second.first)
        assert second.game_id == first.game_id + 1
    # Every engine gives the first piece exactly as often as it receives it.
    firsts = collections.Counter(g.first for g in sched)
    seconds = collections.Counter(g.second for g in sched)
    assert firsts == seconds
    if gauntlet:
        assert all(names[0] in (g.first, g.second) for g in sched)


def test_every_encounter_sees_the_same_openings() -> None:
    openings = [Opening(turns=(f"{i:x}",)) for i in range(5)]
    sched = build_schedule(["a", "b", "c"], rounds=2, games=4, openings=openings)
    per_encounter = collections.defaultdict(list)
    for g in sched:
        if g.first < g.second:
            per_encounter[(g.first, g.second)].append(g.opening)
    seqs = list(per_encounter.values())
    assert all(s == seqs[0] for s in seqs)
    # 2 rounds x 2 pairs: openings 0, 1 then 2, 3.
    assert [o.turns[0] for o in seqs[0]] == ["0", "1", "2", "3"]


def test_schedule_digest_changes_with_the_schedule() -> None:
    a = build_schedule(["a", "b", "c"], games=2)
    b = build_schedule(["a", "b", "c"], games=2)
    assert schedule_digest(a) == schedule_digest(b)
    for other in (
        build_schedule(["a", "c", "b"], games=2),
        build_schedule(["a", "b", "c"], games=4),
        build_schedule(["a", "b", "c"], games=2, rounds=2),
        build_schedule(["a", "b", "c"], games=2, fmt=Format.GAUNTLET),
        build_schedule(["a", "b", "c"], games=2, openings=[Opening(turns=("3",))]),
        Schedule(["a", "b", "c"], book=OpeningBook(random_turns=2, seed=1)),
        Schedule(["a", "b", "c"], book=OpeningBook(random_turns=2, seed=2)),
    ):
        assert schedule_digest(a) != schedule_digest(other)


def test_random_openings_are_legal_unfinished_and_reproducible() -> None:
    first = random_openings(6, 20, STANDARD, seed=7)
    again = random_openings(6, 20, STANDARD, seed=7)
    other = random_openings(6, 20, STANDARD, seed=8)
    assert first == again
    assert first != other
    assert len(set(first)) > 15
    for opening in first:
        assert len(opening.turns) == 6
        pos = parse_position(opening.start, STANDARD).play(parse_turns(opening.turns))
        assert not pos.is_over


def reference_opening(turns: int, variant: Variant, rng: random.Random) -> Opening:
    """random_opening written plainly: every legal turn tried, the candidates listed whole, rng.choice among them."""
    pos = Position.start(variant)
    tokens = []
    for _ in range(turns):
        candidates = [t for t in pos.legal_turns() if not t.claim and not pos.apply(t).is_over]
        candidates = [t for t in candidates if not pos.apply(t).claimable]
        if not candidates:
            break
        turn = rng.choice(candidates)
        tokens.append(str(turn))
        pos = pos.apply(turn)
    return Opening(turns=tuple(tokens))


@pytest.mark.parametrize("variant", [STANDARD, parse_variant("advanced", "color,shape", "strict")])
def test_random_openings_draw_what_a_draw_among_every_legal_turn_draws(variant: Variant) -> None:
    # The first turns' candidates are not listed (only the drawn one is made): the same openings as listing them,
    # so runs, their resumes and older journals' runs open with the same turns.
    for seed, turns in itertools.product(range(60), (1, 2, 3, 5)):
        expected = reference_opening(turns, variant, random.Random(f"s{seed}"))
        assert random_opening(turns, variant, random.Random(f"s{seed}")) == expected
        assert seeded_opening(turns, variant, seed, 3) == reference_opening(
            turns, variant, random.Random(f"quarto-arena:{seed}:3")
        )


def test_random_openings_under_strict_claims_leave_nothing_to_claim() -> None:
    for opening in random_openings(10, 30, STRICT, seed=1):
        pos = parse_position(opening.start, STRICT).play(parse_turns(opening.turns))
        assert not pos.is_over
        assert not pos.claimable


def test_random_opening_j_does_not_depend_on_the_count() -> None:
    assert random_openings(4, 3, STANDARD, seed=3) == random_openings(4, 10, STANDARD, seed=3)[:3]


def test_opening_from_text_accepts_turns_positions_and_startpos() -> None:
    assert opening_from_text("3 C47 d4e", STANDARD) == Opening("startpos", ("3", "c47", "d4e"))
    assert opening_from_text("startpos 3", STANDARD) == Opening("startpos", ("3",))
    assert opening_from_text("F410/..../...9/.C7. b", STANDARD) == Opening("f410/..../...9/.c7. b", ())
    assert opening_from_text("..../..../..../.... 7 a1e", STANDARD) == Opening("..../..../..../.... 7", ("a1e",))


def test_openings_file(tmp_path: Path) -> None:
    path = tmp_path / "openings.txt"
    path.write_text("# a comment\n\n3 c47\n..../..../..../.... 7 a1e  # trailing comment\n")
    assert load_openings(path, STANDARD) == [
        Opening("startpos", ("3", "c47")),
        Opening("..../..../..../.... 7", ("a1e",)),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("3 c47\n3 c47 c4e\n", r"openings.txt:2: bad opening '3 c47 c4e': turn 3 \(c4e\) is illegal: c4 is occupied"),
        ("3 zz\n", r"openings.txt:1: .*'zz'"),
        ("..../..../.... 7\n", r"openings.txt:1: .*3 rows"),
        ("..../..../..../....\n", r"openings.txt:1: .*no piece in hand"),
        ("# nothing\n", r"openings.txt: no openings"),
        # a1 b1 c1 d1 with pieces 0 1 2 3: light round on row 1, a win: nothing left to play.
        ("0 a11 b12 c13 d1\n", r"openings.txt:1: .*already over"),
    ],
)
def test_bad_openings_files_name_file_line_and_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "openings.txt"
    path.write_text(content)
    with pytest.raises(ScheduleError, match=message):
        load_openings(path, STANDARD)


def test_missing_openings_file(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match="cannot read"):
        load_openings(tmp_path / "nope.txt", STANDARD)


def test_an_openings_directory_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match="is a directory, not an openings file") as info:
        load_openings(tmp_path, STANDARD)
    assert "Errno" not in str(info.value)


def test_binary_openings_file(tmp_path: Path) -> None:
    path = tmp_path / "openings.txt"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ScheduleError, match="cannot read"):
        load_openings(path, STANDARD)


@pytest.mark.parametrize(("n", "fmt", "rounds", "games"), [(3, Format.ROUND_ROBIN, 2, 4), (4, Format.GAUNTLET, 1, 5)])
def test_interleaved_schedules_play_pair_j_of_every_encounter_before_pair_j_plus_1(
    n: int, fmt: Format, rounds: int, games: int
) -> None:
    names = [f"e{i}" for i in range(n)]
    book = OpeningBook(random_turns=2, seed=3)
    kept = Schedule(names, fmt=fmt, rounds=rounds, games=games, book=book)
    mixed = Schedule(names, fmt=fmt, rounds=rounds, games=games, book=book, interleave=True)
    # The same games (pairs, colours, openings), in another order.
    key = lambda g: (g.round, g.pair, g.first, g.second, g.opening)  # noqa: E731
    assert sorted(map(key, kept)) == sorted(map(key, mixed))
    assert [g.game_id for g in mixed] == list(range(1, len(mixed) + 1))
    encounters_ = encounter_count(n, fmt)
    played: collections.Counter[frozenset[str]] = collections.Counter()
    for i, g in enumerate(mixed, start=1):
        played[frozenset((g.first, g.second))] += 1
        if i % (2 * encounters_) == 0 and i <= rounds * encounters_ * (games // 2 * 2):
            # After every slot each encounter has played as many games as any other: fair standings at any moment.
            assert len(set(played.values())) == 1 and len(played) == encounters_, (i, played)
    # The two games of a pair stay next to each other, colours swapped.
    games_ = list(mixed)
    for a, b in itertools.pairwise(games_):
        if a.pair == b.pair:
            assert (a.first, a.second) == (b.second, b.first) and a.game_id + 1 == b.game_id
    assert mixed.digest() != kept.digest()
    assert "interleave" not in kept.identity()  # the digests of journals written before interleaving are unchanged


def test_the_first_games_of_an_interleaved_round_robin() -> None:
    sched = Schedule(["a", "b", "c"], games=4, interleave=True)
    order = [(g.first, g.second) for g in sched]
    assert order[:6] == [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c"), ("c", "b")]
    assert order[6:] == order[:6]
