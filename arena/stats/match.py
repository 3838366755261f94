"""Two-engine match statistics: score, Elo, normalized Elo and LOS, each with a 95% interval (pure functions).

Each game (trinomial counts W/L/D) or each colour-swapped game pair (pentanomial counts) is a trial scored in
[0, 1]; the score is the mean of the trials. The normal case follows fishtest and fastchess exactly (the shared
vectors in tests/data/rating/match_stats.json):

- Elo is ``-400 log10(1/score - 1)``; its margin is half the width of the normal 95% interval of the score,
  ``score -+ z * sd / sqrt(trials)`` with the trials' observed standard deviation ``sd``, mapped to Elo.
- Normalized Elo is the t-value ``(score - 1/2) / sigma_per_game`` times ``800 / ln 10``. Its margin is
  ``z * 800 / ln 10 / sqrt(games)`` *whatever the result*: that is how fishtest and fastchess define it (the t-value's
  standard error to first order, at t = 0, treating the observed spread as exact), and every vector agrees. It is
  right for the close matches an SPRT measures; for lopsided results it understates the uncertainty, because the
  spread is estimated too (the estimate's real spread is 1.6 times what that margin assumes at a score of 80%
  without draws, 5.5 times at 95%: ``benchmarks/nelo_margin.py``).
- LOS is ``Phi((score - 1/2) / (sd / sqrt(trials)))``.

Those formulas break down at the edges, where fastchess and cutechess print ``inf`` and ``nan`` and fishtest
clamps the score to [0.001, 0.999]. Here instead:

- A score of 1 (every game or pair won) has no upper bound, and gets an exact one-sided 95% lower bound
  instead: ``0.05 ** (1 / trials)``. Below it, ``trials`` full points in a row have a probability under 5%
  whatever the draw rate, because a trial whose expected score is ``p`` is a full point with probability at most
  ``p``. A clean sweep of 20 games gives ``elo > +316.6``, one won game ``elo > -511.5``. A score of 0 likewise.
- Otherwise, when the normal interval does not exist (no spread: all draws, every pair alike) or reaches a score
  of 0 or 1 (a few games, or nearly one-sided results), the score's interval is Wilson's score interval with the
  largest variance a trial with that mean can have, ``p (1 - p)``: conservative (draws only lower the variance),
  of positive width, strictly inside (0, 1).
- With no spread and a score other than 1/2 the t-value is infinite; its bound is the smallest t-value of any
  outcome distribution whose mean reaches the score's bound (see :func:`_t_value_floor`). With no spread at 1/2
  (all draws, every pair WL or DD) the estimate is 0 with the usual margin.
- With no spread, LOS uses the largest variance a trial can have when the engines are equal, 1/4.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..errors import ArenaError, ExitStatus
from .elo import NELO_PER_T, Z95, elo_from_score, normal_cdf

__all__ = [
    "Estimate",
    "IntervalKind",
    "MatchStats",
    "StatsError",
    "named",
    "pentanomial_stats",
    "trinomial_stats",
]

# The error rate of a one-sided bound: the score's side that has no bound takes none of the 5%.
_ONE_SIDED_ALPHA: Final = 0.05


class StatsError(ArenaError, ValueError):
    """Counts or parameters that have no statistic: negative counts, no games, impossible SPRT settings."""

    status = ExitStatus.USAGE
    reason = "stats"


class IntervalKind(enum.Enum):
    """How the 95% interval of an :class:`Estimate` was obtained."""

    NORMAL = "normal"
    """fishtest's and fastchess's: the normal interval of the score with its observed spread; shown as a margin."""
    WILSON = "wilson"
    """Wilson's score interval with the largest variance a trial can have: where the normal one does not exist."""
    BOUND = "bound"
    """A one-sided 95% bound (none from a single pair): the estimate is infinite."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic with its 95% interval; ``str()`` gives the form rating tools print.

    ``value`` is infinite when the results have no finite estimate (a score of 0 or 1; for nElo, no spread at a
    score other than 1/2); ``low`` is ``-inf`` when nothing bounds it from below, ``high`` is ``+inf`` when nothing
    bounds it from above.
    """

    value: float
    """The point estimate."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    kind: IntervalKind
    """How the interval was obtained."""

    @property
    def margin(self) -> float | None:
        """fishtest's and fastchess's "+/-" half-width, for a :attr:`IntervalKind.NORMAL` interval; else ``None``."""
        return (self.high - self.low) / 2.0 if self.kind is IntervalKind.NORMAL else None

    def __str__(self) -> str:
        """:func:`named` without the trials: ``+40.7 +/- 30.4 (95% CI)``, ``> +316.6 (95% bound)``."""
        return named(self)


def named(estimate: Estimate, trials: str | None = None) -> str:
    """The estimate with its interval named, ``trials`` being ``trinomial`` (games) or ``pentanomial`` (pairs):
    ``+40.7 +/- 30.4 (95% CI, trinomial)``, ``+190.8 (95% CI -243.1 to +624.8, trinomial)``, ``> +316.6 (95% bound,
    pentanomial)``, ``unbounded``: the form every output (terminal, standings files, report) prints."""
    e, tail = estimate, "" if trials is None else f", {trials}"
    if e.margin is not None:
        return f"{_signed(e.value)} +/- {e.margin:.1f} (95% CI{tail})"
    if math.isfinite(e.value):
        return f"{_signed(e.value)} (95% CI {_signed(e.low)} to {_signed(e.high)}{tail})"
    if math.isfinite(e.low):
        return f"> {_signed(e.low)} (95% bound{tail})"
    if math.isfinite(e.high):
        return f"< {_signed(e.high)} (95% bound{tail})"
    return "unbounded"


def _signed(x: float) -> str:
    """``x`` with a sign and one decimal; an even score is ``+0.0``, not ``-0.0``."""
    text = f"{x:+.1f}"
    return "+0.0" if text == "-0.0" else text


@dataclass(frozen=True, slots=True)
class MatchStats:
    """Score, Elo, normalized Elo and LOS of one engine against another (see the module for the definitions)."""

    games: int
    """Games played (twice the pairs for pentanomial counts)."""
    score: float
    """Fraction of the points scored by the first engine."""
    elo: Estimate
    """Logistic Elo difference implied by ``score``."""
    nelo: Estimate
    """Normalized Elo: ``(score - 1/2) / sigma_per_game * 800 / ln 10``."""
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
    games = int(per_game_factor * trials)
    return MatchStats(
        games,
        score,
        _elo(score, variance, trials),
        _nelo(score, variance, trials, values, per_game_factor),
        _los(score, variance, trials),
    )


def _elo(score: float, variance: float, trials: int) -> Estimate:
    """Elo with fishtest's normal interval; a one-sided bound at a score of 0 or 1; else Wilson's interval."""
    half = Z95 * math.sqrt(variance / trials)
    if variance > 0.0 and half < score < 1.0 - half:
        low, high, kind = score - half, score + half, IntervalKind.NORMAL
    else:
        low, high = _score_interval(score, trials)
        kind = IntervalKind.BOUND if score in (0.0, 1.0) else IntervalKind.WILSON
    return Estimate(elo_from_score(score), elo_from_score(low), elo_from_score(high), kind)


def _nelo(score: float, variance: float, trials: int, values: Sequence[float], per_game_factor: float) -> Estimate:
    """Normalized Elo with fishtest's margin, or a one-sided bound when no spread makes the t-value infinite."""
    # A pair average's t-value is sqrt(2) times a game's.
    per_t = NELO_PER_T / math.sqrt(per_game_factor)
    if variance > 0.0 or score == 0.5:
        # With no spread at 1/2 the t-value is 0/0; 0 is the only value that does not favour either engine.
        value = (score - 0.5) / math.sqrt(variance) * per_t if variance > 0.0 else 0.0
        margin = Z95 * NELO_PER_T / math.sqrt(per_game_factor * trials)
        return Estimate(value, value - margin, value + margin, IntervalKind.NORMAL)
    low, high = _score_interval(score, trials)
    if score > 0.5:
        return Estimate(math.inf, _t_value_floor(low, values) * per_t, math.inf, IntervalKind.BOUND)
    # The outcomes are symmetric about 1/2, so a ceiling is a mirrored floor.
    return Estimate(-math.inf, -math.inf, -_t_value_floor(1.0 - high, values) * per_t, IntervalKind.BOUND)


def _los(score: float, variance: float, trials: int) -> float:
    """Phi of the score's distance from 1/2 in standard errors; with no spread, the largest null variance 1/4."""
    standard_error = math.sqrt((variance if variance > 0.0 else 0.25) / trials)
    return normal_cdf((score - 0.5) / standard_error)


def _score_interval(score: float, trials: int) -> tuple[float, float]:
    """The score's 95% interval where the normal one fails: one-sided and exact at 0 and 1, else Wilson's.

    At a score of 1 the bound is the ``p`` at which ``trials`` full points in a row have probability exactly 5%
    when every trial is a win or a loss, ``p ** trials = 0.05``; draws only make a sweep less likely.
    """
    if score == 1.0:
        return _ONE_SIDED_ALPHA ** (1.0 / trials), 1.0
    if score == 0.0:
        return 0.0, 1.0 - _ONE_SIDED_ALPHA ** (1.0 / trials)
    return _wilson(score, trials)


def _wilson(score: float, trials: int) -> tuple[float, float]:
    """Wilson's 95% score interval for a mean of ``trials`` results in [0, 1] with variance ``p (1 - p)``.

    Those are the ``p`` for which ``|score - p| <= z * sqrt(p (1 - p) / trials)``. No result in [0, 1] with mean
    ``p`` has a larger variance (Bhatia-Davis), so the interval is conservative when there are draws.
    """
    shrink = 1.0 + Z95**2 / trials
    centre = (score + Z95**2 / (2.0 * trials)) / shrink
    half = Z95 / shrink * math.sqrt(score * (1.0 - score) / trials + Z95**2 / (4.0 * trials**2))
    return centre - half, centre + half


def _t_value_floor(mean_low: float, values: Sequence[float]) -> float:
    """The smallest t-value ``(mu - 1/2) / sigma`` of any distribution on ``values`` whose mean is >= ``mean_low``.

    ``values`` are the possible trial scores, evenly spaced from 0 to 1. From a mean of 1/2 up, the t-value grows
    with the mean and falls with the spread, so the floor is the two-point distribution on 0 and 1 at
    ``mean_low``, the largest spread for that mean. Below 1/2 the smallest spread gives the floor: when a possible
    score lies in [``mean_low``, 1/2), every trial at that score has no spread and a t-value of ``-inf``; otherwise
    the floor is the two-point distribution on 1/2 and the possible score next below ``mean_low``.
    """
    if mean_low >= 0.5:
        return (mean_low - 0.5) / math.sqrt(mean_low * (1.0 - mean_low))
    if any(mean_low <= v < 0.5 for v in values):
        return -math.inf
    below = max(v for v in values if v < mean_low)
    return -math.sqrt((0.5 - mean_low) / (mean_low - below))
