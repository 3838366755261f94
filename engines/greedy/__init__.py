"""The greedy engine: wins when it can, otherwise never hands over a piece that wins at once if it can avoid it.

One turn of look-ahead and no more: take a win (the winning placement; with strict claims it calls it, and it
claims ``!`` an alignment the opponent missed); otherwise play a random *safe* turn, one after which the opponent
has no winning placement; otherwise (every turn loses) a random legal turn. Option ``Seed`` as the random engine.

Run it with ``python -m quarto_arena.engines.greedy [--listen ENDPOINT]``.
"""

from __future__ import annotations

import random

from quarto_arena.protocol.bot import SearchContext
from quarto_arena.protocol.rules import Position, Turn, turn_of

from ..random import SeededBot

__all__ = ["GreedyBot", "greedy_turn", "safe_turns", "winning_turns"]


def winning_turns(position: Position) -> list[Turn]:
    """Turns that win now: the claim of a missed alignment, then each winning placement (called when strict)."""
    turns = [turn_of(claim=True)] if position.claimable else []
    strict = position.variant.strict
    turns.extend(turn_of(place=s, call=strict) for s in position.winning_squares())
    return turns


def safe_turns(position: Position) -> list[Turn]:
    """Turns that do not win and after which the opponent cannot win at once (a board-filling placement is safe)."""
    pieces = position.pieces_available()
    if position.hand is None:
        return [turn_of(give=p) for p in pieces if not position.gives_win(p)]
    out: list[Turn] = []
    for square in position.empty_squares():
        if position.wins_at(square):
            continue
        if not pieces:
            out.append(turn_of(place=square))  # the last placement fills the board: a draw, nothing to give
            continue
        # gives_win looks only at the board, so any give will do to get the board after this placement.
        after = position.apply(turn_of(place=square, give=pieces[0]))
        out.extend(turn_of(place=square, give=p) for p in pieces if not after.gives_win(p))
    return out


def greedy_turn(position: Position, rng: random.Random) -> Turn:
    """The greedy choice in ``position`` (not finished): a win, else a random safe turn, else a random turn."""
    wins = winning_turns(position)
    if wins:
        return wins[0]
    safe = safe_turns(position)
    return rng.choice(safe or position.legal_turns())


class GreedyBot(SeededBot):
    """Wins at once when it can and avoids giving the opponent an immediate win."""

    name = "Greedy 1.0"
    author = "quarto-arena"

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """:func:`greedy_turn` with the bot's generator."""
        return greedy_turn(position, self.rng)
