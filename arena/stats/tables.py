"""Tables as plain values for the CLI: the rating table and the crosstable (rows of numbers, not text)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from .rating import RatingTable

__all__ = ["Cell", "TableRows", "crosstable_rows", "display_cell", "rating_rows"]

Cell = str | int | float | bool | None

# Columns shown as percentages, and columns shown with one decimal, wherever a person reads a table.
_PERCENT: Final = frozenset({"score", "draw_rate", "los_next", "los"})
_ONE_DECIMAL: Final = frozenset({"rating", "margin", "elo", "elo_margin", "nelo", "nelo_margin"})


def display_cell(header: str, value: Cell) -> Cell:
    """A value as a person reads it in the column ``header`` (text tables and the HTML report alike).

    Floats become text (a percentage, one decimal or ``%g``; ``inf``/``-inf``); integers stay numbers so that a
    table aligns them; ``None`` is blank and a flag is ``yes`` or blank.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if header in _PERCENT:
            return f"{100 * value:.1f}%"
        if header in _ONE_DECIMAL:
            return f"{value:.1f}"
        return f"{value:g}"
    return value


@dataclass(frozen=True, slots=True)
class TableRows:
    """A table as plain values: hand ``headers`` and ``rows`` to tabulate, or :meth:`as_dicts` to json/csv."""

    headers: tuple[str, ...]
    """Column names (snake_case, usable as JSON keys and CSV headers)."""
    rows: tuple[tuple[Cell, ...], ...]
    """One tuple per line, in the order of ``headers``; ``None`` where there is no value."""

    def as_dicts(self) -> list[dict[str, Cell]]:
        """One dict per row, keyed by header."""
        return [dict(zip(self.headers, row, strict=True)) for row in self.rows]


def rating_rows(table: RatingTable) -> TableRows:
    """The rating table as rows: rank, player, rating, margin, games, points, score, draw rate, LOS, pool, flag.

    Numbers are unrounded (the CLI chooses the format); ``rank`` is ``None`` for players with no game.
    """
    rows: list[tuple[Cell, ...]] = []
    for rank, p in enumerate(table.players, start=1):
        rows.append(
            (
                rank if p.rating is not None else None,
                p.name,
                p.rating,
                p.margin,
                p.games,
                p.points,
                p.score,
                p.draw_rate,
                p.los_next,
                p.pool if p.rating is not None else None,
                p.regularized,
            )
        )
    headers = ("rank", "player", "rating", "margin", "games", "points", "score", "draw_rate", "los_next", "pool")
    return TableRows((*headers, "regularized"), tuple(rows))


def crosstable_rows(table: RatingTable) -> TableRows:
    """The crosstable: one row per rated player in ranking order, one column per opponent in the same order.

    A cell is ``"points/games"`` from the row player's side (``"2.5/4"``), ``None`` when the two never met.
    """
    order = [p.name for p in table.players if p.rating is not None]
    cells = {(r.player, r.opponent): f"{r.points:g}/{r.games}" for r in table.pairs}
    rows = tuple((name, *(cells.get((name, other)) for other in order)) for name in order)
    return TableRows(("player", *order), rows)
