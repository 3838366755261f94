"""The minimax engine: alpha-beta to a fixed depth (option ``Depth``), on the solver core.

It searches ``Depth`` turns deep (a ``go depth`` limit replaces it), deepening one turn at a time, with the solver
core's search (:meth:`quarto_arena.protocol.solver.Solver.search`): turns that hand over a win at once are never
tried, positions ``Depth`` turns away count as draws, and a win or loss within the depth is proven and reported as
``score win N`` / ``loss N`` (else ``value 0``). When the depth reaches the end of the game the search is exact,
reports ``score draw`` for a draw, and stops: a finished tree is never searched again. Time is managed as ``perfect``
manages it (:func:`quarto_arena.protocol.bot.time_budget`): by its own clock, well inside the time allowed.

This replaces the first minimax, a pure-Python search that checked the clock every 64 nodes, spent its whole
``movetime``, lost on time when the depth allowed more than the time did, never reported a draw, and searched a
finished tree again until its time ran out. ``perfect`` is this search without a depth limit.

Run it with ``python -m quarto_arena.engines.minimax [--listen ENDPOINT]``.
"""

from __future__ import annotations

from quarto_arena.protocol.bot import SearchContext
from quarto_arena.protocol.rules import Position, Turn, Variant, turn_of
from quarto_arena.protocol.solver import Solver
from quarto_arena.protocol.uqi import OptionSpec, OptionType

from ..perfect import deepening_turn
from ..random import SEED, SeededBot

__all__ = ["DEPTH", "MinimaxBot", "has_safe_turn"]

DEPTH = OptionSpec("Depth", OptionType.SPIN, "2", 1, 16)
"""Search depth in turns (a ``go depth N`` limit replaces it)."""
TABLE_BITS = 18
"""A 4 MiB transposition table: a fixed-depth search needs less than ``perfect``."""


def has_safe_turn(position: Position) -> bool:
    """True when the player to move has a turn after which the opponent cannot win at once (early exit)."""
    pieces = position.pieces_available()
    if position.hand is None:
        return any(not position.gives_win(p) for p in pieces)
    for square in position.empty_squares():
        if position.wins_at(square):
            continue
        if not pieces:
            return True
        after = position.apply(turn_of(place=square, give=pieces[0]))
        if any(not after.gives_win(p) for p in pieces):
            return True
    return False


class MinimaxBot(SeededBot):
    """Alpha-beta over safe turns to ``Depth`` turns, deepening, on the solver core."""

    name = "Minimax 2.0"
    author = "quarto-arena"
    options: tuple[OptionSpec, ...] = (SEED, DEPTH)

    def __init__(self) -> None:
        super().__init__()
        self._solver: Solver | None = None

    def new_game(self, variant: Variant) -> None:
        """Every variant is played; a new game starts with an empty table."""
        if self._solver is None or self._solver.variant != variant:
            self._solver = Solver(variant, tt_bits=TABLE_BITS)
        else:
            self._solver.clear()

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """The best turn within the depth, the time and the nodes."""
        depth = ctx.limits.depth if ctx.limits.depth is not None else self.option(DEPTH.name)
        assert isinstance(depth, int)
        if self._solver is None or self._solver.variant != position.variant:
            self._solver = Solver(position.variant, tt_bits=TABLE_BITS)
        return deepening_turn(position, ctx, self._solver, depth, self.rng)
