"""The generalized sequential probability ratio test (GSPRT) of fishtest and fastchess (pure functions).

The LLR is ``N`` times the expected log ratio of the two maximum-likelihood distributions of a game (or game pair)
outcome under the constraints ``H0`` and ``H1``, where the constraint is on the expected score (logistic Elo) or on
the t-value ``(mu - 1/2) / sigma`` (normalized Elo).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .elo import NELO_PER_T, score_from_elo
from .match import StatsError

__all__ = [
    "Sprt",
    "SprtDecision",
    "SprtModel",
    "SprtStatus",
    "llr_pentanomial",
    "llr_trinomial",
    "sprt_bounds",
]

# fishtest replaces an empty outcome class by this tiny count so that the log-likelihoods stay finite.
_EMPTY_CLASS_COUNT: Final = 1e-3


class SprtModel(enum.Enum):
    """What the Elo bounds of an SPRT are measured in."""

    LOGISTIC = "logistic"
    """Logistic Elo: the hypotheses constrain the expected score."""
    NORMALIZED = "normalized"
    """Normalized Elo: the hypotheses constrain the t-value ``(score - 1/2) / sigma_per_game``."""


class SprtDecision(enum.Enum):
    """Where a sequential test stands."""

    H0 = "H0"
    """The LLR reached the lower bound: accept H0 (the change is not an improvement of ``elo1``)."""
    H1 = "H1"
    """The LLR reached the upper bound: accept H1."""
    CONTINUE = "continue"
    """Neither bound reached: play more games."""


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's LLR bounds ``(ln(beta / (1 - alpha)), ln((1 - beta) / alpha))`` for error rates alpha and beta."""
    if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
        raise StatsError(f"SPRT needs 0 < alpha, beta and alpha + beta < 1; got alpha={alpha}, beta={beta}")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def llr_trinomial(
    wins: int, losses: int, draws: int, elo0: float, elo1: float, model: SprtModel = SprtModel.LOGISTIC
) -> float:
    """GSPRT log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) from game counts; 0 with no games."""
    if min(wins, losses, draws) < 0:
        raise StatsError(f"wins, losses and draws cannot be negative: {wins}, {losses}, {draws}")
    return _llr([losses, draws, wins], elo0, elo1, model, per_game_factor=1.0)


def llr_pentanomial(penta: Sequence[int], elo0: float, elo1: float, model: SprtModel = SprtModel.LOGISTIC) -> float:
    """GSPRT log-likelihood ratio from game-pair counts ``[LL, LD, WL+DD, WD, WW]``; 0 with no pairs."""
    if len(penta) != 5 or min(penta) < 0:
        raise StatsError(f"pentanomial counts are 5 numbers >= 0 ([LL, LD, WL+DD, WD, WW]), not {list(penta)}")
    return _llr(list(penta), elo0, elo1, model, per_game_factor=2.0)


def _llr(counts: list[int], elo0: float, elo1: float, model: SprtModel, per_game_factor: float) -> float:
    if sum(counts) == 0:
        return 0.0
    regular = [float(c) if c else _EMPTY_CLASS_COUNT for c in counts]
    total = sum(regular)
    values = [i / (len(regular) - 1) for i in range(len(regular))]
    observed = [c / total for c in regular]
    if model is SprtModel.LOGISTIC:
        fit0 = _mle_with_mean(values, observed, score_from_elo(elo0))
        fit1 = _mle_with_mean(values, observed, score_from_elo(elo1))
    else:
        # The t-value of a pair average is sqrt(2) times that of a game.
        t0, t1 = (nelo / NELO_PER_T * math.sqrt(per_game_factor) for nelo in (elo0, elo1))
        fit0 = _mle_with_t_value(values, observed, t0)
        fit1 = _mle_with_t_value(values, observed, t1)
    return total * sum(p * (math.log(q1) - math.log(q0)) for p, q0, q1 in zip(observed, fit0, fit1, strict=True))


def _mle_with_mean(values: Sequence[float], observed: Sequence[float], mean: float) -> list[float]:
    """Most likely outcome distribution with expectation ``mean``, given the observed frequencies.

    The Lagrange condition gives ``q_i = p_i / (1 + x (a_i - mean))`` with ``x`` the root of the secular equation
    (Van den Bergh, "support_MLE_multinomial", Proposition 1.1).
    """
    shifted = [a - mean for a in values]
    x = _secular_root(shifted, observed)
    return [p / (1.0 + x * a) for a, p in zip(shifted, observed, strict=True)]


def _mle_with_t_value(values: Sequence[float], observed: Sequence[float], t: float) -> list[float]:
    """Most likely outcome distribution with t-value ``(mu - 1/2) / sigma = t``, by fixed-point iteration.

    Each step linearizes the constraint around the current estimate and solves the resulting secular equation
    (Van den Bergh, "normalized_elo_practical", section 4.1).
    """
    fit = [1.0 / len(values)] * len(values)
    for _ in range(100):
        mu = sum(a * q for a, q in zip(values, fit, strict=True))
        sigma = math.sqrt(sum(q * (a - mu) ** 2 for a, q in zip(values, fit, strict=True)))
        shifted = [a - 0.5 - t * sigma * (1.0 + ((mu - a) / sigma) ** 2) / 2.0 for a in values]
        x = _secular_root(shifted, observed)
        new = [p / (1.0 + x * a) for a, p in zip(shifted, observed, strict=True)]
        done = max(abs(q - r) for q, r in zip(fit, new, strict=True)) < 1e-13
        fit = new
        if done:
            break
    return fit


def _secular_root(shifted: Sequence[float], observed: Sequence[float]) -> float:
    """The root ``x`` of ``sum p_i a_i / (1 + x a_i) = 0`` that keeps every ``1 + x a_i`` positive."""
    low_value, high_value = min(shifted), max(shifted)
    if not low_value < 0.0 < high_value:
        raise StatsError("SPRT bound outside the possible range of outcomes: choose elo0/elo1 closer to 0")

    pairs = list(zip(shifted, observed, strict=True))
    # f(x) = sum p a / (1 + x a) decreases from +inf at -1/high_value to -inf at -1/low_value. Newton's steps from
    # x = 0, kept inside the bracket that the signs of f narrow (a bisection where a step would leave it), until x
    # stops moving: the same root as bisecting to the end, in a handful of steps instead of some sixty (the SPRT
    # computes it eight times a pair, and CI recipes simulate many thousands of runs).
    low, high = -1.0 / high_value, -1.0 / low_value
    x = 0.0
    while True:
        value = slope = 0.0
        for a, p in pairs:
            term = a / (1.0 + x * a)
            value += p * term
            slope -= p * term * term
        if value > 0.0:
            low = x
        elif value < 0.0:
            high = x
        else:
            return x
        step = x - value / slope if slope < 0.0 else (low + high) / 2.0
        if not low < step < high:
            step = (low + high) / 2.0
            if not low < step < high:
                return x
        if step == x:
            return x
        x = step


@dataclass(frozen=True, slots=True)
class SprtStatus:
    """The state of a sequential test after some games."""

    llr: float
    """Log-likelihood ratio so far."""
    lower: float
    """Accept H0 at or below this LLR."""
    upper: float
    """Accept H1 at or above this LLR."""
    decision: SprtDecision
    """H0, H1 or continue."""


@dataclass(frozen=True, slots=True)
class Sprt:
    """A generalized sequential probability ratio test of ``elo1`` against ``elo0`` (fishtest's GSPRT)."""

    elo0: float
    """Elo under H0, in ``model`` units."""
    elo1: float
    """Elo under H1, in ``model`` units; must differ from ``elo0``."""
    alpha: float = 0.05
    """Probability of accepting H1 when H0 holds."""
    beta: float = 0.05
    """Probability of accepting H0 when H1 holds."""
    model: SprtModel = SprtModel.NORMALIZED
    """Units of ``elo0`` and ``elo1``."""

    def __post_init__(self) -> None:
        sprt_bounds(self.alpha, self.beta)
        if self.elo0 == self.elo1:
            raise StatsError(f"SPRT needs elo0 != elo1; both are {self.elo0}")

    @property
    def bounds(self) -> tuple[float, float]:
        """The lower and upper LLR bounds."""
        return sprt_bounds(self.alpha, self.beta)

    def decide(self, llr: float) -> SprtStatus:
        """Where the test stands at log-likelihood ratio ``llr``."""
        lower, upper = self.bounds
        decision = SprtDecision.H0 if llr <= lower else SprtDecision.H1 if llr >= upper else SprtDecision.CONTINUE
        return SprtStatus(llr, lower, upper, decision)

    def trinomial(self, wins: int, losses: int, draws: int) -> SprtStatus:
        """The test's state after these game counts."""
        return self.decide(llr_trinomial(wins, losses, draws, self.elo0, self.elo1, self.model))

    def pentanomial(self, penta: Sequence[int]) -> SprtStatus:
        """The test's state after these game-pair counts ``[LL, LD, WL+DD, WD, WW]``."""
        return self.decide(llr_pentanomial(penta, self.elo0, self.elo1, self.model))
