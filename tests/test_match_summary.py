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
    assert f"Elo difference: {vector['elo']:+.1f} +/- {vector['elo_pm']:.1f}" in lines[1]


@pytest.mark.parametrize("vector", [v for v in VECTORS["elo"] if "penta" in v and "los" in v], ids=str)
def test_pentanomial_pairs_and_nelo_match_the_vectors(vector: dict[str, object]) -> None:
    ll, ld, wl_dd, wd, ww = vector["penta"]  # type: ignore[misc]
    pair_points = [(0.0, 0.0)] * ll + [(0.0, 0.5)] * ld + [(1.0, 0.0)] * wl_dd + [(1.0, 0.5)] * wd + [(1.0, 1.0)] * ww
    records = games_for([p for pair in pair_points for p in pair])
    s = summarize(records, "new", "base")
    assert s.pentanomial == (ll, ld, wl_dd, wd, ww)
    lines = match_lines(s)
    nelo, nelo_pm, los = vector["nelo"], vector["nelo_pm"], vector["los"]
    assert f"nElo: {nelo:+.1f} +/- {nelo_pm:.1f}, LOS: {100 * los:.1f} %" in lines[1]  # type: ignore[operator]
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
