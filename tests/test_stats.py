"""Rating fit against Ordo, match statistics and GSPRT against fishtest/fastchess/cutechess values, properties."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.arena.pgn import read_results
from quarto_arena.arena.stats import (
    NELO_PER_T,
    Z95,
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


def close(actual: float, expected: float, rel: float = 1e-4) -> bool:
    return actual == pytest.approx(expected, rel=rel, abs=1e-6)


@pytest.mark.parametrize("entry", MATCH["elo"], ids=lambda e: str(e.get("penta") or (e["W"], e["L"], e["D"])))
def test_match_stats_agree_with_fishtest_and_fastchess(entry: dict[str, Any]) -> None:
    stats = (
        pentanomial_stats(entry["penta"]) if "penta" in entry else trinomial_stats(entry["W"], entry["L"], entry["D"])
    )
    assert close(stats.score, entry["score"])
    assert close(stats.elo, entry["elo"])
    assert close(stats.elo_margin, entry["elo_pm"])
    assert close(stats.nelo, entry["nelo"])
    assert close(stats.nelo_margin, entry["nelo_pm"])
    if "los" in entry:
        assert close(stats.los, entry["los"])
    assert stats.games == (2 * sum(entry["penta"]) if "penta" in entry else entry["W"] + entry["L"] + entry["D"])


def test_match_stats_edge_cases() -> None:
    sweep = trinomial_stats(10, 0, 0)
    assert (sweep.elo, sweep.elo_margin, sweep.nelo, sweep.los) == (math.inf, math.inf, math.inf, 1.0)
    draws = trinomial_stats(0, 0, 10)
    assert (draws.elo, draws.elo_margin, draws.nelo, draws.los) == (0.0, 0.0, 0.0, 0.5)
    assert draws.nelo_margin == pytest.approx(Z95 * NELO_PER_T / math.sqrt(10))
    with pytest.raises(StatsError, match="no games"):
        trinomial_stats(0, 0, 0)
    with pytest.raises(StatsError, match="negative"):
        trinomial_stats(1, -1, 0)
    with pytest.raises(StatsError, match="5 numbers"):
        pentanomial_stats([1, 2, 3])


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 200), st.integers(0, 200), st.integers(0, 200))
def test_swapping_the_engines_negates_elo(wins: int, losses: int, draws: int) -> None:
    if wins + losses + draws == 0 or wins == losses == 0:
        return
    a, b = trinomial_stats(wins, losses, draws), trinomial_stats(losses, wins, draws)
    assert a.elo == pytest.approx(-b.elo) and a.nelo == pytest.approx(-b.nelo)
    assert a.los == pytest.approx(1.0 - b.los) and a.elo_margin == pytest.approx(b.elo_margin)


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


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 500), st.integers(1, 500), st.integers(0, 500), st.sampled_from(list(SprtModel)))
def test_llr_grows_with_wins_and_is_antisymmetric(wins: int, losses: int, draws: int, model: SprtModel) -> None:
    llr = llr_trinomial(wins, losses, draws, -2.0, 2.0, model)
    assert llr_trinomial(wins + 5, losses, draws, -2.0, 2.0, model) > llr
    # Swapping the hypotheses negates the ratio.
    assert llr_trinomial(wins, losses, draws, 2.0, -2.0, model) == pytest.approx(-llr, abs=1e-9)
