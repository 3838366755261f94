"""The ladder's ratings: the Elo MLE of every counted game (the estimator of ``quarto-arena rate``), one player per
version of a bot, anchored as asked or at the pool's average.

A version is named by its bot alone while the bot has one version, and ``NAME#N`` (its N-th version) once it has
more: the names ``ladder export`` writes into the PGN, so that ``rate`` on the export fits the same players and
gives the same table. The default table shows each bot's latest version; ``--by-version`` every version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..stats import RatingTable, ScoredGame, rate
from .db import BotRow, ResultRow

__all__ = ["Standing", "Standings", "fit", "version_label"]


def version_label(bot: str, number: int, versions: int) -> str:
    """The player name of a bot's version ``number`` when it has ``versions`` versions."""
    return bot if versions <= 1 else f"{bot}#{number}"


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the standings."""

    rank: int | None
    """1 for the best rated line shown; None for a line with no rating."""
    bot: str
    """The bot (its key's name)."""
    player: str
    """The rated player: the version's name as in the export."""
    version: int
    """The version's number (1, 2...)."""
    id_name: str
    """What the version called itself."""
    rating: float | None
    """Its rating (None with no game)."""
    margin: float | None
    """Half-width of its 95% interval."""
    games: int
    """Games counted."""
    points: float
    """Points scored."""
    house: bool
    """A --house engine."""
    last_seen: str
    """When the bot was last seen."""

    @property
    def score(self) -> float | None:
        """Fraction of the possible points."""
        return self.points / self.games if self.games else None


@dataclass(frozen=True, slots=True)
class Standings:
    """The table, and the fit it comes from."""

    lines: tuple[Standing, ...]
    """Best first."""
    table: RatingTable | None
    """The fit (None with no game)."""
    games: int
    """Scored games fitted."""


def _labels(bots: Sequence[BotRow]) -> dict[tuple[str, int], str]:
    return {(b.name, v.number): version_label(b.name, v.number, len(b.versions)) for b in bots for v in b.versions}


def scored(results: Iterable[ResultRow], bots: Sequence[BotRow]) -> list[ScoredGame]:
    """The games as the rating fit sees them, each player one version (a tally stays one row, with its count)."""
    labels = _labels(bots)
    return [
        ScoredGame(labels[(r.first, r.first_version)], labels[(r.second, r.second_version)], r.score, r.count)
        for r in results
    ]


def fit(
    results: Sequence[ResultRow],
    bots: Sequence[BotRow],
    *,
    anchor: tuple[str, float] | None = None,
    by_version: bool = False,
) -> Standings:
    """The standings of these games; raises RatingError (from :func:`rate`) for an anchor that is no player."""
    games = scored(results, bots)
    table = rate(games, anchor=anchor) if games else None
    rated = {} if table is None else {p.name: p for p in table.players}
    lines: list[Standing] = []
    for b in bots:
        versions = b.versions if by_version else b.versions[-1:]
        for v in versions:
            player = version_label(b.name, v.number, len(b.versions))
            p = rated.get(player)
            lines.append(
                Standing(
                    None,
                    b.name,
                    player,
                    v.number,
                    v.id_name,
                    None if p is None else p.rating,
                    None if p is None else p.margin,
                    0 if p is None else p.games,
                    0.0 if p is None else p.points,
                    b.house,
                    b.last_seen,
                )
            )
        if not b.versions:
            lines.append(Standing(None, b.name, b.name, 0, "", None, None, 0, 0.0, b.house, b.last_seen))
    lines.sort(key=lambda s: (s.rating is None, -(s.rating or 0.0), s.player))
    ranked = tuple(replace(s, rank=i + 1 if s.rating is not None else None) for i, s in enumerate(lines))
    return Standings(ranked, table, sum(g.count for g in games))
