"""SPSA as a tune runs it: pure functions of plain values (no engines, no files), so that a resumed tune, replaying
its journal, computes exactly what the interrupted one did.

Simultaneous perturbation stochastic approximation (Spall) with the gains of fishtest's SPSA, per parameter ``i``
and iteration ``k`` (1-based; one iteration is one colour-swapped pair of games) of ``N``::

    c_k = c_end * (N / k) ** gamma                    the perturbation: c_end at the last iteration
    a_k = a_end * ((A + N) / (A + k)) ** alpha        a_end = r_end * c_end ** 2: a_end at the last iteration
    r_k = a_k / c_k ** 2                              the learning rate (fishtest's R): r_end at the last iteration

    engines    theta + c_k * delta  and  theta - c_k * delta     (delta: a random +-1 per parameter)
    update     theta += r_k * c_k * result * delta = (a_k / c_k) * result * delta,   clipped to [min, max]

with ``result`` the pair's wins minus losses of the ``+`` engine (-2..2), ``alpha`` 0.602, ``gamma`` 0.101 and ``A``
a tenth of ``N`` (fishtest's defaults). The state ``theta`` is real-valued; the engines get integers (``spin``
options), rounded stochastically from the clipped ``theta +- c_k``: ``floor(x + u)`` with ``u`` uniform in [0, 1),
one ``u`` per parameter and pair shared by both sides, as OpenBench does (fishtest draws one for each side), so the
two values stay ``2 c_k`` apart on average and never swap sides.

``delta`` and ``u`` of iteration ``k`` are drawn from a generator seeded by the tune's seed and ``k`` alone
(:func:`perturbation`): a pair's perturbation does not depend on when it is played. Which ``theta`` a pair starts
from does (pairs run side by side), and its values are kept in its games' records; the update needs only ``k``,
``delta`` and the result, which the journal holds, in the order it holds them.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ALPHA",
    "A_RATIO",
    "C_END_FRACTION",
    "GAMMA",
    "R_END",
    "Gains",
    "Param",
    "Perturbation",
    "pair_values",
    "perturbation",
    "updated",
]

ALPHA: Final = 0.602
"""The exponent of the learning rate's decay (Spall's, fishtest's)."""
GAMMA: Final = 0.101
"""The exponent of the perturbation's decay."""
A_RATIO: Final = 0.1
"""The stability constant ``A`` as a fraction of the iterations (fishtest's default)."""
C_END_FRACTION: Final = 0.05
"""``C_END`` when not given: a twentieth of the parameter's range."""
R_END: Final = 0.002
"""``R_END`` when not given: the value fishtest's users start from."""


@dataclass(frozen=True, slots=True)
class Param:
    """One tuned option: ``--param NAME=START,MIN,MAX[,C_END[,R_END]]``."""

    name: str
    """The option's id, as the engine declares it."""
    start: float
    """The value the tune starts from."""
    min: int
    """The smallest value the tune sends (inside the option's declared range)."""
    max: int
    """The largest value the tune sends."""
    c_end: float
    """The perturbation at the last iteration (fishtest's ``c_end``)."""
    r_end: float
    """The learning rate at the last iteration (fishtest's ``r_end``): ``a_end = r_end * c_end ** 2``."""

    @property
    def a_end(self) -> float:
        """The step's numerator at the last iteration."""
        return self.r_end * self.c_end**2

    def clip(self, value: float) -> float:
        """``value`` brought into ``[min, max]``."""
        return min(max(value, self.min), self.max)


@dataclass(frozen=True, slots=True)
class Gains:
    """How the perturbation and the learning rate decay over ``pairs`` iterations."""

    pairs: int
    """``N``: the iterations (one pair of games each)."""
    alpha: float = ALPHA
    """The learning rate's exponent."""
    gamma: float = GAMMA
    """The perturbation's exponent."""
    a_ratio: float = A_RATIO
    """``A`` as a fraction of ``pairs``."""

    @property
    def big_a(self) -> float:
        """The stability constant ``A``."""
        return self.a_ratio * self.pairs

    def c(self, param: Param, k: int) -> float:
        """The perturbation of iteration ``k``."""
        return param.c_end * math.pow(self.pairs / k, self.gamma)

    def a(self, param: Param, k: int) -> float:
        """The step's numerator of iteration ``k``."""
        return param.a_end * math.pow((self.big_a + self.pairs) / (self.big_a + k), self.alpha)

    def r(self, param: Param, k: int) -> float:
        """The learning rate of iteration ``k`` (``a_k / c_k**2``)."""
        return self.a(param, k) / self.c(param, k) ** 2


@dataclass(frozen=True, slots=True)
class Perturbation:
    """What iteration ``k`` draws: a sign per parameter, and the uniform number that rounds its values."""

    signs: tuple[int, ...]
    """``delta``: +1 or -1 per parameter."""
    draws: tuple[float, ...]
    """``u`` in [0, 1) per parameter, for the stochastic rounding."""


@functools.lru_cache(maxsize=1024)
def perturbation(seed: int, k: int, n: int) -> Perturbation:
    """The draws of iteration ``k`` of a tune seeded ``seed`` with ``n`` parameters (the same on every run; kept
    for the pairs in flight: a pair's are asked for when it starts and when it counts)."""
    # A string seed is hashed with SHA-512 by random.Random: stable across runs and Python versions.
    rng = random.Random(f"quarto-arena-tune:{seed}:{k}")
    signs = tuple(rng.choice((-1, 1)) for _ in range(n))
    return Perturbation(signs, tuple(rng.random() for _ in range(n)))


def pair_values(
    params: Sequence[Param], theta: Sequence[float], gains: Gains, k: int, drawn: Perturbation
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The integer values of the ``+`` and the ``-`` engine of iteration ``k`` from ``theta``."""
    plus, minus = [], []
    for p, t, sign, u in zip(params, theta, drawn.signs, drawn.draws, strict=True):
        step = gains.c(p, k) * sign
        # Clipped first: floor(x + u) of x in [min, max] stays there (min and max are integers, u < 1).
        plus.append(math.floor(p.clip(t + step) + u))
        minus.append(math.floor(p.clip(t - step) + u))
    return tuple(plus), tuple(minus)


def updated(
    params: Sequence[Param], theta: Sequence[float], gains: Gains, k: int, signs: Sequence[int], result: int
) -> tuple[float, ...]:
    """``theta`` after iteration ``k`` whose pair scored ``result`` (the ``+`` engine's wins minus losses)."""
    return tuple(
        p.clip(t + gains.a(p, k) / gains.c(p, k) * result * sign)
        for p, t, sign in zip(params, theta, signs, strict=True)
    )
