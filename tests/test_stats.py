"""Rating fit against Ordo, match statistics and GSPRT against fishtest/fastchess/cutechess values, properties."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from quarto_arena.arena.pgn import read_results
from quarto_arena.arena.stats import (
    NELO_PER_T,
    Z95,
    IntervalKind,
    RatingError,
    ScoredGame,
    Sprt,
    SprtDecision,
    SprtModel,
    StatsError,
    crosstable_rows,
    elo_from_score,
    llr_pentanomial,
    llr_trinomial,
    pentanomial_stats,
    rate,
    rating_rows,
    score_from_elo,
    sprt_bounds,
    trinomial_stats,
)
from quarto_arena.arena.stats.match import _t_value_floor

DATA = Path(__file__).parent / "data" / "rating"
MATCH = json.loads((DATA / "match_stats.json").read_text())
ORDO_DEFAULT_SCALE = 202.0 / math.log10(0.76 / 0.24)  # Ordo's default: 202 points mean a 76% expected score


def ordo_table(name: str) -> tuple[dict[str, tuple[float, float, int]], float]:
    """Ordo's output file: {player: (rating, points, played)} and the White advantage line."""
    text = (DATA / name).read_text()
    rows = re.findall(r"^\s*\d+\s+(\S+)\s+:\s+(-?[\d.]+)\s+([\d.]+)\s+(\d+)", text, re.MULTILINE)
    advantage = re.search(r"White advantage = (-?[\d.]+)", text)
    assert rows and advantage
    return {n: (float(r), float(p), int(g)) for n, r, p, g in rows}, float(advantage.group(1))


def small_games() -> list[ScoredGame]:
    return read_results([DATA / "small.pgn"]).games


# --------------------------------------------------------------------------------------------------------------
# Ordo


@pytest.mark.parametrize(
    ("output", "scale", "advantage"),
    [
        ("ordo_small_eloscale.txt", 400.0, False),
        ("ordo_small_a0.txt", ORDO_DEFAULT_SCALE, False),
        ("ordo_small_eloscale_W.txt", 400.0, True),
    ],
)
def test_agrees_with_ordo_within_a_hundredth(output: str, scale: float, advantage: bool) -> None:
    expected, white_advantage = ordo_table(output)
    table = rate(small_games(), scale=scale, first_player_advantage=advantage)
    assert [p.name for p in table.players] == list(expected)  # same ranking
    for p in table.players:
        rating, points, played = expected[p.name]
        assert p.rating == pytest.approx(rating, abs=0.01)
        assert (p.points, p.games) == (points, played)
        assert not p.regularized
    if advantage:
        assert table.first_player_advantage == pytest.approx(white_advantage, abs=0.01)
        assert table.first_player_advantage_margin is not None and table.first_player_advantage_margin > 0
    else:
        assert table.first_player_advantage is None


def test_ratings_solve_the_score_equations() -> None:
    # The maximum-likelihood condition Ordo solves: each player's expected points equal the points scored.
    table = rate(small_games())
    rating = {p.name: p.rating or 0.0 for p in table.players}
    for p in table.players:
        expected = sum(
            r.games * score_from_elo(rating[r.player] - rating[r.opponent]) for r in table.pairs if r.player == p.name
        )
        assert expected == pytest.approx(p.points, abs=1e-7)
    assert sum(rating.values()) == pytest.approx(0.0, abs=1e-7)


# --------------------------------------------------------------------------------------------------------------
# Margins, LOS, rows


def test_two_player_margin_is_the_analytic_one() -> None:
    # 7/10 for A: d = elo(0.7); the information on d is k^2 * N * s * (1 - s), and each rating is +-d/2.
    games = [ScoredGame("A", "B", 1.0)] * 6 + [ScoredGame("B", "A", 1.0)] * 2 + [ScoredGame("A", "B", 0.5)] * 2
    table = rate(games)
    k = math.log(10) / 400
    sd_difference = 1 / math.sqrt(k * k * 10 * 0.7 * 0.3)
    a, b = table.player("A"), table.player("B")
    assert a.rating == pytest.approx(elo_from_score(0.7) / 2)
    assert a.margin == pytest.approx(Z95 * sd_difference / 2)
    assert b.margin == pytest.approx(Z95 * sd_difference / 2)
    assert a.los_next == pytest.approx(0.5 * math.erfc(-elo_from_score(0.7) / sd_difference / math.sqrt(2)))
    assert a.draw_rate == pytest.approx(0.2)


def test_anchor_has_no_margin_and_others_are_relative_to_it() -> None:
    table = rate(small_games(), anchor=("Random", 1000.0))
    free = rate(small_games())
    assert table.player("Random").rating == pytest.approx(1000.0)
    assert table.player("Random").margin == pytest.approx(0.0, abs=1e-9)
    assert table.player("MinimaxD4").margin is not None
    assert table.player("MinimaxD4").margin > (free.player("MinimaxD4").margin or 0.0)
    # LOS does not depend on where the ratings are pinned.
    for p, q in zip(table.players, free.players, strict=True):
        assert p.los_next == pytest.approx(q.los_next)


def test_los_is_consistent_and_ordered() -> None:
    table = rate(small_games())
    for p, q in zip(table.players, table.players[1:], strict=False):
        assert p.los_next == pytest.approx(table.los(p.name, q.name))
        assert 0.5 <= (p.los_next or 0.0) < 1.0
        assert table.los(q.name, p.name) == pytest.approx(1.0 - (p.los_next or 0.0))
    assert table.players[-1].los_next is None


def test_rows_for_the_cli_are_plain_values() -> None:
    table = rate(small_games(), players=["Nobody"])
    rows = rating_rows(table)
    dicts = rows.as_dicts()
    json.dumps(dicts)  # no custom types
    assert dicts[0]["player"] == "MinimaxD4" and dicts[0]["rank"] == 1 and dicts[0]["games"] == 16
    assert dicts[0]["score"] == pytest.approx(13.5 / 16)
    assert dicts[-1] == dict.fromkeys(rows.headers) | {
        "player": "Nobody",
        "games": 0,
        "points": 0.0,
        "regularized": False,
    }
    cross = crosstable_rows(table)
    assert cross.headers == ("player", "MinimaxD4", "MCTS1k", "MinimaxD2", "Greedy", "Random")
    by_player = {row[0]: row[1:] for row in cross.rows}
    assert by_player["MinimaxD4"] == (None, "3/4", "3/4", "3.5/4", "4/4")
    assert by_player["Random"] == ("0/4", "1/4", "0.5/4", "0.5/4", None)


# --------------------------------------------------------------------------------------------------------------
# Degenerate pools


def test_perfect_and_zero_scores_are_finite_ordered_and_flagged() -> None:
    games = [*small_games(), ScoredGame("Perfect", "MinimaxD4", 1.0), ScoredGame("Random", "Perfect", 0.0)]
    games += [ScoredGame("Hopeless", "Random", 0.0)] * 3
    table = rate(games)
    names = [p.name for p in table.players]
    assert names[0] == "Perfect" and names[-1] == "Hopeless"
    assert all(p.regularized and p.rating is not None and math.isfinite(p.rating) for p in table.players)
    assert all(p.margin is not None and math.isfinite(p.margin) for p in table.players)


def test_regularization_touches_only_pools_that_need_it() -> None:
    games = [*small_games(), ScoredGame("X", "Y", 1.0), ScoredGame("Y", "X", 0.0)]
    table = rate(games, players=["Idle"])
    small = {p.name: p for p in rate(small_games()).players}
    for p in table.players:
        if p.name in small:
            assert (p.pool, p.regularized) == (0, False)
            assert p.rating == pytest.approx(small[p.name].rating)
    x, y, idle = table.player("X"), table.player("Y"), table.player("Idle")
    assert x.pool == y.pool == 1 and x.regularized
    assert x.rating is not None and y.rating is not None and x.rating == pytest.approx(-y.rating) and x.rating > 0
    assert table.los("X", "MinimaxD4") is None  # different pools are not comparable
    assert (idle.rating, idle.margin, idle.games, idle.score, idle.los_next) == (None, None, 0, None, None)
    assert table.players[-1] is idle


def test_a_dominant_group_is_pushed_apart_only_by_virtual_draws_across_groups() -> None:
    # A and B trade wins; both beat C and D, who trade wins. Inside each group the result is exact and even.
    games = [ScoredGame("A", "B", 1.0), ScoredGame("B", "A", 1.0), ScoredGame("C", "D", 1.0), ScoredGame("D", "C", 1.0)]
    games += [ScoredGame(winner, loser, 1.0) for winner in "AB" for loser in "CD"]
    table = rate(games)
    r = {p.name: p.rating for p in table.players}
    assert all(p.regularized for p in table.players)
    assert r["A"] == pytest.approx(r["B"]) and r["C"] == pytest.approx(r["D"])
    assert r["A"] is not None and r["C"] is not None and 0 < r["A"] < 1000 and r["A"] == pytest.approx(-r["C"])


def test_first_player_advantage_without_a_finite_fit_is_regularized() -> None:
    games = [ScoredGame("A", "B", 1.0), ScoredGame("B", "A", 1.0)] * 3  # White always wins
    table = rate(games, first_player_advantage=True)
    assert table.first_player_advantage is not None and 0 < table.first_player_advantage < 2000
    assert table.player("A").regularized
    assert table.player("A").rating == pytest.approx(table.player("B").rating)


@pytest.mark.parametrize(
    ("games", "options", "message"),
    [
        ([ScoredGame("A", "B", 0.7)], {}, "is not 0, 0.5 or 1"),
        ([ScoredGame("A", "A", 1.0)], {}, "played itself"),
        ([ScoredGame("A", "B", 1.0)], {"anchor": ("C", 0.0)}, "not one of the players"),
        ([ScoredGame("A", "B", 1.0)], {"anchor": ("C", 0.0), "players": ["C"]}, "has no game"),
        ([ScoredGame("A", "B", 1.0)], {"scale": 0.0}, "scale must be positive"),
    ],
)
def test_unratable_input_raises_rating_error(games: list[ScoredGame], options: dict[str, Any], message: str) -> None:
    with pytest.raises(RatingError, match=message):
        rate(games, **options)


def test_no_games_gives_an_empty_table() -> None:
    assert rate([]).players == ()


# --------------------------------------------------------------------------------------------------------------
# Properties

NAMES = ("P", "Q", "R", "S", "T")
GAME = st.builds(ScoredGame, st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from((0.0, 0.5, 1.0))).filter(
    lambda g: g.white != g.black
)
GAMES = st.lists(GAME, min_size=1, max_size=40)


def ratings(games: list[ScoredGame], **options: Any) -> dict[str, float]:
    return {p.name: p.rating for p in rate(games, **options).players if p.rating is not None}


@settings(max_examples=60, deadline=None)
@given(GAMES, st.randoms(use_true_random=False))
def test_order_of_games_does_not_matter(games: list[ScoredGame], rnd: random.Random) -> None:
    shuffled = games[:]
    rnd.shuffle(shuffled)
    before, after = ratings(games), ratings(shuffled)
    assert before.keys() == after.keys()
    for name in before:
        assert after[name] == pytest.approx(before[name], abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(GAMES)
def test_ratings_are_finite_and_do_not_depend_on_colours(games: list[ScoredGame]) -> None:
    swapped = [ScoredGame(g.black, g.white, 1.0 - g.score) for g in games]
    before, after = ratings(games), ratings(swapped)
    for name in before:
        assert math.isfinite(before[name])
        assert after[name] == pytest.approx(before[name], abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(GAMES, st.floats(-3000, 3000))
def test_anchor_shifts_its_pool_by_a_constant(games: list[ScoredGame], elo: float) -> None:
    table = rate(games)
    anchor = table.players[0]
    moved = rate(games, anchor=(anchor.name, elo))
    shift = elo - (anchor.rating or 0.0)
    for p in table.players:
        q = moved.player(p.name)
        if p.pool == anchor.pool and p.rating is not None:
            assert q.rating == pytest.approx(p.rating + shift, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), min_size=1, max_size=12))
def test_mirrored_results_give_equal_ratings(pairs: list[tuple[str, str]]) -> None:
    # Every result is matched by the mirror result, so every player scores 50% against each opponent.
    games = []
    for a, b in pairs:
        if a != b:
            games += [ScoredGame(a, b, 1.0), ScoredGame(b, a, 1.0), ScoredGame(a, b, 0.5)]
    for value in ratings(games).values():
        assert value == pytest.approx(0.0, abs=1e-6)


# --------------------------------------------------------------------------------------------------------------
# Match statistics


def close(actual: float | None, expected: float, rel: float = 1e-4) -> bool:
    return actual == pytest.approx(expected, rel=rel, abs=1e-6)


@pytest.mark.parametrize("entry", MATCH["elo"], ids=lambda e: str(e.get("penta") or (e["W"], e["L"], e["D"])))
def test_match_stats_agree_with_fishtest_and_fastchess(entry: dict[str, Any]) -> None:
    stats = (
        pentanomial_stats(entry["penta"]) if "penta" in entry else trinomial_stats(entry["W"], entry["L"], entry["D"])
    )
    assert close(stats.score, entry["score"])
    assert stats.elo.kind is stats.nelo.kind is IntervalKind.NORMAL
    assert close(stats.elo.value, entry["elo"])
    assert close(stats.elo.margin, entry["elo_pm"])
    assert close(stats.nelo.value, entry["nelo"])
    assert close(stats.nelo.margin, entry["nelo_pm"])
    if "los" in entry:
        assert close(stats.los, entry["los"])
    assert stats.games == (2 * sum(entry["penta"]) if "penta" in entry else entry["W"] + entry["L"] + entry["D"])


def on_wilson_boundary(score: float, trials: int, elo: float) -> bool:
    """Whether the expected score of ``elo`` is where Wilson's test of ``score`` sits exactly at z (an oracle that
    does not use the closed form): (score - p)^2 = z^2 p (1 - p) / trials."""
    p = score_from_elo(elo)
    return (score - p) ** 2 == pytest.approx(Z95**2 * p * (1 - p) / trials, rel=1e-9)


@pytest.mark.parametrize("games", [1, 2, 20, 500])
def test_a_clean_sweep_has_an_exact_one_sided_bound_instead_of_infinities(games: int) -> None:
    sweep, whitewash = trinomial_stats(games, 0, 0), trinomial_stats(0, games, 0)
    assert sweep.elo.value == math.inf and sweep.elo.high == math.inf and sweep.elo.kind is IntervalKind.BOUND
    # At the bound, a player scoring p per game (wins and losses only) sweeps with probability exactly 5%.
    assert math.isfinite(sweep.elo.low) and score_from_elo(sweep.elo.low) ** games == pytest.approx(0.05)
    assert (whitewash.elo.low, whitewash.elo.high) == (-math.inf, pytest.approx(-sweep.elo.low))
    assert (
        str(sweep.elo) == f"> {sweep.elo.low:+.1f} (95% bound)"
        and str(whitewash.elo) == f"< {-sweep.elo.low:+.1f} (95% bound)"
    )
    # LOS from the largest variance equal engines can have per game, 1/4: Phi(sqrt(games)).
    assert sweep.los == pytest.approx(0.5 * math.erfc(-math.sqrt(games) / math.sqrt(2)))
    assert whitewash.los == pytest.approx(1.0 - sweep.los)


def test_the_sweep_bounds_people_see() -> None:
    # 20/20: 0.05 ** (1/20) = 0.86089 -> +316.6 Elo; 1/1: 0.05 -> -400 log10(19) = -511.5 Elo (one win says little).
    assert str(trinomial_stats(20, 0, 0).elo) == "> +316.6 (95% bound)"
    assert str(trinomial_stats(1, 0, 0).elo) == "> -511.5 (95% bound)"
    assert trinomial_stats(20, 0, 0).elo.low < trinomial_stats(21, 0, 0).elo.low  # more wins, a higher bound


@pytest.mark.parametrize(
    ("wins", "losses", "draws"), [(0, 0, 1), (0, 0, 20), (1, 1, 0), (1, 0, 1), (0, 1, 1), (19, 1, 0)]
)
def test_where_the_normal_interval_fails_a_finite_elo_gets_a_finite_wilson_interval(
    wins: int, losses: int, draws: int
) -> None:
    # All draws: no spread, so the normal interval has width 0. One pair, W+D, L+D, 19-1: it leaves (0, 1).
    stats = trinomial_stats(wins, losses, draws)
    games = wins + losses + draws
    e = stats.elo
    assert e.kind is IntervalKind.WILSON and e.margin is None
    assert math.isfinite(e.low) and e.low < e.value < e.high and math.isfinite(e.high)
    assert on_wilson_boundary(stats.score, games, e.low) and on_wilson_boundary(stats.score, games, e.high)


def test_all_draws() -> None:
    draws = trinomial_stats(0, 0, 20)
    assert draws.elo.value == 0.0 and draws.elo.low == pytest.approx(-draws.elo.high) and draws.elo.high > 100
    assert str(draws.elo) == "+0.0 (95% CI -147.8 to +147.8)"
    # No spread at 1/2: t = 0/0; 0 with the usual margin, which does not depend on the spread.
    assert (draws.nelo.value, draws.nelo.margin) == (0.0, pytest.approx(Z95 * NELO_PER_T / math.sqrt(20)))
    assert str(draws.nelo) == "+0.0 +/- 152.3 (95% CI)"
    assert draws.los == 0.5


def test_one_pair_and_one_game() -> None:
    one_each = pentanomial_stats([0, 0, 1, 0, 0])  # one win and one loss (or two draws)
    assert str(one_each.nelo) == "+0.0 +/- 481.5 (95% CI)" and one_each.los == 0.5
    assert str(trinomial_stats(1, 1, 0).elo) == "+0.0 (95% CI -392.5 to +392.5)"
    # One winning pair: a single trial cannot bound the t-value (a mean just above 1/4 can have almost no spread).
    ww = pentanomial_stats([0, 0, 0, 0, 1])
    assert (ww.nelo.value, ww.nelo.low, ww.nelo.high) == (math.inf, -math.inf, math.inf)
    assert str(ww.nelo) == "unbounded"
    assert str(pentanomial_stats([1, 0, 0, 0, 0]).nelo) == "unbounded"
    draw = trinomial_stats(0, 0, 1)
    assert str(draw.elo) == "+0.0 (95% CI -495.3 to +495.3)" and str(draw.nelo) == "+0.0 +/- 681.0 (95% CI)"


def test_one_decisive_game_among_draws_is_an_ordinary_match() -> None:
    stats = trinomial_stats(1, 0, 19)
    assert stats.elo.kind is stats.nelo.kind is IntervalKind.NORMAL
    assert stats.elo.low < 0.0 < stats.elo.value < stats.elo.high and 0.5 < stats.los < 1.0


def test_wins_and_draws_only() -> None:
    few, many = trinomial_stats(1, 0, 1), trinomial_stats(30, 0, 30)
    assert few.elo.kind is IntervalKind.WILSON and many.elo.kind is IntervalKind.NORMAL
    assert few.elo.value == many.elo.value == pytest.approx(elo_from_score(0.75))
    assert str(few.elo) == "+190.8 (95% CI -243.1 to +624.8)"
    losses = trinomial_stats(0, 1, 1)
    assert (losses.elo.low, losses.elo.high) == (pytest.approx(-few.elo.high), pytest.approx(-few.elo.low))


@pytest.mark.parametrize("pairs", [3, 10, 200])
def test_a_sweep_of_pairs_bounds_nelo_by_the_least_favourable_outcomes(pairs: int) -> None:
    stats = pentanomial_stats([0, 0, 0, 0, pairs])
    assert stats.nelo.value == math.inf and stats.nelo.high == math.inf and stats.nelo.kind is IntervalKind.BOUND
    # The bound is the t-value floor at the pair score's one-sided bound, in per-game units.
    low = score_from_elo(stats.elo.low)
    assert stats.nelo.low == pytest.approx(_t_value_floor(low, PAIR_SCORES) * NELO_PER_T / math.sqrt(2))
    assert str(stats.nelo) == f"> {stats.nelo.low:+.1f} (95% bound)"
    assert "inf" not in str(stats.elo) + str(stats.nelo)


PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
GAME_SCORES = (0.0, 0.5, 1.0)


def t_value(support: tuple[float, ...], weights: list[float]) -> tuple[float, float]:
    """The mean and t-value ``(mu - 1/2) / sigma`` of the distribution on ``support`` with these weights, in exact
    arithmetic (the brute force's oracle: in floats, subnormal weights round a real spread to nothing, or a spread
    below a cut-off passes for none)."""
    exact = [(Fraction(v), Fraction(w)) for v, w in zip(support, weights, strict=True)]
    total = sum(w for _, w in exact)
    mu = sum(v * w for v, w in exact) / total
    var = sum(w * (v - mu) ** 2 for v, w in exact) / total
    excess = mu - Fraction(1, 2)
    if var == 0:
        return float(mu), math.copysign(math.inf, excess)
    t_squared = excess**2 / var
    t = math.sqrt(float(t_squared)) if t_squared < 10**300 else math.inf
    return float(mu), math.copysign(t, excess)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([GAME_SCORES, PAIR_SCORES]),
    st.floats(0.05, 0.95),
    st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5),
)
# Subnormal weights (one and two of the smallest double): mu = 1/3, t = -0.71, above the floor (-0.82 at 0.3). In
# floats every squared deviation times its weight rounds to 0, and the variance seemed nil (t = -inf).
@example(GAME_SCORES, 0.3, [5e-324, 1e-323, 0.0, 0.0, 0.0])
def test_t_value_floor_is_below_every_distribution_with_that_mean(
    support: tuple[float, ...], mean_low: float, raw: list[float]
) -> None:
    # Brute force: any distribution on the support whose mean reaches mean_low has a t-value >= the floor.
    weights = raw[: len(support)]
    if sum(weights) == 0.0:
        return
    mu, t = t_value(support, weights)
    if mu >= mean_low:
        assert t >= _t_value_floor(mean_low, support) - 1e-9


def compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to write ``total`` as ``parts`` ordered non-negative integers."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in compositions(total - first, parts - 1):
            yield (first, *rest)


@pytest.mark.slow
@pytest.mark.parametrize(("support", "slack"), [(GAME_SCORES, 1e-9), (PAIR_SCORES, 0.1)])
@pytest.mark.parametrize("mean_low", [0.1, 0.3, 0.45, 0.5, 0.6, 0.9])
def test_t_value_floor_is_reached(support: tuple[float, ...], slack: float, mean_low: float) -> None:
    # ...and some distribution with that mean comes close to it (a grid over the simplex; exact for 3 outcomes).
    floor = _t_value_floor(mean_low, support)
    best = math.inf
    for weights in compositions(40 if len(support) == 3 else 30, len(support)):
        mu, t = t_value(support, [float(w) for w in weights])
        if mu >= mean_low - 1e-12:
            best = min(best, t)
    if floor == -math.inf:
        assert best == -math.inf  # a point mass on a score between mean_low and 1/2: no spread, t = -inf
    else:
        assert floor - 1e-9 <= best < floor + slack


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
def test_every_result_prints_finite_numbers_around_the_estimate(wins: int, losses: int, draws: int) -> None:
    if wins + losses + draws == 0:
        return
    stats = trinomial_stats(wins, losses, draws)
    for e in (stats.elo, stats.nelo):
        assert not any(math.isnan(x) for x in (e.value, e.low, e.high))
        assert e.low <= e.value <= e.high and e.low < e.high  # never a zero-width interval
        assert "inf" not in str(e) and "nan" not in str(e)
        assert (e.margin is not None) == (e.kind is IntervalKind.NORMAL)
        if e.margin is not None:
            assert math.isfinite(e.value) and math.isfinite(e.margin) and e.margin > 0
    assert 0.0 <= stats.los <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 200), st.integers(0, 200), st.integers(0, 200))
def test_swapping_the_engines_mirrors_every_figure(wins: int, losses: int, draws: int) -> None:
    if wins + losses + draws == 0:
        return
    a, b = trinomial_stats(wins, losses, draws), trinomial_stats(losses, wins, draws)
    for x, y in ((a.elo, b.elo), (a.nelo, b.nelo)):
        assert x.kind is y.kind
        assert x.value == pytest.approx(-y.value)
        assert (x.low, x.high) == (pytest.approx(-y.high), pytest.approx(-y.low))
    assert a.los == pytest.approx(1.0 - b.los)


def test_bad_counts_raise_stats_error() -> None:
    with pytest.raises(StatsError, match="no games"):
        trinomial_stats(0, 0, 0)
    with pytest.raises(StatsError, match="negative"):
        trinomial_stats(1, -1, 0)
    with pytest.raises(StatsError, match="5 numbers"):
        pentanomial_stats([1, 2, 3])


# --------------------------------------------------------------------------------------------------------------
# SPRT


@pytest.mark.parametrize(
    "entry", MATCH["sprt_gsprt"], ids=lambda e: f"{e.get('penta') or (e['W'], e['L'], e['D'])}-{e['model']}"
)
def test_gsprt_llr_agrees(entry: dict[str, Any]) -> None:
    model = SprtModel(entry["model"])
    if "penta" in entry:
        llr = llr_pentanomial(entry["penta"], entry["elo0"], entry["elo1"], model)
    else:
        llr = llr_trinomial(entry["W"], entry["L"], entry["D"], entry["elo0"], entry["elo1"], model)
    tolerance = 2e-3 if model is SprtModel.LOGISTIC else 1e-6
    assert llr == pytest.approx(entry["llr"], abs=tolerance)


@pytest.mark.parametrize(("key", "alpha_beta"), [("alpha=beta=0.05", 0.05), ("alpha=beta=0.01", 0.01)])
def test_sprt_bounds(key: str, alpha_beta: float) -> None:
    assert sprt_bounds(alpha_beta, alpha_beta) == pytest.approx(tuple(MATCH["sprt_bounds"][key]), abs=1e-12)


def test_sprt_bounds_follow_alpha_and_beta_separately() -> None:
    lower, upper = sprt_bounds(0.05, 0.1)
    assert lower == pytest.approx(math.log(0.1 / 0.95)) and upper == pytest.approx(math.log(0.9 / 0.05))
    with pytest.raises(StatsError):
        sprt_bounds(0.0, 0.05)
    with pytest.raises(StatsError):
        sprt_bounds(0.6, 0.5)


def test_sprt_decisions() -> None:
    test = Sprt(elo0=0.0, elo1=2.0, model=SprtModel.NORMALIZED)
    assert test.decide(3.0).decision is SprtDecision.H1
    assert test.decide(-3.0).decision is SprtDecision.H0
    assert test.decide(2.9).decision is SprtDecision.CONTINUE
    entry = MATCH["sprt_gsprt"][0]
    status = test.trinomial(entry["W"], entry["L"], entry["D"])
    assert status.llr == pytest.approx(entry["llr"], abs=1e-6) and status.decision is SprtDecision.CONTINUE
    assert Sprt(0.0, 5.0).pentanomial([0, 0, 0, 0, 5550]).decision is SprtDecision.H1
    assert Sprt(0.0, 5.0).pentanomial([5550, 0, 0, 0, 0]).decision is SprtDecision.H0
    assert Sprt(0.0, 5.0).trinomial(0, 0, 0).llr == 0.0
    with pytest.raises(StatsError, match="elo0 != elo1"):
        Sprt(1.0, 1.0)


@pytest.mark.parametrize(("alpha", "beta"), [(0.05, 0.05), (0.05, 0.10), (0.01, 0.20)])
def test_sprt_decides_exactly_at_its_bounds_and_not_a_hair_inside(alpha: float, beta: float) -> None:
    # SprtStatus documents "accept H0 at or below lower, H1 at or above upper" (Wald's bounds from alpha and beta).
    test = Sprt(elo0=0.0, elo1=2.0, alpha=alpha, beta=beta)
    lower, upper = math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)
    assert test.bounds == (pytest.approx(lower, abs=1e-15), pytest.approx(upper, abs=1e-15))
    lower, upper = test.bounds
    at_lower, at_upper = test.decide(lower), test.decide(upper)
    assert (at_lower.decision, at_lower.llr, at_lower.lower, at_lower.upper) == (SprtDecision.H0, lower, lower, upper)
    assert (at_upper.decision, at_upper.llr, at_upper.lower, at_upper.upper) == (SprtDecision.H1, upper, lower, upper)
    assert test.decide(math.nextafter(lower, 0.0)).decision is SprtDecision.CONTINUE
    assert test.decide(math.nextafter(upper, 0.0)).decision is SprtDecision.CONTINUE
    assert test.decide(math.nextafter(lower, -math.inf)).decision is SprtDecision.H0
    assert test.decide(math.nextafter(upper, math.inf)).decision is SprtDecision.H1
    assert test.decide(0.0).decision is SprtDecision.CONTINUE


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 500), st.integers(1, 500), st.integers(0, 500), st.sampled_from(list(SprtModel)))
def test_llr_grows_with_wins_and_is_antisymmetric(wins: int, losses: int, draws: int, model: SprtModel) -> None:
    llr = llr_trinomial(wins, losses, draws, -2.0, 2.0, model)
    assert llr_trinomial(wins + 5, losses, draws, -2.0, 2.0, model) > llr
    # Swapping the hypotheses negates the ratio.
    assert llr_trinomial(wins, losses, draws, 2.0, -2.0, model) == pytest.approx(-llr, abs=1e-9)


def test_a_large_pool_s_approximate_margins_are_close_to_the_exact_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from quarto_arena.arena.stats import rating as rating_module

    rng = random.Random(7)
    players = [f"p{n}" for n in range(rating_module.EXACT_PLAYERS + 30)]
    strength = {p: rng.gauss(0.0, 150.0) for p in players}
    games = []
    for _ in range(40 * len(players)):
        a, b = rng.sample(players, 2)
        e = score_from_elo(strength[a] - strength[b])
        u = rng.random()
        games.append(ScoredGame(a, b, 0.5 if u < 0.2 else 1.0 if rng.random() < e else 0.0))
    sparse = rate(games)
    monkeypatch.setattr(rating_module, "EXACT_PLAYERS", len(players))
    exact = rate(games)
    for p in exact.players:
        q = sparse.player(p.name)
        assert q.rating == pytest.approx(p.rating, abs=1e-6)  # the same fit
        assert q.margin == pytest.approx(p.margin, rel=0.03)  # the approximation of the covariance
    for p, q in zip(exact.players, exact.players[1:], strict=False):
        assert sparse.los(p.name, q.name) == pytest.approx(exact.los(p.name, q.name), abs=0.02)


def test_the_cholesky_inverse_agrees_with_gauss_jordan_and_refuses_a_matrix_that_is_not_positive_definite() -> None:
    from quarto_arena.arena.stats import rating as rating_module

    rng = random.Random(3)
    for n in (1, 2, 5, 40):
        # An information matrix as the fit makes one: a weighted Laplacian plus a little on the diagonal.
        matrix = [[0.0] * n for _ in range(n)]
        for a in range(n):
            matrix[a][a] += rng.uniform(0.01, 0.1)
            for b in range(a):
                w = rng.uniform(0.0, 2.0)
                matrix[a][b] -= w
                matrix[b][a] -= w
                matrix[a][a] += w
                matrix[b][b] += w
        fast = rating_module._cholesky_inverse(matrix)
        slow = rating_module._inverse(matrix)
        assert fast is not None and slow is not None
        for row_f, row_s in zip(fast, slow, strict=True):
            assert row_f == pytest.approx(row_s, rel=1e-9, abs=1e-12)
    # Symmetric but indefinite, and singular: the fit then falls back on Gauss-Jordan (which gives None if singular).
    assert rating_module._cholesky_inverse([[1.0, 2.0], [2.0, 1.0]]) is None
    assert rating_module._cholesky_inverse([[1.0, 1.0], [1.0, 1.0]]) is None
    assert rating_module._inverse([[1.0, 2.0], [2.0, 1.0]]) is not None


@pytest.mark.parametrize("advantage", [False, True])
def test_a_chain_of_players_is_fitted_in_a_few_solver_iterations_whatever_its_length(
    monkeypatch: pytest.MonkeyPatch, advantage: bool
) -> None:
    # Players who meet only their neighbours: with the diagonal as preconditioner, conjugate gradients took about as
    # many iterations as players per Newton step (rate on a 5,000-player chain: 36 s of CPU, 0.56 s with the tree:
    # benchmarks/rate.py --chain-only); the spanning-tree preconditioner is the whole matrix of a chain, so each step
    # takes a few, at any length. Counted, not timed.
    from quarto_arena.arena.stats import rating as rating_module

    applied: list[int] = []
    solve = rating_module._conjugate_gradients

    def counting(apply: Any, *args: Any) -> Any:
        def counted(v: Any) -> Any:
            applied[-1] += 1
            return apply(v)

        applied.append(0)
        return solve(counted, *args)

    monkeypatch.setattr(rating_module, "_conjugate_gradients", counting)
    for n in (100, 2000):
        rng = random.Random(n)
        games = []
        for i in range(n - 1):
            for k in range(4):
                a, b = f"c{i}", f"c{i + 1}"
                white, black = (a, b) if k % 2 == 0 else (b, a)
                games.append(ScoredGame(white, black, rng.choice((0.0, 0.5, 1.0))))
        applied.clear()
        table = rate(games, first_player_advantage=advantage)
        assert len(table.players) == n
        assert applied and max(applied) <= 4, (n, applied)


def test_a_player_of_one_game_far_in_the_tail_does_not_throw_the_fit_away() -> None:
    """Tallies read from a ladder where a bot renames itself every game (each version a player of one game) while
    greedy beats random 2,290 points to 18: Newton's first full step threw renamer#4613 (one win against random)
    13,808 points away, where its curvature is nil, and the fit ended in 'strictly concave and must converge'
    (internal error in one `ladder standings` of 150). Steps are now held to two factors of ten in the odds."""
    games = [
        ScoredGame("greedy", "random", 1.0, 2282),
        ScoredGame("greedy", "random", 0.5, 16),
        ScoredGame("greedy", "random", 0.0, 10),
        ScoredGame("greedy", "renamer#retired", 1.0, 740),
        ScoredGame("greedy", "renamer#retired", 0.5, 817),
        ScoredGame("greedy", "renamer#retired", 0.0, 744),
        ScoredGame("greedy", "renamer#4610", 1.0, 1),
        ScoredGame("random", "renamer#retired", 1.0, 7),
        ScoredGame("random", "renamer#retired", 0.5, 14),
        ScoredGame("random", "renamer#retired", 0.0, 2287),
        ScoredGame("random", "renamer#4613", 0.0, 1),
        ScoredGame("greedy", "renamer#4611", 1.0, 1),
        ScoredGame("greedy", "renamer#4612", 0.0, 1),
    ]
    table = rate(games, anchor=("random", 0.0))
    ratings = {p.name: p.rating for p in table.players}
    assert all(p.regularized for p in table.players)
    assert ratings["greedy"] == pytest.approx(ratings["renamer#retired"], abs=5)  # 1148.5 of 2301: even
    assert 700 < ratings["greedy"] < 1000  # 2290 of 2308 against random, an anchor at 0
    assert ratings["renamer#4612"] > ratings["greedy"] > ratings["renamer#4610"]  # beat greedy / lost to it
