"""A tune's state as its games are counted: :class:`Tuner` gives each game its engines' option values and updates
``theta`` when a pair is complete, one :class:`Iteration` per pair.

The journal is the truth. Pair ``k`` is games ``2k - 1`` (``NAME+`` gives first) and ``2k`` (``NAME-`` gives
first), from one opening. Its values are fixed when its first game starts, from the ``theta`` of that moment
(pairs run side by side, as on fishtest's workers), and every game records them (its engines' options). The update
needs only ``k``, the pair's perturbation (a function of the seed and ``k``) and its result; it is made when the
pair's second game counts. A resumed tune feeds the journal's games to a new Tuner in journal order: the same
updates in the same order, the same ``theta`` to the last bit. A pair cut in half by a stop keeps the values its
counted game recorded for the game it replays.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..engine import EngineConfig
from ..records import GameRecord, Result
from ..schedule import ScheduledGame
from .spec import TuneSpec
from .spsa import pair_values, perturbation, updated

__all__ = ["Iteration", "Tuner", "pair_of"]


def pair_of(game_id: int) -> int:
    """The iteration (pair, 1-based) game ``game_id`` belongs to."""
    return (game_id + 1) // 2


@dataclass(frozen=True, slots=True)
class Iteration:
    """One counted pair: a row of ``tune.csv``, a point of the pages' trajectories."""

    number: int
    """1, 2, ...: the pairs counted so far, this one included (the journal's order)."""
    pair: int
    """``k``: the pair's place in the schedule, which sets its gains (games ``2k - 1`` and ``2k``)."""
    result: int
    """Wins minus losses of the ``+`` engine over the pair (-2..2)."""
    plus: tuple[int, ...] | None
    """The values the ``+`` engine played with (None when its games did not record them)."""
    minus: tuple[int, ...] | None
    """The values the ``-`` engine played with."""
    values: tuple[float, ...]
    """``theta`` after the update."""
    c: tuple[float, ...]
    """The pair's perturbation per parameter."""
    a: tuple[float, ...]
    """The pair's step numerator per parameter (``a_k``)."""
    r: tuple[float, ...]
    """The pair's learning rate per parameter (``a_k / c_k**2``)."""
    time: float
    """When the pair's later game started (seconds since the epoch; 0 when unknown)."""


class Tuner:
    """The state of a tune: ``theta``, the iterations counted, and the values of the pairs under way."""

    def __init__(self, tune: TuneSpec, plus: EngineConfig, minus: EngineConfig) -> None:
        """``plus`` and ``minus``: the run's two engines (``NAME+``, ``NAME-``) as its spec has them."""
        self.tune = tune
        self.plus = plus
        self.minus = minus
        self.theta: tuple[float, ...] = tuple(p.start for p in tune.params)
        """The current values (real-valued)."""
        self.iterations: list[Iteration] = []
        """Every counted pair, in journal order."""
        self._fixed: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        """The values of the pairs under way, fixed when their first game started."""
        self._engines: dict[int, dict[str, EngineConfig]] = {}
        """The pairs under way's two engines with their values, by name (made once a pair, for both its games)."""
        self._halves: dict[int, GameRecord] = {}
        """The counted game of each pair whose other game is not counted yet."""

    @property
    def pairs(self) -> int:
        """Pairs counted."""
        return len(self.iterations)

    def values(self, k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The ``+`` and ``-`` values of pair ``k``: as its counted half recorded them, as fixed when its first game
        started, or (its first game starting now) from the current ``theta``."""
        fixed = self._fixed.get(k)
        if fixed is None:
            half = self._halves.get(k)
            fixed = None if half is None else self._recorded(half)
            if fixed is None:
                t = self.tune
                fixed = pair_values(t.params, self.theta, t.gains, k, perturbation(t.seed, k, len(t.params)))
            self._fixed[k] = fixed
        return fixed

    def engines_of(self, game: ScheduledGame) -> tuple[EngineConfig, EngineConfig]:
        """The two engines of ``game``, first and second, with their options for its pair (the runner's
        :data:`~quarto_arena.arena.run.EnginesOf`)."""
        k = game.pair + 1
        sides = self._engines.get(k)
        if sides is None:
            plus, minus = self.values(k)
            sides = self._engines[k] = {
                self.plus.name: self._with(self.plus, plus),
                self.minus.name: self._with(self.minus, minus),
            }
        return sides[game.first], sides[game.second]

    def _with(self, config: EngineConfig, values: Sequence[int]) -> EngineConfig:
        options = dict(config.options)
        options.update((p.name, str(v)) for p, v in zip(self.tune.params, values, strict=True))
        return replace(config, options=options)

    def count(self, record: GameRecord) -> Iteration | None:
        """A game counted (in journal order); the pair's :class:`Iteration` once both its games are."""
        k = pair_of(record.game_id)
        other = self._halves.pop(k, None)
        if other is None:
            self._halves[k] = record
            return None
        fixed = self._fixed.pop(k, None)
        self._engines.pop(k, None)
        sent = self._recorded(other) or self._recorded(record) or fixed
        t = self.tune
        result = self._score(other) + self._score(record)
        drawn = perturbation(t.seed, k, len(t.params))
        self.theta = updated(t.params, self.theta, t.gains, k, drawn.signs, result)
        g = t.gains
        iteration = Iteration(
            number=len(self.iterations) + 1,
            pair=k,
            result=result,
            plus=None if sent is None else sent[0],
            minus=None if sent is None else sent[1],
            values=self.theta,
            c=tuple(g.c(p, k) for p in t.params),
            a=tuple(g.a(p, k) for p in t.params),
            r=tuple(g.r(p, k) for p in t.params),
            time=max(_seconds(other.started), _seconds(record.started)),
        )
        self.iterations.append(iteration)
        return iteration

    def replay(self, records: Iterable[GameRecord]) -> None:
        """Counts a journal's games, in its order (a resume)."""
        for record in records:
            self.count(record)

    def _score(self, record: GameRecord) -> int:
        """+1, 0 or -1: the ``+`` engine's win, draw or loss in ``record``."""
        first = record.result.first_score
        if first is None or record.result is Result.DRAW:
            return 0
        plus_first = record.first == self.plus.name
        return 1 if (first == 1.0) == plus_first else -1

    def _recorded(self, record: GameRecord) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The values both engines played ``record`` with, from its engines' identities (None when it lacks them)."""
        if len(record.engines) != 2:
            return None
        by_name = {record.first: record.engines[0].options, record.second: record.engines[1].options}
        out = []
        for name in (self.plus.name, self.minus.name):
            options = {k.lower(): v for k, v in by_name.get(name, {}).items()}
            try:
                out.append(tuple(int(options[p.name.lower()]) for p in self.tune.params))
            except (KeyError, ValueError):
                return None
        return out[0], out[1]


def _seconds(stamp: str) -> float:
    """A record's ``started`` (ISO 8601) as seconds since the epoch; 0 when it is not one."""
    try:
        value = datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0
