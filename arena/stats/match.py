"""Two-engine match statistics: score, Elo, normalized Elo and LOS with their 95% intervals (pure functions).

Definitions follow fishtest and fastchess: each game (or each colour-swapped game pair) is a trial, the score is the
mean of the trials and its standard error comes from their observed spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .elo import NELO_PER_T, Z95, elo_from_score, normal_cdf

__all__ = ["MatchStats", "StatsError", "pentanomial_stats", "trinomial_stats"]


class StatsError(ValueError):
    """Counts or parameters that have no statistic: negative counts, no games, impossible SPRT settings."""


@dataclass(frozen=True, slots=True)
class MatchStats:
    """Score, Elo, normalized Elo and LOS of one engine against another.

    When the score is 0 or 1, ``elo`` and ``nelo`` are infinite; a margin is infinite when its interval
    reaches a score of 0 or 1.
    """

    games: int
    """Games played (twice the pairs for pentanomial counts)."""
    score: float
    """Fraction of the points scored by the first engine."""
    elo: float
    """Logistic Elo difference implied by ``score``."""
    elo_margin: float
    """Half-width of the 95% interval of ``elo`` (mapped from the normal interval of the score)."""
    nelo: float
    """Normalized Elo: ``(score - 1/2) / sigma_per_game * 800 / ln 10``."""
    nelo_margin: float
    """Half-width of the 95% interval of ``nelo``."""
    los: float
    """Likelihood of superiority: probability that the first engine is the stronger."""


def trinomial_stats(wins: int, losses: int, draws: int) -> MatchStats:
    """Match statistics from game counts, each game an independent trial scored 1, 1/2 or 0."""
    counts = _checked_counts((losses, draws, wins), "wins, losses and draws")
    return _match_stats(counts, per_game_factor=1.0)


def pentanomial_stats(penta: Sequence[int]) -> MatchStats:
    """Match statistics from game-pair counts ``[LL, LD, WL+DD, WD, WW]`` (pair scores 0, 1/2, 1, 3/2, 2).

    Pairs are the trials, so the correlation between the two games of a pair (same opening, colours swapped)
    is accounted for.
    """
    if len(penta) != 5:
        raise StatsError(f"pentanomial counts are [LL, LD, WL+DD, WD, WW], 5 numbers, not {len(penta)}")
    counts = _checked_counts(penta, "pentanomial counts")
    return _match_stats(counts, per_game_factor=2.0)


def _checked_counts(counts: Sequence[int], what: str) -> list[int]:
    if any(c < 0 for c in counts):
        raise StatsError(f"{what} cannot be negative: {list(counts)}")
    if sum(counts) == 0:
        raise StatsError(f"no games: {what} are all 0")
    return list(counts)


def _match_stats(counts: Sequence[int], per_game_factor: float) -> MatchStats:
    """``counts`` of outcomes scored 0 .. 1 evenly; ``per_game_factor`` games per outcome (1 or 2)."""
    trials = sum(counts)
    values = [i / (len(counts) - 1) for i in range(len(counts))]
    score = sum(v * c for v, c in zip(values, counts, strict=True)) / trials
    variance = sum(c * (v - score) ** 2 for v, c in zip(values, counts, strict=True)) / trials
    sd_mean = math.sqrt(variance / trials)
    elo = elo_from_score(score)
    elo_margin = (elo_from_score(score + Z95 * sd_mean) - elo_from_score(score - Z95 * sd_mean)) / 2.0
    games = int(per_game_factor * trials)
    # The per-game deviation of a pair average is sqrt(2 * var); the nElo margin is then z / sqrt(games) always.
    nelo_margin = Z95 * NELO_PER_T / math.sqrt(games)
    if variance > 0.0:
        nelo = (score - 0.5) / math.sqrt(per_game_factor * variance) * NELO_PER_T
        los = normal_cdf((score - 0.5) / sd_mean)
    else:  # every trial had the same outcome
        nelo = 0.0 if score == 0.5 else math.copysign(math.inf, score - 0.5)
        los = 0.5 if score == 0.5 else float(score > 0.5)
    if math.isnan(elo_margin):  # inf - inf: the score is 0 or 1
        elo_margin = math.inf
    return MatchStats(games, score, elo, elo_margin, nelo, nelo_margin, los)
