"""What finished games add up to: a two-engine match summary, the rating table, forfeits by reason.

Pure functions over :class:`~quarto_arena.arena.records.GameRecord` values; the statistics themselves are in
:mod:`quarto_arena.arena.stats`, the printing in :mod:`quarto_arena.arena.output`.
"""

from __future__ import annotations

import collections
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .records import GameRecord, Result, Termination
from .stats import RatingTable, ScoredGame, rate

__all__ = ["MatchSummary", "forfeit_counts", "rating_table", "summarize"]


@dataclass(frozen=True, slots=True)
class MatchSummary:
    """A match from one engine's point of view."""

    engine: str
    """The engine whose view this is."""
    opponent: str
    """The other engine."""
    wins: int
    """Games won."""
    losses: int
    """Games lost."""
    draws: int
    """Games drawn."""
    forfeits: dict[str, Counter[str]]
    """Engine name -> termination reason -> number of games that engine lost that way."""
    pentanomial: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    """Colour-swapped pairs (games 1+2, 3+4, ...) by the engine's points in them: [LL, LD, WL+DD, WD, WW]."""

    @property
    def games(self) -> int:
        """Scored games."""
        return self.wins + self.losses + self.draws

    @property
    def score(self) -> float:
        """Points per game, 0..1 (0.5 when no game was scored)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5


def summarize(records: Sequence[GameRecord], engine: str, opponent: str) -> MatchSummary:
    """Wins, losses, draws of ``engine`` and the forfeits of both; aborted games are not scored."""
    wins = losses = draws = 0
    forfeits: dict[str, Counter[str]] = {}
    points: dict[int, float] = {}
    for r in records:
        if r.termination is Termination.ABORTED or r.result is Result.UNFINISHED:
            continue
        loser = r.loser
        if loser is None:
            draws += 1
            points[r.game_id] = 0.5
        elif loser == engine:
            losses += 1
            points[r.game_id] = 0.0
        else:
            wins += 1
            points[r.game_id] = 1.0
        if r.termination.is_failure and loser is not None:
            forfeits.setdefault(loser, Counter())[r.termination.value] += 1
    penta = [0, 0, 0, 0, 0]
    for first_of_pair in range(1, max(points, default=0) + 1, 2):
        if first_of_pair in points and first_of_pair + 1 in points:
            penta[round(2 * (points[first_of_pair] + points[first_of_pair + 1]))] += 1
    a, b, c, d, e = penta
    return MatchSummary(engine, opponent, wins, losses, draws, forfeits, (a, b, c, d, e))


def rating_table(records: Iterable[GameRecord], names: Sequence[str]) -> RatingTable:
    """The Elo table of the finished games (forfeits count as losses; aborted games do not count)."""
    games = [
        ScoredGame(r.first, r.second, score)
        for r in records
        if r.termination is not Termination.ABORTED and (score := r.result.first_score) is not None
    ]
    return rate(games, players=names)


def forfeit_counts(records: Iterable[GameRecord], names: Sequence[str]) -> dict[str, collections.Counter[Termination]]:
    """Games each engine lost by failing, by reason (every engine listed, with an empty count if it never failed)."""
    out: dict[str, collections.Counter[Termination]] = {n: collections.Counter() for n in names}
    for r in records:
        loser = r.loser
        if r.termination.is_failure and loser is not None:
            out.setdefault(loser, collections.Counter())[r.termination] += 1
    return out
