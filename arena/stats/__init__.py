"""Statistics: rating tables, two-engine match statistics and the GSPRT. Pure functions, no I/O, no printing.

- :mod:`.elo`: the logistic and normalized Elo scales and the normal distribution, shared by the others;
- :mod:`.rating`: maximum-likelihood ratings of many players (Ordo's model), with margins and LOS;
- :mod:`.tables`: the rating table and the crosstable as plain rows for the CLI;
- :mod:`.match`: score, Elo, normalized Elo and LOS of one engine against another (fishtest/fastchess), with
  bounds instead of infinities at the edges;
- :mod:`.sprt`: the generalized SPRT (fishtest/fastchess).

Every public name is importable from here (``from quarto_arena.arena.stats import rate``).
"""

from __future__ import annotations

from .elo import ELO_SCALE, NELO_PER_T, Z95, elo_from_score, score_from_elo
from .match import Estimate, IntervalKind, MatchStats, StatsError, named, pentanomial_stats, trinomial_stats
from .rating import PairRecord, PlayerRating, RatingError, RatingTable, ScoredGame, rate
from .sprt import Sprt, SprtDecision, SprtModel, SprtStatus, llr_pentanomial, llr_trinomial, sprt_bounds
from .tables import Cell, TableRows, crosstable_rows, display_cell, rating_rows

__all__ = [
    "ELO_SCALE",
    "NELO_PER_T",
    "Z95",
    "Cell",
    "Estimate",
    "IntervalKind",
    "MatchStats",
    "PairRecord",
    "PlayerRating",
    "RatingError",
    "RatingTable",
    "ScoredGame",
    "Sprt",
    "SprtDecision",
    "SprtModel",
    "SprtStatus",
    "StatsError",
    "TableRows",
    "crosstable_rows",
    "display_cell",
    "elo_from_score",
    "llr_pentanomial",
    "llr_trinomial",
    "named",
    "pentanomial_stats",
    "rate",
    "rating_rows",
    "score_from_elo",
    "sprt_bounds",
    "trinomial_stats",
]
