"""The Elo scales and the normal distribution, shared by the rating fit, the match statistics and the SPRT."""

from __future__ import annotations

import math
from typing import Final

__all__ = ["ELO_SCALE", "NELO_PER_T", "Z95", "elo_from_score", "normal_cdf", "score_from_elo"]

ELO_SCALE: Final = 400.0
"""Points per factor of ten in the odds: the logistic Elo scale."""

Z95: Final = 1.959963984540054
"""The two-sided 95% quantile of the standard normal distribution."""

NELO_PER_T: Final = 800.0 / math.log(10.0)
"""Normalized Elo per unit of t-value ``(score - 1/2) / sigma_per_game`` (fishtest's ``nelo_divided_by_nt``)."""


def score_from_elo(elo: float) -> float:
    """Expected score of a player ``elo`` logistic Elo points stronger."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / ELO_SCALE))


def elo_from_score(score: float) -> float:
    """Logistic Elo difference for an expected score; infinite at 0 and 1."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -ELO_SCALE * math.log10(1.0 / score - 1.0)


def normal_cdf(x: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))
