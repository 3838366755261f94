"""The two-engine summary that `play` prints: W/L/D, pentanomial pair counts, Elo, nElo and LOS, agreeing with
the fastchess/fishtest vectors in tests/data/rating/match_stats.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from quarto_arena.arena.output import match_lines
from quarto_arena.arena.records import GameRecord, Result, Termination
from quarto_arena.arena.results import summarize

VECTORS = json.loads((Path(__file__).parent / "data" / "rating" / "match_stats.json").read_text())


def game(
    game_id: int,
    first: str,
    second: str,
    result: Result,
    termination: Termination = Termination.NORMAL,
) -> GameRecord:
    return GameRecord(first=first, second=second, result=result, termination=termination, game_id=game_id)


def games_for(points_of_new: list[float]) -> list[GameRecord]:
    """Games in colour-swapped pairs (NEW first in odd games) with NEW scoring the given points."""
    out = []
    for i, p in enumerate(points_of_new, start=1):
        first, second = ("new", "base") if i % 2 else ("base", "new")
        if p == 0.5:
            result = Result.DRAW
        elif (p == 1.0) == (first == "new"):
            result = Result.FIRST_WINS
        else:
            result = Result.SECOND_WINS
        out.append(game(i, first, second, result))
    return out


@pytest.mark.parametrize("vector", [v for v in VECTORS["elo"] if "W" in v and "los" in v], ids=str)
def test_trinomial_figures_match_the_vectors(vector: dict[str, float]) -> None:
    wins, losses, draws = int(vector["W"]), int(vector["L"]), int(vector["D"])
    # The pairs they form do not matter here: the Elo line is computed from the W/L/D counts.
    records = games_for([1.0] * wins + [0.0] * losses + [0.5] * draws)
    s = summarize(records, "new", "base")
    assert (s.wins, s.losses, s.draws) == (wins, losses, draws)
    lines = match_lines(s)
    games = wins + losses + draws
    assert lines[0] == f"Score of new vs base: {wins} - {losses} - {draws}  [{vector['score']:.3f}] {games}"
    assert f"Elo difference: {vector['elo']:+.1f} +/- {vector['elo_pm']:.1f} (95% CI, trinomial)" in lines[1]


@pytest.mark.slow
@pytest.mark.parametrize("vector", [v for v in VECTORS["elo"] if "penta" in v and "los" in v], ids=str)
def test_pentanomial_pairs_and_nelo_match_the_vectors(vector: dict[str, object]) -> None:
    ll, ld, wl_dd, wd, ww = vector["penta"]  # type: ignore[misc]
    pair_points = [(0.0, 0.0)] * ll + [(0.0, 0.5)] * ld + [(1.0, 0.0)] * wl_dd + [(1.0, 0.5)] * wd + [(1.0, 1.0)] * ww
    records = games_for([p for pair in pair_points for p in pair])
    s = summarize(records, "new", "base")
    assert s.pentanomial == (ll, ld, wl_dd, wd, ww)
    lines = match_lines(s)
    nelo, nelo_pm, los = vector["nelo"], vector["nelo_pm"], vector["los"]
    assert f"nElo: {nelo:+.1f} +/- {nelo_pm:.1f} (95% CI, pentanomial), LOS: {100 * los:.1f} %" in lines[1]  # type: ignore[operator]
    assert lines[2] == f"Pairs [LL, LD, WL+DD, WD, WW]: [{ll}, {ld}, {wl_dd}, {wd}, {ww}]  ({sum(s.pentanomial)} pairs)"


def test_incomplete_pairs_and_forfeits() -> None:
    records = [
        game(1, "new", "base", Result.FIRST_WINS),
        game(2, "base", "new", Result.FIRST_WINS, Termination.TIME_FORFEIT),
        game(3, "new", "base", Result.DRAW),
    ]
    s = summarize(records, "new", "base")
    assert s.pentanomial == (0, 0, 1, 0, 0)  # game 3 has no partner yet
    assert (s.wins, s.losses, s.draws) == (1, 1, 1)
    assert match_lines(s)[-1] == "Forfeits by new: 1 time forfeit"


# What `play` prints at the edges. Bounds by hand: the one-sided 95% bound of a perfect score over n trials is
# 0.05 ** (1/n): 20 games -> 0.8609 -> +316.6 Elo; 2 games -> 0.2236 -> -216.2; 1 game -> 0.05 -> -511.5. Its nElo
# is the t-value of the largest spread at that score: 1 game, t = -sqrt(0.45 / 0.05) = -3 -> -1042.3; 10 winning
# pairs, 0.05 ** (1/10) = 0.7411, t = 0.2411 / sqrt(0.7411 * 0.2589) = 0.5505, per game (/ sqrt 2) times
# 800 / ln 10 -> +135.2. Wilson's interval (z = 1.96) elsewhere: all draws in 20, 1/2 -+ z / (2 sqrt(20 + z^2)) =
# 0.2007 -> -+147.8 Elo; one win and one loss, 0.4055 -> -+392.5; one draw, 0.4454 -> -+495.3. One decisive game
# in 20: pairs [0, 0, 9, 1, 0], pair scores 0.5 x 9 and 0.75: mean 0.525, sd 0.075, nElo 0.025 / (0.075 sqrt 2)
# * 347.44 = +81.9, LOS Phi(0.025 / (0.075 / sqrt 10)) = 85.4 %; Elo from 1-0-19 as fastchess: +17.4 +/- 33.4.
EDGE_CASES = [
    pytest.param(
        [1.0] * 20,
        "Elo difference: > +316.6 (95% bound, trinomial), nElo: > +135.2 (95% bound, pentanomial), LOS: 99.9 %",
        id="all wins",
    ),
    pytest.param(
        [0.0] * 20,
        "Elo difference: < -316.6 (95% bound, trinomial), nElo: < -135.2 (95% bound, pentanomial), LOS: 0.1 %",
        id="all losses",
    ),
    pytest.param(
        [0.5] * 20,
        "Elo difference: +0.0 (95% CI -147.8 to +147.8, trinomial), "
        "nElo: +0.0 +/- 152.3 (95% CI, pentanomial), LOS: 50.0 %",
        id="all draws",
    ),
    pytest.param(
        [1.0, 0.0],
        "Elo difference: +0.0 (95% CI -392.5 to +392.5, trinomial), "
        "nElo: +0.0 +/- 481.5 (95% CI, pentanomial), LOS: 50.0 %",
        id="one pair, one win each",
    ),
    pytest.param(
        [1.0, 1.0],
        "Elo difference: > -216.2 (95% bound, trinomial), nElo: unbounded, LOS: 84.1 %",
        id="one pair, both won",
    ),
    pytest.param(
        [1.0],
        "Elo difference: > -511.5 (95% bound, trinomial), nElo: > -1042.3 (95% bound, trinomial), LOS: 84.1 %",
        id="a single game, won",
    ),
    pytest.param(
        [0.5],
        "Elo difference: +0.0 (95% CI -495.3 to +495.3, trinomial), "
        "nElo: +0.0 +/- 681.0 (95% CI, trinomial), LOS: 50.0 %",
        id="a single game, drawn",
    ),
    pytest.param(
        [1.0, 0.5],
        "Elo difference: +190.8 (95% CI -243.1 to +624.8, trinomial), nElo: unbounded, LOS: 69.1 %",
        id="wins and draws only, few",
    ),
    pytest.param(
        [0.0, 0.5],
        "Elo difference: -190.8 (95% CI -624.8 to +243.1, trinomial), nElo: unbounded, LOS: 30.9 %",
        id="losses and draws only, few",
    ),
    pytest.param(
        [1.0] + [0.5] * 19,
        "Elo difference: +17.4 +/- 33.4 (95% CI, trinomial), nElo: +81.9 +/- 152.3 (95% CI, pentanomial), LOS: 85.4 %",
        id="one decisive game",
    ),
]


@pytest.mark.parametrize(("points", "expected"), EDGE_CASES)
def test_edge_cases_print_bounds_not_infinities(points: list[float], expected: str) -> None:
    lines = match_lines(summarize(games_for(points), "new", "base"))
    assert lines[1] == expected
    assert not any(word in line for line in lines for word in ("inf", "nan"))


def test_a_single_pair_is_one_pair() -> None:
    assert match_lines(summarize(games_for([1.0, 1.0]), "new", "base"))[2].endswith("  (1 pair)")
